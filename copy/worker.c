/* A lane's worker thread: its event loop on its own io_uring, which is
 * its only wait point, and --timeout's watch over the lane's requests.
 *
 * Each turn of the loop hands the requests that finished to the lane
 * (op_complete only queued them, from inside the endpoints' event
 * handling, so acting on them never re-enters libnbd), looks for
 * stalled requests, has the lane issue what it can, arms the
 * endpoints' polls and waits on the ring.  The job's stop_fd is polled
 * too, so that a stopped job wakes every worker.
 *
 * It does not set up the lanes, rings or threads, or decide the copy's
 * result (engine.c), nor know what a lane does with a request (lane.c).
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/uio.h>
#include <time.h>

#include <liburing.h>

#include "error.h"
#include "job.h"
#include "lane.h"
#include "minmax.h"
#include "ring.h"
#include "worker.h"

static void
worker_process_done (struct worker *w)
{
  struct op *op;

  while ((op = op_queue_pop (&w->done)))
    lane_op_done (op->lane, op);
}

/* --timeout: how often a worker looks for stalled requests. */
static int64_t
timeout_tick (int64_t timeout_ms)
{
  return MAX (timeout_ms / 4, (int64_t) 10);
}

/* --timeout: fail the copy if a connection with requests in flight has
 * finished none for too long (a request that waits behind others on a
 * slow but working connection does not count), and have every
 * connection cut off so the copy can end.
 *
 * It looks once a tick has passed since it last looked, whatever woke
 * the worker: a server that sends a byte now and then wakes it without
 * ever finishing a reply, and a wait that never times out must not keep
 * it from looking.  One clock read per turn of the worker's loop.
 */
static void
worker_check_timeouts (struct worker *w)
{
  struct job *job = w->job;
  int64_t limit = job->set->timeout_ms;
  int64_t now;
  const struct op *op;
  char why[64];

  if (!limit)
    return;
  now = now_ms ();
  if (now < w->next_check_ms)
    return;
  w->next_check_ms = now + timeout_tick (limit);
  op = w->lane->broken ? NULL : lane_stalled_op (w->lane, now, limit);
  if (!op)
    return;
  snprintf (why, sizeof why, "no reply in %.1f seconds (--timeout)",
            limit / 1000.0);
  if (lane_timed_out (w->lane, op, why))
    return; /* --retry: that connection is cut and made again */
  job_fail_code (job, job_side (job, op->kind), op_what (op->kind), op->offset,
                 op->length, why, ETIMEDOUT);
  atomic_store (&job->abort, true);
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
  const struct op *op = lane_oldest_op (w->lane);

  w->stall_noted = true;
  if (!op)
    return;
  pthread_mutex_lock (&job->lock);
  if (now - op->sent_ms > job->stalled_ms) {
    job->stalled_ms = now - op->sent_ms;
    snprintf (job->stalled_op, sizeof job->stalled_op, "%s %s",
              job_side (job, op->kind), op_what (op->kind));
    job->stalled_offset = op->offset;
    job->stalled_length = op->length;
  }
  pthread_mutex_unlock (&job->lock);
}

/* Hand every completion already on the ring to its handler. */
static void
worker_handle_completions (struct worker *w)
{
  struct io_uring_cqe *cqe;
  unsigned head, seen = 0;

  io_uring_for_each_cqe (&w->ring, head, cqe)
  {
    struct ring_event *ev = io_uring_cqe_get_data (cqe);
    ev->handle (ev, cqe->res);
    seen++;
  }
  io_uring_cq_advance (&w->ring, seen);
}

/* FOR_OTHERS: the lane waits for another lane's progress (a --blkhash
 * digest slot to be freed), which no event on this ring will announce:
 * look again soon.  WAKE_AT (0: none): the lane must look again at that
 * time (--retry's reconnection, --rate).
 */
