/* The NBD endpoint: a source or destination reached through libnbd.
 *
 * Connections are opened in parallel with libnbd's asynchronous connect.
 * The copy needs one working connection; the others are a bonus.  A
 * server that takes fewer clients than asked (qemu-nbd's default
 * --shared=1) leaves the extra ones waiting in its listen queue forever,
 * so extras that have not finished their handshake a short while after
 * the first one did are dropped and the copy goes on with fewer.  When
 * the server does not advertise multi-conn and an extra has not even
 * had the server's greeting, it is sitting in the listen queue of a
 * server that serves one client at a time: it is dropped almost at
 * once rather than after the usual wait (a small copy from such a
 * server would otherwise spend most of its time waiting).
 *
 * During the copy each connection is driven by its worker's io_uring:
 * arm() polls the socket in the direction libnbd wants, and the poll's
 * completion calls nbd_aio_notify_read/write, which runs libnbd's state
 * machine and the completion callbacks of finished commands.  A poll's
 * completion is only a hint that may be out of date by the time it is
 * handled; see socket_ready for why libnbd must not be told "readable"
 * on a hint alone.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <libnbd.h>
#include <liburing.h>

#include "bitmap.h"
#include "clock.h"
#include "endpoint.h"
#include "error.h"
#include "minmax.h"
#include "options.h"
#include "ring.h"
#include "segment.h"

/* How long the first connection may take to connect and handshake,
   unless --timeout says otherwise. */
#define FIRST_CONNECT_TIMEOUT_MS (60 * 1000)
/* How long extra connections may take once the first one works. */
#define EXTRA_CONNECT_WAIT_MS 2000
/* How long, once the first one works, extra connections to a server
   without multi-conn may take to get the server's greeting: as long as
   the first one took for its whole handshake (a server that serves
   them greets them sooner than that), within these bounds. */
#define EXTRA_GREETING_WAIT_MIN_MS 2
#define EXTRA_GREETING_WAIT_MAX_MS 50
/* Longest a handshake poll sleeps before looking at interrupt_signal. */
#define SIGNAL_CHECK_MS 100
/* The least send buffer asked of a Unix socket: two default requests
   (which is where the 1 MiB default of an earlier version left it). */
#define SEND_BUFFER_MIN (1024 * 1024)

struct socket_poll {
  struct ring_event ev;
  bool armed;
  struct conn *conn;
};

struct conn {
  struct nbd_handle *h;
  int fd;
  struct socket_poll in, out;
  /* Guards fd against a reconnect (worker) racing an abort (main). */
  pthread_mutex_t fd_lock;
};

/* What a reconnect needs to know of the options (in ep->priv). */
struct nbd_endpoint {
  const struct options *opts; /* main's, alive until the end */
  const char *bitmap;         /* --bitmap, on the source side */
};

/* libnbd's debug messages, first line only: the rest of a message is a
 * hex dump of the data, which would bury everything else.
 */
static int
print_debug (void *user_data, const char *context, const char *msg)
{
  int len = strcspn (msg, "\n");
  fprintf (stderr, "libnbd: %s: %.*s\n", context, len, msg);
  return 0;
}

/* A handle connecting to EP: its URI, or its [ CMD ] run as a
 * subprocess with systemd socket activation.  With --bitmap it asks
 * for the bitmap's meta context too, and OPT_MODE stops it in the
 * negotiation, so that the contexts the server offers can be listed if
 * the bitmap is not among them (see negotiate_bitmap).
 */
