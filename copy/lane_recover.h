/* A lane's recovery (lane_recover.c): failed requests, broken
 * connections, --retry, and what --timeout asks of a lane.  lane.c
 * takes the first three; the engine the rest, through lane.h.
 */
#ifndef NBDCP_LANE_RECOVER_H
#define NBDCP_LANE_RECOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "lane_struct.h"
#include "op.h"

/* A request of KIND failed, when submitted or when it completed: a
 * broken connection to reconnect, or the end of the copy.
 */
void lane_fail (struct lane *l, enum op_kind kind, uint64_t offset,
                uint64_t length, const char *why, int code);
/* OP completed with an error (op->err): lane_fail, with the server's
 * fault on OP's connection in the message when its endpoint knows one.
 */
void lane_op_failed (struct lane *l, const struct op *op);
/* A connection broke and nothing is in flight: wait, then reconnect
 * (lane_retry), or give up after --retry attempts in a row.
 */
void lane_schedule_retry (struct lane *l);

/* For a lane in LANE_RETRY_WAIT whose time has come: reconnect its
 * broken connections and go back to copying, or wait again.
 */
void lane_retry (struct lane *l);
/* --timeout found OP of L stalled: true if the lane will reconnect
 * (--retry; its connection has been cut), false if the copy must fail.
 */
bool lane_timed_out (struct lane *l, const struct op *op, const char *why);
/* The request of L that has waited longest, or NULL. */
const struct op *lane_oldest_op (const struct lane *l);
/* The oldest request on a connection of L that has had requests in
 * flight and finished none for LIMIT_MS or more at NOW, or NULL.
 */
const struct op *lane_stalled_op (const struct lane *l, int64_t now,
                                  int64_t limit_ms);

#endif