static void
worker_wait (struct worker *w, bool for_others, int64_t wake_at)
{
  struct io_uring *ring = &w->ring;
  struct io_uring_cqe *cqe;
  int64_t timeout_ms = w->job->set->timeout_ms;
  int r;

  if (timeout_ms || for_others || wake_at) {
    /* Wake at least every quarter of the timeout to check on requests
       (worker_check_timeouts, in the worker's loop). */
    int64_t tick = timeout_ms ? timeout_tick (timeout_ms) : INT32_MAX;
    if (for_others)
      tick = 1;
    if (wake_at) {
      int64_t until = MAX (wake_at - now_ms (), (int64_t) 1);
      tick = MIN (tick, until);
    }
    struct __kernel_timespec ts = {
      .tv_sec = tick / 1000,
      .tv_nsec = (tick % 1000) * 1000000,
    };
    r = io_uring_submit_and_wait_timeout (ring, &cqe, 1, &ts, NULL);
    if (r == -ETIME)
      return;
  }
  else
    r = io_uring_submit_and_wait (ring, 1);
  if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME) {
    job_fail (w->job, "worker", "io_uring wait", 0, 0, strerror (-r));
    return;
  }
  worker_handle_completions (w);
}

/* Submit whatever is queued on the ring and handle the completions
 * already there, without waiting (and without a system call when
 * nothing is queued: with null: as the destination, a copy whose
 * replies keep coming makes none).
 */
static void
worker_reap (struct worker *w)
{
  struct io_uring *ring = &w->ring;

  if (io_uring_sq_ready (ring) > 0) {
    int r = io_uring_submit_and_get_events (ring);
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
      job_fail (w->job, "worker", "io_uring submit", 0, 0, strerror (-r));
      return;
    }
  }
  worker_handle_completions (w);
}

/* The job stopped: the worker has been woken, which is all this is for
 * (its loop sees job_stopped).  One-shot: a job never starts again.
 */
static void
worker_job_stopped (struct ring_event *ev, int res)
{
  (void) ev;
  (void) res;
}

/* Whether an endpoint still has requests on the ring that no lane
 * waits for.
 */
static bool
worker_endpoints_busy (struct worker *w)
{
  const struct job *job = w->job;
  const struct lane *l = w->lane;

  return (job->src->ops->busy && job->src->ops->busy (l->src))
         || (job->dst->ops->busy && job->dst->ops->busy (l->dst));
}

/* The thread's body (worker.h). */
void *
worker_run (void *arg)
{
  struct worker *w = arg;
  struct job *job = w->job;
  struct lane *l = w->lane;

  if (w->ring_disabled) {
    int r = ring_enable (&w->ring);
    if (r < 0) {
      /* Nothing was issued: the other workers stop, and this one's
         lanes are left unfinished, which a failed job may do. */
      job_fail (job, "worker", "io_uring enable", 0, 0, strerror (-r));
      goto out;
    }
    w->ring_disabled = false;
  }
  /* Every wait of the worker below is on the ring, so this wakes it
     from any of them. */
  w->stop_event.handle = worker_job_stopped;
  ring_poll (&w->ring, job->stop_fd, POLLIN, &w->stop_event);
  for (;;) {
    worker_process_done (w);
    worker_check_timeouts (w);
    if (l->state == LANE_RETRY_WAIT
        && (job_stopped (job) || now_ms () >= l->retry_at_ms))
      lane_retry (l);
    lane_issue (l);
    lane_check_finished (l);
    if (w->done.head)
      continue; /* requests that finished at once */
    if (l->state == LANE_DONE)
      break;
    /* A lane waiting to reconnect has broken connections: nothing to
       arm, only the time to wake at. */
    if (l->state != LANE_RETRY_WAIT) {
      if (job->src->ops->arm)
        job->src->ops->arm (l->src, &w->ring);
      if (job->dst->ops->arm)
        job->dst->ops->arm (l->dst, &w->ring);
      if (w->done.head) {
        /* An endpoint read a reply that was already waiting, rather
           than arm a poll: handle it without waiting. */
        worker_reap (w);
        continue;
      }
    }
    worker_wait (w, l->wait_for_others && !job_stopped (job),
                 l->state == LANE_RETRY_WAIT ? l->retry_at_ms : l->wake_at_ms);
    if (atomic_load (&job->abort) && !w->stall_noted)
      worker_note_stall (w);
  }
  /* A ring torn down with requests in flight lets go of their files
     only after nbdcp has exited, and an umount run just then would find
     the file system busy.  A failed copy does not wait for them. */
  while (!job_stopped (job) && worker_endpoints_busy (w))
    worker_wait (w, false, 0);

out:
  pthread_mutex_lock (&job->lock);
  job->workers_running--;
  pthread_cond_signal (&job->workers_changed);
  pthread_mutex_unlock (&job->lock);
  return NULL;
}
