/* The job as a whole (see job.h): its first failure, the accounting
 * that proves a copy complete, and the main thread's wait for it.
 */
#include <config.h>

#include <unistd.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "job.h"
#include "journal.h"
#include "minmax.h"

void
job_describe_failure (char *buf, size_t size, const char *side,
                      const char *what, uint64_t offset, uint64_t length,
                      const char *why)
{
  if (length == 0) /* flush, or the worker itself */
    snprintf (buf, size, "%s %s failed: %s", side, what, why);
  else
    snprintf (buf, size,
              "%s %s at offset %" PRIu64 " length %" PRIu64 " failed: %s", side,
              what, offset, length, why);
}

/* The first failure's TEXT and CODE are kept; any failure stops the
 * lanes.
 */
static void
job_fail_text_code (struct job *job, const char *text, int code)
{
  bool first;

  pthread_mutex_lock (&job->lock);
  first = !job->failed;
  if (first) {
    job->error_code = code;
    snprintf (job->error, sizeof job->error, "%s", text);
  }
  job->failed = true;
  pthread_mutex_unlock (&job->lock);
  atomic_store (&job->stop, true);
  if (first && job->stop_fd >= 0) {
    uint64_t one = 1;
    /* Cannot fail but for overflow, after 2^64 - 1 stops. */
    (void) !write (job->stop_fd, &one, sizeof one);
  }
}

void
job_fail_code (struct job *job, const char *side, const char *what,
               uint64_t offset, uint64_t length, const char *why, int code)
{
  char text[sizeof job->error];

  job_describe_failure (text, sizeof text, side, what, offset, length, why);
  job_fail_text_code (job, text, code);
}

void
job_fail (struct job *job, const char *side, const char *what, uint64_t offset,
          uint64_t length, const char *why)
{
  job_fail_code (job, side, what, offset, length, why, 0);
}

void
job_fail_text (struct job *job, const char *text)
{
  job_fail_text_code (job, text, 0);
}

void
job_segments_flushed (struct job *job, const uint64_t *segments, unsigned n)
{
  journal_hand_in (job->journal, segments, n);
  /* Without the lock: at worst the signal comes while job_wait is
     between its checks, and the journal is written at its next
     wake-up, at most 200 ms later. */
  pthread_cond_signal (&job->workers_changed);
}

void
job_count_done (struct job *job, uint64_t offset, uint64_t bytes)
{
  atomic_fetch_add_explicit (&job->bytes_done, bytes, memory_order_relaxed);
  if (job->segment_done)
    job->segment_done[offset / SEGMENT_SIZE] += bytes;
}

uint64_t
job_uncount (struct job *job, uint64_t segment)
{
  uint64_t bytes = job->segment_done[segment];

  job->segment_done[segment] = 0;
  atomic_fetch_sub (&job->bytes_done, bytes);
  return bytes;
}

void
job_count_clean (struct job *job, uint64_t offset, uint64_t bytes)
{
  job_count_done (job, offset, bytes);
  atomic_fetch_add_explicit (&job->clean_done, bytes, memory_order_relaxed);
}

void
job_progress (struct job *job, uint64_t *done, uint64_t *total)
{
  /* Relaxed counters read one after the other: the difference may be
     a little off while the copy runs, so it is kept in bounds. */
  uint64_t clean = atomic_load (&job->clean_done);
  uint64_t all = atomic_load (&job->bytes_done);

  *done = all - MIN (clean, all);
  *total = atomic_load (&job->size);
  if (*total == UINT64_MAX)
    *total = 0; /* a stream source, not ended yet */
  if (job->set->bitmap) {
    *total = job->set->dirty_bytes;
    *done = MIN (*done, *total);
  }
}

int
job_check_accounting (const struct job *job, uint64_t done_bytes)
{
  uint64_t size = atomic_load (&job->size);

  for (uint64_t i = 0; job->segment_done && i < job->nsegments; i++) {
    uint64_t start = segment_start (i);
    uint64_t len = segment_length (size, i);

    if (job->segment_done[i] != len) {
      error_set ("internal error: bytes %" PRIu64 " to %" PRIu64
                 " of the copy were not all written, zeroed or skipped "
                 "(%" PRIu64 " bytes accounted of %" PRIu64 ")",
                 start, start + len, job->segment_done[i], len);
      return -1;
    }
  }
  if (done_bytes != size || atomic_load (&job->bytes_done) != size) {
    error_set ("internal error: %" PRIu64 " bytes written, zeroed or "
               "skipped, but the copy is %" PRIu64 " bytes",
               done_bytes, size);
    return -1;
  }
  return 0;
}

/* Make every request in flight fail soon (see endpoint abort). */
static void
job_abort_connections (struct job *job)
{
  struct endpoint *eps[] = { job->src, job->dst };

  for (unsigned e = 0; e < 2; e++)
    if (eps[e]->ops->abort)
      for (unsigned i = 0; i < eps[e]->nconns; i++)
        eps[e]->ops->abort (eps[e]->conns[i]);
}

void
job_wait (struct job *job, progress_fn progress, void *progress_arg)
{
  bool aborted = false;

  pthread_mutex_lock (&job->lock);
  while (job->workers_running > 0) {
    struct timespec ts;

    clock_gettime (CLOCK_REALTIME, &ts);
    ts.tv_nsec += 200 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait (&job->workers_changed, &job->lock, &ts);
    if (job->interrupted && *job->interrupted && !atomic_load (&job->abort)) {
      char why[64];
      snprintf (why, sizeof why, "interrupted by signal %d (%s)",
                (int) *job->interrupted, strsignal (*job->interrupted));
      pthread_mutex_unlock (&job->lock);
      job_fail_text (job, why);
      atomic_store (&job->abort, true);
      pthread_mutex_lock (&job->lock);
    }
    if (job->journal && journal_pending (job->journal)) {
      pthread_mutex_unlock (&job->lock);
      if (journal_write (job->journal) == -1)
        job_fail_text (job, error_get ());
      pthread_mutex_lock (&job->lock);
    }
    if (atomic_load (&job->abort) && !aborted) {
      /* Requests in flight may never be answered: cut every connection
         so they fail and the workers can finish. */
      job_abort_connections (job);
      aborted = true;
    }
    if (progress) {
      uint64_t done, total;
      pthread_mutex_unlock (&job->lock);
      job_progress (job, &done, &total);
      progress (progress_arg, done, total);
      pthread_mutex_lock (&job->lock);
    }
  }
  pthread_mutex_unlock (&job->lock);
}
