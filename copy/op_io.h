/* What an endpoint keeps in a request while it is in flight, and how it
 * finishes one.  The endpoints see requests only through this header
 * (endpoint.h includes it); op.h, above them, embeds struct op_io in
 * struct op, and op.c defines the functions declared here.  It sits
 * below both, so that neither includes the other.
 */
#ifndef NBDCP_OP_IO_H
#define NBDCP_OP_IO_H

#include <stdint.h>

#include "ring_event.h"

struct conn; /* one connection; each endpoint kind defines it */
struct op;   /* one engine request; see op.h */

/* Finish OP; ERR is 0 or an errno value.  Defined in op.c. */
void op_complete (struct op *op, int err);

/* Finish a read of a stream that met its end: only GOT bytes were read
 * (possibly 0), and there is nothing after them.
 */
void op_complete_eof (struct op *op, uint32_t got);

/* What of a read's request its reply has covered so far, kept as the
 * reply's chunks arrive (nbd.c), without allocation: the bytes covered
 * from the request's start, and up to READ_COVER_SPANS spans that came
 * ahead of them (offsets from the request's start).
 */
#define READ_COVER_SPANS 4
struct read_cover {
  uint32_t prefix; /* [0, prefix) is covered */
  uint8_t nspans;
  uint8_t fault; /* nbd.c's COVER_*: what was wrong, or 0 */
  struct {
    uint32_t start, end;
  } spans[READ_COVER_SPANS]; /* disjoint, in order, past prefix */
};

/* Room in every request for the endpoint's use while it is in flight,
 * so that endpoints that submit to the ring need no allocation.
 */
struct op_io {
  struct ring_event ev;
  struct op *op;
  struct conn *conn;
  char *buf;
  uint64_t offset;
  uint64_t len;
  uint64_t done;
  int kind;
  struct read_cover cover;
};
struct op_io *op_io (struct op *op);

#endif
