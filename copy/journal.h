/* --resume: the journal of a copy's finished segments, so that a rerun
 * of an interrupted copy skips them.  A segment is finished when all
 * its requests succeeded and a later flush of the connection that made
 * them succeeded: only then does a server restart not lose it.
 */
#ifndef NBDCP_JOURNAL_H
#define NBDCP_JOURNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Who touches what.  The main thread opens, writes and closes the
 * journal; the lanes (worker threads) only read `done` for a segment
 * they have just taken and hand in segments they have flushed
 * (journal_hand_in).  `done` and `handed` are atomics, so no lock is
 * needed and a lane never waits for the file: the file is written by
 * the main thread (journal_write, from job_wait while the copy runs,
 * and once more when the workers have ended).  A segment a lane hands
 * in was flushed before it was handed in, so a file written at any
 * moment lists only flushed segments; it may lag behind, which costs a
 * rerun some copying again, never a segment.
 */
struct journal {
  const char *path;
  char *identity;    /* lines that must match for a rerun to use it */
  char *destination; /* the destination's line, as this run leaves it */
  /* Why an earlier run's journal was void (it describes another
     destination, or is of an older format), or NULL. */
  char *voided;
  uint64_t nsegments;
  /* One per segment: 1 once finished and flushed, by an earlier run or
     by this one.  Written with relaxed stores (a lane's handed-in
     segments, the earlier run's at open); the segments a lane takes
     are never ones this run has flushed, so a lane's read of its
     segment's entry never races with that entry changing. */
  atomic_uchar *done;
  uint64_t ndone; /* done by an earlier run (at open) */
  bool existed;   /* an earlier run's journal was found and holds */
  atomic_uint_fast64_t handed; /* segments handed in by lanes so far */
  uint64_t saved;              /* main thread: `handed` when last written */
  bool broken;                 /* main thread: a write failed */
};

/* What the journal says of the destination (journal_identity.h): the
 * line a rerun must find (FOUND: what this run found, before writing
 * anything), the line to record (LEAVES: as this run leaves it), and
 * CREATED, the destination that this run created, or NULL.
 */
struct journal_destination {
  const char *found;
  const char *leaves;
  const char *created;
};

/* Open the journal at PATH for a copy of NSEGMENTS segments described
 * by IDENTITY (newline-separated lines: what the copy is) onto DEST.
 * If PATH exists, its identity must be IDENTITY, and unless it is void
 * its finished segments are loaded.  It is void (j->voided says why, and
 * it is written again, empty) if DEST was created by this run, if the
 * destination line it records is not DEST's FOUND, or if it is of the
 * older format that recorded no destination.  If PATH does not exist,
 * it is created (empty), so that a rerun after any interruption knows
 * that an earlier run may have written.  Returns -1 after error_set(),
 * before anything is written to the destination.
 */
int journal_open (struct journal *j, const char *path, const char *identity,
                  const struct journal_destination *dest, uint64_t nsegments);

/* The destination is now as this run leaves it (a file created after
 * journal_open): record LEAVES, its line, from the next write on.
 * Returns -1 after error_set().
 */
int journal_set_destination (struct journal *j, const char *leaves);

/* Whether SEGMENT was finished by an earlier run (read by the lane that
 * takes the segment, before it copies anything of it).
 */
static inline bool
journal_is_done (const struct journal *j, uint64_t segment)
{
  return atomic_load_explicit (&j->done[segment], memory_order_relaxed) != 0;
}

/* SEGMENTS[0..N) are finished and a flush after their last writes
 * succeeded: record them for the next journal_write.  Any thread; no
 * lock, no allocation, no system call.
 */
void journal_hand_in (struct journal *j, const uint64_t *segments, unsigned n);

/* The main thread: whether segments were handed in since the file was
 * last written (and writing it has not failed).
 */
static inline bool
journal_pending (struct journal *j)
{
  return atomic_load_explicit (&j->handed, memory_order_acquire) != j->saved
         && !j->broken;
}

/* The main thread: if segments were handed in since the last write,
 * rewrite the file atomically (a temporary file, fdatasync, rename,
 * fsync of the directory), checking each step.  Returns -1 after
 * error_set() with a message naming the journal and the step that
 * failed; once a write has failed, later calls do nothing and return 0
 * (the failure has been reported, and the copy fails with it).
 */
int journal_write (struct journal *j);

/* Free J; with COPY_COMPLETE, remove the file too (the copy needs no
 * resuming).  Returns -1 after error_set() if removing failed.
 */
int journal_close (struct journal *j, bool copy_complete);

#endif
