/* A lane's memory (lane_setup.c): allocated once, freed at the end. */
#ifndef NBDCP_LANE_SETUP_H
#define NBDCP_LANE_SETUP_H

#include "lane_struct.h"
#include "op.h"
#include "settings.h"

/* Set up L for JOB on connections SRC and DST; finished requests go on
 * DONE.  Allocates the lane's buffers: nothing is allocated after.  The
 * caller then attaches the features (l->features, feature_list.c).
 */
int lane_init (struct lane *l, unsigned index, struct job *job,
               struct op_queue *done, struct conn *src, struct conn *dst);
void lane_destroy (struct lane *l);
/* The buffers each lane has, with settings SET. */
unsigned lane_buffers (const struct settings *set);

#endif
