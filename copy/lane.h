/* A lane: one source connection and one destination connection working
 * through segments of the disk, with its own buffers (see lane.c).  The
 * worker thread that owns a lane is the only one that touches it.
 */
#ifndef NBDCP_LANE_H
#define NBDCP_LANE_H

#include <stdbool.h>
#include <stdint.h>

#include "lane_dest_zero.h"
#include "lane_recover.h"
#include "lane_setup.h"
#include "lane_struct.h"

/* Issue as much work as buffers and request slots allow. */
void lane_issue (struct lane *l);
/* OP, a request of L, finished: act on it. */
void lane_op_done (struct lane *l, struct op *op);
/* Once a lane has nothing left to copy, flush it; then it is done. */
void lane_check_finished (struct lane *l);

#endif
