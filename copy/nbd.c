/* The NBD endpoint: a source or destination reached through libnbd.
 * This file is its I/O and the ops table; nbd_connect.c opens,
 * reconnects and closes its connections, and nbd_handshake.c runs
 * their handshakes (nbd.h is what the three share).
 *
 * During the copy each connection is driven by its worker's io_uring:
 * arm() polls the socket in the direction libnbd wants, and the poll's
 * completion calls nbd_aio_notify_read/write, which runs libnbd's state
 * machine and the completion callbacks of finished commands.  A poll's
 * completion is only a hint that may be out of date by the time it is
 * handled; see nbd_socket_ready for why libnbd must not be told
 * "readable" on a hint alone.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <libnbd.h>
#include <liburing.h>

#include "clock.h"
#include "dirty_bitmap.h"
#include "endpoint.h"
#include "error.h"
#include "fd_readable.h"
#include "nbd.h"
#include "ring.h"

/* libnbd calls this when a command finishes; OP goes back to the engine,
 * and its connection counts the command (see conn_read).  Returning 1
 * retires the command so libnbd frees it at once.
 */
static int
command_done (void *user_data, int *error)
{
  struct op *op = user_data;

  op_io (op)->conn->commands_done++;
  op_complete (op, *error);
  return 1;
}

/* The completion callback of OP, sent on C. */
static nbd_completion_callback
done_callback (struct conn *c, struct op *op)
{
  op_io (op)->conn = c;
  return (nbd_completion_callback){ .callback = command_done, .user_data = op };
}

static int
failed (void)
{
  error_set ("%s", nbd_get_error ());
  return -1;
}

/* Keep the server's first fault on C, for the messages of the requests
 * that fail because of it.
 */
static void
conn_note_fault (struct conn *c, const char *why)
{
  if (!c->fault[0])
    snprintf (c->fault, sizeof c->fault, "%s", why ? why : "unknown error");
}

/* Have libnbd read what C's socket has, if that is allowed now (see
 * nbd_socket_ready): at most one reply, whose command's callback runs.
 *
 * Told to read with nothing there while it was idle (READY), libnbd
 * moves to REPLY.START and stays there, where a command issued would be
 * queued and not sent; told once more, it gets EAGAIN again and goes
 * back to READY.  So such a read leaves C parked, and conn_unpark reads
 * once more before the next command is issued.  (A read that finds only
 * part of a reply, or none in the middle of one, goes back to READY by
 * itself.)
 */
static void
conn_read (struct conn *c)
{
  struct nbd_handle *h = c->h;
  bool was_ready = nbd_aio_is_ready (h) == 1;
  unsigned before = c->commands_done;

  /* Not READY (say, part of a request still to send: a reply that
     libnbd finished may have let it send queued ones), nor parked:
     only if there is something to read. */
  if (!was_ready && !c->parked && !fd_readable (c->fd)) {
    c->more = false;
    return;
  }

  /* A failure here means the connection died; libnbd then fails every
     command in flight through its completion callback, which is how the
     engine hears of it. */
  if (nbd_aio_notify_read (h) == -1)
    conn_note_fault (c, nbd_get_error ());
  /* A finished reply leaves the handle READY. */
  c->more = c->commands_done != before;
  c->parked = !c->more && was_ready && nbd_aio_is_processing (h) == 1;
}

void
conn_unpark (struct conn *c)
{
  if (c->parked)
    conn_read (c);
}

/* A read's reply must cover its request exactly once: no gap, no
 * overlap, nothing outside it (the protocol says so, and libnbd leaves
 * the check to its caller).  Its chunks are recorded as they arrive in
 * the op's struct read_cover.  Servers send them in order (nbdkit and
 * qemu-nbd do, and a simple reply is one chunk), so a chunk that starts
 * where the covered prefix ends only moves the prefix on; a chunk from
 * further on is kept as a span, merged with its neighbours, and joins
 * the prefix once the gap before it is filled.  With READ_COVER_SPANS
 * separate spans already kept, one more cannot be checked: the read
 * fails (COVER_SCATTERED), as a failed read, rather than take data
 * whose coverage was not proved.
 */
enum { COVER_OK, COVER_OUTSIDE, COVER_OVERLAP, COVER_SCATTERED };

