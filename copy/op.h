/* A request in flight to an endpoint, and how it finishes.
 *
 * Lanes issue ops; endpoints finish them with op_complete(), which only
 * puts the op on the done queue it was issued with.  The worker that
 * owns the queue takes ops off it afterwards and hands each back to its
 * lane, outside any endpoint callback, so that acting on a finished
 * request never re-enters libnbd.
 */
#ifndef NBDCP_OP_H
#define NBDCP_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "op_io.h"

enum op_kind {
  OP_READ,
  OP_WRITE,
  OP_ZERO,
  OP_EXTENTS, /* the source's block status */
  OP_FLUSH,
  OP_DEST_EXTENTS, /* where the destination reads as zero */
};

struct lane;
struct buffer;

/* Finished ops, in the order they finished. */
struct op_queue {
  struct op *head, **tail;
};

struct op {
  struct op_io io;       /* the endpoint's, while in flight */
  struct op *next;       /* on the done queue */
  struct op_queue *done; /* where it goes when it finishes */
  struct lane *lane;     /* the lane that issued it */
  struct buffer *buf;    /* the buffer a read fills or a run drains */
  enum op_kind kind;
  uint64_t offset, length;
  int err;
  bool eof;     /* a stream read that met the stream's end */
  uint32_t got; /* and the bytes it got before it */
  bool in_flight;
  int64_t sent_ms; /* when it was sent (now_ms) */
  /* Its lane's requests in flight, oldest first (lane_sent): what
     --timeout, an interrupted copy's message and the end of the lane
     look at, whatever the request's kind. */
  struct op *sent_prev, *sent_next;
};

/* The requests a lane has in flight, in the order they were sent.
   Every request is put on it when sent and taken off when it finishes,
   so nothing that waits for a reply can be missed by those who look. */
struct op_list {
  struct op *oldest, *newest;
  unsigned count;
};

void op_list_append (struct op_list *list, struct op *op);
void op_list_remove (struct op_list *list, struct op *op);

/* Whether the operation is on the source connection, and its name.
   (job_side names the side.) */
bool op_on_source (enum op_kind kind);
const char *op_what (enum op_kind kind);

void op_queue_init (struct op_queue *q);
/* The oldest finished op, or NULL. */
struct op *op_queue_pop (struct op_queue *q);

#endif
