/* Writing progress so that it never blocks the copy or its exit.
 *
 * Progress goes to descriptors the user gives (stderr for -p,
 * --progress=FD, --progress-json=FD), and a reader that is slow, stopped
 * or gone (a pipe nobody reads, a terminal paused with ^S) must cost the
 * copy nothing: a line the reader cannot take now is dropped, and the
 * next one tries again.  A pipe or terminal is reopened through
 * /proc/self/fd with O_NONBLOCK, a description of nbdcp's own, so that
 * the descriptor it shares with the shell is left as it was; a socket is
 * written with MSG_DONTWAIT; a file never waits for a reader and is
 * written as it is.  What cannot be reopened is polled before each
 * write.  A line taken only in part (a terminal, a socket) is finished
 * before the next one, so a program never reads half of one line glued
 * to another.  Only the last line of a run waits, a little.
 *
 * It also refuses, before anything is opened, a progress descriptor
 * that would write into the copy: closed (the destination would be
 * opened on its number), the destination itself, or the source.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "minmax.h"
#include "progress_out.h"

/* Whether descriptor FD is the same file as NAME (a path, "-" for the
 * standard descriptor STD_FD, or NULL).
 */
static bool
same_as (int fd, const struct stat *fs, const char *name, int std_fd)
{
  struct stat st;

  if (!name)
    return false;
  if (strcmp (name, "-") == 0) {
    if (fd == std_fd)
      return true;
    return fstat (std_fd, &st) == 0 && st.st_dev == fs->st_dev
           && st.st_ino == fs->st_ino;
  }
  /* A path (a file, a device, a FIFO, /dev/stdout, /dev/fd/N): the
     same file, or the same pipe, would get progress in its data; only
     a character device named twice is harmless (a terminal,
     /dev/null). */
  return !S_ISCHR (fs->st_mode) && stat (name, &st) == 0
         && st.st_dev == fs->st_dev && st.st_ino == fs->st_ino;
}

int
progress_out_check (int fd, const char *option, const char *src,
                    const char *dst)
{
  struct stat fs;
  int flags;

  if (fd < 0)
    return 0;
  flags = fcntl (fd, F_GETFL);
  if (flags == -1 || fstat (fd, &fs) == -1) {
    error_set ("%s=%d: descriptor %d is not open", option, fd, fd);
    return -1;
  }
  if ((flags & O_ACCMODE) == O_RDONLY) {
    error_set ("%s=%d: descriptor %d is not open for writing", option, fd, fd);
    return -1;
  }
  if (same_as (fd, &fs, dst, STDOUT_FILENO)) {
    error_set ("%s=%d: descriptor %d is the destination (%s): progress "
               "would be written into the copy",
               option, fd, fd, dst);
    return -1;
  }
  if (same_as (fd, &fs, src, STDIN_FILENO)) {
    error_set ("%s=%d: descriptor %d is the source (%s)", option, fd, fd, src);
    return -1;
  }
  return 0;
}

void
progress_out_open (struct progress_out *o, int fd)
{
  struct stat st;
  char path[64];
  int nb;

  *o = (struct progress_out){ .fd = fd, .write_fd = fd };
  if (fd < 0 || fstat (fd, &st) == -1 || S_ISREG (st.st_mode)
      || S_ISBLK (st.st_mode))
    return;
  if (S_ISSOCK (st.st_mode)) {
    o->socket = true;
    return;
  }
  snprintf (path, sizeof path, "/proc/self/fd/%d", fd);
  nb = open (path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (nb >= 0) {
    o->write_fd = nb;
    o->own = true;
  }
  else
    o->may_wait = true;
}

void
progress_out_close (struct progress_out *o)
{
  if (o->own)
    close (o->write_fd);
  o->own = false;
  o->fd = o->write_fd = -1;
}

int
progress_outs_open (struct progress_outs *outs, int progress_fd, int json_fd,
                    const char *src, const char *dst)
{
  progress_out_open (&outs->err, -1);
  progress_out_open (&outs->fd, -1);
  progress_out_open (&outs->json, -1);
  if (progress_out_check (progress_fd, "--progress", src, dst) == -1
      || progress_out_check (json_fd, "--progress-json", src, dst) == -1)
    return -1;
  progress_out_open (&outs->err, STDERR_FILENO);
  progress_out_open (&outs->fd, progress_fd);
  progress_out_open (&outs->json, json_fd);
  return 0;
}

void
progress_outs_close (struct progress_outs *outs)
{
  progress_out_close (&outs->err);
  progress_out_close (&outs->fd);
  progress_out_close (&outs->json);
}

/* Write what the reader takes of BUF now, without waiting: the bytes
 * written, or -1 with errno (EAGAIN: not now).
 */
static ssize_t
write_now (struct progress_out *o, const char *buf, size_t n)
{
  if (o->socket)
    return send (o->write_fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (o->may_wait) {
    struct pollfd p = { .fd = o->write_fd, .events = POLLOUT };
    if (poll (&p, 1, 0) != 1) {
      errno = EAGAIN;
      return -1;
    }
  }
  return write (o->write_fd, buf, n);
}

/* Write what is pending, as far as the reader takes it now: true once
 * nothing is.
 */
static bool
flush_pending (struct progress_out *o)
{
  while (o->npending > 0) {
    ssize_t r = write_now (o, o->pending, o->npending);

    if (r <= 0)
      return false;
    memmove (o->pending, o->pending + r, o->npending - r);
    o->npending -= r;
  }
  return true;
}

/* Keep the part of LINE after its first WRITTEN bytes, to finish later. */
static void
keep_rest (struct progress_out *o, const char *line, size_t n, size_t written)
{
  size_t rest = MIN (n - written, sizeof o->pending - o->npending);

  memcpy (o->pending + o->npending, line + written, rest);
  o->npending += rest;
}

void
progress_out_line (struct progress_out *o, const char *line, size_t n)
{
  ssize_t r;

  if (o->fd < 0 || n == 0)
    return;
  if (!flush_pending (o)) {
    o->dropped++;
    return;
  }
  r = write_now (o, line, n);
  if (r < 0) {
    o->dropped++; /* not now (EAGAIN), or the reader is gone (EPIPE) */
    return;
  }
  if ((size_t) r < n)
    keep_rest (o, line, n, r);
}

void
progress_out_last (struct progress_out *o, const char *line, size_t n,
                   int wait_ms)
{
  int64_t end = now_ms () + wait_ms;

  if (o->fd < 0 || n == 0)
    return;
  keep_rest (o, line, n, 0);
  while (!flush_pending (o)) {
    struct pollfd p = { .fd = o->write_fd, .events = POLLOUT };
    int64_t left = end - now_ms ();

    if ((errno != EAGAIN && errno != EWOULDBLOCK) || left <= 0)
      break;
    /* A signal (EINTR) ends the wait too: nbdcp is on its way out. */
    if (poll (&p, 1, (int) left) != 1)
      break;
  }
  o->npending = 0;
}
