/* The features a lane can have, each in its own file (feature_*.c):
 * its attach function, which adds its hooks (lane_feature.h) to a lane
 * if the job's settings ask for it, and does nothing if not.
 * feature_list.c calls them, in the order in which the features hear
 * each event.
 */
#ifndef NBDCP_FEATURE_ATTACH_H
#define NBDCP_FEATURE_ATTACH_H

#include "job.h"
#include "lane_feature.h"
#include "stats.h"

/* STATS are the lane's, for the features that count.  -1 after
   error_set(). */
typedef int feature_attach_fn (struct lane_features *fs, struct job *job,
                               struct copy_stats *stats);

feature_attach_fn
    checkpoint_feature_attach;            /* --checkpoint, --retry, --resume */
feature_attach_fn resume_feature_attach;  /* --resume */
feature_attach_fn rate_feature_attach;    /* --rate */
feature_attach_fn blkhash_feature_attach; /* --blkhash */
feature_attach_fn verify_map_feature_attach; /* --verify's pass */

#endif
