/* One lane of the copy: a source connection and a destination
 * connection working through segments of the disk.  This file is the
 * lane's copy state machine.
 *
 * For each segment a lane learns the extents (source_extents.c) and
 * where the destination already reads as zero (dest_zero.c), turns
 * zero extents into zero requests (or nothing, where the destination
 * reads as zero or with --destination-is-zero), reads data extents
 * request_size at a time into its pool, splits what it read into data
 * and zero runs (zero detection), writes and zeroes those, and gives
 * the buffer back when the last of them is done.  With no segments
 * left and nothing in flight, it flushes its destination connection.
 * The worker that owns the lane calls lane_issue, lane_op_done and
 * lane_check_finished from its loop.
 *
 * The features (--blkhash, --resume, --checkpoint, --rate, --verify's
 * read map) are not called here by name: the lane raises events to
 * those attached to it (lane_feature.h), which may hold it back at a
 * gate, change what it does with a range, or only observe.  What
 * happens when a request fails, and reconnecting (--retry), are in
 * lane_recover.c; what a finished read becomes (zero detection, the
 * writes and zeroes) in lane_write.c; asking the destination where it
 * reads as zero in lane_dest_zero.c; the lane's memory in lane_setup.c.
 * Nothing here allocates after lane_init or waits for I/O to finish
 * (except that a stream's reads and writes happen inside the call,
 * stream.c); the only locks taken are short ones in shared state (the
 * job's zero run, the adaptive window, a feature's), never held across
 * I/O.
 */
#include <config.h>

#include <stdint.h>

#include "clock.h"
#include "error.h"
#include "lane.h"
#include "lane_op.h"
#include "lane_write.h"
#include "minmax.h"

/* A stream source with nothing to read while writes are in flight is
 * looked at again after this long (lane_issue).
 */
#define STREAM_RECHECK_MS 10

/* Start segment INDEX: FRESH if no lane had it before (not one to copy
 * again after a reconnection).
 */
static void
lane_start_segment (struct lane *l, uint64_t index, bool fresh)
{
  l->pos = segment_start (index);
  l->segment_end = segment_end (atomic_load (&l->job->size), index);
  l->segment = index;
  dest_zero_forget (&l->dest, index, l->pos, l->segment_end, fresh);
  lane_features_segment_started (&l->features, index);
}

/* Take the next segment: the features may choose it (one to copy again
 * after a reconnection, or one taken with a --blkhash digest slot),
 * else it is the next from the shared counter; fresh segments that an
 * earlier run finished (--resume) are passed over.  False if none is
 * left, or if a feature makes the lane wait.
 */
