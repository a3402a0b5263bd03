/* A lane's recovery: what lets a copy survive a broken connection.
 *
 * A request that fails because its connection broke (or, with
 * --timeout, one that stalled) marks the lane broken instead of failing
 * the copy (with --retry): once nothing is in flight the lane waits,
 * reconnects the broken connection, and copies again what the features
 * say the server may have lost (--checkpoint's unflushed segments and
 * the current one, feature_checkpoint.c).  Here too is what --timeout
 * asks of a lane: its oldest and its stalled requests.
 *
 * It does not issue copy requests or choose segments (lane.c), keep
 * the segments to copy again (feature_checkpoint.c), or notice
 * timeouts (worker.c's workers do).
 * lane_retry's reconnection blocks the worker for the handshake; the
 * rest only updates the lane.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backoff.h"
#include "error.h"
#include "lane_recover.h"
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
    snprintf (why, sizeof why, "%s (%s)", strerror (op->err), fault);
  lane_fail (l, op->kind, op->offset, op->length, why, op->err);
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

/* After a reconnection: what the server may have lost is copied again
 * (the features say which segments, and forget what was counted for
 * them), and the lane starts afresh from there.  Returns the number of
 * segments to copy again.
 */
static unsigned
lane_rewind (struct lane *l)
{
  const uint64_t *segments;
  unsigned n = lane_features_rewind (&l->features, &segments);

  l->segment = NO_SEGMENT;
  l->extents.len = 0;
  l->next_extent = 0;
  l->pos = l->segment_end = 0;
  l->no_more_segments = false;
  return n;
}

void
lane_retry (struct lane *l)
{
  struct job *job = l->job;
  struct endpoint *eps[2] = { job->src, job->dst };
  struct conn *conns[2] = { l->src, l->dst };
  unsigned redo;

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
  redo = lane_rewind (l);
  note (l->set->verbose,
        "connection pair %u reconnected: %u segment%s to copy again",
        l->index + 1, redo, redo == 1 ? "" : "s");
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
 * destination, -1 either), or NULL.  Every request the lane sends is
 * on l->sent, in the order sent, whatever its kind.
 */
static const struct op *
lane_oldest_on (const struct lane *l, int side)
{
  for (const struct op *op = l->sent.oldest; op; op = op->sent_next)
    if (side < 0 || side == !op_on_source (op->kind))
      return op;
  return NULL;
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
