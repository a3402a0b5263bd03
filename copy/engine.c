/* The copy engine.
 *
 * The disk is cut into SEGMENT_SIZE segments, taken on demand from a
 * shared counter.  Copying happens in lanes: a lane is one source
 * connection paired with one destination connection, with its own
 * buffer pool and its own list of extents.  Worker threads own one or
 * more lanes each, and one io_uring that is their only wait point.
 *
 * A lane works through its current segment in order:
 *   extents -> zero extents become zero requests on the destination
 *              (or nothing, with --destination-is-zero);
 *              data extents are read, request_size at a time;
 *   read done -> zero detection splits the buffer into runs; data runs
 *              are written, zero runs are zeroed;
 *   all of a buffer's writes done -> the buffer goes back to the pool.
 * When no segments are left and nothing is in flight, the lane flushes
 * its destination connection.  Every connection is flushed (even one
 * that had nothing to write) because, without multi-conn, a flush only
 * covers the writes made on its own connection.
 *
 * Streams (a pipe, stdin, stdout) get one lane.  A stream destination
 * makes the copy ordered: nothing new is issued while anything is in
 * flight, so the stream sees every byte in order.  A stream source
 * needs no such care, because its reads finish inside the call, in
 * order; the writes they feed can overlap.  A stream source has no
 * size: the copy ends where a short read says the stream ended.
 *
 * Requests complete through op_complete(), called from inside the
 * endpoints' event handling.  It only queues the op on the worker's
 * done list; the worker acts on it afterwards, outside any libnbd
 * callback, so issuing new requests never re-enters libnbd.
 *
 * On any failure the job is stopped: no new requests anywhere, what is
 * in flight is drained, no flush, and engine_run returns -1 with the
 * first failure's message.
 *
 * Nothing here allocates once the workers have started.  What a lane
 * does is in lane.c; this file has the threads, their event loops, the
 * timeouts and the job as a whole.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <liburing.h>

#include "error.h"
#include "job.h"
#include "minmax.h"
#include "ring.h"

void
job_fail_code (struct job *job, const char *side, const char *what,
               uint64_t offset, uint64_t length, const char *why, int code)
{
  pthread_mutex_lock (&job->lock);
  if (!job->failed)
    job->error_code = code;
  if (!job->failed && length == 0) /* flush, or the worker itself */
    snprintf (job->error, sizeof job->error, "%s %s failed: %s", side, what,
              why);
  else if (!job->failed)
    snprintf (job->error, sizeof job->error,
              "%s %s at offset %" PRIu64 " length %" PRIu64 " failed: %s", side,
              what, offset, length, why);
  job->failed = true;
  pthread_mutex_unlock (&job->lock);
  atomic_store (&job->stop, true);
}

void
job_fail_text (struct job *job, const char *text)
{
  pthread_mutex_lock (&job->lock);
  if (!job->failed)
    snprintf (job->error, sizeof job->error, "%s", text);
  job->failed = true;
  pthread_mutex_unlock (&job->lock);
  atomic_store (&job->stop, true);
}

void
job_fail (struct job *job, const char *side, const char *what, uint64_t offset,
          uint64_t length, const char *why)
{
  job_fail_code (job, side, what, offset, length, why, 0);
}

static void
worker_process_done (struct worker *w)
{
  while (w->done_head) {
    struct op *op = w->done_head;

    w->done_head = op->next;
    if (!w->done_head)
      w->done_tail = &w->done_head;
    lane_op_done (op->lane, op);
  }
}

/* --timeout: fail the copy if a request has had no reply for too long,
 * and have every connection cut off so the copy can end.
 */
static void
worker_check_timeouts (struct worker *w)
{
  struct job *job = w->job;
  int64_t now = now_ms (), limit = job->opts->timeout_ms;

  for (unsigned i = 0; i < w->nlanes; i++) {
    const struct op *op = lane_oldest_op (w->lanes[i]);
    char why[64];

    if (!op || now - op->sent_ms < limit)
      continue;
    snprintf (why, sizeof why, "no reply in %.1f seconds (--timeout)",
              limit / 1000.0);
    const char *name = op_name (op);
    const char *space = strchr (name, ' ');
    char side[16];
    snprintf (side, sizeof side, "%.*s", (int) (space - name), name);
    job_fail_code (job, side, space + 1, op->offset, op->length, why,
                   ETIMEDOUT);
    atomic_store (&job->abort, true);
    return;
  }
}

