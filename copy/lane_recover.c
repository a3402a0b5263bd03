/* A lane's recovery: what lets a copy survive a broken connection.
 *
 * With --checkpoint (--retry, --resume) a lane keeps the segments it
 * finished but has not yet flushed; a successful flush makes them done
 * and hands them to the job (and so to --resume's journal).  A request
 * that fails because its connection broke (or, with --timeout, one
 * that stalled) marks the lane broken instead of failing the copy:
 * once nothing is in flight the lane waits, reconnects the broken
 * connection and copies its unflushed segments and the current one
 * again, with its stats taken back to the last flush.  Here too is
 * what --timeout asks of a lane: its oldest and its stalled requests.
 *
 * It does not issue copy requests or choose segments (lane.c), learn
 * extents (lane_extents.c), write the journal (the main thread does,
 * job.c and journal.c) or notice timeouts (engine.c's workers do).
 * lane_retry's reconnection blocks the worker for the handshake; the
 * rest only updates the lane.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backoff.h"
#include "error.h"
#include "lane_internal.h"
#include "minmax.h"

/* Whether a broken connection to EP can be made again (--retry, an NBD
 * server that is not a [ CMD ] subprocess).
 */
static bool
lane_can_reconnect (const struct lane *l, const struct endpoint *ep)
{
  return l->set->retry && ep->ops->reconnect && ep->ops->broken
         && ep->ops->abort && !ep->command;
}

/* A connection of L to EP broke: a request of KIND failed with WHY.
 * The lane stops issuing and recovers once nothing is in flight; the
 * first failure is what its retry messages quote.
 */
static void
lane_mark_broken (struct lane *l, const struct endpoint *ep, enum op_kind kind,
                  uint64_t offset, uint64_t length, const char *why)
{
  char side[64];

  if (!l->broken) {
    snprintf (side, sizeof side, "%s connection %u:", ep->side, l->index + 1);
    job_describe_failure (l->broken_why, sizeof l->broken_why, side,
                          op_what (kind), offset, length, why);
  }
  l->broken = true;
}

/* Whether a failed request of KIND means that its connection broke and
 * the lane can reconnect (--retry, an NBD server that is not a [ CMD ]
 * subprocess).  If so the lane stops issuing, and once nothing is in
 * flight it reconnects (lane_check_finished).  WHY is the failure.
 */
static bool
lane_connection_broke (struct lane *l, enum op_kind kind, uint64_t offset,
                       uint64_t length, const char *why)
{
  bool on_src = op_on_source (kind);
  struct endpoint *ep = on_src ? l->job->src : l->job->dst;

  if (!lane_can_reconnect (l, ep)
      || !ep->ops->broken (on_src ? l->src : l->dst))
    return false;
  lane_mark_broken (l, ep, kind, offset, length, why);
  return true;
}

void
lane_fail (struct lane *l, enum op_kind kind, uint64_t offset, uint64_t length,
           const char *why, int code)
{
  struct job *job = l->job;

  if (lane_connection_broke (l, kind, offset, length, why))
    return;
  job_fail_code (job, job_side (job, kind), op_what (kind), offset, length, why,
                 code);
}

/* A request that failed because of the server's fault on its
 * connection says what that fault was: the read whose reply was wrong
 * says only that (EPROTO, set by the endpoint with the fault), and the
 * requests that failed because the connection was then given up say
 * both.
 */
void
lane_op_failed (struct lane *l, const struct op *op)
{
  bool on_src = op_on_source (op->kind);
  const struct endpoint *ep = on_src ? l->job->src : l->job->dst;
  struct conn *c = on_src ? l->src : l->dst;
  const char *fault = ep->ops->fault ? ep->ops->fault (c) : NULL;
  char why[384];

  if (!fault)
    snprintf (why, sizeof why, "%s", strerror (op->err));
  else if (op->err == EPROTO)
    snprintf (why, sizeof why, "%s", fault);
  else
    snprintf (why, sizeof why, "%s (%s)",
              strerror (op->err), fault);
  lane_fail (l, op->kind, op->offset, op->length, why, op->err);
}

void
lane_segment_finished (struct lane *l)
{
  uint64_t start = l->segment * SEGMENT_SIZE;

  l->unflushed[l->nunflushed++] = l->segment;
  /* Progress: a connection that breaks again now gets --retry attempts
     afresh (one that breaks before finishing anything does not). */
  l->attempts = 0;
  l->unflushed_bytes
      += MIN (SEGMENT_SIZE, (uint64_t) atomic_load (&l->job->size) - start);
  l->segment = NO_SEGMENT;
}

/* The destination connection's flush succeeded: every unflushed segment
 * is done, and is handed to --resume's journal (which the main thread
 * writes: a lane never waits for the file).
 */
void
lane_flushed (struct lane *l)
{
  struct job *job = l->job;

  if (job->journal && l->nunflushed > 0)
    job_segments_flushed (job, l->unflushed, l->nunflushed);
  l->nunflushed = 0;
  l->unflushed_bytes = 0;
  l->stats_at_flush = l->stats;
}

