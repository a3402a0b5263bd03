/* A lane's requests: making one, the list of those in flight (sent,
 * finished or given up), the request slots of zero extents, and when
 * the lane's worker must look again.  Every file of the lane that
 * sends a request uses them, on every request's path: static inline,
 * as a hot helper should be.
 */
#ifndef NBDCP_LANE_OP_H
#define NBDCP_LANE_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "lane_struct.h"
#include "op.h"

/* Make OP a request of L. */
static inline void
lane_prepare_op (struct lane *l, struct op *op, enum op_kind kind,
                 struct buffer *b, uint64_t offset, uint64_t length)
{
  *op = (struct op){
    .done = l->done,
    .lane = l,
    .buf = b,
    .kind = kind,
    .offset = offset,
    .length = length,
  };
}

/* OP has been sent.  The time is for --timeout, and for saying what a
 * stopped copy was waiting for.
 */
static inline void
lane_sent (struct lane *l, struct op *op)
{
  int side = !op_on_source (op->kind);

  op->in_flight = true;
  op->sent_ms = now_ms ();
  op_list_append (&l->sent, op);
  if (l->activity[side].inflight++ == 0)
    l->activity[side].progress_ms = op->sent_ms;
  l->stats.requests++;
}

/* Have the lane's worker look again by AT (ms) at the latest. */
static inline void
lane_wake_at (struct lane *l, int64_t at)
{
  if (!l->wake_at_ms || at < l->wake_at_ms)
    l->wake_at_ms = at;
}

/* OP is no longer waited for: it finished, or it was given up. */
static inline void
lane_unsent (struct lane *l, struct op *op)
{
  op_list_remove (&l->sent, op);
  l->activity[!op_on_source (op->kind)].inflight--;
  op->in_flight = false;
}

/* A free request slot for a zero extent, or NULL. */
static inline struct op *
lane_get_zero_op (struct lane *l)
{
  return l->nfree_zero_ops ? l->free_zero_ops[--l->nfree_zero_ops] : NULL;
}

/* OP, a zero extent's request slot, is free again. */
static inline void
lane_put_zero_op (struct lane *l, struct op *op)
{
  l->free_zero_ops[l->nfree_zero_ops++] = op;
}

#endif
