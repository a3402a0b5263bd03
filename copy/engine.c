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
 * Nothing here allocates once the workers have started.
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

#include "endpoint.h"
#include "engine.h"
#include "error.h"
#include "minmax.h"
#include "pool.h"
#include "ring.h"
#include "sparse.h"

/* Extents a lane remembers at once; more are fetched as it goes. */
#define EXTENTS_PER_LANE 1024
/* Writes and zeroes one buffer may turn into after zero detection. */
#define RUNS_PER_BUFFER 32

enum op_kind { OP_READ, OP_WRITE, OP_ZERO, OP_EXTENTS, OP_FLUSH };

struct lane;
struct buffer;

struct op {
  struct op_io io;              /* the endpoint's, while in flight */
  struct op *next;              /* on the worker's done list */
  struct lane *lane;
  struct buffer *buf;           /* the buffer a read fills or a run drains */
  enum op_kind kind;
  uint64_t offset, length;
  int err;
  bool in_flight;
  int64_t sent_ms;              /* when it was sent, for --timeout */
};

struct buffer {
  unsigned index;               /* in the lane's pool */
  uint64_t offset;              /* of the disk */
  uint32_t len;
  unsigned pending;             /* runs still in flight */
  struct op read;
  struct op runs[RUNS_PER_BUFFER];
};

enum lane_state { LANE_COPYING, LANE_FLUSHING, LANE_DONE };

struct lane {
  unsigned index;               /* for messages */
  struct job *job;
  struct worker *worker;
  struct conn *src, *dst;
  enum lane_state state;

  struct pool pool;
  struct buffer *buffers;       /* one per pool buffer */
  uint64_t queued_bytes;        /* in buffers that are in use */

  struct op *zero_ops;          /* for zero extents: requests slots */
  struct op **free_zero_ops;
  unsigned nfree_zero_ops;

  struct op extents_op, flush_op;
  bool extents_busy;
  struct extent extent_store[EXTENTS_PER_LANE];
  struct extent_list extents;   /* of [pos, ...) in the current segment */
  size_t next_extent;

  uint64_t pos;                 /* next byte to issue */
  uint64_t segment_end;
  bool no_more_segments;
  bool eof;                     /* a stream source has ended */

  unsigned inflight;            /* requests in flight, both sides */
  struct copy_stats stats;
};

struct worker {
  pthread_t thread;
  struct job *job;
  struct io_uring ring;
  bool ring_ready;
  bool buffers_registered;
  struct lane **lanes;
  unsigned nlanes;
  struct op *done_head, **done_tail;
};

struct job {
  const struct options *opts;
  struct endpoint *src, *dst;
  atomic_uint_fast64_t size;    /* UINT64_MAX until a stream ends */
  uint64_t nsegments;
  bool ordered;                 /* the destination is a stream */
  uint32_t request_size;
  uint64_t queue_size;
  const char *zero_buffer;      /* for destinations that cannot zero */

  atomic_uint_fast64_t next_segment;
  atomic_uint_fast64_t bytes_done; /* written, zeroed or skipped */
  atomic_bool stop;
  atomic_bool abort;            /* in-flight requests must be cut off */
  const volatile sig_atomic_t *interrupted;

  pthread_mutex_t lock;         /* guards the fields below */
  pthread_cond_t workers_changed;
  unsigned workers_running;
  bool failed;
  int error_code;               /* errno of the first failure, or 0 */
  char error[1024];
};

/* Record the first failure and stop every lane from issuing more. */
static void
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
              "%s %s at offset %" PRIu64 " length %" PRIu64 " failed: %s",
              side, what, offset, length, why);
  job->failed = true;
  pthread_mutex_unlock (&job->lock);
  atomic_store (&job->stop, true);
}

/* A failure that is not one request's: the whole message is TEXT. */
static void
job_fail_text (struct job *job, const char *text)
{
  pthread_mutex_lock (&job->lock);
  if (!job->failed)
    snprintf (job->error, sizeof job->error, "%s", text);
  job->failed = true;
  pthread_mutex_unlock (&job->lock);
  atomic_store (&job->stop, true);
}