/* Add [START, END) (offsets in the request) to COVER; the fault, if any. */
static int
cover_add (struct read_cover *cover, uint32_t start, uint32_t end)
{
  unsigned i, n = cover->nspans;

  if (start < cover->prefix)
    return COVER_OVERLAP;
  for (i = 0; i < n && cover->spans[i].end <= start; i++)
    ;
  /* spans[i] is the first span that ends after START. */
  if (i < n && cover->spans[i].start < end)
    return COVER_OVERLAP;
  if (start == cover->prefix) {
    cover->prefix = end;
    /* Spans now touching the prefix join it (only the first can). */
    if (n > 0 && cover->spans[0].start == end) {
      cover->prefix = cover->spans[0].end;
      memmove (&cover->spans[0], &cover->spans[1],
               (n - 1) * sizeof cover->spans[0]);
      cover->nspans--;
    }
    return COVER_OK;
  }
  if (i > 0 && cover->spans[i - 1].end == start) {
    cover->spans[i - 1].end = end;
    if (i < n && cover->spans[i].start == end) {
      cover->spans[i - 1].end = cover->spans[i].end;
      memmove (&cover->spans[i], &cover->spans[i + 1],
               (n - i - 1) * sizeof cover->spans[0]);
      cover->nspans--;
    }
    return COVER_OK;
  }
  if (i < n && cover->spans[i].start == end) {
    cover->spans[i].start = start;
    return COVER_OK;
  }
  if (n == READ_COVER_SPANS)
    return COVER_SCATTERED;
  memmove (&cover->spans[i + 1], &cover->spans[i],
           (n - i) * sizeof cover->spans[0]);
  cover->spans[i].start = start;
  cover->spans[i].end = end;
  cover->nspans++;
  return COVER_OK;
}

/* libnbd's chunk callback of a read: record what the chunk covers. */
static int
read_chunk (void *user_data, const void *subbuf, size_t count, uint64_t offset,
            unsigned status, int *error)
{
  struct op_io *io = op_io (user_data);
  struct read_cover *cover = &io->cover;

  /* An error chunk fails the read by itself; an empty one covers
     nothing. */
  if ((status != LIBNBD_READ_DATA && status != LIBNBD_READ_HOLE) || count == 0
      || cover->fault)
    return 0;
  if (offset < io->offset || offset - io->offset > io->len
      || count > io->len - (offset - io->offset))
    cover->fault = COVER_OUTSIDE;
  else
    cover->fault
        = cover_add (cover, offset - io->offset, offset - io->offset + count);
  return 0;
}

/* libnbd's completion callback of a read: a reply that did not cover
 * the request exactly once fails it, and the connection is cut, since
 * the server broke the protocol on it (the lane may then reconnect,
 * with --retry, and read again).
 */
static int
read_done (void *user_data, int *error)
{
  struct op_io *io = op_io (user_data);
  struct read_cover *cover = &io->cover;
  char why[128];

  if (*error == 0 && (cover->fault || cover->prefix != io->len)) {
    if (cover->fault == COVER_OVERLAP)
      snprintf (why, sizeof why, "server's reply had overlapping chunks");
    else if (cover->fault == COVER_OUTSIDE)
      snprintf (why, sizeof why,
                "server's reply had a chunk outside the request");
    else if (cover->fault == COVER_SCATTERED)
      snprintf (why, sizeof why,
                "server's reply came in more than %d pieces out of order",
                READ_COVER_SPANS);
    else {
      uint64_t covered = cover->prefix;
      for (unsigned i = 0; i < cover->nspans; i++)
        covered += cover->spans[i].end - cover->spans[i].start;
      snprintf (why, sizeof why,
                "server's reply covered %" PRIu64 " of %" PRIu64 " bytes",
                covered, io->len);
    }
    conn_note_fault (io->conn, why);
    nbd_ep_abort (io->conn);
    *error = EPROTO;
  }
  return command_done (user_data, error);
}

static int
nbd_ep_read (struct conn *c, void *buf, uint32_t len, uint64_t offset,
             struct op *op)
{
  struct op_io *io = op_io (op);
  nbd_chunk_callback chunk = { .callback = read_chunk, .user_data = op };
  nbd_completion_callback done = { .callback = read_done, .user_data = op };

  io->conn = c; /* for read_done, and command_done after it */
  io->offset = offset;
  io->len = len;
  io->cover = (struct read_cover){ 0 };
  conn_unpark (c);
  return nbd_aio_pread_structured (c->h, buf, len, offset, chunk, done, 0) == -1
             ? failed ()
             : 0;
}

static int
nbd_ep_write (struct conn *c, const void *buf, uint32_t len, uint64_t offset,
              struct op *op)
{
  conn_unpark (c);
  return nbd_aio_pwrite (c->h, buf, len, offset, done_callback (c, op), 0) == -1
             ? failed ()
             : 0;
}

static int
nbd_ep_zero (struct conn *c, uint64_t len, uint64_t offset, bool allocate,
             struct op *op)
{
  uint32_t flags = allocate ? LIBNBD_CMD_FLAG_NO_HOLE : 0;