static struct nbd_handle *
handle_create (const struct endpoint *ep, const struct options *opts,
               const char *bitmap, bool opt_mode)
{
  struct nbd_handle *h = nbd_create ();
  nbd_debug_callback debug = { .callback = print_debug };
  char context[BITMAP_CONTEXT_MAX];

  if (!h)
    return NULL;
  if (bitmap)
    bitmap_context (bitmap, context, sizeof context);
  if ((opts->verbose && nbd_set_debug_callback (h, debug) == -1)
      || nbd_set_debug (h, opts->verbose) == -1
      /* Buffers are only used after a successful read, so libnbd need
         not clear them first (it does by default, at a cost). */
      || nbd_set_pread_initialize (h, false) == -1
      /* Let URIs name a TLS key file (tls-psk-file=). */
      || nbd_set_uri_allow_local_file (h, true) == -1
      || nbd_add_meta_context (h, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1
      || (bitmap && nbd_add_meta_context (h, context) == -1)
      || (opt_mode && nbd_set_opt_mode (h, true) == -1)
      || (ep->command
              ? nbd_aio_connect_systemd_socket_activation (h, ep->command)
              : nbd_aio_connect_uri (h, ep->spec))
             == -1) {
    error_set ("%s", nbd_get_error ());
    nbd_close (h);
    return NULL;
  }
  return h;
}

/* True if H is still connecting or waiting for the server's greeting:
 * nothing has come from the server yet.  libnbd gives its state only
 * as a descriptive string ("MAGIC.RECV_MAGIC: ..."); a string not
 * recognised counts as past the greeting, which only means the usual
 * wait.
 */
static bool
awaiting_greeting (struct nbd_handle *h)
{
  const char *state = nbd_connection_state (h);

  return state
         && (strncmp (state, "CONNECT", 7) == 0 /* CONNECT, CONNECT_TCP.. */
             || strncmp (state, "MAGIC.", 6) == 0);
}

/* Runs the handshakes of H[0..N), begun at START (now_ms), until each
 * is ready or has failed, or its time is up.  Entries that did not
 * become ready are closed and set to NULL.  Returns the number that are
 * ready; with none, error_set() says why the first one failed.
 */
static unsigned
handshake_all (struct nbd_handle **h, unsigned n, const char *spec,
               bool verbose, int64_t timeout_ms, int64_t start)
{
  struct pollfd *fds = calloc (n, sizeof *fds);
  unsigned *index = calloc (n, sizeof *index);
  int64_t deadline
      = start + (timeout_ms ? timeout_ms : FIRST_CONNECT_TIMEOUT_MS);
  /* Set when the first connection is ready and the server does not
     advertise multi-conn: extras without a greeting by then go. */
  int64_t greeting_deadline = INT64_MAX;
  unsigned ready = 0;
  bool extra_deadline_set = false;
  char first_error[256] = "";

  if (!fds || !index) {
    free (fds);
    free (index);
    error_set ("out of memory");
    return 0;
  }

  for (;;) {
    unsigned nfds = 0, nready = 0, ngreeting = 0;
    int64_t left, t;

    for (unsigned i = 0; i < n; i++) {
      if (!h[i])
        continue;
      if (nbd_aio_is_ready (h[i]) == 1) {
        nready++;
        continue;
      }
      if (now_ms () >= greeting_deadline && awaiting_greeting (h[i])) {
        if (verbose)
          fprintf (stderr,
                   "nbdcp: %s: connection %u got no greeting from the "
                   "server, which does not advertise multi-conn; dropped "
                   "(the server may take one client at a time)\n",
                   spec, i + 1);
        nbd_close (h[i]);
        h[i] = NULL;
        continue;
      }
      if (nbd_aio_is_connecting (h[i]) != 1) {
        /* Dead or closed: it failed, and libnbd says why. */
        if (!first_error[0])
          snprintf (first_error, sizeof first_error, "%s",
                    nbd_get_error () ? nbd_get_error () : "handshake failed");
        if (verbose)
          fprintf (stderr, "nbdcp: %s: connection %u failed: %s\n", spec, i + 1,
                   first_error);
        nbd_close (h[i]);
        h[i] = NULL;
        continue;
      }
      unsigned dir = nbd_aio_get_direction (h[i]);
      fds[nfds].fd = nbd_aio_get_fd (h[i]);
      fds[nfds].events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0)
                         | ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0);
      index[nfds++] = i;
      if (awaiting_greeting (h[i]))
        ngreeting++;
    }
    if (nfds == 0)
      break;
    t = now_ms ();
    if (nready > 0 && !extra_deadline_set) {
      if (t + EXTRA_CONNECT_WAIT_MS < deadline)
        deadline = t + EXTRA_CONNECT_WAIT_MS;
      extra_deadline_set = true;
      for (unsigned i = 0; i < n; i++)
        if (h[i] && nbd_aio_is_ready (h[i]) == 1) {
          int64_t wait = MAX (t - start, (int64_t) EXTRA_GREETING_WAIT_MIN_MS);
          if (nbd_can_multi_conn (h[i]) != 1)
            greeting_deadline
                = t + MIN (wait, (int64_t) EXTRA_GREETING_WAIT_MAX_MS);
          break;
        }
    }

    left = deadline - t;
    if (ngreeting > 0 && greeting_deadline - t < left)
      left = MAX (greeting_deadline - t, (int64_t) 0);
    if (deadline - t <= 0 || interrupt_signal)
      break;
    /* A signal makes poll return EINTR; one that came just before the
       poll is seen at the next slice. */
    if (poll (fds, nfds, MIN (left, (int64_t) SIGNAL_CHECK_MS)) == -1
        && errno != EINTR)
      break;

    for (unsigned k = 0; k < nfds; k++) {
      struct nbd_handle *hk = h[index[k]];
      short re = fds[k].revents;
      int r = 0;

      unsigned dir = nbd_aio_get_direction (hk);
      /* Hang-ups and errors go to the direction libnbd is waiting on:
         telling it "readable" while it waits to write is invalid and
         would leave it waiting, with poll returning at once, forever. */
      if ((dir & LIBNBD_AIO_DIRECTION_WRITE)
          && (re & (POLLOUT | POLLHUP | POLLERR)))
        r = nbd_aio_notify_write (hk);
      else if ((dir & LIBNBD_AIO_DIRECTION_READ)
               && (re & (POLLIN | POLLHUP | POLLERR)))
        r = nbd_aio_notify_read (hk);
      if (r == -1 && !first_error[0])
        snprintf (first_error, sizeof first_error, "%s", nbd_get_error ());
    }
  }

  ready = 0;
  for (unsigned i = 0; i < n; i++) {
    if (!h[i])
      continue;
    if (nbd_aio_is_ready (h[i]) == 1) {
      struct nbd_handle *hi = h[i];
      h[i] = NULL;
      h[ready++] = hi;
      continue;
    }
    if (verbose && !interrupt_signal)
      fprintf (stderr,
               "nbdcp: %s: connection %u did not finish its handshake in "
               "time; dropped (the server may limit its clients)\n",
               spec, i + 1);
    nbd_close (h[i]);
    h[i] = NULL;
  }
  if (interrupt_signal) {
    /* main says which signal; the ready ones are of no use now. */
    for (unsigned i = 0; i < ready; i++) {
      nbd_close (h[i]);
      h[i] = NULL;
    }
    ready = 0;
    error_set ("%s: interrupted during the handshake", spec);
  }
  else if (ready == 0)
    error_set ("%s: cannot connect: %s", spec,
               first_error[0] ? first_error : "timed out during handshake");
  free (fds);
  free (index);
  return ready;
}

