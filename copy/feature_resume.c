/* --resume: segments that an earlier run finished (its journal says
 * so) are passed over.  Writing the journal is the main thread's
 * (job.c), from what --checkpoint hands it after each flush
 * (feature_checkpoint.c).
 */
#include <config.h>

#include "feature_attach.h"
#include "journal.h"

static bool
resume_done_before (void *self, uint64_t index)
{
  const struct journal *journal = self;

  return journal_is_done (journal, index);
}

static const struct lane_feature_ops resume_ops = {
  .name = "resume",
  .done_before = resume_done_before,
};

int
resume_feature_attach (struct lane_features *fs, struct job *job,
                       struct copy_stats *stats)
{
  (void) stats;
  if (!job->journal)
    return 0;
  return lane_features_add (fs, &resume_ops, job->journal);
}