static void
job_fail (struct job *job, const char *side, const char *what,
          uint64_t offset, uint64_t length, const char *why)
{
  job_fail_code (job, side, what, offset, length, why, 0);
}

static bool
job_stopped (struct job *job)
{
  return atomic_load_explicit (&job->stop, memory_order_relaxed);
}

static void
count_done (struct lane *l, uint64_t bytes)
{
  atomic_fetch_add_explicit (&l->job->bytes_done, bytes,
                             memory_order_relaxed);
}

struct op_io *
op_io (struct op *op)
{
  return &op->io;
}

void
op_complete_eof (struct op *op, uint32_t got)
{
  struct lane *l = op->lane;
  struct buffer *b = op->buf;

  /* Only reads of a stream end early; the buffer holds less. */
  l->queued_bytes -= b->len - got;
  b->len = got;
  op->length = got;
  l->eof = true;
  op_complete (op, 0);
}

void
op_complete (struct op *op, int err)
{
  struct worker *w = op->lane->worker;

  op->err = err;
  op->next = NULL;
  *w->done_tail = op;
  w->done_tail = &op->next;
}

static int64_t
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* OP has been sent.  The time is only read when --timeout is on. */
static void
lane_sent (struct lane *l, struct op *op)
{
  op->in_flight = true;
  if (l->job->opts->timeout_ms)
    op->sent_ms = now_ms ();
  l->inflight++;
  l->stats.requests++;
}

/* Take the next segment from the shared counter.  False if none left. */
static bool
lane_take_segment (struct lane *l)
{
  struct job *job = l->job;
  uint64_t index = atomic_fetch_add (&job->next_segment, 1);

  if (l->eof || index >= job->nsegments) {
    l->no_more_segments = true;
    return false;
  }
  l->pos = index * SEGMENT_SIZE;
  l->segment_end = MIN (l->pos + SEGMENT_SIZE, (uint64_t) atomic_load (&job->size));
  return true;
}

/* Learn the extents of [pos, segment_end).  Sources that cannot tell,
 * and --no-extents, make the whole range data at once.
 */
static int
lane_fetch_extents (struct lane *l)
{
  struct job *job = l->job;
  struct op *op = &l->extents_op;
  uint64_t len = l->segment_end - l->pos;

  extent_list_reset (&l->extents, l->pos, l->segment_end);
  l->next_extent = 0;
  if (!job->opts->extents || !job->src->caps.can_extents) {
    extent_list_add (&l->extents, l->pos, len, false);
    return 0;
  }
  *op = (struct op){
    .lane = l, .kind = OP_EXTENTS, .offset = l->pos, .length = len,
  };
  if (job->src->ops->extents (l->src, len, l->pos, &l->extents, op) == -1) {
    job_fail (job, "source", "extents (block status)", l->pos, len,
              error_get ());
    return -1;
  }
  l->extents_busy = true;
  lane_sent (l, op);
  return 0;
}

static void
lane_advance (struct lane *l, struct extent *e, uint64_t n)
{
  e->offset += n;
  e->length -= n;
  l->pos += n;
  if (e->length == 0)
    l->next_extent++;
}

static struct op *
lane_get_zero_op (struct lane *l)
{
  return l->nfree_zero_ops ? l->free_zero_ops[--l->nfree_zero_ops] : NULL;
}

static void
lane_put_zero_op (struct lane *l, struct op *op)
{
  l->free_zero_ops[l->nfree_zero_ops++] = op;
}

/* Make [offset, offset+len) of the destination read as zero, using OP.
 * Destinations without a zero operation get zero data written, which
 * needs len <= request_size.
 */
static int
lane_zero (struct lane *l, struct op *op, uint64_t offset, uint64_t len)
{
  struct job *job = l->job;
  struct endpoint *dst = job->dst;
  int r;

  op->offset = offset;
  op->length = len;
  if (dst->caps.can_zero) {
    op->kind = OP_ZERO;
    r = dst->ops->zero (l->dst, len, offset, job->opts->allocated, op);
  }
  else {
    op->kind = OP_WRITE;
    r = dst->ops->write (l->dst, job->zero_buffer, len, offset, op);
  }
  if (r == -1) {
    job_fail (job, "destination", op->kind == OP_ZERO ? "zero" : "write",
              offset, len, error_get ());
    return -1;
  }
  lane_sent (l, op);
  return 0;
}