static void socket_ready (struct ring_event *ev, int res);

/* Let a Unix socket hold a whole write request.  Its default send
 * buffer (about 200 KiB) takes a 1 MiB write in five or six sends, each
 * waking the server for a part of the request; with room for the whole
 * request it goes in one, and the copy spends about a fifth less CPU
 * (docs/performance.md, "Socket send buffer").  Raising the limit
 * needs CAP_NET_ADMIN (SO_SNDBUFFORCE); others get what
 * net.core.wmem_max allows.  TCP sockets are left alone: setting a
 * size would switch off the kernel's own tuning of it.  Returns the
 * size the kernel keeps (twice what was granted), or 0 for TCP.
 */
static int
enlarge_send_buffer (int fd, uint32_t request_size)
{
  struct sockaddr_storage addr;
  socklen_t addr_len = sizeof addr;
  int want = (int) MAX (request_size, (uint32_t) SEND_BUFFER_MIN);
  int got = 0;
  socklen_t got_len = sizeof got;

  if (getsockname (fd, (struct sockaddr *) &addr, &addr_len) == -1
      || addr.ss_family != AF_UNIX)
    return 0;
  if (setsockopt (fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof want) == -1)
    setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
  getsockopt (fd, SOL_SOCKET, SO_SNDBUF, &got, &got_len);
  return got;
}

