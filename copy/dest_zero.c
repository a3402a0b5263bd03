/* What a lane's destination already reads as zero, so that zeroing it
 * again is skipped: a new qcow2 or a new thin disk reads as zero
 * everywhere, and zeroing every hole of a sparse source onto it costs
 * as much as the rest of the copy.
 *
 * When a lane starts a segment it asks the destination, in one request
 * for a window of DEST_ZERO_WINDOW from the segment's start (NBD block
 * status, SEEK_DATA/SEEK_HOLE on a file), where it reads as zero,
 * before anything of the segment is written (the lane sends the
 * request; this file decides and answers).  Only this lane writes to
 * its segment, so the answer stays true for the segment's zero
 * requests: a range that reads as zero and that the source has as a
 * hole or zero run is left alone.  What the answer says past the
 * segment is true of the segments no lane had taken when it was asked
 * (nobody wrote them since): a later segment of this lane inside the
 * zero run learnt there is known without asking again, so a new disk
 * costs one question per window, not one per segment.  A range the
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

#include "dest_zero.h"
#include "minmax.h"
#include "segment.h"

/* How far one question looks: 16 segments (NBD's block status takes
   at most 4 GiB - 1). */
#define DEST_ZERO_WINDOW (16 * SEGMENT_SIZE)

void
dest_zero_init (struct dest_zero *d, bool ask, uint64_t align)
{
  *d = (struct dest_zero){ .ask = ask, .align = align };
  d->list.v = d->store;
  d->list.cap = EXTENTS_PER_LANE;
}

void
dest_zero_forget (struct dest_zero *d, uint64_t index, uint64_t pos,
                  uint64_t end, bool fresh)
{
  d->segment_end = end;
  extent_list_reset (&d->list, pos, pos);
  d->wanted = d->ask;
  if (d->wanted && fresh && index >= d->ahead_untaken && pos >= d->ahead_from
      && end <= d->ahead_to) {
    extent_list_reset (&d->list, pos, end);
    extent_list_add (&d->list, pos, end - pos, true);
    d->wanted = false;
  }
}

uint64_t
dest_zero_prepare (struct dest_zero *d, uint64_t pos, uint64_t size,
                   uint64_t next_untaken)
{
  uint64_t len = MIN ((uint64_t) DEST_ZERO_WINDOW, size - pos);

  d->wanted = false;
  /* Segments from here on are untaken now, so unwritten. */
  d->ahead_untaken = next_untaken;
  d->ahead_from = d->ahead_to = 0;
  extent_list_reset (&d->list, pos, pos + len);
  return len;
}

/* The zero run of the answer from the segment's end on, for the lane's
 * next segments (see the top of this file).
 */
static void
learn_ahead (struct dest_zero *d)
{
  const struct extent_list *list = &d->list;

  for (size_t i = 0; i < list->len; i++) {
    const struct extent *e = &list->v[i];

    if (e->offset <= d->segment_end && d->segment_end < e->offset + e->length) {
      if (e->zero) {
        d->ahead_from = d->segment_end;
        d->ahead_to = e->offset + e->length;
      }
      return;
    }
  }
}

void
dest_zero_answered (struct dest_zero *d, bool failed)
{
  if (failed) {
    /* Not knowing is safe: everything is zeroed as before.  A broken
       connection shows at the next request. */
    extent_list_reset (&d->list, d->list.start, d->list.start);
    return;
  }
  /* Zero ranges shrink to whole blocks: the destination's minimum and
     the --blkhash block, so the zero extents cut at their edges keep
     whole hash blocks (lane.c). */
  extent_list_align (&d->list, d->align);
  learn_ahead (d);
}

/* Asking is an optimisation: a destination that takes longer than
   this to say where it reads as zero is zeroed without asking. */
#define DEST_ZERO_DEADLINE_MS 3000

int64_t
dest_zero_deadline_ms (int64_t timeout_ms)
{
  if (timeout_ms && timeout_ms / 2 < DEST_ZERO_DEADLINE_MS)
    return MAX (timeout_ms / 2, (int64_t) 1);
  return DEST_ZERO_DEADLINE_MS;
}

void
dest_zero_give_up (struct dest_zero *d)
{
  d->ask = d->wanted = false;
  d->ahead_from = d->ahead_to = 0;
  /* Its reply may still fill d->list: nothing reads it now. */
  extent_list_reset (&d->list, d->list.start, d->list.start);
}

/* The extent of the answer holding OFFSET, or NULL.  Buffers finish in
 * any order, so a binary search rather than a cursor.
 */
static const struct extent *
find_extent (const struct extent_list *list, uint64_t offset)
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
dest_zero_prefix (const struct dest_zero *d, uint64_t offset, uint64_t len,
                  bool *reads_zero)
{
  const struct extent *e = find_extent (&d->list, offset);

  *reads_zero = e && e->zero;
  /* Up to where this extent ends: the next one is of the other kind. */
  return e ? MIN (len, e->offset + e->length - offset) : len;
}
