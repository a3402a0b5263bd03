/* --blkhash-file=FILE: where the checksum goes.  FILE is opened before
 * the copy, so that one that cannot be written fails the copy before
 * anything is written, and the checksum goes into it only once the copy
 * has succeeded.  Three kinds of FILE:
 *
 * - A name for one of nbdcp's own descriptors: /dev/stdin, /dev/stdout,
 *   /dev/stderr, /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N
 *   (bash's >(CMD) is /dev/fd/63).  The descriptor itself is used (a
 *   duplicate), as the shell does with these names, not the name opened
 *   again: the checksum goes wherever the descriptor leads (a pipe, a
 *   socket, a terminal, a file), written at its position and with its
 *   flags, as echo >&N would; a file there is neither truncated nor
 *   replaced (so '>> f' appends).
 *
 * - A FIFO or a character device, the name itself (a symbolic link is
 *   not followed): opened for writing, without O_CREAT or O_TRUNC.  A
 *   FIFO is opened with O_NONBLOCK, so that one that nobody reads fails
 *   at once (ENXIO) instead of holding the copy until a reader comes,
 *   and it must belong to the user running nbdcp: a FIFO someone else
 *   planted would get the checksum.
 *
 * - Anything else: a regular file, written whole into a temporary file
 *   beside it and renamed over it (lib/atomic_file.h): never through a
 *   symbolic link, mode 0600, and a failed copy leaves it as it was.
 *
 * Whatever it is, FILE must not be the destination itself (the
 * checksum would go into the copy, or replace it).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blkhash_file.h"
#include "error.h"

int
blkhash_file_descriptor (const char *name)
{
  static const char *const std[]
      = { "/dev/stdin", "/dev/stdout", "/dev/stderr" };
  static const char *const dirs[]
      = { "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/" };

  for (int i = 0; i < 3; i++)
    if (strcmp (name, std[i]) == 0)
      return i;
  for (unsigned i = 0; i < 3; i++) {
    size_t len = strlen (dirs[i]);
    const char *n = name + len;
    size_t digits;

    if (strncmp (name, dirs[i], len) != 0)
      continue;
    digits = strspn (n, "0123456789");
    if (digits > 0 && digits <= 9 && n[digits] == '\0')
      return atoi (n);
  }
  return -1;
}

/* FILE names descriptor N: use a duplicate of it. */
static int
open_descriptor (struct blkhash_file *bf, int n)
{
  int flags = fcntl (n, F_GETFL);

  if (flags == -1) {
    error_set ("--blkhash-file: %s: descriptor %d is not open", bf->name, n);
    return -1;
  }
  if ((flags & O_ACCMODE) == O_RDONLY) {
    error_set ("--blkhash-file: %s: descriptor %d is not open for writing",
               bf->name, n);
    return -1;
  }
  bf->fd = fcntl (n, F_DUPFD_CLOEXEC, 3);
  if (bf->fd == -1) {
    error_set ("--blkhash-file: %s: %s", bf->name, strerror (errno));
    return -1;
  }
  return 0;
}

/* FILE is a FIFO or a character device (ST, from lstat): open it for
 * writing, and check that what was opened is what was looked at.
 */