static void
read_caps (struct endpoint *ep, struct nbd_handle *h)
{
  int64_t minimum = nbd_get_block_size (h, LIBNBD_SIZE_MINIMUM);
  int64_t preferred = nbd_get_block_size (h, LIBNBD_SIZE_PREFERRED);
  int64_t maximum = nbd_get_block_size (h, LIBNBD_SIZE_MAXIMUM);

  ep->caps = (struct endpoint_caps){
    .read_only = nbd_is_read_only (h) == 1,
    .can_zero = nbd_can_zero (h) == 1,
    .can_flush = nbd_can_flush (h) == 1,
    .can_extents
    = nbd_can_meta_context (h, LIBNBD_CONTEXT_BASE_ALLOCATION) == 1,
    .multi_conn = nbd_can_multi_conn (h) == 1,
    .min_block = minimum > 0 ? minimum : 1,
    .preferred_block = preferred > 0 ? preferred : 0,
    .max_request = maximum > 0 ? maximum : 0,
  };
}

/* Run H until DONE (H, ARG), as handshake_all does for many: failing
 * when H dies, at DEADLINE, or on a signal.
 */
static int
drive (struct nbd_handle *h, bool (*done) (struct nbd_handle *, void *),
       void *arg, int64_t deadline)
{
  while (!done (h, arg)) {
    unsigned dir = nbd_aio_get_direction (h);
    struct pollfd pfd = { .fd = nbd_aio_get_fd (h) };
    int64_t left = deadline - now_ms ();
    int r = 0;

    if (nbd_aio_is_dead (h) == 1 || nbd_aio_is_closed (h) == 1) {
      error_set ("%s", nbd_get_error () ? nbd_get_error ()
                                        : "the server closed the connection");
      return -1;
    }
    if (interrupt_signal) {
      error_set ("interrupted during the handshake");
      return -1;
    }
    if (left <= 0) {
      error_set ("timed out during handshake");
      return -1;
    }
    pfd.events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0)
                 | ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0);
    if (poll (&pfd, 1, MIN (left, (int64_t) SIGNAL_CHECK_MS)) == -1
        && errno != EINTR) {
      error_set ("poll: %s", strerror (errno));
      return -1;
    }
    if ((dir & LIBNBD_AIO_DIRECTION_WRITE)
        && (pfd.revents & (POLLOUT | POLLHUP | POLLERR)))
      r = nbd_aio_notify_write (h);
    else if ((dir & LIBNBD_AIO_DIRECTION_READ)
             && (pfd.revents & (POLLIN | POLLHUP | POLLERR)))
      r = nbd_aio_notify_read (h);
    if (r == -1) {
      error_set ("%s", nbd_get_error ());
      return -1;
    }
  }
  return 0;
}

static bool
negotiating_or_ready (struct nbd_handle *h, void *arg)
{
  return nbd_aio_is_negotiating (h) == 1 || nbd_aio_is_ready (h) == 1;
}

/* An option request's completion: ERR is 0 or the errno, -1 pending. */
static int
option_done (void *user_data, int *error)
{
  *(int *) user_data = *error;
  return 1;
}

static bool
option_finished (struct nbd_handle *h, void *arg)
{
  return *(int *) arg != -1;
}

/* The names the server lists, comma-separated, as many as fit. */
struct context_names {
  char text[256];
  size_t len;
  unsigned count;
};

static int
got_context (void *user_data, const char *name)
{
  struct context_names *names = user_data;
  size_t room = sizeof names->text - names->len;
  int n = snprintf (names->text + names->len, room, "%s%s",
                    names->count ? ", " : "", name);

  names->count++;
  if (n >= 0 && (size_t) n < room)
    names->len += n;
  else if (room > 4)
    strcpy (names->text + sizeof names->text - 4, "...");
  return 0;
}

/* --bitmap: take H (connecting in option mode) through the handshake,
 * listing the server's meta contexts on the way, and fail if the
 * bitmap's context is not one that it agreed to: the copy must not
 * start if it cannot tell dirty from clean.  The list costs one round
 * trip, and it is made on this connection rather than a separate one
 * because qemu-nbd serves one client at a time by default and, without
 * --persistent, exits when that client leaves.
 */
