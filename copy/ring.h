/* Small io_uring helpers shared by the worker loop and the endpoints. */
#ifndef NBDCP_RING_H
#define NBDCP_RING_H

#include <stdbool.h>
#include <stdint.h>

#include <liburing.h>

#include "ring_event.h"

/* Create a worker's ring of ENTRIES.  *DISABLED says whether it was
 * made for one thread and must be enabled by that thread with
 * ring_enable before anything is submitted (ring.c says why).  Both
 * return 0 or a negative errno.
 */
int ring_init (struct io_uring *ring, unsigned entries, bool *disabled);
int ring_enable (struct io_uring *ring);

/* A free SQE, submitting what is queued first if the ring is full. */
static inline struct io_uring_sqe *
ring_get_sqe (struct io_uring *ring)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe (ring);

  while (!sqe) {
    io_uring_submit (ring);
    sqe = io_uring_get_sqe (ring);
  }
  return sqe;
}

/* One-shot poll of FD for MASK; EV->handle runs when it fires. */
static inline void
ring_poll (struct io_uring *ring, int fd, unsigned mask, struct ring_event *ev)
{
  struct io_uring_sqe *sqe = ring_get_sqe (ring);

  io_uring_prep_poll_add (sqe, fd, mask);
  io_uring_sqe_set_data (sqe, ev);
}

#endif