/* Once the job is aborted, note this worker's longest-waiting request,
 * before the cut connections fail them all, so that an interrupted copy
 * can say what it had been waiting for.
 */
static void
worker_note_stall (struct worker *w)
{
  struct job *job = w->job;
  int64_t now = now_ms ();

  w->stall_noted = true;
  for (unsigned i = 0; i < w->nlanes; i++) {
    const struct op *op = lane_oldest_op (w->lanes[i]);

    if (!op)
      continue;
    pthread_mutex_lock (&job->lock);
    if (now - op->sent_ms > job->stalled_ms) {
      job->stalled_ms = now - op->sent_ms;
      snprintf (job->stalled_op, sizeof job->stalled_op, "%s", op_name (op));
      job->stalled_offset = op->offset;
      job->stalled_length = op->length;
    }
    pthread_mutex_unlock (&job->lock);
  }
}

static void
worker_wait (struct worker *w)
{
  struct io_uring *ring = &w->ring;
  struct io_uring_cqe *cqe;
  unsigned head, seen = 0;
  int64_t timeout_ms = w->job->opts->timeout_ms;
  int r;

  if (timeout_ms) {
    /* Wake at least every quarter of the timeout to check on requests. */
    int64_t tick = MAX (timeout_ms / 4, (int64_t) 10);
    struct __kernel_timespec ts = {
      .tv_sec = tick / 1000,
      .tv_nsec = (tick % 1000) * 1000000,
    };
    r = io_uring_submit_and_wait_timeout (ring, &cqe, 1, &ts, NULL);
    if (r == -ETIME) {
      worker_check_timeouts (w);
      return;
    }
  }
  else
    r = io_uring_submit_and_wait (ring, 1);
  if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME) {
    job_fail (w->job, "worker", "io_uring wait", 0, 0, strerror (-r));
    return;
  }
  io_uring_for_each_cqe (ring, head, cqe)
  {
    struct ring_event *ev = io_uring_cqe_get_data (cqe);
    ev->handle (ev, cqe->res);
    seen++;
  }
  io_uring_cq_advance (ring, seen);
}

static void *
worker_run (void *arg)
{
  struct worker *w = arg;
  struct job *job = w->job;

  for (;;) {
    bool all_done = true;

    worker_process_done (w);
    for (unsigned i = 0; i < w->nlanes; i++) {
      lane_issue (w->lanes[i]);
      lane_check_finished (w->lanes[i]);
      all_done &= w->lanes[i]->state == LANE_DONE;
    }
    if (w->done_head)
      continue; /* requests that finished at once */
    if (all_done)
      break;
    for (unsigned i = 0; i < w->nlanes; i++) {
      struct lane *l = w->lanes[i];
      job->src->ops->arm (l->src, &w->ring);
      job->dst->ops->arm (l->dst, &w->ring);
    }
    worker_wait (w);
    if (atomic_load (&job->abort) && !w->stall_noted)
      worker_note_stall (w);
  }

  pthread_mutex_lock (&job->lock);
  job->workers_running--;
  pthread_cond_signal (&job->workers_changed);
  pthread_mutex_unlock (&job->lock);
  return NULL;
}

/* Let endpoints that do their I/O on the ring know the ring, and
 * register the lanes' pools with it as fixed buffers (one per lane) so
 * the kernel maps them once rather than on every request.  If the
 * kernel refuses (memory limits), requests simply go unregistered.
 */
static void
worker_attach (struct worker *w)
{
  struct job *job = w->job;
  struct iovec *iov;

  if (!job->src->ops->attach && !job->dst->ops->attach)
    return;
  iov = calloc (w->nlanes, sizeof *iov);
  if (!iov)
    return; /* attach needs it; engine_run's caller has failed already */
  for (unsigned i = 0; i < w->nlanes; i++) {
    iov[i].iov_base = w->lanes[i]->pool.base;
    iov[i].iov_len = w->lanes[i]->pool.size * w->lanes[i]->pool.count;
  }
  w->buffers_registered
      = io_uring_register_buffers (&w->ring, iov, w->nlanes) == 0;
  for (unsigned i = 0; i < w->nlanes; i++) {
    struct lane *l = w->lanes[i];
    int index = w->buffers_registered ? (int) i : -1;
    if (job->src->ops->attach)
      job->src->ops->attach (l->src, &w->ring, iov[i].iov_base, iov[i].iov_len,
                             index);
    if (job->dst->ops->attach)
      job->dst->ops->attach (l->dst, &w->ring, iov[i].iov_base, iov[i].iov_len,
                             index);
  }
  free (iov);
}

