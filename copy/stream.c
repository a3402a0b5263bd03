/* The stream endpoint: standard input or output ('-'), pipes, sockets
 * and character devices.  Streams cannot seek, so the engine runs copies
 * that involve one strictly in order, one request at a time; every
 * request here finishes inside the call.  Zeroes become real zero bytes.
 * Standard input or output redirected from or to a file is a stream
 * too when it is not at the file's start, or is in append mode.
 * A stream source has no size: it is read until it ends.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint.h"
#include "error.h"
#include "minmax.h"

#define ZERO_CHUNK (256 * 1024)

struct conn {
  int fd;        /* what is read or written */
  bool owned;    /* opened here, so closed here */
  bool socket;   /* read and written with MSG_DONTWAIT */
  bool blocking; /* neither: polled first, best effort */
  uint64_t pos;  /* next offset the stream is at */
  const volatile sig_atomic_t *interrupted; /* the endpoint's */
};

/* How often a stream that cannot be read or written looks whether the
   copy was interrupted. */
#define STREAM_WAIT_MS 100

static const char zeroes[ZERO_CHUNK];

/* Make C's reads or writes (WRITABLE) return rather than wait: a pipe,
 * FIFO or terminal is reopened through /proc/self/fd with O_NONBLOCK,
 * a description of nbdcp's own (the shell's is left as it was); a
 * socket is used with MSG_DONTWAIT; a file never waits.  Where neither
 * works, the stream is polled before each call (stream_wait), which a
 * large write to a pipe can still outlast.
 */
