/* Whether a descriptor can be read from at this moment. */
#ifndef NBDCP_FD_READABLE_H
#define NBDCP_FD_READABLE_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>

/* Whether FD can be read from now (data, end of file or an error), as
 * opposed to when some earlier wake-up said so: a poll that does not
 * wait.  A negative FD (no socket yet) is not readable.  If poll itself
 * fails, FD counts as readable, so that the caller's read meets the
 * problem and reports it.
 */
static inline bool
fd_readable (int fd)
{
  struct pollfd pfd = { .fd = fd, .events = POLLIN };
  int r;

  if (fd < 0)
    return false;
  do
    r = poll (&pfd, 1, 0);
  while (r == -1 && errno == EINTR);
  return r != 0;
}

#endif
