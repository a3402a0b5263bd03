/* The NBD endpoint's handshakes (see nbd.h): many connections at once,
 * and --bitmap's negotiation on the first one.  Opening and replacing
 * connections is nbd_connect.c's; this file only takes handles that
 * are connecting through their handshake.
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
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

#include "clock.h"
#include "dirty_bitmap.h"
#include "endpoint.h"
#include "error.h"
#include "fd_readable.h"
#include "minmax.h"
#include "nbd.h"

/* How long the first connection may take to connect and handshake,
   unless --timeout says otherwise. */
#define FIRST_CONNECT_TIMEOUT_MS (60 * 1000)
/* How long extra connections may take once the first one works. */
#define EXTRA_CONNECT_WAIT_MS 2000
/* How long, once the first one works, extra connections to a server
   without multi-conn may take to get the server's greeting: a few
   times what the first one took for its whole handshake (a server
   that serves them greets them sooner than that, but on a loaded
   machine its threads may start late), within these bounds.  The
   upper bound is what a copy from a one-client server pays. */
#define EXTRA_GREETING_WAIT_FACTOR 4
#define EXTRA_GREETING_WAIT_MIN_MS 20
#define EXTRA_GREETING_WAIT_MAX_MS 250
/* Longest a handshake poll sleeps before looking at the
   interrupt flag. */
#define SIGNAL_CHECK_MS 100

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

/* A libnbd call has just failed: whether that is final, from what
 * libnbd left (read before another libnbd call can replace it).
 */
static bool
failed_finally (void)
{
  return nbd_failure_is_final (nbd_get_errno (), nbd_get_error ());
}

/* The handshakes that nbd_handshake_all runs, between its steps. */
struct handshake {
  struct nbd_handle **h;
  unsigned n;
  const char *spec;
  bool verbose;
  const volatile sig_atomic_t *interrupted;
  int64_t start, deadline;
  /* Set when the first connection is ready and the server does not
     advertise multi-conn: extras without a greeting by then go. */
  int64_t greeting_deadline;
  bool extra_deadline_set;
  /* This round's polls: fds[k] is h[index[k]]'s socket. */
  struct pollfd *fds;
  unsigned *index;
  unsigned nfds, nready, ngreeting;
  char first_error[256];
  bool first_final; /* first_error is final (nbd_failure_is_final) */
};

static void
drop (struct handshake *hs, unsigned i)
{
  nbd_close (hs->h[i]);
  hs->h[i] = NULL;
}

/* Before a poll: see where connection I is.  A ready one is counted, a
 * failed one or one that waited too long for its greeting is dropped,
 * and any other gets a pollfd in the direction libnbd wants.
 */
static void
handshake_look (struct handshake *hs, unsigned i)
{
  struct nbd_handle *h = hs->h[i];
  unsigned dir;

  if (!h)
    return;
  if (nbd_aio_is_ready (h) == 1) {
    hs->nready++;
    return;
  }
  /* A greeting that arrived since the last poll, which libnbd has not
     read yet, is not a missing one. */
  if (now_ms () >= hs->greeting_deadline && awaiting_greeting (h)
      && !fd_readable (nbd_aio_get_fd (h))) {
    if (hs->verbose)
      fprintf (stderr,
               "nbdcp: %s: connection %u got no greeting from the "
               "server, which does not advertise multi-conn; dropped "
               "(the server may take one client at a time)\n",
               hs->spec, i + 1);
    drop (hs, i);
    return;
  }
  if (nbd_aio_is_connecting (h) != 1) {
    /* Dead or closed: it failed, and libnbd says why. */
    if (!hs->first_error[0])
      snprintf (hs->first_error, sizeof hs->first_error, "%s",
                nbd_get_error () ? nbd_get_error () : "handshake failed");
    if (hs->verbose)
      fprintf (stderr, "nbdcp: %s: connection %u failed: %s\n", hs->spec, i + 1,
               hs->first_error);
    drop (hs, i);
    return;
  }
  dir = nbd_aio_get_direction (h);
  hs->fds[hs->nfds].fd = nbd_aio_get_fd (h);
  hs->fds[hs->nfds].events
      = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0)
        | ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0);
  hs->index[hs->nfds++] = i;
  if (awaiting_greeting (h))
    hs->ngreeting++;
}

