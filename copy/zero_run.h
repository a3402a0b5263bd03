/* A run of the source known to read as zero, shared by the lanes.
 *
 * A lane whose segment ends in a hole asks the server, in one block
 * status request, how far the hole goes past the segment (see
 * lane.c).  What it learns goes here, and a lane that takes a segment
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
  pthread_mutex_t lock; /* taken at most twice per segment */
  uint64_t start, end;
};

void zero_run_init (struct zero_run *run);
void zero_run_destroy (struct zero_run *run);

/* The source reads as zero in [START, END). */
void zero_run_learn (struct zero_run *run, uint64_t start, uint64_t end);

/* Whether the whole of [START, END) is known to read as zero. */
bool zero_run_covers (struct zero_run *run, uint64_t start, uint64_t end);

#endif
