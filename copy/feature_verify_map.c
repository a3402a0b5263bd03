/* --verify's pass: the destination is read back, and a zero extent it
 * claims is believed only where the copy found the source a hole or
 * zero too; where the source was read, the destination is read,
 * whatever it says.  The copy's record (blkhash.c) is kept in whole
 * granules, multiples of the hash block, so the pieces split no hash
 * block.
 */
#include <config.h>

#include "blkhash.h"
#include "feature_attach.h"

static uint64_t
verify_map_zero_extent_read (void *self, uint64_t offset, uint64_t len,
                             bool *read)
{
  const struct blkhash *copied = self;

  return blkhash_read_run (copied, offset, len, read);
}

static const struct lane_feature_ops verify_map_ops = {
  .name = "verify-map",
  .zero_extent_read = verify_map_zero_extent_read,
};

int
verify_map_feature_attach (struct lane_features *fs, struct job *job,
                           struct copy_stats *stats)
{
  /* The copy's hash is only read here; features' state is not const
     because other features change theirs. */
  void *copied = (void *) job->set->read_where_source_was;

  (void) stats;
  if (!copied)
    return 0;
  return lane_features_add (fs, &verify_map_ops, copied);
}