static void
stats_add (struct copy_stats *sum, const struct copy_stats *s)
{
  sum->data_bytes += s->data_bytes;
  sum->zero_bytes += s->zero_bytes;
  sum->skipped_bytes += s->skipped_bytes;
  sum->hole_bytes += s->hole_bytes;
  sum->requests += s->requests;
}

/* Wait for the workers, calling PROGRESS now and then. */
static void
job_abort_connections (struct job *job)
{
  struct endpoint *eps[] = { job->src, job->dst };

  for (unsigned e = 0; e < 2; e++)
    if (eps[e]->ops->abort)
      for (unsigned i = 0; i < eps[e]->nconns; i++)
        eps[e]->ops->abort (eps[e]->conns[i]);
}

static void
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
    if (atomic_load (&job->abort) && !aborted) {
      /* Requests in flight may never be answered: cut every connection
         so they fail and the workers can finish. */
      job_abort_connections (job);
      aborted = true;
    }
    if (progress) {
      pthread_mutex_unlock (&job->lock);
      uint64_t total = atomic_load (&job->size);
      progress (progress_arg, atomic_load (&job->bytes_done),
                total == UINT64_MAX ? 0 : total);
      pthread_mutex_lock (&job->lock);
    }
  }
  pthread_mutex_unlock (&job->lock);
}

/* Every byte of the copy must have been written, zeroed or skipped
 * exactly once: check each segment's count and the totals, so that a
 * bug that loses a range can never end in success.
 */
static int
job_check_accounting (const struct job *job, const struct copy_stats *stats)
{
  uint64_t size = atomic_load (&job->size);
  uint64_t sum = stats->data_bytes + stats->zero_bytes + stats->skipped_bytes;

  for (uint64_t i = 0; job->segment_done && i < job->nsegments; i++) {
    uint64_t start = i * SEGMENT_SIZE;
    uint64_t len = MIN (SEGMENT_SIZE, size - start);

    if (job->segment_done[i] != len) {
      error_set ("internal error: bytes %" PRIu64 " to %" PRIu64
                 " of the copy were not all written, zeroed or skipped "
                 "(%" PRIu64 " bytes accounted of %" PRIu64 ")",
                 start, start + len, job->segment_done[i], len);
      return -1;
    }
  }
  if (sum != size || atomic_load (&job->bytes_done) != size) {
    error_set ("internal error: %" PRIu64 " bytes written, zeroed or "
               "skipped, but the copy is %" PRIu64 " bytes",
               sum, size);
    return -1;
  }
  return 0;
}

/* An interrupted copy says what it was waiting for if a request had
   waited this long: the server may be stuck (see --timeout). */
#define STALL_REPORT_MS 5000

static const char *
stalled_where (const struct job *job, char *buf, size_t size)
{
  if (job->stalled_length == 0)
    return ""; /* a flush */
  snprintf (buf, size, " at offset %" PRIu64 " length %" PRIu64,
            job->stalled_offset, job->stalled_length);
  return buf;
}

int
engine_run (const struct options *opts, struct endpoint *src,
            struct endpoint *dst, uint64_t size, progress_fn progress,
            void *progress_arg, const volatile sig_atomic_t *interrupted,
            struct copy_stats *stats)
{
  struct job job = {
    .opts = opts,
    .src = src,
    .dst = dst,
    .size = size,
    .nsegments = size == UINT64_MAX ? UINT64_MAX
                                    : (size + SEGMENT_SIZE - 1) / SEGMENT_SIZE,
    .ordered = dst->caps.stream,
    .interrupted = interrupted,
    .request_size = opts->request_size,
    .queue_size = opts->queue_size,
    .block = MAX (endpoint_min_block (src), endpoint_min_block (dst)),
    .stalled_ms = -1,
  };
  unsigned nlanes = MIN (src->nconns, dst->nconns);
  unsigned nworkers = MIN (opts->threads, nlanes);
  struct lane *lanes = calloc (nlanes, sizeof *lanes);
  struct worker *workers = calloc (nworkers, sizeof *workers);
  struct lane **lane_ptrs = calloc (nlanes, sizeof *lane_ptrs);
  char *zero_buffer = NULL;
  char where[64];
  unsigned started = 0;
  int ret = -1;

