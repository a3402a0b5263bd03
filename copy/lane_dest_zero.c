/* What a lane's destination already reads as zero, so that zeroing it
 * again is skipped: a new qcow2 or a new thin disk reads as zero
 * everywhere, and zeroing every hole of a sparse source onto it costs
 * as much as the rest of the copy.
 *
 * When a lane starts a segment it asks the destination, in one request
 * for a window of DEST_ZERO_WINDOW from the segment's start (NBD block
 * status, SEEK_DATA/SEEK_HOLE on a file), where it reads as zero, before
 * anything of the segment is written.  Only this lane writes to its
 * segment, so the answer stays true for the segment's zero requests: a
 * range that reads as zero and that the source has as a hole or zero
 * run is left alone.  What the answer says past the segment is true of
 * the segments no lane had taken when it was asked (nobody wrote them
 * since): a later segment of this lane inside the zero run learnt there
 * is known without asking again, so a new disk costs one question per
 * window, not one per segment.  A range the
 * answer did not cover, or a failed request, is zeroed as before.
 * Writes of data never depend on it.
 *
 * The answer is trusted as the source's block status is (a server that
 * says zero where it holds data would leave its data there); --verify
 * (=full) checks it.  Not asked with --allocated (a hole is zeroed to
 * allocate it), with --destination-is-zero (nothing is zeroed), nor of
 * a destination that cannot tell (null:, streams, block devices, a
 * server without base:allocation): see settings.c.
 */
#include <config.h>

#include "error.h"
#include "lane_internal.h"
#include "minmax.h"
#include "segment.h"

/* How far one question looks: 16 segments (NBD's block status takes
   at most 4 GiB - 1). */
#define DEST_ZERO_WINDOW (16 * SEGMENT_SIZE)

void
lane_dest_zero_forget (struct lane *l, uint64_t index, bool fresh)
{
  extent_list_reset (&l->dest_zero, l->pos, l->pos);
  l->dest_zero_wanted = l->set->ask_destination_zero;
  if (l->dest_zero_wanted && fresh && index >= l->dest_zero_ahead_untaken
      && l->pos >= l->dest_zero_ahead_from
      && l->segment_end <= l->dest_zero_ahead_to) {
    extent_list_reset (&l->dest_zero, l->pos, l->segment_end);
    extent_list_add (&l->dest_zero, l->pos, l->segment_end - l->pos, true);
    l->dest_zero_wanted = false;
  }
}

void
lane_dest_zero_fetch (struct lane *l)
{
  struct job *job = l->job;
  struct op *op = &l->dest_zero_op;
  uint64_t len
      = MIN ((uint64_t) DEST_ZERO_WINDOW, atomic_load (&job->size) - l->pos);

  l->dest_zero_wanted = false;
  /* Segments from here on are untaken now, so unwritten. */
  l->dest_zero_ahead_untaken = atomic_load (&job->next_segment);
  l->dest_zero_ahead_from = l->dest_zero_ahead_to = 0;
  extent_list_reset (&l->dest_zero, l->pos, l->pos + len);
  if (len == 0)
    return;
  lane_prepare_op (l, op, OP_DEST_EXTENTS, NULL, l->pos, len);
  /* Not being able to ask is no failure: the segment is zeroed as
     before, and a broken connection shows at the next request. */
  if (job->dst->ops->extents (l->dst, len, l->pos, &l->dest_zero, op) == -1) {
    extent_list_reset (&l->dest_zero, l->pos, l->pos);
    return;
  }
  l->dest_zero_busy = true;
  lane_sent (l, op);
}

/* The zero run of the answer from the segment's end on, for the lane's
 * next segments (see the top of this file).
 */
static void
learn_ahead (struct lane *l)
{
  const struct extent_list *list = &l->dest_zero;

  for (size_t i = 0; i < list->len; i++) {
    const struct extent *e = &list->v[i];

    if (e->offset <= l->segment_end && l->segment_end < e->offset + e->length) {
      if (e->zero) {
        l->dest_zero_ahead_from = l->segment_end;
        l->dest_zero_ahead_to = e->offset + e->length;
      }
      return;
    }
  }
}

void
lane_dest_zero_done (struct lane *l, const struct op *op)
{
  l->dest_zero_busy = false;
  if (op->err) {
    /* Not knowing is safe: everything is zeroed as before.  A broken
       connection shows at the next request. */
    extent_list_reset (&l->dest_zero, l->dest_zero.start, l->dest_zero.start);
    return;
  }
  /* Zero ranges shrink to whole blocks: the destination's minimum and
     the --blkhash block, so the zero extents cut at their edges keep
     whole hash blocks (lane.c). */
  extent_list_align (&l->dest_zero, l->set->align);
  learn_ahead (l);
}

/* The extent of the answer holding OFFSET, or NULL.  Buffers finish in
 * any order, so a binary search rather than a cursor.
 */
static const struct extent *
dest_zero_find (const struct extent_list *list, uint64_t offset)
{
  size_t lo = 0, hi = list->len;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct extent *e = &list->v[mid];

    if (offset < e->offset)
      hi = mid;
    else if (offset >= e->offset + e->length)
      lo = mid + 1;
    else
      return e;
  }
  return NULL;
}

uint64_t
lane_dest_zero_prefix (const struct lane *l, uint64_t offset, uint64_t len,
                       bool *reads_zero)
{
  const struct extent *e = dest_zero_find (&l->dest_zero, offset);

  *reads_zero = e && e->zero;
  /* Up to where this extent ends: the next one is of the other kind. */
  return e ? MIN (len, e->offset + e->length - offset) : len;
}
