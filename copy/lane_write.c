/* A lane's writes: what a finished read becomes.  Zero detection
 * splits the buffer into runs; data runs are written, zero runs zeroed
 * (or skipped where the destination reads as zero already), and the
 * buffer goes back to the pool once the last of them is done.  Zeroing
 * a range is here too, for lane.c's zero extents as for the zero runs.
 *
 * It does not choose what to read or when (lane.c), nor recover from a
 * failed request (lane_recover.c: lane_fail).
 */
#include <config.h>

#include <stdint.h>

#include "error.h"
#include "lane_op.h"
#include "lane_recover.h"
#include "lane_write.h"
#include "sparse.h"

/* Make [offset, offset+len) of the destination read as zero, using OP
 * (of buffer B, or NULL).  Destinations without a zero operation get
 * zero data written, which needs len <= request_size.
 */
int
lane_zero (struct lane *l, struct op *op, struct buffer *b, uint64_t offset,
           uint64_t len)
{
  struct job *job = l->job;
  struct endpoint *dst = job->dst;
  int r;

  if (dst->caps.can_zero) {
    lane_prepare_op (l, op, OP_ZERO, b, offset, len);
    r = dst->ops->zero (l->dst, len, offset, l->set->allocated, op);
  }
  else {
    lane_prepare_op (l, op, OP_WRITE, b, offset, len);
    r = dst->ops->write (l->dst, job->zero_buffer, len, offset, op);
  }
  if (r == -1) {
    lane_fail (l, op->kind, offset, len, error_get (), 0);
    return -1;
  }
  lane_sent (l, op);
  return 0;
}

/* [OFFSET, OFFSET+LEN) of the destination reads as zero already: count
 * it as done, nothing sent.
 */
void
lane_count_already_zero (struct lane *l, uint64_t offset, uint64_t len)
{
  l->stats.already_zero_bytes += len;
  l->stats.skipped_bytes += len;
  job_count_done (l->job, offset, len);
}

/* B's reads and writes are all done: give it back to the pool. */
void
buffer_release (struct lane *l, struct buffer *b)
{
  l->queued_bytes -= b->len;
  pool_put (&l->pool, b->index);
  window_sample (&l->job->window, now_ns (), b->len);
}

/* A read finished: write its data runs, zero its zero runs. */
void
lane_write_buffer (struct lane *l, struct buffer *b)
{
  struct job *job = l->job;
  const struct settings *set = l->set;
  struct endpoint *dst = job->dst;
  struct run *runs = l->run_scratch;
  const char *data = pool_data (&l->pool, b->index);
  /* Zero detection only pays when zeroes can be sent as zero requests
     or skipped; otherwise the zeroes are written as they are. */
  size_t block
      = dst->caps.can_zero || set->destination_is_zero ? set->sparse_size : 0;
  size_t n = sparse_runs (data, b->len, block, runs, l->runs_per_buffer);

  for (size_t i = 0; i < n && !job_stopped (job) && !l->broken; i++) {
    struct op *op = &b->runs[i];
    uint64_t offset = b->offset + runs[i].offset;

    if (runs[i].zero && set->destination_is_zero) {
      l->stats.skipped_bytes += runs[i].length;
      job_count_done (job, offset, runs[i].length);
      continue;
    }
    if (runs[i].zero && b->dest_zero) {
      lane_count_already_zero (l, offset, runs[i].length);
      continue;
    }
    if (runs[i].zero) {
      if (lane_zero (l, op, b, offset, runs[i].length) == -1)
        break;
    }
    else {
      lane_prepare_op (l, op, OP_WRITE, b, offset, runs[i].length);
      if (dst->ops->write (l->dst, data + runs[i].offset, runs[i].length,
                           offset, op)
          == -1) {
        lane_fail (l, OP_WRITE, offset, runs[i].length, error_get (), 0);
        break;
      }
      lane_sent (l, op);
    }
    b->pending++;
  }
  /* Told once its writes are on their way: the buffer stays until they
     are done, and the features' work (hashing) overlaps them. */
  lane_features_data_read (&l->features, b->offset, data, b->len);
  if (b->pending == 0)
    buffer_release (l, b);
}
