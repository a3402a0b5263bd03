/* The features a lane can have (see lane_feature.h): each attaches
 * itself to a lane if the job's settings ask for it.
 */
#ifndef NBDCP_FEATURE_LIST_H
#define NBDCP_FEATURE_LIST_H

#include "job.h"
#include "lane_feature.h"
#include "stats.h"

/* Attach to FS every feature JOB asks for; STATS are the lane's, for
 * the features that count.  -1 after error_set().
 */
int features_attach (struct lane_features *fs, struct job *job,
                     struct copy_stats *stats);

/* One per feature, called by features_attach in this order (the order
 * in which each event reaches them): each does nothing if its option
 * was not given.
 */
int checkpoint_feature_attach (struct lane_features *fs, struct job *job,
                               struct copy_stats *stats);
int resume_feature_attach (struct lane_features *fs, struct job *job,
                           struct copy_stats *stats);
int rate_feature_attach (struct lane_features *fs, struct job *job,
                         struct copy_stats *stats);
int blkhash_feature_attach (struct lane_features *fs, struct job *job,
                            struct copy_stats *stats);
int verify_map_feature_attach (struct lane_features *fs, struct job *job,
                               struct copy_stats *stats);

#endif
