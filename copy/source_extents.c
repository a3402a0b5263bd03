/* A lane's extents: what the source says of the lane's current
 * segment, so that holes and zeroes are not read.
 *
 * For each segment a lane asks the source for the extents of what is
 * left of it (one request at a time, which the lane sends), or they are
 * made up here where no request is needed: a source that cannot tell,
 * --no-extents, a range inside the job's known zero run.  A lane whose last
 * segment ended in a hole asks past its segment, and what it learns there goes
 * to the job's zero run (zero_run.h).  With --bitmap the allocation and the
 * dirty bitmap are combined once both are in.
 *
 * It does not send requests or act on the extents (lane.c issues the
 * block status requests, reads, zeroes and skips).
 */
#include <config.h>

#include "minmax.h"
#include "source_extents.h"

void
source_extents_init (struct source_extents *s, const struct settings *set,
                     struct zero_run *run, bool can_tell)
{
  s->set = set;
  s->zero_run = run;
  s->can_tell = can_tell;
  s->look_past_segment = false;
  s->alloc.v = s->alloc_store;
  s->alloc.cap = EXTENTS_PER_LANE;
  s->alloc.fold_below = set->fold_below;
  s->dirty.v = s->dirty_store;
  s->dirty.cap = EXTENTS_PER_LANE;
}

/* Sources that cannot tell, and --no-extents, make the whole range data
 * at once, unless the dirty bitmap (--bitmap) is needed.  A range
 * inside the job's known zero run needs no request; a lane in a hole
 * asks how far it goes past the segment (see zero_run.h).
 */
uint64_t
source_extents_prepare (struct source_extents *s, struct extent_list *list,
                        uint64_t pos, uint64_t end, uint64_t size,
                        struct extent_list **into)
{
  const struct settings *set = s->set;
  uint64_t len = end - pos;

  extent_list_reset (list, pos, end);
  *into = list;
  if (set->bitmap) {
    extent_list_reset (&s->alloc, pos, end);
    extent_list_reset (&s->dirty, pos, end);
    s->alloc.dirty = &s->dirty;
    *into = &s->alloc;
  }
  else if (!set->extents || !s->can_tell) {
    extent_list_add (list, pos, len, false);
    extent_list_align (list, set->align);
    return 0;
  }
  else if (zero_run_covers (s->zero_run, pos, end)) {
    extent_list_add (list, pos, len, true);
    extent_list_align (list, set->align);
    s->look_past_segment = true;
    return 0;
  }
  else if (s->look_past_segment) {
    uint64_t ahead = MIN (zero_run_lookahead (s->zero_run), size - pos);
    len = MAX (len, ahead);
    extent_list_reset (list, pos, pos + len);
  }
  return len;
}

/* The shortest hole at a segment's end that makes the lane look past
 * its next segment.  A fragmented disk ends half its segments in a
 * small hole, and a look there makes the server describe a second
 * segment of small extents only to be thrown away (docs/performance.md
 * has the cost).  A long hole that starts less than this before a
 * segment's end is found by the next segment's own request, and the
 * looks start from there: one request more.
 */
#define LOOK_PAST_MIN_HOLE (8 * 1024 * 1024)

/* Extents were answered, perhaps past the segment (asked for, or said
 * by the server unasked): keep what concerns this segment, and tell
 * the job how far a hole at its end goes.  A segment that ends in a
 * hole of LOOK_PAST_MIN_HOLE or more makes the lane's next request
 * look past its segment: what was learnt may stop only where the
 * request did.
 */
static void
learn_past_segment (struct source_extents *s, struct extent_list *list,
                    uint64_t end)
{
  uint64_t asked_end = list->end;
  uint64_t zero_end = extent_list_cut (list, end);

  if (zero_end > end)
    zero_run_learn (s->zero_run, end, zero_end);
  if (asked_end > end)
    zero_run_looked (s->zero_run, zero_end >= asked_end);
  s->look_past_segment = list->len > 0 && list->v[list->len - 1].zero
                         && list->v[list->len - 1].length >= LOOK_PAST_MIN_HOLE
                         && extent_list_covered (list) == end;
}

void
source_extents_answered (struct source_extents *s, struct extent_list *list,
                         uint64_t pos, uint64_t end, bool failed)
{
  const struct settings *set = s->set;

  /* --bitmap: only the dirty ranges are copied, holes in them as
     holes (unless --no-extents). */
  if (set->bitmap && !failed) {
    extent_list_restrict (list, &s->alloc, &s->dirty,
                          set->extents && s->can_tell, set->align);
    return;
  }
  if (!failed)
    learn_past_segment (s, list, end);
  /* A server that answered nothing for the range gets it read. */
  if (!failed && list->len == 0)
    extent_list_add (list, pos, end - pos, false);
  extent_list_align (list, set->align);
  /* A short answer is read on rather than asked about again. */
  extent_list_read_on (list, set->request_size);
}