/* Issue what can be issued for zero extent E.  Returns 0 on progress,
 * 1 if out of request slots, -1 on failure.
 */
static int
lane_issue_zero_extent (struct lane *l, struct extent *e)
{
  struct job *job = l->job;
  struct op *op;
  uint64_t len = e->length;

  if (job->opts->destination_is_zero) {
    l->stats.hole_bytes += len;
    l->stats.skipped_bytes += len;
    count_done (l, len);
    lane_advance (l, e, len);
    return 0;
  }
  op = lane_get_zero_op (l);
  if (!op)
    return 1;
  if (!job->dst->caps.can_zero)
    len = MIN (len, (uint64_t) job->request_size);
  op->buf = NULL;
  if (lane_zero (l, op, e->offset, len) == -1) {
    lane_put_zero_op (l, op);
    return -1;
  }
  l->stats.hole_bytes += len;
  lane_advance (l, e, len);
  return 0;
}

/* Start reading the next piece of data extent E into a free buffer.
 * Returns 0 on progress, 1 if out of buffers or queue space, -1 on
 * failure.
 */
static int
lane_issue_read (struct lane *l, struct extent *e)
{
  struct job *job = l->job;
  uint32_t len = MIN (e->length, (uint64_t) job->request_size);
  struct buffer *b;
  int index;

  if (l->queued_bytes > 0 && l->queued_bytes + len > job->queue_size)
    return 1;
  index = pool_get (&l->pool);
  if (index < 0)
    return 1;
  b = &l->buffers[index];
  b->offset = e->offset;
  b->len = len;
  b->pending = 0;
  b->read = (struct op){
    .lane = l, .buf = b, .kind = OP_READ, .offset = e->offset, .length = len,
  };
  if (job->src->ops->read (l->src, pool_data (&l->pool, index), len,
                           e->offset, &b->read)
      == -1) {
    job_fail (job, "source", "read", e->offset, len, error_get ());
    pool_put (&l->pool, index);
    return -1;
  }
  l->queued_bytes += len;
  lane_sent (l, &b->read);
  lane_advance (l, e, len);
  return 0;
}

/* Issue as much work as buffers and request slots allow. */
static void
lane_issue (struct lane *l)
{
  while (l->state == LANE_COPYING && !job_stopped (l->job)) {
    struct extent *e;
    int r;

    if ((l->job->ordered && l->inflight > 0) || l->eof)
      return;

    if (l->next_extent == l->extents.len) {
      if (l->extents_busy || l->eof)
        return;
      if (l->pos == l->segment_end && !lane_take_segment (l))
        return;
      if (lane_fetch_extents (l) == -1)
        return;
      continue;
    }
    e = &l->extents.v[l->next_extent];
    r = e->zero ? lane_issue_zero_extent (l, e) : lane_issue_read (l, e);
    if (r != 0)
      return;
  }
}

static void
buffer_release (struct lane *l, struct buffer *b)
{
  l->queued_bytes -= b->len;
  pool_put (&l->pool, b->index);
}

/* A read finished: write its data runs, zero its zero runs. */
static void
lane_write_buffer (struct lane *l, struct buffer *b)
{
  struct job *job = l->job;
  const struct options *opts = job->opts;
  struct endpoint *dst = job->dst;
  struct run runs[RUNS_PER_BUFFER];
  const char *data = pool_data (&l->pool, b->index);
  /* Zero detection only pays when zeroes can be sent as zero requests
     or skipped; otherwise the zeroes are written as they are. */
  size_t block = dst->caps.can_zero || opts->destination_is_zero
                     ? (size_t) opts->sparse_size
                     : 0;
  size_t n = sparse_runs (data, b->len, block, runs, RUNS_PER_BUFFER);

  for (size_t i = 0; i < n && !job_stopped (job); i++) {
    struct op *op = &b->runs[i];
    uint64_t offset = b->offset + runs[i].offset;

    *op = (struct op){ .lane = l, .buf = b };
    if (runs[i].zero && opts->destination_is_zero) {
      l->stats.skipped_bytes += runs[i].length;
      count_done (l, runs[i].length);
      continue;
    }
    if (runs[i].zero) {
      if (lane_zero (l, op, offset, runs[i].length) == -1)
        break;
    }
    else {
      op->kind = OP_WRITE;
      op->offset = offset;
      op->length = runs[i].length;
      if (dst->ops->write (l->dst, data + runs[i].offset, runs[i].length,
                           offset, op)
          == -1) {
        job_fail (job, "destination", "write", offset, runs[i].length,
                  error_get ());
        break;
      }
      lane_sent (l, op);
    }
    b->pending++;
  }
  if (b->pending == 0)
    buffer_release (l, b);
}

