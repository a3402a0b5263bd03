/* What the files of a lane share and nothing else uses: lane.c (the
 * copy state machine), lane_extents.c (learning the extents) and
 * lane_recover.c (checkpoints, broken connections, --retry and
 * --timeout).  The engine uses lane.h only.
 */
#ifndef NBDCP_LANE_INTERNAL_H
#define NBDCP_LANE_INTERNAL_H

#include <stdint.h>

#include "clock.h"
#include "lane.h"
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
  l->inflight++;
  if (l->activity[side].inflight++ == 0)
    l->activity[side].progress_ms = op->sent_ms;
  l->stats.requests++;
}

/* lane_extents.c */

/* Ask the source for the extents of [pos, segment_end) into
 * l->extents, or make them up where no request is needed.  -1 if the
 * request could not be sent (lane_fail has been told).
 */
int lane_fetch_extents (struct lane *l);
/* OP, L's extents request, finished: make l->extents ready to use. */
void lane_extents_done (struct lane *l, const struct op *op);

/* lane_dest_zero.c */

/* Segment INDEX starts at l->pos (FRESH: no lane had it before): what
 * was known of the destination is forgotten, and asked again if the
 * settings say so, unless an earlier answer covers it.
 */
void lane_dest_zero_forget (struct lane *l, uint64_t index, bool fresh);
/* Ask the destination where [pos, segment_end) reads as zero (if the
 * request cannot be sent, nothing is known: the segment is zeroed as
 * before).
 */
void lane_dest_zero_fetch (struct lane *l);
/* OP, that request, finished. */
void lane_dest_zero_done (struct lane *l, const struct op *op);
/* How much of [OFFSET, OFFSET+LEN), from OFFSET, is of one kind: all
 * reading as zero on the destination (*READS_ZERO true), or not known
 * to (false).
 */
uint64_t lane_dest_zero_prefix (const struct lane *l, uint64_t offset,
                                uint64_t len, bool *reads_zero);

/* Whether all of [OFFSET, OFFSET+LEN) reads as zero on the destination. */
static inline bool
lane_dest_zero_covers (const struct lane *l, uint64_t offset, uint64_t len)
{
  bool zero;

  return lane_dest_zero_prefix (l, offset, len, &zero) == len && zero;
}

/* lane_recover.c */

/* A request of KIND failed, when submitted or when it completed: a
 * broken connection to reconnect, or the end of the copy.
 */
void lane_fail (struct lane *l, enum op_kind kind, uint64_t offset,
                uint64_t length, const char *why, int code);
/* OP completed with an error (op->err): lane_fail, with the server's
 * fault on OP's connection in the message when its endpoint knows one.
 */
void lane_op_failed (struct lane *l, const struct op *op);
/* The current segment is finished (--checkpoint): it waits for a flush. */
void lane_segment_finished (struct lane *l);
/* The destination connection's flush succeeded (or it has none). */
void lane_flushed (struct lane *l);
/* A connection broke and nothing is in flight: wait, then reconnect
 * (lane_retry), or give up after --retry attempts in a row.
 */
void lane_schedule_retry (struct lane *l);

#endif
