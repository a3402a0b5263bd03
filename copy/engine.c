/* The copy engine.
 *
 * The disk is cut into SEGMENT_SIZE segments, taken on demand from a
 * shared counter.  Copying happens in lanes: a lane is one source
 * connection paired with one destination connection, with its own
 * buffer pool and its own list of extents.  Each lane has a worker
 * thread of its own, whose io_uring is its only wait point: threads
 * and connections are cut to the same number (options.c, as nbdcopy
 * does), so there is never a lane without a thread to drive it.
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
 * Requests complete through op_complete() (op.c), called from inside
 * the endpoints' event handling.  It only queues the op on the worker's
 * done queue; the worker acts on it afterwards, outside any libnbd
 * callback, so issuing new requests never re-enters libnbd.
 *
 * On any failure the job is stopped: no new requests anywhere, what is
 * in flight is drained, no flush, and engine_run returns -1 with the
 * first failure's message.
 *
 * Nothing here allocates once the workers have started.  What a lane
 * does is in lane.c (its recovery from failures in lane_recover.c, the
 * features that ride along in feature_*.c), the job's shared state,
 * accounting and the main thread's wait for the workers in job.c, a
 * worker's event loop and the timeouts in worker.c; this file sets up
 * the lanes, their rings and threads, adds up the result and takes it
 * all down.
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
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <liburing.h>

#include "engine.h"
#include "error.h"
#include "feature_list.h"
#include "job.h"
#include "lane.h"
#include "minmax.h"
#include "ring.h"
#include "ring_fence.h"
#include "worker.h"

/* Everything engine_run sets up, so that it can be taken down in one
 * place however far set-up got.
 */
struct engine {
  struct job job;
  struct lane *lanes;
  struct worker *workers; /* one per lane */
  unsigned nlanes;
  unsigned started; /* threads */
  char *zero_buffer;
  struct ring_fence fence; /* tells when the kernel has freed the rings */
};

/* Let endpoints that do their I/O on the ring know the ring, and
 * register the lane's pool with it as a fixed buffer so the kernel
 * maps it once rather than on every request.  If the kernel refuses
 * (memory limits), requests simply go unregistered.
 */
static void
worker_attach (struct worker *w, struct ring_fence *fence)
{
  struct job *job = w->job;
  struct lane *l = w->lane;
  struct iovec iov = {
    .iov_base = l->pool.base,
    .iov_len = l->pool.size * l->pool.count,
  };
  int index;

  if (!job->src->ops->attach && !job->dst->ops->attach)
    return;
  w->buffers_registered = io_uring_register_buffers (&w->ring, &iov, 1) == 0;
  index = w->buffers_registered ? 0 : -1;
  ring_fence_add (fence, &w->ring);
  if (job->src->ops->attach)
    job->src->ops->attach (l->src, &w->ring, iov.iov_base, iov.iov_len, index);
  if (job->dst->ops->attach)
    job->dst->ops->attach (l->dst, &w->ring, iov.iov_base, iov.iov_len, index);
}

/* An interrupted copy says what it was waiting for if a request had
   waited this long: the server may be stuck (see --timeout). */
#define STALL_REPORT_MS 5000

/* How long the end of a copy waits for the kernel to free the rings
   (ring_fence.c): tens of milliseconds, unless a request is stuck in
   the kernel, and then the file stays busy whatever nbdcp does. */
#define RING_FENCE_WAIT_MS 500

static const char *
stalled_where (const struct job *job, char *buf, size_t size)
{
  if (job->stalled_length == 0)
    return ""; /* a flush */
  snprintf (buf, size, " at offset %" PRIu64 " length %" PRIu64,
            job->stalled_offset, job->stalled_length);
  return buf;
}

/* Allocate the lanes, and a worker with its ring for each.  Returns -1
 * after error_set().
 */