static bool
lane_take_segment (struct lane *l)
{
  struct job *job = l->job;

  if (l->eof) {
    l->no_more_segments = true;
    return false;
  }
  for (;;) {
    uint64_t index;
    bool fresh = true;
    int r = lane_features_take_segment (&l->features, &index, &fresh);

    if (r < 0) {
      l->wait_for_others = r == FEATURE_WAIT_OTHERS;
      return false;
    }
    if (r == 0)
      index = atomic_fetch_add (&job->next_segment, 1);
    if (index >= job->nsegments) {
      l->no_more_segments = true;
      return false;
    }
    if (fresh && lane_features_done_before (&l->features, index)) {
      uint64_t len = segment_length (atomic_load (&job->size), index);

      l->stats.resumed_bytes += len;
      job_count_done (job, segment_start (index), len);
      continue;
    }
    lane_start_segment (l, index, fresh);
    return true;
  }
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

/* Issue what can be issued for zero extent E, at most MAX bytes of it.
 * Returns 0 on progress, 1 if out of request slots, -1 on failure.
 */
static int
lane_issue_zero_extent (struct lane *l, struct extent *e, uint64_t max)
{
  struct job *job = l->job;
  struct op *op;
  uint64_t len = MIN (e->length, max);
  bool already_zero = l->set->destination_is_zero;

  /* Cut where the destination's answer changes kind: its edges are
     whole blocks of set->align, as the extent's are. */
  if (!already_zero && l->dest.ask)
    len = dest_zero_prefix (&l->dest, e->offset, len, &already_zero);
  if (already_zero) {
    lane_features_zero_taken (&l->features, e->offset, len);
    l->stats.hole_bytes += len;
    if (l->set->destination_is_zero) {
      l->stats.skipped_bytes += len;
      job_count_done (job, e->offset, len);
    }
    else
      lane_count_already_zero (l, e->offset, len);
    lane_advance (l, e, len);
    return 0;
  }
  op = lane_get_zero_op (l);
  if (!op)
    return 1;
  if (!job->dst->caps.can_zero)
    len = MIN (len, (uint64_t) l->set->request_size);
  else if (l->set->zero_max)
    len = MIN (len, l->set->zero_max);
  if (lane_zero (l, op, NULL, e->offset, len) == -1) {
    lane_put_zero_op (l, op);
    return -1;
  }
  lane_features_zero_taken (&l->features, e->offset, len);
  l->stats.hole_bytes += len;
  lane_advance (l, e, len);
  return 0;
}

/* --bitmap: clean extent E is the same on the destination already
 * (the previous copy): nothing to read or write, only to count.
 */
static void
lane_skip_clean (struct lane *l, struct extent *e)
{
  uint64_t len = e->length;

  l->stats.clean_bytes += len;
  l->stats.skipped_bytes += len;
  job_count_clean (l->job, e->offset, len);
  lane_advance (l, e, len);
}

/* Start reading the next piece of extent E, at most MAX bytes of it,
 * into a free buffer.  Returns 0 on progress, 1 if out of buffers or
 * queue space, -1 on failure.
 */
static int
lane_issue_read (struct lane *l, struct extent *e, uint64_t max)
{
  struct job *job = l->job;
  uint64_t want = MIN (e->length, max);
  uint32_t len = MIN (want, (uint64_t) l->set->read_max);
  struct buffer *b;
  int64_t gate;
  int index;

  if (!window_allows (&job->window, l->pool.count - l->pool.nfree))
    return 1;
  if (l->queued_bytes > 0 && l->queued_bytes + len > l->set->queue_size)
    return 1;
  if (l->pool.nfree == 0)
    return 1;
  gate = lane_features_may_read (&l->features, e->offset, len);
  if (gate != FEATURE_GO) {
    if (gate > 0)
      lane_wake_at (l, gate);
    else if (gate == FEATURE_WAIT_OTHERS)
      l->wait_for_others = true;
    return 1;
  }
  index = pool_get (&l->pool);
  if (index < 0)
    return 1;
  b = &l->buffers[index];
  b->offset = e->offset;
  b->len = len;
  b->pending = 0;
  /* Known now, while the answer is this segment's: by the time the
     read is done the lane may have moved on. */
  b->dest_zero = l->dest.ask && dest_zero_covers (&l->dest, e->offset, len);
  lane_prepare_op (l, &b->read, OP_READ, b, e->offset, len);
  if (job->src->ops->read (l->src, pool_data (&l->pool, index), len, e->offset,
                           &b->read)
      == -1) {
    lane_fail (l, OP_READ, e->offset, len, error_get (), 0);
    pool_put (&l->pool, index);
    return -1;
  }
  l->queued_bytes += len;
  lane_sent (l, &b->read);
  lane_advance (l, e, len);
  /* A stream read finishes inside the call: once one has met the end of
     the stream, nothing more may be read (the rest is done when its
     completion is taken off the done queue). */
  if (b->read.eof)
    l->eof = true;
  return 0;
}

/* Zero extent E: a feature may want some of it read all the same
 * (--verify's pass reads the destination where the source was read,
 * whatever the destination claims); the rest is zeroed, or left alone.
 */
static int
lane_issue_zero_or_read (struct lane *l, struct extent *e)
{
  bool read;
  uint64_t n = lane_features_zero_extent_read (&l->features, e->offset,
                                               e->length, &read);

  return read ? lane_issue_read (l, e, n) : lane_issue_zero_extent (l, e, n);
}

/* Segment l->segment has nothing in flight any more: the features hear
 * of it, and say whether to flush the destination before going on.
 */
static bool
lane_segment_finished (struct lane *l)
{
  uint64_t index = l->segment;

  l->segment = NO_SEGMENT;
  /* Progress: a connection that breaks again now gets --retry attempts
     afresh (one that breaks before finishing anything does not). */
  l->attempts = 0;
  return lane_features_segment_finished (&l->features, index);
}

/* The destination connection's flush succeeded (or it has none). */
static void
lane_flushed (struct lane *l)
{
  lane_features_flushed (&l->features);
}

/* Learn the source's extents of [pos, segment_end): ask, or have them
 * made up.  -1 if the request could not be sent (lane_fail has been
 * told).
 */
static int
lane_fetch_extents (struct lane *l)
{
  struct job *job = l->job;
  struct op *op = &l->extents_op;
  struct extent_list *into;
  uint64_t len
      = source_extents_prepare (&l->source, &l->extents, l->pos, l->segment_end,
                                atomic_load (&job->size), &into);

  l->next_extent = 0;
  if (len == 0)
    return 0;
  lane_prepare_op (l, op, OP_EXTENTS, NULL, l->pos, len);
  if (job->src->ops->extents (l->src, len, l->pos, into, op) == -1) {
    lane_fail (l, op->kind, l->pos, len, error_get (), 0);
    return -1;
  }
  l->extents_busy = true;
  lane_sent (l, op);
  return 0;
}

/* Flush the destination connection, then go on to NEXT's successor:
 * LANE_CHECKPOINT back to copying, LANE_FLUSHING to done.
 */
static void
lane_flush (struct lane *l, enum lane_state next)
{
  struct job *job = l->job;

  if (!job->dst->caps.can_flush) {
    lane_flushed (l);
    l->state = next == LANE_CHECKPOINT ? LANE_COPYING : LANE_DONE;
    return;
  }
  lane_prepare_op (l, &l->flush_op, OP_FLUSH, NULL, 0, 0);
  l->state = next;
  if (job->dst->ops->flush (l->dst, &l->flush_op) == -1) {
    lane_fail (l, OP_FLUSH, 0, 0, error_get (), 0);
    if (!l->broken)
      l->state = LANE_DONE;
    return;
  }
  lane_sent (l, &l->flush_op);
}

void
lane_issue (struct lane *l)
{
  l->wake_at_ms = 0;
  l->wait_for_others = false;
  /* Also when the job has stopped: the lane ends only once nothing is
     waited for. */
  lane_waits_for_dest_zero (l);
  while (l->state == LANE_COPYING && !job_stopped (l->job) && !l->broken) {
    struct extent *e;
    int r;

    /* The extents list is not to be used until its request is done:
       endpoints fill it before completing (file.c at once), and it is
       only fitted to the minimum block size on completion. */
    if ((l->job->ordered && l->sent.count > 0) || l->eof || l->extents_busy
        || lane_waits_for_dest_zero (l))
      return;

    if (l->next_extent == l->extents.len) {
      /* A feature that counts finished segments (--checkpoint) has
         the lane finish each one (nothing of it in flight) before the
         next, and may want a flush first. */
      if (l->pos == l->segment_end && l->segment != NO_SEGMENT
          && lane_features_finish_segments (&l->features)) {
        if (l->sent.count > 0)
          return;
        if (lane_segment_finished (l)) {
          lane_flush (l, LANE_CHECKPOINT);
          return;
        }
      }
      if (l->pos == l->segment_end && !lane_take_segment (l))
        return;
      if (l->dest.wanted)
        lane_fetch_dest_zero (l);
      if (lane_fetch_extents (l) == -1)
        return;
      continue;
    }
    e = &l->extents.v[l->next_extent];
    if (e->clean) {
      lane_skip_clean (l, e);
      continue;
    }
    /* A stream's read waits for the stream inside the call.  Before
       waiting, let what was read be written: the destination and the
       progress then follow a stream that trickles in, rather than a
       queue's worth behind.  The worker waits for those requests, and
       looks at the stream again soon. */
    if (!e->zero && l->sent.count > 0 && l->job->src->ops->would_wait
        && l->job->src->ops->would_wait (l->src)) {
      lane_wake_at (l, now_ms () + STREAM_RECHECK_MS);
      return;
    }
    r = e->zero ? lane_issue_zero_or_read (l, e)
                : lane_issue_read (l, e, UINT64_MAX);
    if (r != 0)
      return;
  }
}

/* A read of a stream source met the stream's end after OP->got bytes:
 * the buffer holds less, and nothing comes after it.
 */
static void
lane_stream_ended (struct lane *l, struct op *op)
{
  struct buffer *b = op->buf;

  l->queued_bytes -= b->len - op->got;
  b->len = op->got;
  op->length = op->got;
  l->eof = true;
  /* This is the size of the copy. */
  l->next_extent = l->extents.len;
  l->no_more_segments = true;
  atomic_store (&l->job->size, op->offset + op->length);
}

void
lane_op_done (struct lane *l, struct op *op)
{
  struct job *job = l->job;

  lane_unsent (l, op);
  l->activity[!op_on_source (op->kind)].progress_ms = now_ms ();
  if (op->eof)
    lane_stream_ended (l, op);
  /* Not knowing where the destination reads as zero is no failure. */
  if (op->err && op->kind != OP_DEST_EXTENTS)
    lane_op_failed (l, op);

  switch (op->kind) {
  case OP_DEST_EXTENTS:
    l->dest_zero_busy = false;
    dest_zero_answered (&l->dest, op->err);
    break;
  case OP_EXTENTS:
    l->extents_busy = false;
    source_extents_answered (&l->source, &l->extents, l->pos, l->segment_end,
                             op->err);
    break;
  case OP_READ:
    if (!op->err)
      l->stats.read_bytes += op->length;
    if (op->err || job_stopped (job) || l->broken || op->length == 0)
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
      job_count_done (job, op->offset, op->length);
    }
    if (!op->buf)
      lane_put_zero_op (l, op);
    else if (--op->buf->pending == 0)
      buffer_release (l, op->buf);
    break;
  case OP_FLUSH:
    if (op->err) {
      /* A broken connection is recovered from (lane_check_finished). */
      if (!l->broken)
        l->state = LANE_DONE;
      break;
    }
    if (l->state == LANE_FLUSHING)
      note (l->set->verbose, "destination connection %u flushed", l->index + 1);
    lane_flushed (l);
    l->state = l->state == LANE_CHECKPOINT ? LANE_COPYING : LANE_DONE;
    break;
  }
}

void
lane_check_finished (struct lane *l)
{
  struct job *job = l->job;
  bool stopped = job_stopped (job);
  bool nothing_left = l->no_more_segments && !l->extents_busy
                      && !l->dest_zero_busy && l->next_extent == l->extents.len;

  if (l->broken) {
    if (l->sent.count > 0 || l->state == LANE_DONE
        || l->state == LANE_RETRY_WAIT)
      return;
    if (stopped)
      l->state = LANE_DONE;
    else
      lane_schedule_retry (l);
    return;
  }
  if (l->state != LANE_COPYING || l->sent.count > 0
      || !(stopped || nothing_left))
    return;
  if (stopped) {
    l->state = LANE_DONE;
    return;
  }
  /* The last segment is finished too; the flush comes anyway. */
  if (l->segment != NO_SEGMENT && lane_features_finish_segments (&l->features))
    lane_segment_finished (l);
  lane_flush (l, LANE_FLUSHING);
}