void
lane_schedule_retry (struct lane *l)
{
  struct job *job = l->job;
  int64_t delay = l->set->retry_delay_ms;

  if (l->attempts >= l->set->retry) {
    char msg[sizeof l->broken_why + 64];
    snprintf (msg, sizeof msg, "%s (gave up after %u %s)", l->broken_why,
              l->set->retry, l->set->retry == 1 ? "retry" : "retries");
    job_fail_text (job, msg);
    l->state = LANE_DONE;
    return;
  }
  delay = backoff_ms (delay, l->attempts, RETRY_DELAY_MAX_MS);
  l->attempts++;
  /* Every attempt counts, whether or not it connects. */
  l->stats.retries++;
  fprintf (stderr, "nbdcp: %s; reconnecting in %.1f s (retry %u of %u)\n",
           l->broken_why, delay / 1000.0, l->attempts, l->set->retry);
  l->retry_at_ms = now_ms () + delay;
  l->state = LANE_RETRY_WAIT;
}

/* After a reconnection: the unflushed segments and the current one are
 * copied again from their start, since the server may have lost any
 * write it had not flushed; what was counted for them is forgotten.
 * They are exactly what the lane counted since its last flush, so its
 * stats go back to what they were then, and the bytes forgotten are
 * counted as redone instead: data, zeroed and skipped count each byte
 * once, as the attempt that stuck wrote it.  With --bitmap the clean
 * ranges passed over are not redone (nothing was copied there), only
 * the dirty bytes.
 */
static void
lane_rewind (struct lane *l)
{
  struct job *job = l->job;
  unsigned first = l->nredo;

  for (unsigned i = 0; i < l->nunflushed; i++)
    l->redo[l->nredo++] = l->unflushed[i];
  if (l->segment != NO_SEGMENT)
    l->redo[l->nredo++] = l->segment;
  for (unsigned i = first; i < l->nredo; i++) {
    job_uncount (job, l->redo[i]);
    if (job->hash)
      blkhash_restart_segment (&l->hash, l->redo[i]);
  }
  l->stats.redone_bytes += stats_since (&l->stats, &l->stats_at_flush);
  stats_rewind (&l->stats, &l->stats_at_flush);
  l->nunflushed = 0;
  l->unflushed_bytes = 0;
  l->segment = NO_SEGMENT;
  l->extents.len = 0;
  l->next_extent = 0;
  l->pos = l->segment_end = 0;
  l->no_more_segments = false;
}

void
lane_retry (struct lane *l)
{
  struct job *job = l->job;
  struct endpoint *eps[2] = { job->src, job->dst };
  struct conn *conns[2] = { l->src, l->dst };

  if (job_stopped (job)) {
    l->state = LANE_DONE;
    return;
  }
  for (int i = 0; i < 2; i++) {
    int r;

    if (!eps[i]->ops->broken || !eps[i]->ops->broken (conns[i]))
      continue;
    r = eps[i]->ops->reconnect (eps[i], conns[i]);
    if (r == 1) {
      l->retry_at_ms = now_ms () + 10; /* its old polls are ending */
      return;
    }
    if (r == -1) {
      snprintf (l->broken_why, sizeof l->broken_why,
                "%s connection %u: cannot reconnect: %s", eps[i]->side,
                l->index + 1, error_get ());
      lane_schedule_retry (l);
      return;
    }
  }
  note (l->set->verbose,
        "connection pair %u reconnected: %u segment%s to copy again",
        l->index + 1, l->nunflushed + (l->segment != NO_SEGMENT),
        l->nunflushed + (l->segment != NO_SEGMENT) == 1 ? "" : "s");
  lane_rewind (l);
  l->broken = false;
  l->state = LANE_COPYING;
}

bool
lane_timed_out (struct lane *l, const struct op *op, const char *why)
{
  bool on_src = op_on_source (op->kind);
  struct endpoint *ep = on_src ? l->job->src : l->job->dst;

  if (!lane_can_reconnect (l, ep))
    return false;
  lane_mark_broken (l, ep, op->kind, op->offset, op->length, why);
  /* Its requests fail now, and the lane reconnects once they have. */
  ep->ops->abort (on_src ? l->src : l->dst);
  return true;
}

/* The oldest request in flight of L on side SIDE (0 source, 1
 * destination, -1 either), or NULL.
 */
static const struct op *
lane_oldest_on (const struct lane *l, int side)
{
  const struct op *oldest = NULL;

#define CONSIDER(o)                                                            \
  do {                                                                         \
    if ((o)->in_flight && (side < 0 || side == !op_on_source ((o)->kind))      \
        && (!oldest || (o)->sent_ms < oldest->sent_ms))                        \
      oldest = (o);                                                            \
  } while (0)
  CONSIDER (&l->extents_op);
  CONSIDER (&l->flush_op);
  for (unsigned i = 0; i < l->pool.count; i++) {
    CONSIDER (&l->buffers[i].read);
    for (unsigned j = 0; j < l->runs_per_buffer; j++)
      CONSIDER (&l->buffers[i].runs[j]);
  }
  for (unsigned i = 0; i < l->set->requests; i++)
    CONSIDER (&l->zero_ops[i]);
#undef CONSIDER
  return oldest;
}

const struct op *
lane_oldest_op (const struct lane *l)
{
  return lane_oldest_on (l, -1);
}

const struct op *
lane_stalled_op (const struct lane *l, int64_t now, int64_t limit_ms)
{
  for (int side = 0; side < 2; side++)
    if (l->activity[side].inflight > 0
        && now - l->activity[side].progress_ms >= limit_ms)
      return lane_oldest_on (l, side);
  return NULL;
}
