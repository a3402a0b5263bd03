/* The run of the source known to read as zero (see zero_run.h). */
#include <config.h>

#include "minmax.h"
#include "segment.h"
#include "zero_run.h"

#define LOOKAHEAD_FIRST (2 * SEGMENT_SIZE)
#define LOOKAHEAD_MAX ((UINT32_MAX / SEGMENT_SIZE) * SEGMENT_SIZE)

void
zero_run_init (struct zero_run *run)
{
  pthread_mutex_init (&run->lock, NULL);
  run->start = run->end = 0;
  run->lookahead = LOOKAHEAD_FIRST;
}

void
zero_run_destroy (struct zero_run *run)
{
  pthread_mutex_destroy (&run->lock);
}

void
zero_run_learn (struct zero_run *run, uint64_t start, uint64_t end)
{
  pthread_mutex_lock (&run->lock);
  if (end > run->end) {
    run->start = start;
    run->end = end;
  }
  pthread_mutex_unlock (&run->lock);
}

bool
zero_run_covers (struct zero_run *run, uint64_t start, uint64_t end)
{
  bool covers;

  pthread_mutex_lock (&run->lock);
  covers = run->start <= start && end <= run->end && start < end;
  pthread_mutex_unlock (&run->lock);
  return covers;
}

uint64_t
zero_run_lookahead (struct zero_run *run)
{
  uint64_t n;

  pthread_mutex_lock (&run->lock);
  n = run->lookahead;
  pthread_mutex_unlock (&run->lock);
  return n;
}

void
zero_run_looked (struct zero_run *run, bool hole_to_end)
{
  pthread_mutex_lock (&run->lock);
  run->lookahead
      = hole_to_end ? MIN (2 * run->lookahead, LOOKAHEAD_MAX) : LOOKAHEAD_FIRST;
  pthread_mutex_unlock (&run->lock);
}
