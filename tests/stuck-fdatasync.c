/* A preload library for tests/test-resume-journal-write.sh: while the
 * file named by $STUCK_FDATASYNC_FIFO (a FIFO) exists, fdatasync(2)
 * blocks until a reader opens that FIFO, copies the file being synced
 * into it (so the test sees what was about to be made durable), and
 * then fails with EIO, as a disk that lost the write would.  Without the
 * FIFO, fdatasync is the real one.  The journal's temporary file has a
 * name nobody can guess, so the test cannot plant anything there; this
 * holds the journal's write at its sync instead.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int
fdatasync (int fd)
{
  static int (*real) (int);
  const char *fifo = getenv ("STUCK_FDATASYNC_FIFO");
  char buf[4096];
  off_t off = 0;
  ssize_t n;
  int out;

  if (!real)
    real = (int (*) (int)) dlsym (RTLD_NEXT, "fdatasync");
  if (!fifo || access (fifo, F_OK) == -1)
    return real ? real (fd) : (errno = ENOSYS, -1);
  out = open (fifo, O_WRONLY | O_CLOEXEC); /* blocks until a reader */
  if (out >= 0) {
    while ((n = pread (fd, buf, sizeof buf, off)) > 0) {
      if (write (out, buf, n) != n)
        break;
      off += n;
    }
    close (out);
  }
  errno = EIO;
  return -1;
}