static void
stream_unblock (struct conn *c, bool writable)
{
  struct stat st;
  char path[64];
  int fd;

  if (fstat (c->fd, &st) == -1 || S_ISREG (st.st_mode) || S_ISBLK (st.st_mode))
    return;
  if (S_ISSOCK (st.st_mode)) {
    c->socket = true;
    return;
  }
  snprintf (path, sizeof path, "/proc/self/fd/%d", c->fd);
  fd = open (path, (writable ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_NOCTTY
                       | O_CLOEXEC);
  if (fd == -1) {
    c->blocking = true;
    return;
  }
  if (c->owned)
    close (c->fd);
  c->fd = fd;
  c->owned = true;
}

static int
stream_open (struct endpoint *ep, bool writable, unsigned want)
{
  struct conn *c = calloc (1, sizeof *c);

  ep->conns = calloc (1, sizeof *ep->conns);
  if (!c || !ep->conns) {
    free (c);
    free (ep->conns);
    ep->conns = NULL;
    error_set ("out of memory");
    return -1;
  }
  if (strcmp (ep->spec, "-") == 0)
    c->fd = writable ? STDOUT_FILENO : STDIN_FILENO;
  else {
    c->fd = open (ep->spec, (writable ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (c->fd == -1) {
      error_set ("%s: %s", ep->spec, strerror (errno));
      free (c);
      free (ep->conns);
      ep->conns = NULL;
      return -1;
    }
    c->owned = true;
  }
  c->interrupted = ep->interrupted;
  stream_unblock (c, writable);
  ep->conns[0] = c;
  ep->nconns = 1; /* one stream, whatever was asked */
  ep->size = writable ? INT64_MAX : -1;
  ep->caps = (struct endpoint_caps){ .stream = true, .can_zero = true };
  /* A file written as a stream ('>>', see endpoint.c) is flushed at the
     end like any file; a pipe has nothing to flush. */
  struct stat st;
  if (writable && fstat (c->fd, &st) == 0
      && (S_ISREG (st.st_mode) || S_ISBLK (st.st_mode)))
    ep->caps.can_flush = true;
  return 0;
}

/* A stream only goes forward: a request anywhere else is a bug. */
static int
check_position (struct conn *c, uint64_t offset)
{
  if (offset != c->pos) {
    error_set ("stream request at offset %" PRIu64
               " but the stream is at %" PRIu64,
               offset, c->pos);
    return -1;
  }
  return 0;
}

/* Wait until C can be read (or written, if WRITE).  Requests finish
 * inside the call, in the worker, and a stream may wait for ever (a
 * writer that sends nothing, a reader that reads nothing), while a
 * signal goes to whichever thread the kernel picks: so the worker
 * waits in poll and looks at the flag now and then.  -1 (errno EINTR)
 * once the copy has been interrupted.
 */
static int
stream_wait (const struct conn *c, bool write)
{
  struct pollfd p = { .fd = c->fd, .events = write ? POLLOUT : POLLIN };

  for (;;) {
    int r;

    if (*c->interrupted) {
      errno = EINTR;
      return -1;
    }
    r = poll (&p, 1, STREAM_WAIT_MS);
    /* Ready, or an end or error that the read or write will report. */
    if (r > 0 || (r == -1 && errno != EINTR))
      return 0;
  }
}

/* Whether nothing can be read from C now (an end or an error can:
 * the read reports it).
 */
static bool
stream_would_wait (struct conn *c)
{
  struct pollfd p = { .fd = c->fd, .events = POLLIN };

  return poll (&p, 1, 0) == 0;
}

static int
stream_read (struct conn *c, void *buf, uint32_t len, uint64_t offset,
             struct op *op)
{
  uint32_t got = 0;

  if (check_position (c, offset) == -1)
    return -1;
  while (got < len) {
    ssize_t n;

    if (c->blocking && stream_wait (c, false) == -1) {
      op_complete (op, errno);
      return 0;
    }
    n = c->socket ? recv (c->fd, (char *) buf + got, len - got, MSG_DONTWAIT)
                  : read (c->fd, (char *) buf + got, len - got);
    if (n == -1
        && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (stream_wait (c, false) == -1) {
        op_complete (op, errno);
        return 0;
      }
      continue;
    }
    if (n == -1) {
      op_complete (op, errno);
      return 0;
    }
    if (n == 0)
      break;
    got += n;
  }
  c->pos += got;
  if (got < len)
    op_complete_eof (op, got);
  else
    op_complete (op, 0);
  return 0;
}

static int
write_all (struct conn *c, const char *buf, uint64_t len)
{
  while (len > 0) {
    ssize_t n;

    if (c->blocking && stream_wait (c, true) == -1)
      return errno;
    n = c->socket ? send (c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL)
                  : write (c->fd, buf, len);
    if (n == -1
        && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (stream_wait (c, true) == -1)
        return errno;
      continue;
    }
    if (n == -1)
      return errno;
    buf += n;
    len -= n;
    c->pos += n;
  }
  return 0;
}

static int
stream_write (struct conn *c, const void *buf, uint32_t len, uint64_t offset,
              struct op *op)
{
  if (check_position (c, offset) == -1)
    return -1;
  op_complete (op, write_all (c, buf, len));
  return 0;
}

static int
stream_zero (struct conn *c, uint64_t len, uint64_t offset, bool allocate,
             struct op *op)
{
  int err = 0;

  if (check_position (c, offset) == -1)
    return -1;
  while (len > 0 && err == 0) {
    uint64_t n = MIN (len, (uint64_t) ZERO_CHUNK);
    err = write_all (c, zeroes, n);
    len -= n;
  }
  op_complete (op, err);
  return 0;
}

static int
stream_flush (struct conn *c, struct op *op)
{
  op_complete (op, fdatasync (c->fd) == -1 ? errno : 0);
  return 0;
}

static void
stream_close (struct endpoint *ep, bool clean)
{
  for (unsigned i = 0; i < ep->nconns; i++) {
    if (ep->conns[i]->owned)
      close (ep->conns[i]->fd);
    free (ep->conns[i]);
  }
}

const struct endpoint_ops stream_endpoint_ops = {
  .kind = "stream",
  .open = stream_open,
  .read = stream_read,
  .would_wait = stream_would_wait,
  .write = stream_write,
  .zero = stream_zero,
  .flush = stream_flush,
  .close = stream_close,
};
