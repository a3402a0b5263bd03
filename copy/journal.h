/* --resume: the journal of a copy's finished segments, so that a rerun
 * of an interrupted copy skips them.  A segment is finished when all
 * its requests succeeded and a later flush of the connection that made
 * them succeeded: only then does a server restart not lose it.
 */
#ifndef NBDCP_JOURNAL_H
#define NBDCP_JOURNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct journal {
  const char *path;
  char *identity; /* lines that must match for a rerun to use it */
  uint64_t nsegments;
  uint8_t *done; /* one per segment: finished and flushed */
  uint64_t ndone;
  bool existed;         /* an earlier run's journal was found */
  pthread_mutex_t lock; /* guards done, ndone and the file */
};

/* Open the journal at PATH for a copy of NSEGMENTS segments described
 * by IDENTITY (newline-separated lines: what the copy is).  If PATH
 * exists, its identity must be IDENTITY, and its finished segments are
 * loaded; if not, it is created (empty), so that a rerun after any
 * interruption knows that an earlier run may have written.  Returns -1
 * after error_set(), before anything is written to the destination.
 */
int journal_open (struct journal *j, const char *path, const char *identity,
                  uint64_t nsegments);

/* Whether SEGMENT was finished by an earlier run (read before the copy
 * takes the segment; only the lane that takes it changes it).
 */
static inline bool
journal_is_done (const struct journal *j, uint64_t segment)
{
  return j->done[segment] != 0;
}

/* SEGMENTS[0..N) are finished: record them and rewrite the file
 * atomically (a temporary file, fdatasync, rename).  Any thread.
 * Returns -1 after error_set().
 */
int journal_mark_done (struct journal *j, const uint64_t *segments, unsigned n);

/* Free J; with COPY_COMPLETE, remove the file too (the copy needs no
 * resuming).  Returns -1 after error_set() if removing failed.
 */
int journal_close (struct journal *j, bool copy_complete);

#endif