static int
negotiate_bitmap (struct nbd_handle *h, const struct endpoint *ep,
                  const char *bitmap, const struct options *opts)
{
  int64_t deadline
      = now_ms ()
        + (opts->timeout_ms ? opts->timeout_ms : FIRST_CONNECT_TIMEOUT_MS);
  char context[BITMAP_CONTEXT_MAX];
  struct context_names names = { .text = "" };
  nbd_context_callback list_cb
      = { .callback = got_context, .user_data = &names };
  int listed = -1, went = -1;
  bool negotiated = false;

  bitmap_context (bitmap, context, sizeof context);
  if (drive (h, negotiating_or_ready, NULL, deadline) == -1)
    goto fail;
  /* Servers without the newstyle negotiation are ready at once. */
  if (nbd_aio_is_negotiating (h) == 1) {
    negotiated = true;
    /* With no query the server lists every context it has. */
    if (nbd_clear_meta_contexts (h) == -1
        || nbd_aio_opt_list_meta_context (
               h, list_cb,
               (nbd_completion_callback){ .callback = option_done,
                                          .user_data = &listed })
               == -1
        || drive (h, option_finished, &listed, deadline) == -1
        || nbd_add_meta_context (h, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1
        || nbd_add_meta_context (h, context) == -1
        || nbd_aio_opt_go (h,
                           (nbd_completion_callback){ .callback = option_done,
                                                      .user_data = &went })
               == -1
        || drive (h, option_finished, &went, deadline) == -1)
      goto fail;
    if (went != 0 || nbd_aio_is_ready (h) != 1) {
      error_set ("%s", went > 0 ? strerror (went) : nbd_get_error ());
      goto fail;
    }
  }
  if (nbd_can_meta_context (h, context) == 1)
    return 0;
  if (!negotiated || listed != 0)
    error_set ("%s: no dirty bitmap '%s': the server did not agree to the "
               "meta context %s, and does not list the ones it has",
               ep->spec, bitmap, context);
  else
    error_set ("%s: no dirty bitmap '%s': the server did not agree to the "
               "meta context %s; it offers %s",
               ep->spec, bitmap, context,
               names.count ? names.text : "no meta contexts");
  return -1;

fail:
  snprintf (names.text, sizeof names.text, "%s", error_get ());
  error_set ("%s: cannot connect: %s", ep->spec, names.text);
  return -1;
}

/* Starts the handshakes of connections H[FROM..TO).  Returns how many
 * started; WHY says why the first of them failed, or with -v the last.
 */
static unsigned
start_handshakes (struct nbd_handle **h, unsigned from, unsigned to,
                  const struct endpoint *ep, const struct options *opts,
                  const char *bitmap, char *why, size_t why_size)
{
  unsigned n = 0;

  for (unsigned i = from; i < to; i++) {
    h[i] = handle_create (ep, opts, bitmap, bitmap && i == 0);
    if (!h[i]) {
      if (opts->verbose || n + from == i)
        snprintf (why, why_size, "%s", error_get ());
      if (opts->verbose)
        fprintf (stderr, "nbdcp: %s: connection %u failed: %s\n", ep->spec,
                 i + 1, why);
    }
    else
      n++;
  }
  return n;
}

static int
nbd_ep_open (struct endpoint *ep, bool writable, unsigned want,
             const struct options *opts)
{
  struct nbd_handle **h = calloc (want, sizeof *h);
  unsigned n = 0, ready;
  int64_t start = now_ms ();
  char why[512] = "";
  /* --bitmap is the source's. */
  const char *bitmap = writable ? NULL : opts->bitmap;
  /* A source's size is not known before a handshake, and a disk with
     fewer segments than -C has no use for the other connections, which
     cost both sides a thread and a handshake each (a 1 MiB copy to
     null: took 16.9 ms with four connections, 14.0 ms with one).  So the
     source's first connection handshakes alone and the others follow
     when its size says they can help.  The destination's number is
     known already (main.c). */
  unsigned first = writable ? want : 1;

  if (!h) {
    error_set ("out of memory");
    return -1;
  }
  /* A connection that fails at once (qemu-nbd's listen queue can be
     full when it takes one client) is only fatal if none works. */
  if (start_handshakes (h, 0, first, ep, opts, bitmap, why, sizeof why) == 0) {
    free (h);
    error_set ("%s: %s", ep->spec, why);
    return -1;
  }
  /* --bitmap: the first connection's handshake makes sure of the
     bitmap, and lists what the server has if it is not there, before
     the others start theirs. */
  if (bitmap && (!h[0] || negotiate_bitmap (h[0], ep, bitmap, opts) == -1)) {
    if (!h[0])
      error_set ("%s: %s", ep->spec, why);
    for (unsigned i = 0; i < first; i++)
      if (h[i])
        nbd_close (h[i]);
    free (h);
    return -1;
  }
  ready = handshake_all (h, first, ep->spec, opts->verbose, opts->timeout_ms,
                         start);
  if (ready > 0 && first < want) {
    int64_t size = nbd_get_size (h[0]);
    uint64_t useful = size > 0 ? segment_count (size) : 1;

    if (useful < want) {
      if (opts->verbose)
        fprintf (stderr,
                 "nbdcp: %s: %" PRIu64 " connection%s: the disk has %" PRIu64
                 " segment%s of %" PRIu64 " MiB\n",
                 ep->spec, useful, useful == 1 ? "" : "s", useful,
                 useful == 1 ? "" : "s", SEGMENT_SIZE >> 20);
      want = useful;
    }
    /* Extras that cannot start are not fatal: the first one works. */
    start_handshakes (h, first, want, ep, opts, bitmap, why, sizeof why);
    ready = handshake_all (h, want, ep->spec, opts->verbose, opts->timeout_ms,
                           start);
  }
  if (ready == 0) {
    free (h);
    return -1;
  }

  ep->size = nbd_get_size (h[0]);
  read_caps (ep, h[0]);
  ep->conns = calloc (ready, sizeof *ep->conns);
  ep->priv = calloc (1, sizeof (struct nbd_endpoint));
  if (!ep->conns || !ep->priv || ep->size < 0) {
    error_set ("%s: %s", ep->spec,
               ep->size < 0 ? nbd_get_error () : "out of memory");
    goto fail;
  }
  /* Every connection must see the same disk: one that changed between
     handshakes, or a server that gives each client its own size, would
     otherwise fail somewhere in the copy with a request out of bounds,
     or copy part of one disk and part of another. */
  for (unsigned i = 1; i < ready; i++)
    if (nbd_get_size (h[i]) != ep->size) {
      error_set ("%s %s: connection %u has %" PRIi64 " bytes, connection 1 "
                 "%" PRIi64 ": the server does not give every connection "
                 "the same disk",
                 ep->side, ep->spec, i + 1, nbd_get_size (h[i]), ep->size);
      goto fail;
    }
  for (unsigned i = 0; i < ready; i++) {
    struct conn *c = calloc (1, sizeof *c);
    if (!c) {
      error_set ("out of memory");
      goto fail;
    }
    c->h = h[i];
    c->fd = nbd_aio_get_fd (h[i]);
    int send_buffer = enlarge_send_buffer (c->fd, opts->request_size);
    if (opts->verbose && n == 0 && send_buffer > 0)
      fprintf (stderr, "nbdcp: %s: socket send buffer %d KiB\n", ep->spec,
               send_buffer / 1024);
    c->in = (struct socket_poll){ .ev.handle = socket_ready, .conn = c };
    c->out = (struct socket_poll){ .ev.handle = socket_ready, .conn = c };
    pthread_mutex_init (&c->fd_lock, NULL);
    ep->conns[n++] = c;
    h[i] = NULL;
  }
  ep->nconns = n;
  *(struct nbd_endpoint *) ep->priv = (struct nbd_endpoint){
    .opts = opts,
    .bitmap = bitmap,
  };
  free (h);
  return 0;

fail:
  for (unsigned i = 0; i < n; i++) {
    nbd_close (ep->conns[i]->h);
    free (ep->conns[i]);
  }
  for (unsigned i = 0; i < ready; i++)
    nbd_close (h[i]);
  free (ep->conns);
  ep->conns = NULL;
  free (ep->priv);
  ep->priv = NULL;
  free (h);
  return -1;
}

/* libnbd calls this when a command finishes; OP goes back to the engine.
 * Returning 1 retires the command so libnbd frees it at once.
 */
static int
command_done (void *user_data, int *error)
{
  op_complete (user_data, *error);
  return 1;
}

#define DONE(op)                                                               \
  ((nbd_completion_callback){ .callback = command_done, .user_data = (op) })

static int
failed (void)
{
  error_set ("%s", nbd_get_error ());
  return -1;
}

static int
nbd_ep_read (struct conn *c, void *buf, uint32_t len, uint64_t offset,
             struct op *op)
{
  return nbd_aio_pread (c->h, buf, len, offset, DONE (op), 0) == -1 ? failed ()
                                                                    : 0;
}

static int
nbd_ep_write (struct conn *c, const void *buf, uint32_t len, uint64_t offset,
              struct op *op)
{
  return nbd_aio_pwrite (c->h, buf, len, offset, DONE (op), 0) == -1 ? failed ()
                                                                     : 0;
}

static int
nbd_ep_zero (struct conn *c, uint64_t len, uint64_t offset, bool allocate,
             struct op *op)
{
  uint32_t flags = allocate ? LIBNBD_CMD_FLAG_NO_HOLE : 0;
  return nbd_aio_zero (c->h, len, offset, DONE (op), flags) == -1 ? failed ()
                                                                  : 0;
}

static int
got_extents (void *user_data, const char *metacontext, uint64_t offset,
             uint32_t *entries, size_t nr_entries, int *error)
{
  struct extent_list *list = user_data;
  bool bitmap = strncmp (metacontext, BITMAP_CONTEXT_PREFIX,
                         strlen (BITMAP_CONTEXT_PREFIX))
                == 0;

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
  return nbd_aio_block_status (c->h, len, offset, cb, DONE (op), 0) == -1
             ? failed ()
             : 0;
}

/* The same as nbd_ep_extents, but waiting for the answer: for --bitmap's
 * look at the whole bitmap before the copy, on the first connection,
 * before any worker drives it.
 */
static int
nbd_ep_scan_extents (struct endpoint *ep, uint64_t len, uint64_t offset,
                     struct extent_list *list)
{
  nbd_extent_callback cb = { .callback = got_extents, .user_data = list };

  if (nbd_block_status (ep->conns[0]->h, len, offset, cb, 0) == -1) {
    error_set ("%s: block status at offset %" PRIu64 " length %" PRIu64
               " failed: %s",
               ep->spec, offset, len, nbd_get_error ());
    return -1;
  }
  return 0;
}

static int
nbd_ep_flush (struct conn *c, struct op *op)
{
  return nbd_aio_flush (c->h, DONE (op), 0) == -1 ? failed () : 0;
}

/* Whether FD can be read from now (data, end of file or an error), as
 * opposed to when some earlier wake-up said so.
 */
static bool
socket_readable (int fd)
{
  struct pollfd pfd = { .fd = fd, .events = POLLIN };
  int r;

  do
    r = poll (&pfd, 1, 0);
  while (r == -1 && errno == EINTR);
  /* If poll itself fails, let libnbd meet the problem and report it. */
  return r != 0;
}

/* A poll on C's socket fired.
 *
 * libnbd must only be told "readable" when the socket really has
 * something to read.  Told so with nothing there, a handle that was
 * idle in READY (or paused in the middle of sending a request) moves
 * to REPLY.START, its recv gets EAGAIN, and it stays in REPLY.START
 * waiting for a reply.  libnbd only sends queued commands from READY,
 * so every command issued after that is queued and not sent.  If no
 * sent command is still unanswered, no reply ever comes and the copy
 * hangs for good at 0% CPU (1 run in 20-60 of a --synchronous or
 * tiny-request copy did).
 *
 * And a POLLIN completion can be stale.  The kernel queues data on a
 * socket and only then wakes the socket's waiters (for a Unix socket,
 * on the sending server's CPU).  In between, libnbd may read that data
 * on an earlier notification and a new poll may be armed; the late
 * wake-up then completes the new poll with its own mask (POLLIN), and
 * io_uring does not look at the socket again: a read wake-up with no
 * data behind it.  A 256M --synchronous copy met one to four of them
 * in some 100,000 read notifications.  So the socket is checked with a
 * zero-timeout poll(2) first, and a completion with nothing behind it
 * is dropped; arm() polls again before the next wait.  Only this
 * thread reads the socket, so data seen here is still there when
 * libnbd reads it.  (Over TLS, bytes that are not yet a whole record
 * can still leave libnbd in REPLY.START, but then the rest of that
 * reply is on its way and moves it on.)
 *
 * A stale POLLOUT needs no such care: libnbd's send gets EAGAIN and
 * it stays in the same sending state, still waiting to write.
 */
static void
socket_ready (struct ring_event *ev, int res)
{
  struct socket_poll *p = (struct socket_poll *) ev;
  struct conn *c = p->conn;
  unsigned dir = nbd_aio_get_direction (c->h);

  p->armed = false;
  if (res < 0)
    return; /* cancelled */
  /* A failure here means the connection died; libnbd then fails every
     command in flight through its completion callback, which is how the
     engine hears of it.  The direction is the one libnbd wants now, not
     when the poll was armed: a write poll may outlive the write it was
     for. */
  if (p == &c->in && (dir & LIBNBD_AIO_DIRECTION_READ)) {
    if (socket_readable (c->fd))
      nbd_aio_notify_read (c->h);
  }
  else if (p == &c->out && (dir & LIBNBD_AIO_DIRECTION_WRITE))
    nbd_aio_notify_write (c->h);
}

static void
nbd_ep_arm (struct conn *c, struct io_uring *ring)
{
  unsigned dir = nbd_aio_get_direction (c->h);

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
}

/* Shut the socket down: the worker's poll fires, libnbd reads end of
 * file and fails every command in flight.  The descriptor stays open,
 * so nothing else can be given its number meanwhile.
 */
static void
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
  return nbd_aio_is_dead (c->h) == 1 || nbd_aio_is_closed (c->h) == 1;
}

