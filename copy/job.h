/* The state of one copy as a whole, shared by every worker thread: the
 * segments still to hand out, what has been accounted for, and the
 * first failure.  engine.c runs the job; a lane (lane.c) takes segments
 * from it, counts what it did and reports failures to it
 * (lane_recover.c).
 */
#ifndef NBDCP_JOB_H
#define NBDCP_JOB_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "clock.h"
#include "endpoint.h"
#include "op.h"
#include "segment.h"
#include "rate.h"
#include "window.h"
#include "settings.h"
#include "zero_run.h"

/* Held by pointer only: the lane does not reach --blkhash or --resume
   through the job (their features do, feature_*.c). */
struct blkhash;
struct journal;

/* Called a few times a second from the main thread while copying. */
typedef void (*progress_fn) (void *arg, uint64_t done, uint64_t total);

struct job {
  const struct settings *set;
  struct endpoint *src, *dst;
  atomic_uint_fast64_t size; /* UINT64_MAX until a stream ends */
  uint64_t nsegments;
  bool ordered;            /* the destination is a stream */
  const char *zero_buffer; /* for destinations that cannot zero */
  struct blkhash *hash;    /* --blkhash, or NULL */
  struct journal *journal; /* --resume, or NULL: lanes only hand it
                              segments (job_segments_flushed); the main
                              thread writes it (job_wait) */

  atomic_uint_fast64_t next_segment;
  atomic_uint_fast64_t bytes_done; /* written, zeroed or skipped */
  atomic_uint_fast64_t clean_done; /* --bitmap: of those, skipped as clean */
  /* The same per segment (NULL for a stream source), each written only
     by the lane that took the segment and read once the workers have
     ended: every segment must be accounted for exactly, or the copy is
     not reported complete. */
  uint64_t *segment_done;
  struct window window;     /* buffers in flight per lane */
  struct rate_limit rate;   /* --rate, shared by the lanes */
  struct zero_run zero_run; /* of the source, learnt past segments */
  atomic_bool stop;
  atomic_bool abort; /* in-flight requests must be cut off */
  /* An eventfd that becomes readable when the job stops: every worker
     polls it on its ring, so a worker asleep until a time (--rate,
     --retry's back-off, a deadline) wakes at once, whatever its
     endpoints are.  -1 if none. */
  int stop_fd;
  const volatile sig_atomic_t *interrupted;

  pthread_mutex_t lock;           /* guards the fields below */
  pthread_cond_t workers_changed; /* or segments were flushed */
  unsigned workers_running;
  bool failed;
  int error_code; /* errno of the first failure, or 0 */
  char error[1024];
  /* The request that had waited longest when the job was aborted. */
  char stalled_op[64];
  uint64_t stalled_offset, stalled_length;
  int64_t stalled_ms; /* how long it had waited; -1: nothing in flight */
};

/* Record the first failure and stop every lane from issuing more:
 * "SIDE WHAT at offset OFFSET length LENGTH failed: WHY" (without the
 * offset and length when LENGTH is 0).  CODE is the errno, or 0.
 */
void job_fail_code (struct job *job, const char *side, const char *what,
                    uint64_t offset, uint64_t length, const char *why,
                    int code);
/* The message of such a failure, into BUF. */
void job_describe_failure (char *buf, size_t size, const char *side,
                           const char *what, uint64_t offset, uint64_t length,
                           const char *why);
void job_fail (struct job *job, const char *side, const char *what,
               uint64_t offset, uint64_t length, const char *why);
/* A failure that is not one request's: the whole message is TEXT. */
void job_fail_text (struct job *job, const char *text);

/* The side a request of KIND goes to, for messages: "source" or
 * "destination" (the destination is the source of --verify's pass).
 */
static inline const char *
job_side (const struct job *job, enum op_kind kind)
{
  return op_on_source (kind) ? job->src->side : job->dst->side;
}

static inline bool
job_stopped (struct job *job)
{
  return atomic_load_explicit (&job->stop, memory_order_relaxed);
}

/* [OFFSET, OFFSET+BYTES), inside one segment, has been written, zeroed,
 * or left alone because the destination reads as zero there.
 */
void job_count_done (struct job *job, uint64_t offset, uint64_t bytes);

/* A lane is about to copy SEGMENT again (--retry): forget what was
 * counted for it.  Returns those bytes.
 */
uint64_t job_uncount (struct job *job, uint64_t segment);

/* The same, for a range left alone because the --bitmap says it is
 * clean: it counts as done, but not as work for -p.
 */
void job_count_clean (struct job *job, uint64_t offset, uint64_t bytes);

/* What -p shows: bytes done and bytes to do (0: not known).  With
 * --bitmap only dirty bytes are work: clean ones cost nothing.
 */
void job_progress (struct job *job, uint64_t *done, uint64_t *total);

/* A lane's destination connection was flushed after SEGMENTS[0..N)
 * were finished: hand them to --resume's journal and wake the main
 * thread, which writes it.  No lock, no allocation.
 */
void job_segments_flushed (struct job *job, const uint64_t *segments,
                           unsigned n);

/* Once the workers have ended: were all the job's bytes accounted for
 * exactly once, DONE_BYTES in all?  -1 after error_set() if not.
 */
int job_check_accounting (const struct job *job, uint64_t done_bytes);

/* From the main thread, once the workers have started: wait for them,
 * calling PROGRESS now and then; turn a signal into a failure, cut the
 * connections once the job is aborted, and write --resume's journal
 * when lanes have handed it flushed segments (here, so that no worker
 * waits for fdatasync; a failure to write it fails the copy).
 */
void job_wait (struct job *job, progress_fn progress, void *progress_arg);

#endif
