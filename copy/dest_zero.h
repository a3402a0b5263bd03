/* Where a lane's destination already reads as zero, so that zeroing it
 * again is skipped (dest_zero.c).  The lane sends the block status
 * request; this decides when and what to ask and answers the lane's
 * questions from the reply.
 */
#ifndef NBDCP_DEST_ZERO_H
#define NBDCP_DEST_ZERO_H

#include <stdbool.h>
#include <stdint.h>

#include "extents.h"

struct dest_zero {
  bool ask;       /* the settings allow asking this destination */
  uint64_t align; /* answers shrink to whole blocks of this */
  uint64_t segment_end;
  bool wanted; /* a question is to be asked for the current segment */
  struct extent store[EXTENTS_PER_LANE];
  struct extent_list list; /* the answer, from the segment's start */
  /* Learnt past the segment: [ahead_from, ahead_to) read as zero when
     segments from ahead_untaken on had not been taken by any lane. */
  uint64_t ahead_from, ahead_to, ahead_untaken;
};

void dest_zero_init (struct dest_zero *d, bool ask, uint64_t align);
/* Segment INDEX, [POS, END), starts (FRESH: no lane had it before):
 * what was known is forgotten, and a question is wanted unless an
 * earlier answer covers the segment.
 */
void dest_zero_forget (struct dest_zero *d, uint64_t index, uint64_t pos,
                       uint64_t end, bool fresh);
/* A question is asked now for the segment from POS, of a disk of SIZE
 * bytes, with NEXT_UNTAKEN the first segment no lane has taken: the
 * length to ask about, into d->list (0: nothing to ask).
 */
uint64_t dest_zero_prepare (struct dest_zero *d, uint64_t pos, uint64_t size,
                            uint64_t next_untaken);
/* The question could not be sent, or FAILED: nothing is known, and the
 * segment is zeroed as it would be without asking.  Otherwise the
 * answer is in.
 */
void dest_zero_answered (struct dest_zero *d, bool failed);
/* A question takes at most this long to answer before it is given up
 * (dest_zero_give_up): 3 s, or half of --timeout (TIMEOUT_MS, 0 for
 * none) if that is shorter, so that --timeout never fires for it.
 */
int64_t dest_zero_deadline_ms (int64_t timeout_ms);
/* The question was given up: nothing is known, and nothing is asked
 * any more.
 */
void dest_zero_give_up (struct dest_zero *d);
/* How much of [OFFSET, OFFSET+LEN), from OFFSET, is of one kind: all
 * reading as zero on the destination (*READS_ZERO true), or not known
 * to (false).
 */
uint64_t dest_zero_prefix (const struct dest_zero *d, uint64_t offset,
                           uint64_t len, bool *reads_zero);

/* Whether all of [OFFSET, OFFSET+LEN) reads as zero on the destination. */
static inline bool
dest_zero_covers (const struct dest_zero *d, uint64_t offset, uint64_t len)
{
  bool zero;

  return dest_zero_prefix (d, offset, len, &zero) == len && zero;
}

#endif
