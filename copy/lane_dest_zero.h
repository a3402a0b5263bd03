/* A lane's question to the destination (lane_dest_zero.c): where the
 * current segment reads as zero already.
 */
#ifndef NBDCP_LANE_DEST_ZERO_H
#define NBDCP_LANE_DEST_ZERO_H

#include <stdbool.h>

#include "lane_struct.h"

/* Ask the destination where the current segment reads as zero. */
void lane_fetch_dest_zero (struct lane *l);
/* Whether the lane must still wait for the destination's answer (and
 * then its worker is woken by the question's deadline).  One that has
 * had its time is given up here.
 */
bool lane_waits_for_dest_zero (struct lane *l);
/* Whether a request L gave up on may still be answered into L's
 * memory (see dest_zero_given_up): then L must not be freed before its
 * connection is closed.
 */
bool lane_has_late_reply (const struct lane *l);

#endif