static int
open_special (struct blkhash_file *bf, const struct stat *st)
{
  bool fifo = S_ISFIFO (st->st_mode);
  struct stat opened;
  int flags;

  if (fifo && st->st_uid != geteuid ()) {
    error_set ("--blkhash-file: %s is a FIFO that belongs to user %u, not "
               "to this user: refused (the checksum would go to whoever "
               "made it)",
               bf->name, (unsigned) st->st_uid);
    return -1;
  }
  bf->fd = open (bf->name,
                 O_WRONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (bf->fd == -1 && errno == ENXIO && fifo) {
    error_set ("--blkhash-file: %s is a FIFO that nobody is reading: "
               "refused rather than wait (start its reader first)",
               bf->name);
    return -1;
  }
  if (bf->fd == -1) {
    error_set ("--blkhash-file: %s: %s", bf->name, strerror (errno));
    return -1;
  }
  if (fstat (bf->fd, &opened) == -1 || opened.st_dev != st->st_dev
      || opened.st_ino != st->st_ino) {
    error_set ("--blkhash-file: %s changed while it was opened: refused",
               bf->name);
    return -1;
  }
  /* From now on, a reader that is slow only makes the write wait. */
  flags = fcntl (bf->fd, F_GETFL);
  if (flags == -1 || fcntl (bf->fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
    error_set ("--blkhash-file: %s: %s", bf->name, strerror (errno));
    return -1;
  }
  return 0;
}

/* The checksum must not go into the copy: refuse a FILE that is the
 * endpoint SPEC (a [ CMD ] if COMMAND) itself: with SPEC '-' the
 * standard descriptor STD_FD, else the same pipe, FIFO or file, but for
 * a character device (/dev/null for both is harmless).  WHAT names the
 * side.  The source would be overwritten, the destination corrupted.
 */
static int
check_not_endpoint (const struct blkhash_file *bf, const char *spec,
                    bool command, int std_fd, const char *what)
{
  bool std = strcmp (spec, "-") == 0;
  struct stat a, b;
  bool same;

  if (command)
    return 0;
  if (std && blkhash_file_descriptor (bf->name) == std_fd)
    same = true;
  else if (bf->atomic && !std && strcmp (bf->name, spec) == 0)
    same = true;
  else {
    if ((bf->atomic ? stat (bf->name, &a) : fstat (bf->fd, &a)) == -1
        || S_ISCHR (a.st_mode)
        || (std ? fstat (std_fd, &b) : stat (spec, &b)) == -1)
      return 0;
    same = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  }
  if (!same)
    return 0;
  error_set ("--blkhash-file: %s is also the %s%s: the checksum "
             "cannot go there",
             bf->name, what,
             !std                      ? ""
             : std_fd == STDOUT_FILENO ? " (standard output, '-')"
                                       : " (standard input, '-')");
  return -1;
}

/* Neither side of the copy. */
static int
check_not_endpoints (const struct blkhash_file *bf, const struct options *opts)
{
  if (check_not_endpoint (bf, opts->dst, opts->dst_command != NULL,
                          STDOUT_FILENO, "destination")
      == -1)
    return -1;
  return check_not_endpoint (bf, opts->src, opts->src_command != NULL,
                             STDIN_FILENO, "source");
}

int
blkhash_file_open (struct blkhash_file *bf, const struct options *opts)
{
  int n;
  struct stat st;

  *bf = (struct blkhash_file){ .fd = -1, .name = opts->blkhash_file };
  if (!opts->blkhash_file)
    return 0;
  bf->open = true;
  n = blkhash_file_descriptor (bf->name);
  if (n >= 0) {
    if (open_descriptor (bf, n) == -1)
      return -1;
  }
  else if (lstat (bf->name, &st) == 0
           && (S_ISFIFO (st.st_mode) || S_ISCHR (st.st_mode))) {
    if (open_special (bf, &st) == -1)
      return -1;
  }
  else {
    bf->atomic = true;
    if (atomic_file_begin (&bf->f, bf->name) == -1) {
      error_set ("--blkhash-file: %s", bf->f.why);
      return -1;
    }
  }
  return check_not_endpoints (bf, opts);
}

/* Write all of BUF to FD.  A signal (nbdcp's handlers are for the
 * signals that stop it) ends the wait for a reader.
 */
static int
write_all (int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t n = write (fd, buf, len);
    if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      /* The descriptor we were given is non-blocking. */
      struct pollfd p = { .fd = fd, .events = POLLOUT };
      if (poll (&p, 1, -1) == -1)
        return -1;
      continue;
    }
    if (n == -1)
      return -1;
    buf += n;
    len -= n;
  }
  return 0;
}

int
blkhash_file_write (struct blkhash_file *bf, const char *line, size_t len)
{
  struct stat st;

  if (bf->atomic) {
    if (atomic_file_write (&bf->f, line, len) == -1
        || atomic_file_commit (&bf->f) == -1) {
      error_set ("--blkhash-file: %s", bf->f.why);
      return -1;
    }
    return 0;
  }
  if (write_all (bf->fd, line, len) == -1) {
    error_set ("--blkhash-file: writing to %s failed: %s", bf->name,
               strerror (errno));
    return -1;
  }
  /* A file behind a descriptor is made as durable as a replaced one. */
  if (fstat (bf->fd, &st) == 0 && S_ISREG (st.st_mode)
      && fdatasync (bf->fd) == -1) {
    error_set ("--blkhash-file: fdatasync of %s failed: %s", bf->name,
               strerror (errno));
    return -1;
  }
  return 0;
}

void
blkhash_file_close (struct blkhash_file *bf)
{
  if (!bf->open)
    return;
  if (bf->atomic)
    atomic_file_free (&bf->f);
  if (bf->fd >= 0)
    close (bf->fd);
  *bf = (struct blkhash_file){ .fd = -1 };
}