/* Replace C's dead handle with a new connection to the same server,
 * which must still have the same size.  The handshake blocks this
 * worker (a rare event, and its other lanes' connections are most
 * likely down too).  Polls still armed on the old socket must have
 * completed first, or their late completions would be taken for the
 * new socket's: returns 1 (try again soon) until they have.
 */
static int
nbd_ep_reconnect (struct endpoint *ep, struct conn *c)
{
  const struct nbd_endpoint *ne = ep->priv;
  struct nbd_handle *h, *old;

  if (c->in.armed || c->out.armed) {
    nbd_ep_abort (c); /* they complete as soon as the socket is shut */
    return 1;
  }
  h = handle_create (ep, ne->opts, ne->bitmap, false);
  if (!h)
    return -1;
  if (handshake_all (&h, 1, ep->spec, ne->opts->verbose, ne->opts->timeout_ms,
                     now_ms ())
      == 0)
    return -1;
  if (nbd_get_size (h) != ep->size) {
    error_set ("%s: the server now has %" PRIi64 " bytes, not %" PRIi64
               " as when the copy started",
               ep->spec, nbd_get_size (h), ep->size);
    nbd_close (h);
    return -1;
  }
  enlarge_send_buffer (nbd_aio_get_fd (h), ne->opts->request_size);
  pthread_mutex_lock (&c->fd_lock);
  old = c->h;
  c->h = h;
  c->fd = nbd_aio_get_fd (h);
  pthread_mutex_unlock (&c->fd_lock);
  nbd_close (old);
  return 0;
}

static void
nbd_ep_close (struct endpoint *ep, bool clean)
{
  for (unsigned i = 0; i < ep->nconns; i++) {
    /* After a failure the server may be gone or stuck: do not wait on
       it for a polite disconnect. */
    if (clean)
      nbd_shutdown (ep->conns[i]->h, 0);
    nbd_close (ep->conns[i]->h);
    pthread_mutex_destroy (&ep->conns[i]->fd_lock);
    free (ep->conns[i]);
  }
  free (ep->priv);
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
  .reconnect = nbd_ep_reconnect,
  .arm = nbd_ep_arm,
  .detach = nbd_ep_detach,
  .close = nbd_ep_close,
};