  conn_unpark (c);
  return nbd_aio_zero (c->h, len, offset, done_callback (c, op), flags) == -1
             ? failed ()
             : 0;
}

static int
got_extents (void *user_data, const char *metacontext, uint64_t offset,
             uint32_t *entries, size_t nr_entries, int *error)
{
  struct extent_list *list = user_data;
  bool bitmap = bitmap_is_context (metacontext);

  /* With --bitmap the one bitmap context asked for is negotiated as
     well, and its answer goes to its own list: the two contexts need
     not end their extents at the same places, nor answer for as much. */
  if (bitmap && list->dirty) {
    for (size_t i = 0; i + 1 < nr_entries; i += 2) {
      /* qemu's dirty bitmaps: flag bit 0 set means dirty. */
      extent_list_add (list->dirty, offset, entries[i],
                       !(entries[i + 1] & BITMAP_STATE_DIRTY));
      offset += entries[i];
    }
    return 0;
  }
  if (strcmp (metacontext, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0)
    return 0;
  for (size_t i = 0; i + 1 < nr_entries; i += 2) {
    /* Only ZERO lets us skip reading: a hole that is not known to read
       as zero (a qcow2 with a backing file, say) is data. */
    extent_list_add (list, offset, entries[i],
                     entries[i + 1] & LIBNBD_STATE_ZERO);
    offset += entries[i];
  }
  return 0;
}

static int
nbd_ep_extents (struct conn *c, uint64_t len, uint64_t offset,
                struct extent_list *list, struct op *op)
{
  nbd_extent_callback cb = { .callback = got_extents, .user_data = list };

  conn_unpark (c);
  return nbd_aio_block_status (c->h, len, offset, cb, done_callback (c, op), 0)
                 == -1
             ? failed ()
             : 0;
}

/* The completion of nbd_ep_scan_extents's request: ERR is 0 or the
   errno, -1 while it is pending. */
static int
scan_done (void *user_data, int *error)
{
  *(int *) user_data = *error;
  return 1;
}

static bool
scan_finished (struct nbd_handle *h, void *arg)
{
  return *(int *) arg != -1;
}

/* The same as nbd_ep_extents, but waiting for the answer: for --bitmap's
 * look at the whole bitmap before the copy, on the first connection,
 * before any worker drives it.  --timeout bounds the wait as it bounds
 * the copy's requests, and a signal ends it (libnbd's own waiting
 * calls would go on polling through both).
 */
static int
nbd_ep_scan_extents (struct endpoint *ep, uint64_t len, uint64_t offset,
                     struct extent_list *list)
{
  nbd_extent_callback cb = { .callback = got_extents, .user_data = list };
  int64_t timeout_ms = ep->settings->timeout_ms;
  int64_t deadline = timeout_ms ? now_ms () + timeout_ms : INT64_MAX;
  struct nbd_handle *h = ep->conns[0]->h;
  int err = -1;
  bool final;
  char why[256];

  if (nbd_aio_block_status (
          h, len, offset, cb,
          (nbd_completion_callback){ .callback = scan_done, .user_data = &err },
          0)
          == -1
      || nbd_drive (h, scan_finished, &err, deadline, ep->interrupted, &final)
             == -1) {
    if (*ep->interrupted)
      snprintf (why, sizeof why, "interrupted by signal %d (%s)",
                (int) *ep->interrupted, strsignal (*ep->interrupted));
    else if (now_ms () >= deadline)
      snprintf (why, sizeof why, "no reply in %.1f seconds (--timeout)",
                timeout_ms / 1000.0);
    else
      snprintf (why, sizeof why, "%s",
                nbd_get_error () ? nbd_get_error () : error_get ());
  }
  else if (err != 0)
    snprintf (why, sizeof why, "%s",
              nbd_get_error () ? nbd_get_error () : strerror (err));
  else
    return 0;
  error_set ("%s: block status at offset %" PRIu64 " length %" PRIu64
             " failed: %s",
             ep->spec, offset, len, why);
  return -1;
}

static int
nbd_ep_flush (struct conn *c, struct op *op)
{
  conn_unpark (c);
  return nbd_aio_flush (c->h, done_callback (c, op), 0) == -1 ? failed () : 0;
}

/* A poll on C's socket fired.
 *
 * libnbd must not be told "readable" on a hint alone while it is in
 * the middle of sending a request: it would move to REPLY.START, get
 * EAGAIN, and stay there with the rest of the request unsent, and
 * libnbd only goes on sending from READY.  If no sent command is still
 * unanswered, no reply ever comes and the copy hangs for good at 0%
 * CPU.
 *
 * And a POLLIN completion can be stale.  The kernel queues data on a
 * socket and only then wakes the socket's waiters (for a Unix socket,
 * on the sending server's CPU).  In between, libnbd may read that data
 * on an earlier notification and a new poll may be armed; the late
 * wake-up then completes the new poll with its own mask (POLLIN), and
 * io_uring does not look at the socket again: a read wake-up with no
 * data behind it.  A 256M --synchronous copy met one to four of them
 * in some 100,000 read notifications.
 *
 * So libnbd is told at once only when it is READY (or parked): a read
 * that finds nothing then costs one recv and leaves the handle parked,
 * which conn_unpark undoes before the next command (see conn_read).
 * In any other state the socket is checked with a zero-timeout poll(2)
 * first, and a completion with nothing behind it is dropped; arm()
 * polls again before the next wait.  Only this thread reads the
 * socket, so data seen here is still there when libnbd reads it.
 * (Over TLS, bytes that are not yet a whole record can still leave
 * libnbd in REPLY.START, but then the rest of that reply is on its way
 * and moves it on.)
 *
 * A stale POLLOUT needs no such care: libnbd's send gets EAGAIN and
 * it stays in the same sending state, still waiting to write.
 */
void
nbd_socket_ready (struct ring_event *ev, int res)
{
  struct socket_poll *p = (struct socket_poll *) ev;
  struct conn *c = p->conn;
  unsigned dir = nbd_aio_get_direction (c->h);

  p->armed = false;
  if (res < 0)
    return; /* cancelled */
  /* The direction is the one libnbd wants now, not when the poll was
     armed: a write poll may outlive the write it was for. */
  if (p == &c->in && (dir & LIBNBD_AIO_DIRECTION_READ)) {
    conn_read (c);
  }
  else if (p == &c->out && (dir & LIBNBD_AIO_DIRECTION_WRITE)
           && nbd_aio_notify_write (c->h) == -1)
    conn_note_fault (c, nbd_get_error ());
}

/* After a read that finished a reply, read on: while replies come
 * faster than they are handled, each costs only libnbd's own recvs,
 * and neither a poll nor a wait on the ring.  The read's completion
 * callback has queued the engine's op, so the worker handles it and
 * calls arm() again rather than waiting; once a read finds nothing (and
 * parks the handle), the socket is polled as before.
 */
static void
nbd_ep_arm (struct conn *c, struct io_uring *ring)
{
  unsigned dir;

  if (c->more) {
    conn_read (c);
    if (c->more)
      return;
  }
  dir = nbd_aio_get_direction (c->h);
  if ((dir & LIBNBD_AIO_DIRECTION_READ) && !c->in.armed) {
    ring_poll (ring, c->fd, POLLIN, &c->in.ev);
    c->in.armed = true;
  }
  if ((dir & LIBNBD_AIO_DIRECTION_WRITE) && !c->out.armed) {
    ring_poll (ring, c->fd, POLLOUT, &c->out.ev);
    c->out.armed = true;
  }
}

static void
nbd_ep_detach (struct conn *c)
{
  c->in.armed = c->out.armed = false;
  c->more = false; /* a parked handle stays parked: see nbd_ep_close */
}

/* Shut the socket down: the worker's poll fires, libnbd reads end of
 * file and fails every command in flight.  The descriptor stays open,
 * so nothing else can be given its number meanwhile.
 */
void
nbd_ep_abort (struct conn *c)
{
  pthread_mutex_lock (&c->fd_lock);
  shutdown (c->fd, SHUT_RDWR);
  pthread_mutex_unlock (&c->fd_lock);
}

/* The connection itself is gone (the server closed it, reset it, or
 * it was shut down), not merely a request refused by a live server.
 */
static bool
nbd_ep_broken (struct conn *c)
{
  /* A fault of the server's has cut the connection, even if libnbd has
     not read the end of it yet. */
  return c->fault[0] || nbd_aio_is_dead (c->h) == 1
         || nbd_aio_is_closed (c->h) == 1;
}

static const char *
nbd_ep_fault (struct conn *c)
{
  return c->fault[0] ? c->fault : NULL;
}

const struct endpoint_ops nbd_endpoint_ops = {
  .kind = "NBD",
  .open = nbd_ep_open,
  .read = nbd_ep_read,
  .write = nbd_ep_write,
  .zero = nbd_ep_zero,
  .extents = nbd_ep_extents,
  .scan_extents = nbd_ep_scan_extents,
  .flush = nbd_ep_flush,
  .abort = nbd_ep_abort,
  .broken = nbd_ep_broken,
  .fault = nbd_ep_fault,
  .reconnect = nbd_ep_reconnect,
  .arm = nbd_ep_arm,
  .detach = nbd_ep_detach,
  .close = nbd_ep_close,
};
