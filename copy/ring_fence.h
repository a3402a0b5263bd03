/* Waiting until the kernel has let go of what a closed ring held. */
#ifndef NBDCP_RING_FENCE_H
#define NBDCP_RING_FENCE_H

#include <signal.h>
#include <stdbool.h>

#include <liburing.h>

/* The read end of a pipe whose only write end is registered with each
 * ring (ring_fence.c says why).  Both -1 when there is no fence.
 */
struct ring_fence {
  int read_fd;
  int write_fd;
};

#define RING_FENCE_NONE ((struct ring_fence){ .read_fd = -1, .write_fd = -1 })

/* Make the pipe.  Without one (no descriptors left) there is no fence,
 * and the copy goes on: the fence only makes the exit tidier.
 */
void ring_fence_init (struct ring_fence *f);

/* Give RING a reference to the write end.  Before the ring is enabled
 * (a single-issuer ring takes registrations from its issuer only).
 */
void ring_fence_add (struct ring_fence *f, struct io_uring *ring);

/* After every ring it was added to is closed: wait up to TIMEOUT_MS
 * for the kernel to free them, then close the pipe.  A signal that set
 * *INTERRUPTED (if not NULL) ends the wait at once.  Returns false if
 * the wait ended before the rings were freed.
 */
bool ring_fence_wait (struct ring_fence *f, int timeout_ms,
                      const volatile sig_atomic_t *interrupted);

#endif
