/* --checkpoint (and --retry and --resume, which set it): a segment is
 * done only once a later flush of the destination connection has
 * succeeded.
 *
 * The lane finishes each segment before it takes the next; finished
 * segments wait here ("unflushed") until enough of them ask for a flush
 * (segment_finished's answer).  A successful flush makes them done and
 * hands them to the job, and so to --resume's journal, which the main
 * thread writes.  After a broken connection is made again (--retry),
 * the unflushed segments and the current one are copied again from
 * their start ("redo", taken before new segments), since the server may
 * have lost any write it had not flushed; what the lane counted for
 * them is forgotten (its stats go back to the last flush, and the
 * difference counts as redone).
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "feature_attach.h"
#include "segment.h"

struct checkpoint {
  struct job *job;
  struct copy_stats *stats; /* the lane's */
  uint64_t flush_after;     /* bytes finished: --checkpoint */
  uint64_t segment;         /* the current one, or NO_SEGMENT */
  uint64_t *unflushed;      /* finished, not yet flushed */
  unsigned nunflushed;
  uint64_t unflushed_bytes;
  uint64_t *redo; /* to copy again */
  unsigned nredo;
  /* The stats at the last successful flush: a rewind takes the counts
     back to them, since everything counted since is copied again. */
  struct copy_stats stats_at_flush;
};

static int
checkpoint_take_segment (void *self, uint64_t *index, bool *fresh)
{
  struct checkpoint *c = self;

  if (c->nredo == 0)
    return 0;
  *index = c->redo[0];
  *fresh = false;
  memmove (c->redo, c->redo + 1, --c->nredo * sizeof *c->redo);
  return 1;
}

static void
checkpoint_segment_started (void *self, uint64_t index)
{
  struct checkpoint *c = self;

  c->segment = index;
}

static bool
checkpoint_segment_finished (void *self, uint64_t index)
{
  struct checkpoint *c = self;

  c->unflushed[c->nunflushed++] = index;
  c->unflushed_bytes += segment_length (atomic_load (&c->job->size), index);
  c->segment = NO_SEGMENT;
  return c->unflushed_bytes >= c->flush_after;
}

/* Every unflushed segment is done: hand them to --resume's journal (a
 * lane never waits for the file).
 */
static void
checkpoint_flushed (void *self)
{
  struct checkpoint *c = self;

  if (c->job->journal && c->nunflushed > 0)
    job_segments_flushed (c->job, c->unflushed, c->nunflushed);
  c->nunflushed = 0;
  c->unflushed_bytes = 0;
  c->stats_at_flush = *c->stats;
}

/* The unflushed segments and the current one are what the lane counted
 * since its last flush, so its stats go back to what they were then,
 * and the bytes forgotten are counted as redone instead: data, zeroed
 * and skipped count each byte once, as the attempt that stuck wrote it.
 * With --bitmap the clean ranges passed over are not redone (nothing
 * was copied there), only the dirty bytes.
 */
static unsigned
checkpoint_rewind (void *self, const uint64_t **segments)
{
  struct checkpoint *c = self;
  unsigned first = c->nredo;

  for (unsigned i = 0; i < c->nunflushed; i++)
    c->redo[c->nredo++] = c->unflushed[i];
  if (c->segment != NO_SEGMENT)
    c->redo[c->nredo++] = c->segment;
  for (unsigned i = first; i < c->nredo; i++)
    job_uncount (c->job, c->redo[i]);
  c->stats->redone_bytes += stats_since (c->stats, &c->stats_at_flush);
  stats_rewind (c->stats, &c->stats_at_flush);
  c->nunflushed = 0;
  c->unflushed_bytes = 0;
  c->segment = NO_SEGMENT;
  *segments = c->redo + first;
  return c->nredo - first;
}

static void
checkpoint_destroy (void *self)
{
  struct checkpoint *c = self;

  free (c->unflushed);
  free (c->redo);
  free (c);
}

static const struct lane_feature_ops checkpoint_ops = {
  .name = "checkpoint",
  .take_segment = checkpoint_take_segment,
  .segment_started = checkpoint_segment_started,
  .segment_finished = checkpoint_segment_finished,
  .flushed = checkpoint_flushed,
  .rewind = checkpoint_rewind,
  .destroy = checkpoint_destroy,
};

int
checkpoint_feature_attach (struct lane_features *fs, struct job *job,
                           struct copy_stats *stats)
{
  uint64_t flush_after = job->set->checkpoint;
  /* A lane holds at most flush_after / SEGMENT_SIZE finished segments,
     rounded up, and one more in progress. */
  unsigned cap = flush_after / SEGMENT_SIZE + 2;
  struct checkpoint *c;

  if (!flush_after)
    return 0;
  c = calloc (1, sizeof *c);
  if (c) {
    *c = (struct checkpoint){
      .job = job,
      .stats = stats,
      .flush_after = flush_after,
      .segment = NO_SEGMENT,
      .unflushed = calloc (cap, sizeof *c->unflushed),
      .redo = calloc (cap, sizeof *c->redo),
    };
  }
  if (!c || !c->unflushed || !c->redo) {
    if (c)
      checkpoint_destroy (c);
    error_set ("out of memory");
    return -1;
  }
  if (lane_features_add (fs, &checkpoint_ops, c) == -1) {
    checkpoint_destroy (c);
    return -1;
  }
  return 0;
}
