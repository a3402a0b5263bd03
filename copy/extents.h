/* Extent lists: what a source says about a range of the disk, as runs
 * of data and runs that read as zero, in a fixed-size array that is
 * filled without allocating.
 */
#ifndef NBDCP_EXTENTS_H
#define NBDCP_EXTENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A run of the source that is either data or reads as zero; with
 * --bitmap, or clean: unchanged since the previous copy, so neither read
 * nor written.
 */
struct extent {
  uint64_t offset;
  uint64_t length;
  bool zero;
  bool clean;
};

/* A fixed-size list of extents covering [start, end) from start onwards,
 * filled by ops->extents without allocating.  When it is full, later
 * extents are dropped and the caller asks again from where it ends.
 * The list may also cover less than asked (servers may answer for a
 * prefix only); the caller asks again from where it ends.
 */
struct extent_list {
  struct extent *v;
  size_t len, cap;
  uint64_t start, end;
  bool full;
  /* The source reads as zero from END up to here, as far as the answer
     went past END (servers may answer beyond the range asked for). */
  uint64_t zero_past_end;
  /* --bitmap: where a source puts the dirty bitmap's answer for the
     same range, or NULL.  In that list `zero` means clean: both are
     what need not be copied, and extent_list_align rounds both inwards,
     so a block that is partly dirty is copied. */
  struct extent_list *dirty;
};

void extent_list_reset (struct extent_list *list, uint64_t start, uint64_t end);
void extent_list_add (struct extent_list *list, uint64_t offset,
                      uint64_t length, bool zero);

/* Make LIST end at END, which is inside it: what lies past END is
 * dropped.  Returns where the source's zero run from END ends, as far
 * as LIST knew it (also past its old end): END if it knew of none.
 */
uint64_t extent_list_cut (struct extent_list *list, uint64_t end);

/* Where the extents in LIST end (LIST->start if there are none). */
uint64_t extent_list_covered (const struct extent_list *list);

/* Make every boundary in LIST a multiple of BLOCK (a power of 2), for
 * servers with a minimum block size: a block that holds any data is
 * data, so zero extents shrink to the whole blocks inside them and the
 * partial blocks at their edges join the data around them.  The end of
 * the list stays where it is only if it is LIST->end (the caller keeps
 * that aligned, or at the disk's end); an end short of it is rounded
 * down, and the rest is asked again.  LIST->start must be a multiple of
 * BLOCK.  Never leaves an empty list when the input covered at least
 * one BLOCK, or reached LIST->end.
 */
void extent_list_align (struct extent_list *list, uint64_t block);

/* --bitmap: make OUT the extents of ALLOC (base:allocation) where DIRTY
 * says dirty, and clean extents where DIRTY says clean.  Both are
 * filled for [OUT->start, OUT->end) and are fitted to BLOCK here; an
 * empty ALLOC, or HOLES false (--no-extents, a source that cannot tell
 * holes), makes the range data; an empty DIRTY makes it dirty (copying
 * too much is safe, too little is not).  The two answers may end at
 * different places (a server may answer for a prefix): OUT ends where
 * the shorter one does, or where OUT fills up, and is then full, so
 * the caller asks again from there.
 */
void extent_list_restrict (struct extent_list *out, struct extent_list *alloc,
                           struct extent_list *dirty, bool holes,
                           uint64_t block);

#endif
