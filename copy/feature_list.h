/* Attaching to a lane the features its job asks for (see
 * lane_feature.h).
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

#endif
