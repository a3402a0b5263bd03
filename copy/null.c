/* The null: destination: accepts writes, zeroes and flushes and throws
 * them away, as fast as possible.  It is how people measure how fast a
 * source can be read.  Every request finishes inside the call.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>

#include "endpoint.h"
#include "error.h"

struct conn {
  int unused;
};

static int
null_open (struct endpoint *ep, bool writable, unsigned want)
{
  ep->size = INT64_MAX; /* any source fits */
  ep->caps = (struct endpoint_caps){
    .can_zero = true,
    .can_flush = true,
    .multi_conn = true,
  };
  ep->conns = calloc (want, sizeof *ep->conns);
  if (!ep->conns)
    goto nomem;
  for (ep->nconns = 0; ep->nconns < want; ep->nconns++) {
    ep->conns[ep->nconns] = calloc (1, sizeof (struct conn));
    if (!ep->conns[ep->nconns])
      goto nomem;
  }
  return 0;

nomem:
  error_set ("out of memory");
  if (ep->conns)
    for (unsigned i = 0; i < ep->nconns; i++)
      free (ep->conns[i]);
  free (ep->conns);
  ep->conns = NULL;
  return -1;
}

static int
null_read (struct conn *c, void *buf, uint32_t len, uint64_t offset,
           struct op *op)
{
  error_set ("null: cannot be read");
  return -1;
}

static int
null_write (struct conn *c, const void *buf, uint32_t len, uint64_t offset,
            struct op *op)
{
  op_complete (op, 0);
  return 0;
}

static int
null_zero (struct conn *c, uint64_t len, uint64_t offset, bool allocate,
           struct op *op)
{
  op_complete (op, 0);
  return 0;
}

static int
null_flush (struct conn *c, struct op *op)
{
  op_complete (op, 0);
  return 0;
}

static void
null_close (struct endpoint *ep, bool clean)
{
  for (unsigned i = 0; i < ep->nconns; i++)
    free (ep->conns[i]);
}

const struct endpoint_ops null_endpoint_ops = {
  .kind = "null",
  .open = null_open,
  .read = null_read,
  .write = null_write,
  .zero = null_zero,
  .flush = null_flush,
  .close = null_close,
};
