/* A lane's extents: what the source says of the lane's current
 * segment, so that holes and zeroes are not read.
 *
 * For each segment a lane asks the source for the extents of what is
 * left of it (one request at a time), or makes them up where no
 * request is needed: a source that cannot tell, --no-extents, a range
 * inside the job's known zero run.  A lane whose last segment ended in
 * a hole asks past its segment, and what it learns there goes to the
 * job's zero run (zero_run.h).  With --bitmap the allocation and the
 * dirty bitmap are combined once both are in.
 *
 * It does not act on the extents (lane.c issues the reads, zeroes and
 * skips), nor handle a failed request beyond passing it to lane_fail
 * (lane_recover.c).
 */
#include <config.h>

#include "error.h"
#include "lane_internal.h"
#include "minmax.h"

/* Learn the extents of [pos, segment_end).  Sources that cannot tell,
 * and --no-extents, make the whole range data at once, unless the
 * dirty bitmap (--bitmap) is needed.  A range inside the job's known
 * zero run needs no request; a lane in a hole asks how far it goes
 * past the segment (see zero_run.h).
 */
int
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

/* The shortest hole at a segment's end that makes the lane look past
 * its next segment.  A fragmented disk ends half its segments in a
 * small hole, and a look there makes the server describe a second
 * segment of small extents only to be thrown away (W11 at 2G: 1.5x
 * the server's block status work).  A long hole that starts less than
 * this before a segment's end is found by the next segment's own
 * request, and the looks start from there: one request more.
 */
#define LOOK_PAST_MIN_HOLE (8 * 1024 * 1024)

/* Extents were answered, perhaps past the segment (asked for, or said
 * by the server unasked): keep what concerns this segment, and tell
 * the job how far a hole at its end goes.  A segment that ends in a
 * hole of LOOK_PAST_MIN_HOLE or more makes the lane's next request
 * look past its segment (in_hole): what was learnt may stop only where
 * the request did.
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
               && list->v[list->len - 1].length >= LOOK_PAST_MIN_HOLE
               && extent_list_covered (list) == l->segment_end;
}

void
lane_extents_done (struct lane *l, const struct op *op)
{
  l->extents_busy = false;
  /* --bitmap: only the dirty ranges are copied, holes in them as
     holes (unless --no-extents). */
  if (l->set->bitmap && !op->err) {
    extent_list_restrict (&l->extents, &l->alloc, &l->dirty,
                          l->set->extents && l->job->src->caps.can_extents,
                          l->set->align);
    return;
  }
  if (!op->err)
    lane_learn_past_segment (l);
  /* A server that answered nothing for the range gets it read. */
  if (!op->err && l->extents.len == 0)
    extent_list_add (&l->extents, l->pos, l->segment_end - l->pos, false);
  extent_list_align (&l->extents, l->set->align);
  /* A short answer is read on rather than asked about again. */
  extent_list_read_on (&l->extents, l->set->request_size);
}
