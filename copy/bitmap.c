/* --bitmap=NAME: what an incremental copy needs besides the lanes'
 * own work (lane.c skips clean extents; the NBD endpoint negotiates
 * the bitmap's meta context, named as dirty_bitmap.h says, and sorts
 * its block status into its own list): the
 * checks that refuse copies which cannot be incremental, and a look at
 * the whole bitmap before the copy for -p's total and -v's summary.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bitmap.h"
#include "error.h"
#include "human_size.h"
#include "job.h"
#include "lane.h"
#include "minmax.h"

int
bitmap_check_endpoints (const struct options *opts)
{
  if (endpoint_is_stream (opts->src, opts->src_command, false)
      || endpoint_is_stream (opts->dst, opts->dst_command, true)) {
    error_set ("--bitmap cannot be used with a stream: an incremental copy "
               "writes only the dirty ranges, in place");
    return -1;
  }
  if (endpoint_is_new_file (opts->dst, opts->dst_command)) {
    error_set ("--bitmap: destination %s does not exist or is empty; an "
               "incremental copy goes onto the previous full copy",
               opts->dst);
    return -1;
  }
  return 0;
}

int
bitmap_check_source (const struct endpoint *src)
{
  if (!src->ops->scan_extents) {
    error_set ("--bitmap needs an NBD source that exports the bitmap "
               "(qemu-nbd -B NAME, or a VM's NBD server); %s is a %s",
               src->spec, src->ops->kind);
    return -1;
  }
  return 0;
}

int
bitmap_check_destination (const struct endpoint *src,
                          const struct endpoint *dst)
{
  if (src->size >= 0 && dst->size >= 0 && dst->size < src->size) {
    error_set ("--bitmap: destination %s (%" PRIi64 " bytes) is smaller "
               "than source %s (%" PRIi64 " bytes): it cannot hold the "
               "previous copy that an incremental copy brings up to date",
               dst->spec, dst->size, src->spec, src->size);
    return -1;
  }
  return 0;
}

static uint64_t
gcd (uint64_t a, uint64_t b)
{
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* What -v says about the bitmap as it is seen: runs of dirty bytes,
   joined across block status answers. */
struct shape {
  uint64_t runs, bytes, smallest, granule;
  uint64_t run_start;
  bool in_run;
};

static void
shape_end_run (struct shape *sh, uint64_t end, uint64_t size)
{
  uint64_t len = end - sh->run_start;

  sh->runs++;
  sh->bytes += len;
  sh->smallest = sh->smallest ? MIN (sh->smallest, len) : len;
  sh->granule = gcd (sh->granule, sh->run_start);
  if (end != size)
    sh->granule = gcd (sh->granule, end);
  sh->in_run = false;
}

/* Add the raw dirty extents of LIST up to LIMIT to SH. */
static void
shape_add (struct shape *sh, const struct extent_list *list, uint64_t limit,
           uint64_t size)
{
  for (size_t i = 0; i < list->len && list->v[i].offset < limit; i++) {
    const struct extent *e = &list->v[i];
    bool dirty = !e->zero;

    if (dirty && !sh->in_run) {
      sh->run_start = e->offset;
      sh->in_run = true;
    }
    else if (!dirty && sh->in_run)
      shape_end_run (sh, e->offset, size);
  }
}

int
bitmap_scan (struct endpoint *src, struct settings *s)
{
  uint64_t size = src->size, pos = 0, dirty = 0;
  bool holes = s->extents && src->caps.can_extents;
  struct extent *store = calloc (4 * EXTENTS_PER_LANE, sizeof *store);
  struct extent_list out = { .v = store, .cap = EXTENTS_PER_LANE };
  struct extent_list alloc
      = { .v = store + EXTENTS_PER_LANE, .cap = EXTENTS_PER_LANE };
  struct extent_list map
      = { .v = store + 2 * EXTENTS_PER_LANE, .cap = EXTENTS_PER_LANE };
  struct extent_list raw
      = { .v = store + 3 * EXTENTS_PER_LANE, .cap = EXTENTS_PER_LANE };
  struct shape sh = { 0 };
  char a[32], b[32], c[32], d[32];

  if (!store) {
    error_set ("out of memory");
    return -1;
  }
  /* As the lanes will ask: from each position to the end of its
     segment, so that the answers are fitted to blocks the same way. */
  while (pos < size) {
    uint64_t end = segment_end (size, pos / SEGMENT_SIZE);

    extent_list_reset (&out, pos, end);
    extent_list_reset (&alloc, pos, end);
    extent_list_reset (&map, pos, end);
    alloc.dirty = &map;
    if (src->ops->scan_extents (src, end - pos, pos, &alloc) == -1) {
      free (store);
      return -1;
    }
    memcpy (raw.v, map.v, map.len * sizeof *map.v);
    raw.len = map.len;
    extent_list_restrict (&out, &alloc, &map, holes, s->align);
    pos = extent_list_covered (&out);
    shape_add (&sh, &raw, pos, size);
    for (size_t i = 0; i < out.len; i++)
      if (!out.v[i].clean)
        dirty += out.v[i].length;
  }
  if (sh.in_run)
    shape_end_run (&sh, size, size);
  free (store);

  s->dirty_bytes = dirty;
  if (sh.runs == 0)
    note (s->verbose, "bitmap %s: nothing is dirty, nothing to copy",
          s->bitmap);
  else
    note (
        s->verbose,
        "bitmap %s: %s dirty of %s, in %" PRIu64 " run%s; the smallest "
        "run is %s, and every boundary a multiple of %s (granularity as "
        "seen); %" PRIu64 " bytes to copy",
        s->bitmap, human_size_format (sh.bytes, a, sizeof a),
        human_size_format (size, b, sizeof b), sh.runs, sh.runs == 1 ? "" : "s",
        human_size_format (sh.smallest, c, sizeof c),
        human_size_format (sh.granule ? sh.granule : sh.smallest, d, sizeof d),
        dirty);
  return 0;
}
