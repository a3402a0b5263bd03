/* One lane of the copy: a source connection and a destination
 * connection working through segments of the disk.
 *
 * For each segment a lane learns the extents, turns zero extents into
 * zero requests (or nothing, with --destination-is-zero), reads data
 * extents request_size at a time into its pool, splits what it read
 * into data and zero runs (zero detection), writes and zeroes those,
 * and gives the buffer back when the last of them is done.  With no
 * segments left and nothing in flight, it flushes its destination
 * connection.  The worker that owns the lane calls lane_issue,
 * lane_op_done and lane_check_finished from its loop; nothing here
 * blocks or allocates.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "lane.h"
#include "minmax.h"
#include "sparse.h"

/* Make OP a request of L. */
static void
lane_prepare_op (struct lane *l, struct op *op, enum op_kind kind,
                 struct buffer *b, uint64_t offset, uint64_t length)
{
  *op = (struct op){
    .done = l->done,
    .lane = l,
    .buf = b,
    .kind = kind,
    .offset = offset,
    .length = length,
  };
}

/* OP has been sent.  The time is for --timeout, and for saying what a
 * stopped copy was waiting for.
 */
static void
lane_sent (struct lane *l, struct op *op)
{
  int side = !op_on_source (op->kind);

  op->in_flight = true;
  op->sent_ms = now_ms ();
  l->inflight++;
  if (l->activity[side].inflight++ == 0)
    l->activity[side].progress_ms = op->sent_ms;
  l->stats.requests++;
}

static void
lane_start_segment (struct lane *l, uint64_t index)
{
  l->pos = index * SEGMENT_SIZE;
  l->segment_end
      = MIN (l->pos + SEGMENT_SIZE, (uint64_t) atomic_load (&l->job->size));
  /* Tracked only where segments must be flushed to be done. */
  l->segment = l->set->checkpoint ? index : NO_SEGMENT;
}

/* Take the next segment: one to copy again (--retry), else the next
 * from the shared counter, passing over those an earlier run finished
 * (--resume).  False if none is left.
 */
static bool
lane_take_segment (struct lane *l)
{
  struct job *job = l->job;
  uint64_t index;

  l->hash_wait = false;
  if (l->eof) {
    l->no_more_segments = true;
    return false;
  }
  if (l->nredo > 0) {
    index = l->redo[0];
    memmove (l->redo, l->redo + 1, --l->nredo * sizeof *l->redo);
    lane_start_segment (l, index);
    return true;
  }
  for (;;) {
    if (job->hash) {
      /* Each segment needs a slot for its digests (see blkhash.c). */
      int r = blkhash_take_segment (&l->hash, &job->next_segment,
                                    job->nsegments, &index);
      if (r == -1) {
        l->hash_wait = true;
        return false;
      }
    }
    else
      index = atomic_fetch_add (&job->next_segment, 1);
    if (index >= job->nsegments) {
      l->no_more_segments = true;
      return false;
    }
    if (!job->journal || !journal_is_done (job->journal, index))
      break;
    uint64_t start = index * SEGMENT_SIZE;
    uint64_t len
        = MIN (SEGMENT_SIZE, (uint64_t) atomic_load (&job->size) - start);
    l->stats.resumed_bytes += len;
    job_count_done (job, start, len);
  }
  lane_start_segment (l, index);
  return true;
}

/* Whether a broken connection to EP can be made again (--retry, an NBD
 * server that is not a [ CMD ] subprocess).
 */
static bool
lane_can_reconnect (const struct lane *l, const struct endpoint *ep)
{
  return l->set->retry && ep->ops->reconnect && ep->ops->broken
         && ep->ops->abort && !ep->command;
}

/* A connection of L to EP broke: a request of KIND failed with WHY.
 * The lane stops issuing and recovers once nothing is in flight; the
 * first failure is what its retry messages quote.
 */
static void
lane_mark_broken (struct lane *l, const struct endpoint *ep, enum op_kind kind,
                  uint64_t offset, uint64_t length, const char *why)
{
  char side[64];

  if (!l->broken) {
    snprintf (side, sizeof side, "%s connection %u:", ep->side, l->index + 1);
    job_describe_failure (l->broken_why, sizeof l->broken_why, side,
                          op_what (kind), offset, length, why);
  }
  l->broken = true;
}