static int
engine_setup (struct engine *e, const struct settings *set)
{
  struct job *job = &e->job;

  e->nlanes = set->lanes;
  /* Only endpoints that attach to the ring give it their files. */
  if (job->src->ops->attach || job->dst->ops->attach)
    ring_fence_init (&e->fence);
  e->lanes = calloc (e->nlanes, sizeof *e->lanes);
  e->workers = calloc (e->nlanes, sizeof *e->workers);
  if (job->nsegments != UINT64_MAX)
    job->segment_done = calloc (MAX (job->nsegments, (uint64_t) 1),
                                sizeof *job->segment_done);
  if (!job->dst->caps.can_zero && !set->destination_is_zero)
    job->zero_buffer = e->zero_buffer = calloc (1, set->request_size);
  if (set->hash_block) {
    /* Segments a lane may be hashing at once: the one it issues from,
       those its reads in flight reach back to, and one that completed
       early and waits for its turn. */
    unsigned nslots = e->nlanes * (3 + set->queue_size / SEGMENT_SIZE);
    uint64_t size = atomic_load (&job->size);
    /* Small blocks make big slots (16 MiB for sha512/512, 128 MiB for
       blocks smaller than a digest): fewer slots then, and lanes wait
       for them more often (see blkhash.c). */
    uint64_t per_slot
        = MAX (blkhash_memory (set->hash_algo, set->hash_block, size, 1),
               (uint64_t) 1);
    uint64_t fit = MAX (BLKHASH_MAX_MEMORY / per_slot, (uint64_t) 2);
    if (nslots > fit)
      nslots = fit;
    job->hash = blkhash_new (set->hash_algo, set->hash_block, size, nslots,
                             job->nsegments);
    if (!job->hash)
      return -1;
    note (set->verbose,
          "--blkhash %s/%" PRIu32 ": %u digest slots, %" PRIu64 " bytes",
          blkhash_algo_name (set->hash_algo), set->hash_block, nslots,
          blkhash_memory (set->hash_algo, set->hash_block, size, nslots));
  }
  if (!e->lanes || !e->workers
      || (job->nsegments != UINT64_MAX && !job->segment_done)
      || (!job->dst->caps.can_zero && !set->destination_is_zero
          && !e->zero_buffer)) {
    error_set ("out of memory");
    return -1;
  }

  for (unsigned i = 0; i < e->nlanes; i++) {
    struct worker *w = &e->workers[i];
    unsigned entries;
    int r;

    w->job = job;
    w->lane = &e->lanes[i];
    op_queue_init (&w->done);
    if (lane_init (w->lane, i, job, &w->done, job->src->conns[i],
                   job->dst->conns[i])
            == -1
        || features_attach (&w->lane->features, job, &w->lane->stats) == -1)
      return -1;
    /* Room for a poll per direction per connection, and for endpoints
       that submit their requests to the ring. */
    entries = MAX (64u, 4 * (set->requests + 2));
    entries = MIN (entries, 4096u);
    r = ring_init (&w->ring, entries, &w->ring_disabled);
    if (r < 0) {
      error_set ("io_uring_queue_init: %s", strerror (-r));
      return -1;
    }
    w->ring_ready = true;
    if (i == 0)
      note (set->verbose, "io_uring: %s",
            w->ring_disabled ? "one issuer, deferred task work"
                             : "task work by interrupt (an older kernel)");
    worker_attach (w, &e->fence);
  }
  return 0;
}

/* Start the worker threads.  One that cannot start fails the job, and
 * the others stop at once.
 */
static void
engine_start (struct engine *e)
{
  struct job *job = &e->job;

  job->workers_running = e->nlanes;
  for (e->started = 0; e->started < e->nlanes; e->started++) {
    struct worker *w = &e->workers[e->started];
    int r = pthread_create (&w->thread, NULL, worker_run, w);

    if (r != 0) {
      job_fail (job, "worker", "thread start", 0, 0, strerror (r));
      pthread_mutex_lock (&job->lock);
      job->workers_running -= e->nlanes - e->started;
      pthread_mutex_unlock (&job->lock);
      break;
    }
  }
}

/* Once the workers have ended: add up the lanes' counts, and decide.
 * Returns 0 only when the job did not fail and every byte is accounted
 * for; -1 after error_set() otherwise.
 */
static int
engine_result (struct engine *e, struct copy_stats *stats)
{
  struct job *job = &e->job;
  char where[64];

  for (unsigned i = 0; i < e->nlanes; i++)
    stats_add (stats, &e->lanes[i].stats);
  stats->lanes = e->nlanes;
  stats->workers = e->nlanes; /* one thread per lane */
  stats->total_bytes = atomic_load (&job->size);
  stats->error = job->error_code;

  if (job->failed && job->interrupted && *job->interrupted
      && job->stalled_ms >= STALL_REPORT_MS) {
    error_set ("%s; the oldest request, %s%s, had waited %.1f s for a reply",
               job->error, job->stalled_op,
               stalled_where (job, where, sizeof where),
               job->stalled_ms / 1000.0);
    return -1;
  }
  if (job->failed) {
    error_set ("%s", job->error);
    return -1;
  }
  return job_check_accounting (job, stats->data_bytes + stats->zero_bytes
                                        + stats->skipped_bytes
                                        + stats->resumed_bytes);
}

/* Once the workers have ended: what the lanes flushed last goes into
 * --resume's journal, whether or not the copy succeeded (a rerun after
 * a failure then copies less; after a success main removes the file).
 * RET is the copy's result so far; a failure to write makes it -1,
 * and a copy that had already failed keeps its message first.
 */
static int
engine_write_journal (struct job *job, int ret)
{
  char failure[1024], why[1024];

  if (!job->journal)
    return ret;
  if (ret == -1)
    snprintf (failure, sizeof failure, "%s", error_get ());
  if (journal_write (job->journal) == 0)
    return ret;
  if (ret == -1) {
    snprintf (why, sizeof why, "%s", error_get ());
    error_set ("%s; and %s", failure, why);
  }
  return -1;
}