  memset (stats, 0, sizeof *stats);
  pthread_mutex_init (&job.lock, NULL);
  pthread_cond_init (&job.workers_changed, NULL);
  if (dst->caps.max_request)
    job.zero_max = dst->caps.max_request / job.block * job.block;
  if (size != UINT64_MAX)
    job.segment_done
        = calloc (MAX (job.nsegments, (uint64_t) 1), sizeof *job.segment_done);
  if (!lanes || !workers || !lane_ptrs
      || (size != UINT64_MAX && !job.segment_done)) {
    error_set ("out of memory");
    goto out;
  }
  if (!dst->caps.can_zero && !opts->destination_is_zero) {
    zero_buffer = calloc (1, job.request_size);
    if (!zero_buffer) {
      error_set ("out of memory");
      goto out;
    }
    job.zero_buffer = zero_buffer;
  }

  for (unsigned i = 0; i < nlanes; i++)
    if (lane_init (&lanes[i], i, &job, src->conns[i], dst->conns[i]) == -1)
      goto out;

  /* Lanes are dealt out to workers round robin; each worker's lanes
     are a contiguous slice of lane_ptrs. */
  for (unsigned wi = 0, k = 0; wi < nworkers; wi++) {
    struct worker *w = &workers[wi];
    unsigned entries;

    w->job = &job;
    w->lanes = &lane_ptrs[k];
    for (unsigned i = wi; i < nlanes; i += nworkers) {
      lanes[i].worker = w;
      lane_ptrs[k++] = &lanes[i];
      w->nlanes++;
    }
    w->done_tail = &w->done_head;
    /* Room for a poll per direction per connection, and for endpoints
       that submit their requests to the ring. */
    entries = MAX (64u, 4 * w->nlanes * (opts->requests + 2));
    entries = MIN (entries, 4096u);
    int r = io_uring_queue_init (entries, &w->ring, 0);
    if (r < 0) {
      error_set ("io_uring_queue_init: %s", strerror (-r));
      goto out;
    }
    w->ring_ready = true;
    worker_attach (w);
  }

  job.workers_running = nworkers;
  for (started = 0; started < nworkers; started++) {
    int r = pthread_create (&workers[started].thread, NULL, worker_run,
                            &workers[started]);
    if (r != 0) {
      job_fail (&job, "worker", "thread start", 0, 0, strerror (r));
      pthread_mutex_lock (&job.lock);
      job.workers_running -= nworkers - started;
      pthread_mutex_unlock (&job.lock);
      break;
    }
  }
  job_wait (&job, progress, progress_arg);
  for (unsigned i = 0; i < started; i++)
    pthread_join (workers[i].thread, NULL);

  for (unsigned i = 0; i < nlanes; i++)
    stats_add (stats, &lanes[i].stats);
  stats->lanes = nlanes;
  stats->workers = nworkers;
  stats->total_bytes = atomic_load (&job.size);
  if (progress)
    progress (progress_arg, atomic_load (&job.bytes_done), stats->total_bytes);

  stats->error = job.error_code;
  if (job.failed && interrupted && *interrupted
      && job.stalled_ms >= STALL_REPORT_MS)
    error_set ("%s; the oldest request, %s%s, had waited %.1f s for a reply",
               job.error, job.stalled_op,
               stalled_where (&job, where, sizeof where),
               job.stalled_ms / 1000.0);
  else if (job.failed)
    error_set ("%s", job.error);
  else if (job_check_accounting (&job, stats) == 0)
    ret = 0;

out:
  for (unsigned i = 0; workers && i < nworkers; i++)
    if (workers[i].ring_ready)
      io_uring_queue_exit (&workers[i].ring);
  /* Lanes are zeroed by calloc, so destroying unused ones is safe. */
  for (unsigned i = 0; lanes && i < nlanes; i++)
    lane_destroy (&lanes[i]);
  free (lanes);
  free (workers);
  free (lane_ptrs);
  free (zero_buffer);
  free (job.segment_done);
  pthread_cond_destroy (&job.workers_changed);
  pthread_mutex_destroy (&job.lock);
  return ret;
}
