/* Setting up a worker's io_uring.
 *
 * A worker's ring has one user, the worker thread, which both submits
 * and waits on it.  The kernel can be told so: with a single issuer
 * and deferred task work (Linux 6.1), the work that completes a
 * request is not pushed onto the thread at once, with a signal-like
 * interrupt (an IPI when the thread is running on another CPU), but
 * queued until the thread next waits on the ring, which it does on
 * every turn of its loop anyway.  Such interrupts come from whoever
 * completes a request: for a poll on a socket, the NBD server's thread
 * that sends the reply.  On these VMs each one is a trip to the
 * hypervisor.  Deferring them saves CPU, not wall time (see
 * docs/performance.md).
 *
 * The ring is created by the main thread (so a failure is reported
 * before any thread starts) but must be used by the worker alone, so
 * it starts disabled and the worker enables it: the thread that
 * enables a single-issuer ring is its issuer.  Registering buffers is
 * allowed before that.  Older kernels refuse the flags (EINVAL), and
 * then the ring is the plain kind.
 */
#include <config.h>

#include <errno.h>
#include <stdbool.h>

#include <liburing.h>

#include "ring.h"

int
ring_init (struct io_uring *ring, unsigned entries, bool *disabled)
{
#ifdef IORING_SETUP_DEFER_TASKRUN
  int r = io_uring_queue_init (entries, ring,
                               IORING_SETUP_SINGLE_ISSUER
                                   | IORING_SETUP_DEFER_TASKRUN
                                   | IORING_SETUP_R_DISABLED);
  if (r != -EINVAL) {
    *disabled = r == 0;
    return r;
  }
#endif
  *disabled = false;
  return io_uring_queue_init (entries, ring, 0);
}

int
ring_enable (struct io_uring *ring)
{
  return io_uring_register (ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL,
                            0);
}
