/* A lane's extents: what the source says of the lane's current
 * segment, so that holes and zeroes are not read.
 *
 * For each segment a lane asks the source for the extents of what is
 * left of it (one request at a time), or makes them up where no
 * request is needed: a source that cannot tell, --no-extents, a range
 * inside the job's known zero run.  A lane whose last segment ended in
 * a hole asks past its segment, and what it learns there goes to the
 * job's zero run (zero_run.h).  With --bitmap the allocation and the
 * dirty bitmap are combined once both are in.
 *
 * A fragmented source (many extents per MiB: its server takes long to
 * describe a segment) is asked in windows of EXTENTS_WINDOW, and the
 * next window of the segment is asked for, into a second list
 * (l->ahead), as soon as the current one is answered: its answer comes
 * while the current window is read, and becomes the current list once
 * that is used up.  A lane starts in windows, and asks for the rest of
 * its segment at once after an answer that was not fragmented.
 *
 * It does not act on the extents (lane.c issues the reads, zeroes and
 * skips), nor handle a failed request beyond passing it to lane_fail
 * (lane_recover.c).
 */
#include <config.h>

#include "error.h"
#include "lane_internal.h"
#include "minmax.h"

/* Whether L's source is asked about its extents at all, as the
 * allocation alone (not --bitmap).
 */
static bool
lane_asks_extents (const struct lane *l)
{
  const struct endpoint *src = l->job->src;

  return !l->set->bitmap && l->set->extents && src->ops->extents
         && src->caps.can_extents;
}

/* How much of [pos, end) to ask about in one request.  A window ends
 * on a multiple of the alignment (a power of 2: the block size, or
 * --blkhash's block, up to 32M), as every list but the last must:
 * extent_list_align keeps only the end it was asked for where it is.
 */
static uint64_t
lane_window (const struct lane *l, uint64_t pos, uint64_t end)
{
  uint64_t len = end - pos;
  uint64_t window = MAX ((uint64_t) EXTENTS_WINDOW, l->set->align);

  return l->extents_window ? MIN (len, window) : len;
}

/* The prefetched list answers from l->pos on: make it the current one,
 * and ask for the window after it.
 */
static void
lane_take_ahead (struct lane *l)
{
  struct extent_list t = l->extents;

  l->extents = l->ahead;
  l->ahead = t;
  l->ahead_state = AHEAD_NONE;
  l->next_extent = 0;
  lane_prefetch_extents (l);
}

void
lane_prefetch_extents (struct lane *l)
{
  struct job *job = l->job;
  struct op *op = &l->extents_op;
  uint64_t next = extent_list_covered (&l->extents), len;

  if (l->ahead_state != AHEAD_NONE || l->extents_busy || !lane_asks_extents (l)
      || job->ordered || l->broken || job_stopped (job)
      || next >= l->segment_end
      || zero_run_covers (&job->zero_run, next, l->segment_end))
    return;
  len = lane_window (l, next, l->segment_end);
  extent_list_reset (&l->ahead, next, next + len);
  lane_prepare_op (l, op, OP_EXTENTS, NULL, next, len);
  if (job->src->ops->extents (l->src, len, next, &l->ahead, op) == -1) {
    lane_fail (l, op->kind, next, len, error_get (), 0);
    return;
  }
  l->ahead_state = AHEAD_BUSY;
  lane_sent (l, op);
}

/* Learn the extents of [pos, segment_end).  Sources that cannot tell,
 * and --no-extents, make the whole range data at once, unless the
 * dirty bitmap (--bitmap) is needed.  A range inside the job's known
 * zero run needs no request; a lane in a hole asks how far it goes
 * past the segment (see zero_run.h).  What was asked for ahead is
 * used, or waited for.
 */