/* Whether a failed request of KIND means that its connection broke and
 * the lane can reconnect (--retry, an NBD server that is not a [ CMD ]
 * subprocess).  If so the lane stops issuing, and once nothing is in
 * flight it reconnects (lane_check_finished).  WHY is the failure.
 */
static bool
lane_connection_broke (struct lane *l, enum op_kind kind, uint64_t offset,
                       uint64_t length, const char *why)
{
  bool on_src = op_on_source (kind);
  struct endpoint *ep = on_src ? l->job->src : l->job->dst;

  if (!lane_can_reconnect (l, ep)
      || !ep->ops->broken (on_src ? l->src : l->dst))
    return false;
  lane_mark_broken (l, ep, kind, offset, length, why);
  return true;
}

/* A request of KIND failed, when submitted or when it completed: a
 * broken connection to reconnect, or the end of the copy.
 */
static void
lane_fail (struct lane *l, enum op_kind kind, uint64_t offset, uint64_t length,
           const char *why, int code)
{
  struct job *job = l->job;

  if (lane_connection_broke (l, kind, offset, length, why))
    return;
  job_fail_code (job, job_side (job, kind), op_what (kind), offset, length, why,
                 code);
}

/* Learn the extents of [pos, segment_end).  Sources that cannot tell,
 * and --no-extents, make the whole range data at once, unless the
 * dirty bitmap (--bitmap) is needed.  A range inside the job's known
 * zero run needs no request; a lane in a hole asks how far it goes
 * past the segment (see zero_run.h).
 */
