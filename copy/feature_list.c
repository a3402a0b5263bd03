/* Which features a lane gets, and in what order they hear its events.
 * A new feature is a file with its hooks (lane_feature.h), its attach
 * function declared in feature_attach.h, and a line here.
 */
#include <config.h>

#include "feature_attach.h"
#include "feature_list.h"

/* The order matters where two features answer the same gate: a
   segment to copy again (--checkpoint) comes before a new one, and
   --rate is paid before --blkhash reserves room for a partial block,
   which would otherwise stay reserved while the rate makes the read
   wait. */
static feature_attach_fn *const attach_fns[] = {
  checkpoint_feature_attach, /* --checkpoint, --retry, --resume */
  resume_feature_attach,     /* --resume: pass over finished segments */
  rate_feature_attach,       /* --rate */
  blkhash_feature_attach,    /* --blkhash */
  verify_map_feature_attach, /* --verify's pass: read where the source was */
};

int
features_attach (struct lane_features *fs, struct job *job,
                 struct copy_stats *stats)
{
  for (size_t i = 0; i < sizeof attach_fns / sizeof attach_fns[0]; i++)
    if (attach_fns[i](fs, job, stats) == -1)
      return -1;
  return 0;
}
