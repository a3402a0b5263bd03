/* What lane.c (the copy state machine) takes from lane_recover.c
 * (failed requests, broken connections, --retry) and nothing else uses.
 * The engine uses lane.h only.
 */
#ifndef NBDCP_LANE_INTERNAL_H
#define NBDCP_LANE_INTERNAL_H

#include <stdint.h>

#include "lane.h"
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

#endif
