/* A preload library for tests/test-old-kernel-ring.sh: liburing's
 * io_uring_queue_init answers EINVAL to the flags Linux 6.1 added
 * (single issuer, deferred task work), as an older kernel's
 * io_uring_setup does, so that nbdcp's fallback to a plain ring runs
 * on a kernel that has them.  Every other call goes to liburing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include <liburing.h>

#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

int
io_uring_queue_init (unsigned entries, struct io_uring *ring, unsigned flags)
{
  static int (*real) (unsigned, struct io_uring *, unsigned);

  if (flags & (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)) {
    /* Said on stderr, so the test knows the preload took effect. */
    fprintf (stderr, "old-kernel-ring: refused flags 0x%x\n", flags);
    return -EINVAL;
  }
  if (!real)
    real = (int (*) (unsigned, struct io_uring *, unsigned)) dlsym (
        RTLD_NEXT, "io_uring_queue_init");
  return real ? real (entries, ring, flags) : -ENOSYS;
}
