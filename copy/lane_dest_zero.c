/* A lane's question to the destination: where does the current segment
 * read as zero already (so that zeroing there can be skipped)?  Asked
 * once per segment; what the answer means is dest_zero.c's.  The
 * question is only worth a short wait: one not answered in time is
 * given up, and the lane asks no more.  A reply that comes after that
 * lands in the lane's memory, which must then outlive the connection
 * (lane_has_late_reply).
 *
 * It does not issue the copy's requests (lane.c, lane_write.c).
 */
#include <config.h>

#include <inttypes.h>
#include <stdint.h>

#include "clock.h"
#include "error.h"
#include "lane_dest_zero.h"
#include "lane_op.h"

/* Ask the destination where the current segment reads as zero. */
void
lane_fetch_dest_zero (struct lane *l)
{
  struct job *job = l->job;
  struct op *op = &l->dest_zero_op;
  uint64_t len = dest_zero_prepare (&l->dest, l->pos, atomic_load (&job->size),
                                    atomic_load (&job->next_segment));

  if (len == 0)
    return;
  lane_prepare_op (l, op, OP_DEST_EXTENTS, NULL, l->pos, len);
  /* Not being able to ask is no failure: the segment is zeroed as
     before, and a broken connection shows at the next request. */
  if (job->dst->ops->extents (l->dst, len, l->pos, &l->dest.list, op) == -1) {
    dest_zero_answered (&l->dest, true);
    return;
  }
  l->dest_zero_busy = true;
  lane_sent (l, op);
}

/* The question to the destination has had its time: stop waiting.  The
 * segment is zeroed as if it had not been asked, and the lane asks no
 * more (a server this slow to answer costs more than it saves).  A
 * reply that comes later goes to l->late and is never looked at.
 */
static void
lane_give_up_dest_zero (struct lane *l, int64_t waited_ms)
{
  struct op *op = &l->dest_zero_op;

  lane_unsent (l, op);
  op->done = &l->late;
  l->dest_zero_busy = false;
  l->dest_zero_given_up = true;
  dest_zero_give_up (&l->dest);
  note (l->set->verbose,
        "destination connection %u: no answer to block status at offset "
        "%" PRIu64 " length %" PRIu64 " in %.1f s; zeroing holes without "
        "asking from now on",
        l->index + 1, op->offset, op->length, waited_ms / 1000.0);
}

/* Whether the lane must still wait for the destination's answer (and
 * then its worker is woken by the question's deadline).
 */
bool
lane_waits_for_dest_zero (struct lane *l)
{
  int64_t deadline, now;

  if (!l->dest_zero_busy)
    return false;
  deadline
      = l->dest_zero_op.sent_ms + dest_zero_deadline_ms (l->set->timeout_ms);
  now = now_ms ();
  if (now < deadline) {
    lane_wake_at (l, deadline);
    return true;
  }
  lane_give_up_dest_zero (l, now - l->dest_zero_op.sent_ms);
  return false;
}

bool
lane_has_late_reply (const struct lane *l)
{
  /* Given up and not answered yet. */
  return l->dest_zero_given_up && !l->late.head;
}