static void
lane_op_done (struct lane *l, struct op *op)
{
  struct job *job = l->job;
  bool src_side = op->kind == OP_READ || op->kind == OP_EXTENTS;
  static const char *names[] = {
    [OP_READ] = "read", [OP_WRITE] = "write", [OP_ZERO] = "zero",
    [OP_EXTENTS] = "extents (block status)", [OP_FLUSH] = "flush",
  };

  l->inflight--;
  op->in_flight = false;
  if (op->err)
    job_fail_code (job, src_side ? "source" : "destination", names[op->kind],
                   op->offset, op->length, strerror (op->err), op->err);

  switch (op->kind) {
  case OP_EXTENTS:
    l->extents_busy = false;
    /* A server that answered nothing for the range gets it read. */
    if (!op->err && l->extents.len == 0)
      extent_list_add (&l->extents, l->pos, l->segment_end - l->pos, false);
    break;
  case OP_READ:
    if (l->eof) {
      /* The stream ended here: this is the size of the copy. */
      l->next_extent = l->extents.len;
      l->no_more_segments = true;
      atomic_store (&job->size, op->offset + op->length);
    }
    if (op->err || job_stopped (job) || op->length == 0)
      buffer_release (l, op->buf);
    else
      lane_write_buffer (l, op->buf);
    break;
  case OP_WRITE:
  case OP_ZERO:
    if (!op->err) {
      if (op->kind == OP_WRITE && op->buf)
        l->stats.data_bytes += op->length;
      else
        l->stats.zero_bytes += op->length;
      count_done (l, op->length);
    }
    if (!op->buf)
      lane_put_zero_op (l, op);
    else if (--op->buf->pending == 0)
      buffer_release (l, op->buf);
    break;
  case OP_FLUSH:
    if (job->opts->verbose && !op->err)
      fprintf (stderr, "nbdcp: destination connection %u flushed\n",
               l->index + 1);
    l->state = LANE_DONE;
    break;
  }
}

/* Once a lane has nothing left to copy, flush it; then it is done. */
static void
lane_check_finished (struct lane *l)
{
  struct job *job = l->job;
  bool stopped = job_stopped (job);
  bool nothing_left = l->no_more_segments && !l->extents_busy
                      && l->next_extent == l->extents.len;

  if (l->state != LANE_COPYING || l->inflight > 0
      || !(stopped || nothing_left))
    return;
  if (stopped || !job->dst->caps.can_flush) {
    l->state = LANE_DONE;
    return;
  }
  l->flush_op = (struct op){ .lane = l, .kind = OP_FLUSH };
  if (job->dst->ops->flush (l->dst, &l->flush_op) == -1) {
    job_fail (job, "destination", "flush", 0, 0, error_get ());
    l->state = LANE_DONE;
    return;
  }
  lane_sent (l, &l->flush_op);
  l->state = LANE_FLUSHING;
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

static const char *
op_name (const struct op *op)
{
  static const char *names[] = {
    [OP_READ] = "source read", [OP_WRITE] = "destination write",
    [OP_ZERO] = "destination zero",
    [OP_EXTENTS] = "source extents (block status)",
    [OP_FLUSH] = "destination flush",
  };
  return names[op->kind];
}

/* The request of L that has waited longest, or NULL. */
static const struct op *
lane_oldest_op (const struct lane *l)
{
  const struct op *oldest = NULL;

#define CONSIDER(o)                                                           \
  do {                                                                        \
    if ((o)->in_flight && (!oldest || (o)->sent_ms < oldest->sent_ms))        \
      oldest = (o);                                                           \
  } while (0)
  CONSIDER (&l->extents_op);
  CONSIDER (&l->flush_op);
  for (unsigned i = 0; i < l->pool.count; i++) {
    CONSIDER (&l->buffers[i].read);
    for (unsigned j = 0; j < RUNS_PER_BUFFER; j++)
      CONSIDER (&l->buffers[i].runs[j]);
  }
  for (unsigned i = 0; i < l->job->opts->requests; i++)
    CONSIDER (&l->zero_ops[i]);
#undef CONSIDER
  return oldest;
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
      .tv_sec = tick / 1000, .tv_nsec = (tick % 1000) * 1000000,
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
      job->src->ops->attach (l->src, &w->ring, iov[i].iov_base,
                             iov[i].iov_len, index);
    if (job->dst->ops->attach)
      job->dst->ops->attach (l->dst, &w->ring, iov[i].iov_base,
                             iov[i].iov_len, index);
  }
  free (iov);
}