int
lane_fetch_extents (struct lane *l)
{
  struct job *job = l->job;
  struct op *op = &l->extents_op;
  struct extent_list *list = &l->extents;
  uint64_t len = l->segment_end - l->pos;

  if (l->ahead_state == AHEAD_BUSY) {
    l->extents_busy = true; /* lane_extents_done goes on */
    return 0;
  }
  if (l->ahead_state == AHEAD_READY) {
    if (l->ahead.start == l->pos) {
      lane_take_ahead (l);
      return 0;
    }
    l->ahead_state = AHEAD_NONE;
  }
  extent_list_reset (&l->extents, l->pos, l->segment_end);
  l->next_extent = 0;
  if (l->set->bitmap) {
    extent_list_reset (&l->alloc, l->pos, l->segment_end);
    extent_list_reset (&l->dirty, l->pos, l->segment_end);
    l->alloc.dirty = &l->dirty;
    list = &l->alloc;
  }
  else if (!lane_asks_extents (l)) {
    extent_list_add (&l->extents, l->pos, len, false);
    extent_list_align (&l->extents, l->set->align);
    return 0;
  }
  else if (zero_run_covers (&job->zero_run, l->pos, l->segment_end)) {
    extent_list_add (&l->extents, l->pos, len, true);
    extent_list_align (&l->extents, l->set->align);
    l->in_hole = true;
    return 0;
  }
  else if (l->in_hole) {
    uint64_t ahead = MIN (zero_run_lookahead (&job->zero_run),
                          (uint64_t) atomic_load (&job->size) - l->pos);

    len = MAX (len, ahead);
    extent_list_reset (&l->extents, l->pos, l->pos + len);
  }
  else {
    len = lane_window (l, l->pos, l->segment_end);
    extent_list_reset (&l->extents, l->pos, l->pos + len);
  }
  lane_prepare_op (l, op, OP_EXTENTS, NULL, l->pos, len);
  if (job->src->ops->extents (l->src, len, l->pos, list, op) == -1) {
    lane_fail (l, op->kind, l->pos, len, error_get (), 0);
    return -1;
  }
  l->extents_busy = true;
  lane_sent (l, op);
  return 0;
}

/* Extents were answered, perhaps past the segment (asked for, or said
 * by the server unasked): keep what concerns this segment, and tell
 * the job how far a hole at its end goes.  A segment that ends in a
 * hole makes the lane's next request look past its segment (in_hole):
 * what was learnt may stop only where the request did.  A window that
 * ends inside the segment learns nothing past it.
 */
static void
lane_learn_past_segment (struct lane *l, struct extent_list *list)
{
  uint64_t asked_end = list->end;
  uint64_t zero_end;

  if (asked_end < l->segment_end) {
    l->in_hole = false;
    return;
  }
  zero_end = extent_list_cut (list, l->segment_end);
  if (zero_end > l->segment_end)
    zero_run_learn (&l->job->zero_run, l->segment_end, zero_end);
  if (asked_end > l->segment_end)
    zero_run_looked (&l->job->zero_run, zero_end >= asked_end);
  l->in_hole = list->len > 0 && list->v[list->len - 1].zero
               && extent_list_covered (list) == l->segment_end;
}

/* LIST, of L's segment, was answered: fit it for use.  The answer
 * also says whether the source is fragmented here, which decides how
 * much the next request asks about.
 */
static void
lane_fit_answer (struct lane *l, struct extent_list *list)
{
  uint64_t said = extent_list_covered (list) - list->start;

  if (said > 0)
    l->extents_window
        = list->answered * (1024 * 1024) > said * EXTENTS_DENSE_PER_MIB;
  lane_learn_past_segment (l, list);
  /* A server that answered nothing for the range gets it read. */
  if (list->len == 0)
    extent_list_add (list, list->start, list->end - list->start, false);
  extent_list_align (list, l->set->align);
  /* A short answer is read on rather than asked about again. */
  extent_list_read_on (list, l->set->request_size);
}

/* The answer for the window after the current list is in. */
static void
lane_ahead_done (struct lane *l, const struct op *op)
{
  bool waiting = l->extents_busy;

  l->extents_busy = false;
  l->ahead_state = AHEAD_NONE;
  if (op->err)
    return;
  lane_fit_answer (l, &l->ahead);
  l->ahead_state = AHEAD_READY;
  if (waiting && l->ahead.start == l->pos)
    lane_take_ahead (l);
}

void
lane_extents_done (struct lane *l, const struct op *op)
{
  if (l->ahead_state == AHEAD_BUSY) {
    lane_ahead_done (l, op);
    return;
  }
  l->extents_busy = false;
  /* --bitmap: only the dirty ranges are copied, holes in them as
     holes (unless --no-extents). */
  if (l->set->bitmap && !op->err) {
    extent_list_restrict (&l->extents, &l->alloc, &l->dirty,
                          l->set->extents && l->job->src->caps.can_extents,
                          l->set->align);
    return;
  }
  if (op->err) {
    extent_list_align (&l->extents, l->set->align);
    extent_list_read_on (&l->extents, l->set->request_size);
    return;
  }
  lane_fit_answer (l, &l->extents);
  lane_prefetch_extents (l);
}
