/* A lane's writes (lane_write.c): what a finished read becomes, and
 * zeroing a range of the destination.
 */
#ifndef NBDCP_LANE_WRITE_H
#define NBDCP_LANE_WRITE_H

#include <stdint.h>

#include "lane_struct.h"
#include "op.h"

/* Make [offset, offset+len) of the destination read as zero, using OP
 * (of buffer B, or NULL).  Destinations without a zero operation get
 * zero data written, which needs len <= request_size.
 */
int lane_zero (struct lane *l, struct op *op, struct buffer *b, uint64_t offset,
               uint64_t len);
/* [OFFSET, OFFSET+LEN) of the destination reads as zero already: count
 * it as done, nothing sent.
 */
void lane_count_already_zero (struct lane *l, uint64_t offset, uint64_t len);
/* B's reads and writes are all done: give it back to the pool. */
void buffer_release (struct lane *l, struct buffer *b);
/* A read finished: write its data runs, zero its zero runs. */
void lane_write_buffer (struct lane *l, struct buffer *b);

#endif