/* Whether a lane gave up on a question that its destination
 * connection may still answer, into the lane's memory (lane.h).
 */
static bool
engine_late_replies (const struct engine *e)
{
  for (unsigned i = 0; e->lanes && i < e->nlanes; i++)
    if (lane_has_late_reply (&e->lanes[i]))
      return true;
  return false;
}

/* Once the workers have ended: a destination that left a lane's
 * question about where it reads as zero unanswered (lane.c) is not
 * asked for block status again: --verify's pass, which reads it back,
 * would wait on the same silence, so it reads everything instead.
 */
static void
engine_forget_unanswering_destination (struct engine *e)
{
  for (unsigned i = 0; i < e->nlanes; i++)
    if (e->lanes[i].dest_zero_given_up) {
      e->job.dst->caps.can_extents = false;
      note (e->job.set->verbose,
            "the destination left block status unanswered: it is not "
            "asked again (--verify reads all of it back)");
      return;
    }
}

static void
engine_teardown (struct engine *e)
{
  struct endpoint *eps[] = { e->job.src, e->job.dst };

  /* The connections outlive the rings (--verify reads the destination
     back on new ones): they must forget these. */
  for (unsigned k = 0; k < 2; k++)
    for (unsigned i = 0; eps[k]->ops->detach && i < eps[k]->nconns; i++)
      eps[k]->ops->detach (eps[k]->conns[i]);
  for (unsigned i = 0; e->workers && i < e->nlanes; i++)
    if (e->workers[i].ring_ready)
      io_uring_queue_exit (&e->workers[i].ring);
  /* Before the endpoints close their files (ring_fence.c). */
  if (!ring_fence_wait (&e->fence, RING_FENCE_WAIT_MS, e->job.interrupted))
    note (e->job.set->verbose,
          "the kernel had not freed the rings (after at most %d ms): a "
          "file may stay in use for a moment after nbdcp exits",
          RING_FENCE_WAIT_MS);
  /* Lanes are zeroed by calloc, so destroying unused ones is safe. */
  for (unsigned i = 0; e->lanes && i < e->nlanes; i++)
    lane_destroy (&e->lanes[i]);
  if (engine_late_replies (e))
    endpoint_keep_until_closed (e->job.dst, e->lanes);
  else
    free (e->lanes);
  free (e->workers);
  free (e->zero_buffer);
  free (e->job.segment_done);
  blkhash_free (e->job.hash);
  if (e->job.stop_fd >= 0)
    close (e->job.stop_fd); /* after the rings that polled it */
  pthread_cond_destroy (&e->job.workers_changed);
  pthread_mutex_destroy (&e->job.lock);
  zero_run_destroy (&e->job.zero_run);
  if (e->job.window.adaptive)
    note (e->job.set->verbose,
          "in-flight window: %u of %u buffers per connection at the end, "
          "%u changes",
          atomic_load (&e->job.window.limit), e->job.window.max,
          e->job.window.changes);
  window_destroy (&e->job.window);
}

int
engine_run (const struct engine_params *p)
{
  const struct settings *set = p->set;
  struct copy_stats *stats = p->stats;
  struct engine e = {
    .job = {
      .set = set,
      .src = p->src,
      .dst = p->dst,
      .size = p->size,
      .nsegments = p->size == UINT64_MAX
                       ? UINT64_MAX
                       : segment_count (p->size),
      .ordered = p->dst->caps.stream,
      .interrupted = p->interrupted,
      .stalled_ms = -1,
      .journal = p->journal,
    },
    .fence = RING_FENCE_NONE,
  };
  int ret = -1;

  memset (stats, 0, sizeof *stats);
  e.job.stop_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e.job.stop_fd == -1) {
    error_set ("eventfd: %s", strerror (errno));
    return -1;
  }
  pthread_mutex_init (&e.job.lock, NULL);
  pthread_cond_init (&e.job.workers_changed, NULL);
  zero_run_init (&e.job.zero_run);
  rate_init (&e.job.rate, set->rate);
  window_init (&e.job.window, set->lanes, lane_buffers (set),
               set->adaptive_window);
  if (engine_setup (&e, set) == 0) {
    engine_start (&e);
    job_wait (&e.job, p->progress, p->progress_arg);
    for (unsigned i = 0; i < e.started; i++)
      pthread_join (e.workers[i].thread, NULL);
    engine_forget_unanswering_destination (&e);
    ret = engine_result (&e, stats);
    ret = engine_write_journal (&e.job, ret);
    if (ret == 0 && e.job.hash
        && blkhash_finish (e.job.hash, stats->total_bytes, p->hash_out) == -1)
      ret = -1;
    if (p->progress) {
      uint64_t done, total;
      job_progress (&e.job, &done, &total);
      p->progress (p->progress_arg, done, total);
    }
  }
  if (p->hash && ret == 0) {
    *p->hash = e.job.hash;
    e.job.hash = NULL;
  }
  engine_teardown (&e);
  return ret;
}
