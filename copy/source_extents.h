/* What the source says of a lane's current segment, so that holes and
 * zeroes are not read (source_extents.c).  The lane sends the block
 * status request; this decides what to ask and makes sense of the
 * answer.
 */
#ifndef NBDCP_SOURCE_EXTENTS_H
#define NBDCP_SOURCE_EXTENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "extents.h"
#include "settings.h"
#include "zero_run.h"

struct source_extents {
  const struct settings *set;
  struct zero_run *zero_run; /* the job's, shared by the lanes */
  bool can_tell;             /* the source answers block status */
  /* The lane's last segment ended in a long hole: its next request
     looks past its segment (see zero_run.h). */
  bool look_past_segment;
  /* --bitmap: the source's two answers, base:allocation and the dirty
     bitmap, before extent_list_restrict makes the lane's list of
     them. */
  struct extent alloc_store[EXTENTS_PER_LANE], dirty_store[EXTENTS_PER_LANE];
  struct extent_list alloc, dirty;
};

/* CAN_TELL: the source can answer block status. */
void source_extents_init (struct source_extents *s, const struct settings *set,
                          struct zero_run *run, bool can_tell);
/* Make LIST the extents of [POS, END), of a disk of SIZE bytes, or get
 * it ready for an answer.  Returns 0 if LIST is complete (made up: no
 * request is needed), else the length to ask about from POS, with the
 * answer to go into *INTO.
 */
uint64_t source_extents_prepare (struct source_extents *s,
                                 struct extent_list *list, uint64_t pos,
                                 uint64_t end, uint64_t size,
                                 struct extent_list **into);
/* That request finished (FAILED: with an error): make LIST, for [POS,
 * END), ready to use.
 */
void source_extents_answered (struct source_extents *s,
                              struct extent_list *list, uint64_t pos,
                              uint64_t end, bool failed);

#endif
