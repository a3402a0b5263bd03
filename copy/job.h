/* The shared state of one copy, for engine.c (threads, event loops,
 * the job as a whole) and lane.c (what one pair of connections does):
 * the job, its workers, their lanes, and the requests in flight.
 * Nothing outside the engine sees these.
 */
#ifndef NBDCP_JOB_H
#define NBDCP_JOB_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <liburing.h>

#include "endpoint.h"
#include "engine.h"
#include "pool.h"

/* Extents a lane remembers at once; more are fetched as it goes. */
#define EXTENTS_PER_LANE 1024
/* Writes and zeroes one buffer may turn into after zero detection. */
#define RUNS_PER_BUFFER 32

enum op_kind { OP_READ, OP_WRITE, OP_ZERO, OP_EXTENTS, OP_FLUSH };

struct lane;
struct buffer;

struct op {
  struct op_io io; /* the endpoint's, while in flight */
  struct op *next; /* on the worker's done list */
  struct lane *lane;
  struct buffer *buf; /* the buffer a read fills or a run drains */
  enum op_kind kind;
  uint64_t offset, length;
  int err;
  bool in_flight;
  int64_t sent_ms; /* when it was sent (now_ms) */
};

struct buffer {
  unsigned index;  /* in the lane's pool */
  uint64_t offset; /* of the disk */
  uint32_t len;
  unsigned pending; /* runs still in flight */
  struct op read;
  struct op runs[RUNS_PER_BUFFER];
};

enum lane_state { LANE_COPYING, LANE_FLUSHING, LANE_DONE };

struct lane {
  unsigned index; /* for messages */
  struct job *job;
  struct worker *worker;
  struct conn *src, *dst;
  enum lane_state state;

  struct pool pool;
  struct buffer *buffers; /* one per pool buffer */
  uint64_t queued_bytes;  /* in buffers that are in use */

  struct op *zero_ops; /* for zero extents: requests slots */
  struct op **free_zero_ops;
  unsigned nfree_zero_ops;

  struct op extents_op, flush_op;
  bool extents_busy;
  struct extent extent_store[EXTENTS_PER_LANE];
  struct extent_list extents; /* of [pos, ...) in the current segment */
  size_t next_extent;

  uint64_t pos; /* next byte to issue */
  uint64_t segment_end;
  bool no_more_segments;
  bool eof; /* a stream source has ended */

  unsigned inflight; /* requests in flight, both sides */
  struct copy_stats stats;
};

struct worker {
  pthread_t thread;
  struct job *job;
  struct io_uring ring;
  bool ring_ready;
  bool buffers_registered;
  bool stall_noted; /* its oldest request, once the job was aborted */
  struct lane **lanes;
  unsigned nlanes;
  struct op *done_head, **done_tail;
};

struct job {
  const struct options *opts;
  struct endpoint *src, *dst;
  atomic_uint_fast64_t size; /* UINT64_MAX until a stream ends */
  uint64_t nsegments;
  bool ordered; /* the destination is a stream */
  uint32_t request_size;
  uint64_t queue_size;
  uint32_t block;          /* every request is a multiple of it (min block) */
  uint64_t zero_max;       /* the longest zero request, 0 = a segment */
  const char *zero_buffer; /* for destinations that cannot zero */

  atomic_uint_fast64_t next_segment;
  atomic_uint_fast64_t bytes_done; /* written, zeroed or skipped */
  /* The same per segment (NULL for a stream source), each written only
     by the lane that took the segment: at the end every segment must
     be accounted for exactly, or the copy is not reported complete. */
  uint64_t *segment_done;
  atomic_bool stop;
  atomic_bool abort; /* in-flight requests must be cut off */
  const volatile sig_atomic_t *interrupted;

  pthread_mutex_t lock; /* guards the fields below */
  pthread_cond_t workers_changed;
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
void job_fail (struct job *job, const char *side, const char *what,
               uint64_t offset, uint64_t length, const char *why);
/* A failure that is not one request's: the whole message is TEXT. */
void job_fail_text (struct job *job, const char *text);

static inline bool
job_stopped (struct job *job)
{
  return atomic_load_explicit (&job->stop, memory_order_relaxed);
}

static inline int64_t
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* lane.c */
int lane_init (struct lane *l, unsigned index, struct job *job,
               struct conn *src, struct conn *dst);
void lane_destroy (struct lane *l);
/* Issue as much work as buffers and request slots allow. */
void lane_issue (struct lane *l);
/* OP, a request of L, finished: act on it. */
void lane_op_done (struct lane *l, struct op *op);
/* Once a lane has nothing left to copy, flush it; then it is done. */
void lane_check_finished (struct lane *l);
/* The request of L that has waited longest, or NULL; and its name. */
const struct op *lane_oldest_op (const struct lane *l);
const char *op_name (const struct op *op);

#endif
