/* A run of the source known to read as zero, shared by the lanes.
 *
 * A lane whose segment ends in a hole asks the server, in one block
 * status request, how far the hole goes past the segment (see
 * source_extents.c).  What it learns goes here, and a lane that takes a segment
 * inside the run needs no request of its own: a disk that is mostly
 * hole costs one round trip per few GiB instead of one per segment.
 * One run is kept, the one that reaches furthest; segments are handed
 * out in order, so older runs are behind every lane.
 */
#ifndef NBDCP_ZERO_RUN_H
#define NBDCP_ZERO_RUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct zero_run {
  pthread_mutex_t lock; /* taken at most four times per segment */
  uint64_t start, end;
  uint64_t lookahead; /* how far the next look asks */
};

void zero_run_init (struct zero_run *run);
void zero_run_destroy (struct zero_run *run);

/* The source reads as zero in [START, END). */
void zero_run_learn (struct zero_run *run, uint64_t start, uint64_t end);

/* Whether the whole of [START, END) is known to read as zero. */
bool zero_run_covers (struct zero_run *run, uint64_t start, uint64_t end);

/* How far a look past a segment should ask, from the next segment's
 * start.  Servers may walk the whole range asked even for one extent
 * (nbdkit's plugins do): asking 4 GiB ahead at every hole cost nbdkit
 * more CPU than the copy itself on a sparse disk.  So looks start at
 * two segments and go twice as far each time the hole went on to the
 * end of what was asked (zero_run_looked), up to what one block status
 * request can ask (32 bits), in whole segments.
 */
uint64_t zero_run_lookahead (struct zero_run *run);

/* A look was answered: the hole went on to the end of what was asked
 * (HOLE_TO_END), or it ended before, and the next look asks two
 * segments again.
 */
void zero_run_looked (struct zero_run *run, bool hole_to_end);

#endif