/* The first connection is ready (at T): the others get a little
 * longer, and less still to be greeted by a server without multi-conn.
 */
static void
handshake_first_ready (struct handshake *hs, int64_t t)
{
  if (t + EXTRA_CONNECT_WAIT_MS < hs->deadline)
    hs->deadline = t + EXTRA_CONNECT_WAIT_MS;
  hs->extra_deadline_set = true;
  for (unsigned i = 0; i < hs->n; i++)
    if (hs->h[i] && nbd_aio_is_ready (hs->h[i]) == 1) {
      int64_t wait = MAX (EXTRA_GREETING_WAIT_FACTOR * (t - hs->start),
                          (int64_t) EXTRA_GREETING_WAIT_MIN_MS);
      if (nbd_can_multi_conn (hs->h[i]) != 1)
        hs->greeting_deadline
            = t + MIN (wait, (int64_t) EXTRA_GREETING_WAIT_MAX_MS);
      break;
    }
}

/* After a poll: tell libnbd what the poll saw on fds[K]'s socket. */
static void
handshake_notify (struct handshake *hs, unsigned k)
{
  struct nbd_handle *h = hs->h[hs->index[k]];
  short re = hs->fds[k].revents;
  unsigned dir = nbd_aio_get_direction (h);
  int r = 0;

  /* Hang-ups and errors go to the direction libnbd is waiting on:
     telling it "readable" while it waits to write is invalid and
     would leave it waiting, with poll returning at once, forever. */
  if ((dir & LIBNBD_AIO_DIRECTION_WRITE)
      && (re & (POLLOUT | POLLHUP | POLLERR)))
    r = nbd_aio_notify_write (h);
  else if ((dir & LIBNBD_AIO_DIRECTION_READ)
           && (re & (POLLIN | POLLHUP | POLLERR)))
    r = nbd_aio_notify_read (h);
  if (r == -1 && !hs->first_error[0]) {
    hs->first_final = failed_finally ();
    snprintf (hs->first_error, sizeof hs->first_error, "%s", nbd_get_error ());
  }
}

/* One round: look at every connection, then poll those still in their
 * handshake and tell libnbd what the poll saw.  Returns false when the
 * handshakes are over (none left in progress, time up, a signal, or
 * poll failed).
 */
static bool
handshake_round (struct handshake *hs)
{
  int64_t left, t;

  hs->nfds = hs->nready = hs->ngreeting = 0;
  for (unsigned i = 0; i < hs->n; i++)
    handshake_look (hs, i);
  if (hs->nfds == 0)
    return false;
  t = now_ms ();
  if (hs->nready > 0 && !hs->extra_deadline_set)
    handshake_first_ready (hs, t);

  left = hs->deadline - t;
  if (hs->ngreeting > 0 && hs->greeting_deadline - t < left)
    left = MAX (hs->greeting_deadline - t, (int64_t) 0);
  if (hs->deadline - t <= 0 || *hs->interrupted)
    return false;
  /* A signal makes poll return EINTR; one that came just before the
     poll is seen at the next slice. */
  if (poll (hs->fds, hs->nfds, MIN (left, (int64_t) SIGNAL_CHECK_MS)) == -1
      && errno != EINTR)
    return false;

  for (unsigned k = 0; k < hs->nfds; k++)
    handshake_notify (hs, k);
  return true;
}

/* The handshakes are over: move the ready connections to the front,
 * close the others, and say why there are none if so.
 */