static int
lane_init (struct lane *l, unsigned index, struct job *job, struct conn *src,
           struct conn *dst)
{
  const struct options *opts = job->opts;
  unsigned nbuffers = opts->requests;

  /* No point in more buffers than the byte budget can keep busy. */
  if (job->queue_size / job->request_size < nbuffers)
    nbuffers = MAX (job->queue_size / job->request_size, (uint64_t) 1);

  *l = (struct lane){ .index = index, .job = job, .src = src, .dst = dst };
  l->extents.v = l->extent_store;
  l->extents.cap = EXTENTS_PER_LANE;
  if (pool_init (&l->pool, nbuffers, job->request_size) == -1)
    return -1;
  l->buffers = calloc (nbuffers, sizeof *l->buffers);
  l->zero_ops = calloc (opts->requests, sizeof *l->zero_ops);
  l->free_zero_ops = calloc (opts->requests, sizeof *l->free_zero_ops);
  if (!l->buffers || !l->zero_ops || !l->free_zero_ops) {
    error_set ("out of memory");
    return -1;
  }
  for (unsigned i = 0; i < nbuffers; i++)
    l->buffers[i].index = i;
  for (unsigned i = 0; i < opts->requests; i++) {
    l->zero_ops[i].lane = l;
    lane_put_zero_op (l, &l->zero_ops[i]);
  }
  return 0;
}

static void
lane_destroy (struct lane *l)
{
  pool_destroy (&l->pool);
  free (l->buffers);
  free (l->zero_ops);
  free (l->free_zero_ops);
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

int
engine_run (const struct options *opts, struct endpoint *src,
            struct endpoint *dst, uint64_t size, progress_fn progress,
            void *progress_arg, const volatile sig_atomic_t *interrupted,
            struct copy_stats *stats)
{
  struct job job = {
    .opts = opts, .src = src, .dst = dst, .size = size,
    .nsegments = size == UINT64_MAX ? UINT64_MAX
                                    : (size + SEGMENT_SIZE - 1) / SEGMENT_SIZE,
    .ordered = dst->caps.stream,
    .interrupted = interrupted,
    .request_size = opts->request_size,
    .queue_size = opts->queue_size,
  };
  unsigned nlanes = MIN (src->nconns, dst->nconns);
  unsigned nworkers = MIN (opts->threads, nlanes);
  struct lane *lanes = calloc (nlanes, sizeof *lanes);
  struct worker *workers = calloc (nworkers, sizeof *workers);
  struct lane **lane_ptrs = calloc (nlanes, sizeof *lane_ptrs);
  char *zero_buffer = NULL;
  unsigned started = 0;
  int ret = -1;

  memset (stats, 0, sizeof *stats);
  pthread_mutex_init (&job.lock, NULL);
  pthread_cond_init (&job.workers_changed, NULL);
  if (!lanes || !workers || !lane_ptrs) {
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
  if (job.failed)
    error_set ("%s", job.error);
  else
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
  pthread_cond_destroy (&job.workers_changed);
  pthread_mutex_destroy (&job.lock);
  return ret;
}
