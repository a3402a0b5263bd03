/* The run of the source known to read as zero (see zero_run.h). */
#include <config.h>

#include "zero_run.h"

void
zero_run_init (struct zero_run *run)
{
  pthread_mutex_init (&run->lock, NULL);
  run->start = run->end = 0;
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
