/* Waiting until the kernel has let go of what a closed ring held.
 *
 * Closing a ring does not free it: the kernel frees it later, from a
 * kernel thread.  Until then, requests the ring has finished may still
 * hold the files they used.  This happens with deferred task work
 * (ring.c): a request run by one of the kernel's io worker threads (a
 * fallocate, fsync or sync_file_range) is freed only when the thread
 * that issued it next waits on the ring, and if that nbdcp worker had
 * already seen its last completion, that is at the ring's teardown.  If the
 * destination file is closed before then, the kernel thread drops the
 * last reference, and the file is let go after nbdcp has exited: an
 * `umount` run the moment nbdcp exits is refused (EBUSY), about once in
 * a few hundred copies (tests/test-unmount-after-copy.sh).
 *
 * Nothing in the ring API says when a ring is freed, but its registered
 * files are put when it is.  So every ring gets the write end of one
 * pipe as a registered file, and nbdcp closes its own copy: the read
 * end sees the pipe hang up once the last ring is gone.  By then every
 * request of those rings has been freed, and the endpoints' own close
 * of their files is the last one, done before nbdcp exits.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "ring_fence.h"

void
ring_fence_init (struct ring_fence *f)
{
  int fds[2];

  *f = RING_FENCE_NONE;
  if (pipe2 (fds, O_CLOEXEC) == -1)
    return;
  f->read_fd = fds[0];
  f->write_fd = fds[1];
}

void
ring_fence_add (struct ring_fence *f, struct io_uring *ring)
{
  /* A ring that refuses is simply not waited for. */
  if (f->write_fd >= 0)
    (void) io_uring_register_files (ring, &f->write_fd, 1);
}

static int64_t
now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
ring_fence_wait (struct ring_fence *f, int timeout_ms,
                 const volatile sig_atomic_t *interrupted)
{
  struct pollfd pfd = { .fd = f->read_fd, .events = POLLIN };
  int64_t deadline = now_ms () + timeout_ms;
  int r;

  if (f->read_fd < 0)
    return true;
  close (f->write_fd);
  do {
    int64_t left = deadline - now_ms ();
    r = poll (&pfd, 1, left > 0 ? (int) left : 0);
  } while (r == -1 && errno == EINTR && !(interrupted && *interrupted));
  close (f->read_fd);
  *f = RING_FENCE_NONE;
  return r == 1;
}