static unsigned
handshake_finish (struct handshake *hs, bool *final)
{
  unsigned ready = 0;

  for (unsigned i = 0; i < hs->n; i++) {
    if (!hs->h[i])
      continue;
    if (nbd_aio_is_ready (hs->h[i]) == 1) {
      struct nbd_handle *hi = hs->h[i];
      hs->h[i] = NULL;
      hs->h[ready++] = hi;
      continue;
    }
    if (hs->verbose && !*hs->interrupted)
      fprintf (stderr,
               "nbdcp: %s: connection %u did not finish its handshake in "
               "time; dropped (the server may limit its clients)\n",
               hs->spec, i + 1);
    drop (hs, i);
  }
  if (*hs->interrupted) {
    /* main says which signal; the ready ones are of no use now. */
    for (unsigned i = 0; i < ready; i++)
      drop (hs, i);
    ready = 0;
    error_set ("%s: interrupted during the handshake", hs->spec);
  }
  else if (ready == 0) {
    error_set ("%s: cannot connect: %s", hs->spec,
               hs->first_error[0] ? hs->first_error
                                  : "timed out during handshake");
    if (final)
      *final = hs->first_error[0] && hs->first_final;
  }
  return ready;
}

unsigned
nbd_handshake_all (struct nbd_handle **h, unsigned n, const struct endpoint *ep,
                   bool verbose, int64_t timeout_ms, int64_t start, bool *final)
{
  struct handshake hs = {
    .h = h,
    .n = n,
    .spec = ep->spec,
    .verbose = verbose,
    .interrupted = ep->interrupted,
    .start = start,
    .deadline = start + (timeout_ms ? timeout_ms : FIRST_CONNECT_TIMEOUT_MS),
    .greeting_deadline = INT64_MAX,
    .fds = calloc (n, sizeof *hs.fds),
    .index = calloc (n, sizeof *hs.index),
  };
  unsigned ready;

  if (!hs.fds || !hs.index) {
    free (hs.fds);
    free (hs.index);
    error_set ("out of memory");
    return 0;
  }
  while (handshake_round (&hs))
    ;
  ready = handshake_finish (&hs, final);
  free (hs.fds);
  free (hs.index);
  return ready;
}

/* See nbd.h. */
int
nbd_drive (struct nbd_handle *h, bool (*done) (struct nbd_handle *, void *),
           void *arg, int64_t deadline,
           const volatile sig_atomic_t *interrupted, bool *final)
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
    if (*interrupted) {
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
      *final = failed_finally ();
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
int
nbd_negotiate_bitmap (struct nbd_handle *h, const struct endpoint *ep,
                      const char *bitmap, bool *final)
{
  int64_t timeout_ms = ep->settings->timeout_ms;
  int64_t deadline
      = now_ms () + (timeout_ms ? timeout_ms : FIRST_CONNECT_TIMEOUT_MS);
  char context[BITMAP_CONTEXT_MAX];
  struct context_names names = { .text = "" };
  nbd_context_callback list_cb
      = { .callback = got_context, .user_data = &names };
  int listed = -1, went = -1;
  bool negotiated = false;

  *final = false;
  bitmap_context (bitmap, context, sizeof context);
  if (nbd_drive (h, negotiating_or_ready, NULL, deadline, ep->interrupted,
                 final)
      == -1)
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
        || nbd_drive (h, option_finished, &listed, deadline, ep->interrupted,
                      final)
               == -1
        || nbd_add_meta_context (h, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1
        || nbd_add_meta_context (h, context) == -1
        || nbd_aio_opt_go (h,
                           (nbd_completion_callback){ .callback = option_done,
                                                      .user_data = &went })
               == -1
        || nbd_drive (h, option_finished, &went, deadline, ep->interrupted,
                      final)
               == -1)
      goto fail;
    if (went != 0 || nbd_aio_is_ready (h) != 1) {
      /* The server refused NBD_OPT_GO (no such export, TLS required:
         final; shutting down: not), or the connection ended. */
      *final = nbd_failure_is_final (went, nbd_get_error ());
      /* libnbd's message names the export ("server has no export named
         'x'"); the errno alone would not. */
      error_set ("%s", nbd_get_error () ? nbd_get_error ()
                       : went > 0       ? strerror (went)
                                        : "NBD_OPT_GO failed");
      goto fail;
    }
  }
  if (nbd_can_meta_context (h, context) == 1)
    return 0;
  *final = true; /* the server's answer: no such bitmap */
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
