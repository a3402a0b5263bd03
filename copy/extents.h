/* Extent lists: what a source says about a range of the disk, as runs
 * of data and runs that read as zero, in a fixed-size array that is
 * filled without allocating.
 */
#ifndef NBDCP_EXTENTS_H
#define NBDCP_EXTENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Extents one of a lane's lists holds at once; more are fetched as it
   goes. */
#define EXTENTS_PER_LANE 1024

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
  /* Holes shorter than this between data are made data as they are
     added: reading a small hole costs less than a request of its own
     (docs/design.md, "Fragmented sources").  0: never.  Kept by
     extent_list_reset. */
  uint64_t fold_below;
};

void extent_list_reset (struct extent_list *list, uint64_t start, uint64_t end);
/* Add what a server said of [offset, offset+length).  Only what
 * continues the list is kept; a zero extent shorter than
 * LIST->fold_below between two data extents joins them into one, so
 * that a fragmented map takes few entries and is read in whole
 * requests.
 */
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

/* LIST, fitted to its block size, stops short of its end: the server
 * answered for less than was asked (some answer one extent at a time),
 * or the list is full.  Asking again from where it stops would cost a
 * round trip per answer, and the data before it would be read in
 * pieces as small as the answers.  So read on: unless LIST ends in a
 * hole of LIST->fold_below or more (which is worth asking past), its
 * last extent becomes data that ends where the last REQUEST-sized read
 * of it would end (or at LIST->end), and the next question starts
 * there.  What was not known is read, which is always correct.
 * REQUEST is a multiple of the block size.
 */
void extent_list_read_on (struct extent_list *list, uint64_t request);

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