static int
lane_fetch_extents (struct lane *l)
{
  struct job *job = l->job;
  struct op *op = &l->extents_op;
  struct extent_list *list = &l->extents;
  uint64_t len = l->segment_end - l->pos;

  extent_list_reset (&l->extents, l->pos, l->segment_end);
  l->next_extent = 0;
  if (l->set->bitmap) {
    extent_list_reset (&l->alloc, l->pos, l->segment_end);
    extent_list_reset (&l->dirty, l->pos, l->segment_end);
    l->alloc.dirty = &l->dirty;
    list = &l->alloc;
  }
  else if (!l->set->extents || !job->src->ops->extents
           || !job->src->caps.can_extents) {
    extent_list_add (&l->extents, l->pos, len, false);
    extent_list_align (&l->extents, l->set->align);
    return 0;
  }
  else if (zero_run_covers (&job->zero_run, l->pos, l->segment_end)) {
    extent_list_add (&l->extents, l->pos, len, true);
    extent_list_align (&l->extents, l->set->align);
    l->in_hole = true;
    return 0;
  }
  else if (l->in_hole) {
    uint64_t ahead = MIN (zero_run_lookahead (&job->zero_run),
                          (uint64_t) atomic_load (&job->size) - l->pos);

    len = MAX (len, ahead);
    extent_list_reset (&l->extents, l->pos, l->pos + len);
  }
  lane_prepare_op (l, op, OP_EXTENTS, NULL, l->pos, len);
  if (job->src->ops->extents (l->src, len, l->pos, list, op) == -1) {
    lane_fail (l, op->kind, l->pos, len, error_get (), 0);
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

/* Make [offset, offset+len) of the destination read as zero, using OP
 * (of buffer B, or NULL).  Destinations without a zero operation get
 * zero data written, which needs len <= request_size.
 */
static int
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

/* Issue what can be issued for zero extent E, at most MAX bytes of it.
 * Returns 0 on progress, 1 if out of request slots, -1 on failure.
 */
static int
lane_issue_zero_extent (struct lane *l, struct extent *e, uint64_t max)
{
  struct job *job = l->job;
  struct op *op;
  uint64_t len = MIN (e->length, max);

  if (l->set->destination_is_zero) {
    if (job->hash)
      blkhash_add (&l->hash, e->offset, NULL, len, atomic_load (&job->size));
    l->stats.hole_bytes += len;
    l->stats.skipped_bytes += len;
    job_count_done (job, e->offset, len);
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
  /* Zero extents are whole hash blocks (or end the disk), and so are
     the pieces they are cut into (settings.c): no block is split. */
  if (job->hash)
    blkhash_add (&l->hash, e->offset, NULL, len, atomic_load (&job->size));
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
  uint32_t len = MIN (want, (uint64_t) l->set->request_size);
  struct buffer *b;
  int index;

  if (!window_allows (&job->window, l->pool.count - l->pool.nfree))
    return 1;
  if (l->queued_bytes > 0 && l->queued_bytes + len > l->set->queue_size)
    return 1;
  index = pool_get (&l->pool);
  if (index < 0)
    return 1;
  b = &l->buffers[index];
  b->offset = e->offset;
  b->len = len;
  b->pending = 0;
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

/* --verify's pass: zero extent E of the destination is believed only
 * where the copy found the source a hole or zero too; where the source
 * was read, the destination is read, whatever it says.  The record is
 * kept in whole granules (multiples of the hash block), so the pieces
 * split no hash block.
 */
static int
lane_issue_claimed_zero (struct lane *l, struct extent *e)
{
  bool read;
  uint64_t n = blkhash_read_run (l->set->read_where_source_was, e->offset,
                                 e->length, &read);

  return read ? lane_issue_read (l, e, n) : lane_issue_zero_extent (l, e, n);
}

/* The current segment is finished (--checkpoint): it waits for a flush. */
static void
lane_segment_finished (struct lane *l)
{
  uint64_t start = l->segment * SEGMENT_SIZE;

  l->unflushed[l->nunflushed++] = l->segment;
  /* Progress: a connection that breaks again now gets --retry attempts
     afresh (one that breaks before finishing anything does not). */
  l->attempts = 0;
  l->unflushed_bytes
      += MIN (SEGMENT_SIZE, (uint64_t) atomic_load (&l->job->size) - start);
  l->segment = NO_SEGMENT;
}

/* The destination connection's flush succeeded: every unflushed segment
 * is done, and is handed to --resume's journal (which the main thread
 * writes: a lane never waits for the file).
 */
static void
lane_flushed (struct lane *l)
{
  struct job *job = l->job;

  if (job->journal && l->nunflushed > 0)
    job_segments_flushed (job, l->unflushed, l->nunflushed);
  l->nunflushed = 0;
  l->unflushed_bytes = 0;
  l->stats_at_flush = l->stats;
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
  while (l->state == LANE_COPYING && !job_stopped (l->job) && !l->broken) {
    struct extent *e;
    int r;

    /* The extents list is not to be used until its request is done:
       endpoints fill it before completing (file.c at once), and it is
       only fitted to the minimum block size on completion. */
    if ((l->job->ordered && l->inflight > 0) || l->eof || l->extents_busy)
      return;

    if (l->next_extent == l->extents.len) {
      /* --checkpoint: a segment is finished once nothing of it is in
         flight; enough finished ones are flushed before going on. */
      if (l->pos == l->segment_end && l->segment != NO_SEGMENT) {
        if (l->inflight > 0)
          return;
        lane_segment_finished (l);
        if (l->unflushed_bytes >= l->set->checkpoint) {
          lane_flush (l, LANE_CHECKPOINT);
          return;
        }
      }
      if (l->pos == l->segment_end && !lane_take_segment (l))
        return;
      if (lane_fetch_extents (l) == -1)
        return;
      continue;
    }
    e = &l->extents.v[l->next_extent];
    if (e->clean) {
      lane_skip_clean (l, e);
      continue;
    }
    if (!e->zero)
      r = lane_issue_read (l, e, UINT64_MAX);
    else if (l->set->read_where_source_was)
      r = lane_issue_claimed_zero (l, e);
    else
      r = lane_issue_zero_extent (l, e, UINT64_MAX);
    if (r != 0)
      return;
  }
}

/* Extents were answered, perhaps past the segment (asked for, or said
 * by the server unasked): keep what concerns this segment, and tell
 * the job how far a hole at its end goes.  A segment that ends in a
 * hole makes the lane's next request look past its segment (in_hole):
 * what was learnt may stop only where the request did.
 */
static void
lane_learn_past_segment (struct lane *l)
{
  struct extent_list *list = &l->extents;
  uint64_t asked_end = list->end;
  uint64_t zero_end = extent_list_cut (list, l->segment_end);

  if (zero_end > l->segment_end)
    zero_run_learn (&l->job->zero_run, l->segment_end, zero_end);
  if (asked_end > l->segment_end)
    zero_run_looked (&l->job->zero_run, zero_end >= asked_end);
  l->in_hole = list->len > 0 && list->v[list->len - 1].zero
               && extent_list_covered (list) == l->segment_end;
}

static void
buffer_release (struct lane *l, struct buffer *b)
{
  l->queued_bytes -= b->len;
  pool_put (&l->pool, b->index);
  window_sample (&l->job->window, now_ns (), b->len);
}

/* A read finished: write its data runs, zero its zero runs. */
static void
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
  /* Hashed once its writes are on their way: the buffer stays until
     they are done, and the hashing overlaps them. */
  if (job->hash && !job_stopped (job))
    blkhash_add (&l->hash, b->offset, data, b->len, atomic_load (&job->size));
  if (b->pending == 0)
    buffer_release (l, b);
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

  int side = !op_on_source (op->kind);

  l->inflight--;
  l->activity[side].inflight--;
  l->activity[side].progress_ms = now_ms ();
  op->in_flight = false;
  if (op->eof)
    lane_stream_ended (l, op);
  if (op->err)
    lane_fail (l, op->kind, op->offset, op->length, strerror (op->err),
               op->err);

  switch (op->kind) {
  case OP_EXTENTS:
    l->extents_busy = false;
    /* --bitmap: only the dirty ranges are copied, holes in them as
       holes (unless --no-extents). */
    if (l->set->bitmap && !op->err) {
      extent_list_restrict (&l->extents, &l->alloc, &l->dirty,
                            l->set->extents && job->src->caps.can_extents,
                            l->set->align);
      break;
    }
    if (!op->err)
      lane_learn_past_segment (l);
    /* A server that answered nothing for the range gets it read. */
    if (!op->err && l->extents.len == 0)
      extent_list_add (&l->extents, l->pos, l->segment_end - l->pos, false);
    extent_list_align (&l->extents, l->set->align);
    /* A short answer is read on rather than asked about again. */
    extent_list_read_on (&l->extents, l->set->request_size);
    break;
  case OP_READ:
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

/* The most a lane waits between reconnection attempts (unless
   --retry-delay asks for longer from the start). */
#define MAX_RETRY_DELAY_MS 30000

/* A connection broke and nothing is in flight: wait, then reconnect
 * (lane_retry), or give up after --retry attempts in a row.
 */
static void
lane_schedule_retry (struct lane *l)
{
  struct job *job = l->job;
  int64_t delay = l->set->retry_delay_ms;

  if (l->attempts >= l->set->retry) {
    char msg[sizeof l->broken_why + 64];
    snprintf (msg, sizeof msg, "%s (gave up after %u %s)", l->broken_why,
              l->set->retry, l->set->retry == 1 ? "retry" : "retries");
    job_fail_text (job, msg);
    l->state = LANE_DONE;
    return;
  }
  for (unsigned i = 0; i < l->attempts && delay < MAX_RETRY_DELAY_MS; i++)
    delay *= 2;
  int64_t longest = MAX ((int64_t) MAX_RETRY_DELAY_MS, l->set->retry_delay_ms);
  delay = MIN (delay, longest);
  l->attempts++;
  fprintf (stderr, "nbdcp: %s; reconnecting in %.1f s (retry %u of %u)\n",
           l->broken_why, delay / 1000.0, l->attempts, l->set->retry);
  l->retry_at_ms = now_ms () + delay;
  l->state = LANE_RETRY_WAIT;
}

/* After a reconnection: the unflushed segments and the current one are
 * copied again from their start, since the server may have lost any
 * write it had not flushed; what was counted for them is forgotten.
 * They are exactly what the lane counted since its last flush, so its
 * stats go back to what they were then, and the bytes forgotten are
 * counted as redone instead: data, zeroed and skipped count each byte
 * once, as the attempt that stuck wrote it.
 */
static void
lane_rewind (struct lane *l)
{
  struct job *job = l->job;
  unsigned first = l->nredo;

  for (unsigned i = 0; i < l->nunflushed; i++)
    l->redo[l->nredo++] = l->unflushed[i];
  if (l->segment != NO_SEGMENT)
    l->redo[l->nredo++] = l->segment;
  for (unsigned i = first; i < l->nredo; i++) {
    l->stats.redone_bytes += job_uncount (job, l->redo[i]);
    if (job->hash)
      blkhash_restart_segment (&l->hash, l->redo[i]);
  }
  stats_rewind (&l->stats, &l->stats_at_flush);
  l->nunflushed = 0;
  l->unflushed_bytes = 0;
  l->segment = NO_SEGMENT;
  l->extents.len = 0;
  l->next_extent = 0;
  l->pos = l->segment_end = 0;
  l->no_more_segments = false;
}

void
lane_retry (struct lane *l)
{
  struct job *job = l->job;
  struct endpoint *eps[2] = { job->src, job->dst };
  struct conn *conns[2] = { l->src, l->dst };

  if (job_stopped (job)) {
    l->state = LANE_DONE;
    return;
  }
  for (int i = 0; i < 2; i++) {
    int r;

    if (!eps[i]->ops->broken || !eps[i]->ops->broken (conns[i]))
      continue;
    r = eps[i]->ops->reconnect (eps[i], conns[i]);
    if (r == 1) {
      l->retry_at_ms = now_ms () + 10; /* its old polls are ending */
      return;
    }
    if (r == -1) {
      snprintf (l->broken_why, sizeof l->broken_why,
                "%s connection %u: cannot reconnect: %s", eps[i]->side,
                l->index + 1, error_get ());
      lane_schedule_retry (l);
      return;
    }
  }
  note (l->set->verbose,
        "connection pair %u reconnected: %u segment%s to copy again",
        l->index + 1, l->nunflushed + (l->segment != NO_SEGMENT),
        l->nunflushed + (l->segment != NO_SEGMENT) == 1 ? "" : "s");
  l->stats.retries++;
  lane_rewind (l);
  l->broken = false;
  l->state = LANE_COPYING;
}

bool
lane_timed_out (struct lane *l, const struct op *op, const char *why)
{
  bool on_src = op_on_source (op->kind);
  struct endpoint *ep = on_src ? l->job->src : l->job->dst;

  if (!lane_can_reconnect (l, ep))
    return false;
  lane_mark_broken (l, ep, op->kind, op->offset, op->length, why);
  /* Its requests fail now, and the lane reconnects once they have. */
  ep->ops->abort (on_src ? l->src : l->dst);
  return true;
}

void
lane_check_finished (struct lane *l)
{
  struct job *job = l->job;
  bool stopped = job_stopped (job);
  bool nothing_left = l->no_more_segments && !l->extents_busy
                      && l->next_extent == l->extents.len;

  if (l->broken) {
    if (l->inflight > 0 || l->state == LANE_DONE || l->state == LANE_RETRY_WAIT)
      return;
    if (stopped)
      l->state = LANE_DONE;
    else
      lane_schedule_retry (l);
    return;
  }
  if (l->state != LANE_COPYING || l->inflight > 0 || !(stopped || nothing_left))
    return;
  if (stopped) {
    l->state = LANE_DONE;
    return;
  }
  if (l->segment != NO_SEGMENT)
    lane_segment_finished (l);
  lane_flush (l, LANE_FLUSHING);
}

/* The oldest request in flight of L on side SIDE (0 source, 1
 * destination, -1 either), or NULL.
 */
static const struct op *
lane_oldest_on (const struct lane *l, int side)
{
  const struct op *oldest = NULL;

#define CONSIDER(o)                                                            \
  do {                                                                         \
    if ((o)->in_flight && (side < 0 || side == !op_on_source ((o)->kind))      \
        && (!oldest || (o)->sent_ms < oldest->sent_ms))                        \
      oldest = (o);                                                            \
  } while (0)
  CONSIDER (&l->extents_op);
  CONSIDER (&l->flush_op);
  for (unsigned i = 0; i < l->pool.count; i++) {
    CONSIDER (&l->buffers[i].read);
    for (unsigned j = 0; j < l->runs_per_buffer; j++)
      CONSIDER (&l->buffers[i].runs[j]);
  }
  for (unsigned i = 0; i < l->set->requests; i++)
    CONSIDER (&l->zero_ops[i]);
#undef CONSIDER
  return oldest;
}

const struct op *
lane_oldest_op (const struct lane *l)
{
  return lane_oldest_on (l, -1);
}

const struct op *
lane_stalled_op (const struct lane *l, int64_t now, int64_t limit_ms)
{
  for (int side = 0; side < 2; side++)
    if (l->activity[side].inflight > 0
        && now - l->activity[side].progress_ms >= limit_ms)
      return lane_oldest_on (l, side);
  return NULL;
}

unsigned
lane_buffers (const struct settings *set)
{
  /* No point in more buffers than the byte budget can keep busy. */
  if (set->queue_size / set->request_size < set->requests)
    return MAX (set->queue_size / set->request_size, (uint64_t) 1);
  return set->requests;
}

/* Runs a buffer may be split into: one per zero-detection block, so
 * that data and holes alternating block by block are written as such.
 */
static unsigned
lane_runs_per_buffer (const struct settings *set)
{
  uint64_t blocks = MIN_RUNS_PER_BUFFER;

  if (set->sparse_size)
    blocks = (set->request_size + set->sparse_size - 1) / set->sparse_size;
  blocks = MAX (blocks, (uint64_t) MIN_RUNS_PER_BUFFER);
  return MIN (blocks, (uint64_t) MAX_RUNS_PER_BUFFER);
}

int
lane_init (struct lane *l, unsigned index, struct job *job,
           struct op_queue *done, struct conn *src, struct conn *dst)
{
  const struct settings *set = job->set;
  unsigned nbuffers = lane_buffers (set);

  *l = (struct lane){
    .index = index,
    .job = job,
    .set = set,
    .done = done,
    .src = src,
    .dst = dst,
    .segment = NO_SEGMENT,
  };
  if (set->checkpoint) {
    /* A lane holds at most checkpoint / SEGMENT_SIZE finished segments,
       rounded up, and one more in progress. */
    unsigned cap = set->checkpoint / SEGMENT_SIZE + 2;
    l->unflushed = calloc (cap, sizeof *l->unflushed);
    l->redo = calloc (cap, sizeof *l->redo);
    if (!l->unflushed || !l->redo) {
      error_set ("out of memory");
      return -1;
    }
  }
  if (job->hash && blkhash_lane_init (&l->hash, job->hash) == -1)
    return -1;
  l->extents.v = l->extent_store;
  l->extents.cap = EXTENTS_PER_LANE;
  l->extents.fold_below = set->fold_below;
  l->alloc.v = l->alloc_store;
  l->alloc.cap = EXTENTS_PER_LANE;
  l->alloc.fold_below = set->fold_below;
  l->dirty.v = l->dirty_store;
  l->dirty.cap = EXTENTS_PER_LANE;
  if (pool_init (&l->pool, nbuffers, set->request_size) == -1)
    return -1;
  l->runs_per_buffer = lane_runs_per_buffer (set);
  l->buffers = calloc (nbuffers, sizeof *l->buffers);
  l->run_ops
      = calloc ((size_t) nbuffers * l->runs_per_buffer, sizeof *l->run_ops);
  l->run_scratch = calloc (l->runs_per_buffer, sizeof *l->run_scratch);
  l->zero_ops = calloc (set->requests, sizeof *l->zero_ops);
  l->free_zero_ops = calloc (set->requests, sizeof *l->free_zero_ops);
  if (!l->buffers || !l->run_ops || !l->run_scratch || !l->zero_ops
      || !l->free_zero_ops) {
    error_set ("out of memory");
    return -1;
  }
  for (unsigned i = 0; i < nbuffers; i++) {
    l->buffers[i].index = i;
    l->buffers[i].runs = &l->run_ops[(size_t) i * l->runs_per_buffer];
  }
  for (unsigned i = 0; i < set->requests; i++)
    lane_put_zero_op (l, &l->zero_ops[i]);
  return 0;
}

void
lane_destroy (struct lane *l)
{
  blkhash_lane_destroy (&l->hash);
  pool_destroy (&l->pool);
  free (l->buffers);
  free (l->run_ops);
  free (l->run_scratch);
  free (l->zero_ops);
  free (l->free_zero_ops);
  free (l->unflushed);
  free (l->redo);
}
