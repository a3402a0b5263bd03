/* The NBD endpoint's connections (see nbd.h): opening them (libnbd
 * handles connecting to a URI or to a [ CMD ] subprocess, their
 * handshakes run by nbd_handshake.c), replacing a broken one
 * (--retry), and closing them.  What the connections then carry is
 * nbd.c's.
 */
#include <config.h>

#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include <libnbd.h>

#include "backoff.h"
#include "clock.h"
#include "dirty_bitmap.h"
#include "endpoint.h"
#include "error.h"
#include "minmax.h"
#include "nbd.h"
#include "nbd_uri.h"
#include "segment.h"
#include "ssh_connect.h"
#include "ssh_uri.h"

/* The least send buffer asked of a Unix socket: two default requests
   (which is where the 1 MiB default of an earlier version left it). */
#define SEND_BUFFER_MIN (1024 * 1024)

/* TCP keep-alive (see keep_alive): a dead peer is noticed after
   KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT seconds. */
#define KEEPALIVE_IDLE_S 60
#define KEEPALIVE_INTERVAL_S 10
#define KEEPALIVE_COUNT 6

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

/* A handle connecting to EP: its URI (nbd+ssh:// through ssh, by
 * ssh_connect.c), or its [ CMD ] run as a subprocess with systemd
 * socket activation.  With --bitmap it asks
 * for the bitmap's meta context too, and OPT_MODE stops it in the
 * negotiation, so that the contexts the server offers can be listed if
 * the bitmap is not among them (see nbd_negotiate_bitmap).  On failure
 * FINAL (if not NULL) says whether trying again could not help (a URI
 * libnbd cannot use; not a refused connection).
 */
static struct nbd_handle *
handle_create (const struct endpoint *ep, const char *bitmap, bool opt_mode,
               bool *final)
{
  bool verbose = ep->settings->verbose;
  struct nbd_handle *h = nbd_create ();
  nbd_debug_callback debug = { .callback = print_debug };
  char context[BITMAP_CONTEXT_MAX];
  bool uri = !ep->command;
  bool ssh = uri && ssh_uri_is (ep->spec);
  int ssh_failed = 0;
#ifdef HAVE_NBD_SET_TLS_HOSTNAME
  char host[256];
#endif

  if (!h)
    return NULL;
  if (bitmap)
    bitmap_context (bitmap, context, sizeof context);
  if ((verbose && nbd_set_debug_callback (h, debug) == -1)
      || nbd_set_debug (h, verbose) == -1
      /* Buffers are only used after a successful read, so libnbd need
         not clear them first (it does by default, at a cost). */
      || nbd_set_pread_initialize (h, false) == -1
      /* Let URIs name a TLS key file (tls-psk-file=). */
      || nbd_set_uri_allow_local_file (h, true) == -1
      || (uri && nbd_uri_verify_peer_off (ep->spec)
          && nbd_set_tls_verify_peer (h, false) == -1)
#ifdef HAVE_NBD_SET_TLS_HOSTNAME
      || (uri && nbd_uri_x509_without_host_name (ep->spec)
          && nbd_set_tls_hostname (
                 h, nbd_uri_tls_host_name (ep->spec, host, sizeof host))
                 == -1)
#endif
      || nbd_add_meta_context (h, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1
      || (bitmap && nbd_add_meta_context (h, context) == -1)
      || (opt_mode && nbd_set_opt_mode (h, true) == -1)
      || (ep->command
              ? nbd_aio_connect_systemd_socket_activation (h, ep->command)
          : ssh ? (ssh_failed = ssh_connect (h, ep)) /* sets its error */
                : nbd_aio_connect_uri (h, ep->spec))
             == -1) {
    /* ssh that failed (ssh_connect.c) is tried again, as a refused
       connection is. */
    if (final)
      *final = !ssh_failed
               && nbd_failure_is_final (nbd_get_errno (), nbd_get_error ());
    if (!ssh_failed)
      error_set ("%s", nbd_get_error ());
    nbd_close (h);
    return NULL;
  }
  return h;
}

/* Let a Unix socket hold a whole write request.  Its default send
 * buffer (about 200 KiB) takes a 1 MiB write in five or six sends, each
 * waking the server for a part of the request; with room for the whole
 * request it goes in one, and the copy spends less CPU (see
 * docs/performance.md).  Raising the limit
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

/* TCP keep-alive, so that a peer that vanished without a FIN or a reset
 * (a crashed host, a dropped NAT entry) fails the connection instead of
 * leaving a request waiting for ever: after a minute of silence, a
 * probe every 10 s, and the connection is given up after 6 unanswered
 * ones, two minutes in all.  TCP_USER_TIMEOUT gives data that is sent
 * and never acknowledged the same two minutes (keep-alive probes are
 * only sent on an idle connection).  qemu's NBD client does the same.
 * --timeout, when given, still decides sooner.  Unix sockets and vsock
 * are left alone.  Best effort: a kernel that refuses an option only
 * keeps its default.
 */
static void
keep_alive (int fd)
{
  struct sockaddr_storage addr;
  socklen_t addr_len = sizeof addr;
  int on = 1, idle = KEEPALIVE_IDLE_S, interval = KEEPALIVE_INTERVAL_S;
  int count = KEEPALIVE_COUNT;
  unsigned user_timeout
      = (KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT) * 1000;

  if (getsockname (fd, (struct sockaddr *) &addr, &addr_len) == -1
      || (addr.ss_family != AF_INET && addr.ss_family != AF_INET6))
    return;
  setsockopt (fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  setsockopt (fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout,
              sizeof user_timeout);
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

/* Starts the handshakes of connections H[FROM..TO).  Returns how many
 * started; WHY says why the first of them failed, or with -v the last,
 * and FINAL whether the first one's failure was final.
 */
static unsigned
start_handshakes (struct nbd_handle **h, unsigned from, unsigned to,
                  const struct endpoint *ep, const char *bitmap, char *why,
                  size_t why_size, bool *final)
{
  bool verbose = ep->settings->verbose;
  unsigned n = 0;

  for (unsigned i = from; i < to; i++) {
    h[i] = handle_create (ep, bitmap, bitmap && i == 0,
                          i == from ? final : NULL);
    if (!h[i]) {
      if (verbose || n + from == i)
        snprintf (why, why_size, "%s", error_get ());
      if (verbose)
        fprintf (stderr, "nbdcp: %s: connection %u failed: %s\n", ep->spec,
                 i + 1, why);
    }
    else
      n++;
  }
  return n;
}

/* Opens and handshakes up to WANT connections into H (WANT entries):
 * for a source, the first alone, then as many more as its size has
 * segments for.  Returns how many are ready, at the front of H; with
 * none, error_set() says why.
 */
static unsigned
connect_all (struct nbd_handle **h, struct endpoint *ep, bool writable,
             unsigned want, const char *bitmap, bool *retryable)
{
  const struct endpoint_settings *set = ep->settings;
  unsigned ready;
  int64_t start = now_ms ();
  char why[512] = "";
  bool final = false;
  /* A source's size is not known before a handshake, and a disk with
     fewer segments than -C has no use for the other connections, which
     cost both sides a thread and a handshake each (which shows on a
     tiny copy; see docs/performance.md).  So the
     source's first connection handshakes alone and the others follow
     when its size says they can help.  The destination's number is
     known already (main.c). */
  unsigned first = writable ? want : 1;

  /* A connection that fails at once (qemu-nbd's listen queue can be
     full when it takes one client) is only fatal if none works.  A
     server that answered (no such export, no such bitmap, TLS required)
     would answer the same again; a connection that was refused or broke
     may be made next time (nbd_failure.c). */
  *retryable = true;
  if (start_handshakes (h, 0, first, ep, bitmap, why, sizeof why, &final)
      == 0) {
    error_set ("%s: %s", ep->spec, why);
    *retryable = !final;
    return 0;
  }
  /* --bitmap: the first connection's handshake makes sure of the
     bitmap, and lists what the server has if it is not there, before
     the others start theirs. */
  if (bitmap
      && (!h[0] || nbd_negotiate_bitmap (h[0], ep, bitmap, &final) == -1)) {
    if (!h[0])
      error_set ("%s: %s", ep->spec, why);
    *retryable = !final;
    for (unsigned i = 0; i < first; i++)
      if (h[i]) {
        nbd_close (h[i]);
        h[i] = NULL;
      }
    return 0;
  }
  ready = nbd_handshake_all (h, first, ep, set->verbose, set->timeout_ms, start,
                             &final);
  if (ready == 0)
    *retryable = !final;
  if (ready > 0 && first < want) {
    int64_t size = nbd_get_size (h[0]);
    uint64_t useful = size > 0 ? segment_count (size) : 1;

    if (useful < want) {
      if (set->verbose)
        fprintf (stderr,
                 "nbdcp: %s: %" PRIu64 " connection%s: the disk has %" PRIu64
                 " segment%s of %" PRIu64 " MiB\n",
                 ep->spec, useful, useful == 1 ? "" : "s", useful,
                 useful == 1 ? "" : "s", SEGMENT_SIZE >> 20);
      want = useful;
    }
    /* Extras that cannot start are not fatal: the first one works. */
    start_handshakes (h, first, want, ep, bitmap, why, sizeof why, NULL);
    ready = nbd_handshake_all (h, want, ep, set->verbose, set->timeout_ms,
                               start, NULL);
  }
  return ready;
}

/* Makes the READY handshaken handles of H the endpoint's connections,
 * once they are known to see the same disk.  On failure the handles
 * are closed (those taken, and those left in H).
 */
static int
adopt_connections (struct endpoint *ep, struct nbd_handle **h, unsigned ready,
                   const char *bitmap)
{
  const struct endpoint_settings *set = ep->settings;
  unsigned n = 0;

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
    int send_buffer = enlarge_send_buffer (c->fd, set->request_size);
    keep_alive (c->fd);
    if (set->verbose && n == 0 && send_buffer > 0)
      fprintf (stderr, "nbdcp: %s: socket send buffer %d KiB\n", ep->spec,
               send_buffer / 1024);
    c->in = (struct socket_poll){ .ev.handle = nbd_socket_ready, .conn = c };
    c->out = (struct socket_poll){ .ev.handle = nbd_socket_ready, .conn = c };
    pthread_mutex_init (&c->fd_lock, NULL);
    ep->conns[n++] = c;
    h[i] = NULL;
  }
  ep->nconns = n;
  *(struct nbd_endpoint *) ep->priv = (struct nbd_endpoint){
    .bitmap = bitmap,
  };
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
  return -1;
}

/* The first connections failed (error_get() says why) on attempt
 * ATTEMPT (0 for the first): with --retry attempts left, say so and
 * wait as a lane waits before reconnecting (lane_recover.c), and return
 * 0 to try again; otherwise, or when a signal comes during the wait,
 * return -1 with the reason, saying whether it was retried.
 */
static int
wait_to_retry (const struct endpoint *ep, unsigned attempt)
{
  const struct endpoint_settings *set = ep->settings;
  char why[512];
  int64_t delay, until;

  snprintf (why, sizeof why, "%s", error_get ());
  if (attempt >= set->retry) {
    if (set->retry == 0)
      error_set ("%s (not retried; see --retry)", why);
    else
      error_set ("%s (gave up after %u %s)", why, set->retry,
                 set->retry == 1 ? "retry" : "retries");
    return -1;
  }
  delay = backoff_ms (set->retry_delay_ms, attempt, RETRY_DELAY_MAX_MS);
  fprintf (stderr, "nbdcp: %s; connecting again in %.1f s (retry %u of %u)\n",
           why, delay / 1000.0, attempt + 1, set->retry);
  /* Sleep in slices, so that a signal ends the wait at once. */
  until = now_ms () + delay;
  for (int64_t left = delay; left > 0; left = until - now_ms ()) {
    if (*ep->interrupted) {
      error_set ("%s: interrupted while waiting to connect again", ep->spec);
      return -1;
    }
    struct timespec slice = { .tv_nsec = MIN (left, (int64_t) 100) * 1000000 };
    nanosleep (&slice, NULL);
  }
  return 0;
}

/* With --retry, first connections that are refused or broken in their
 * handshake (a server being restarted) are tried again with the back-off
 * of later reconnections; a [ CMD ] subprocess, a server's answer (no
 * such export or bitmap, TLS required or refused: nbd_failure.c) and a
 * signal are not.
 */
int
nbd_ep_open (struct endpoint *ep, bool writable, unsigned want)
{
  struct nbd_handle **h = calloc (want, sizeof *h);
  /* --bitmap is the source's. */
  const char *bitmap = writable ? NULL : ep->settings->bitmap;
  int r = -1;

  if (!h) {
    error_set ("out of memory");
    return -1;
  }
  if (nbd_uri_check_peer_verifiable (ep) == -1) {
    free (h);
    return -1;
  }
  for (unsigned attempt = 0;; attempt++) {
    bool retryable;
    unsigned ready = connect_all (h, ep, writable, want, bitmap, &retryable);
    if (ready > 0) {
      r = adopt_connections (ep, h, ready, bitmap);
      break;
    }
    if (!retryable || ep->command || *ep->interrupted
        || wait_to_retry (ep, attempt) == -1)
      break;
  }
  free (h);
  return r;
}

/* Replace C's dead handle with a new connection to the same server,
 * which must still have the same size.  The handshake blocks this
 * worker (a rare event, and its other lanes' connections are most
 * likely down too).  Polls still armed on the old socket must have
 * completed first, or their late completions would be taken for the
 * new socket's: returns 1 (try again soon) until they have.
 */
int
nbd_ep_reconnect (struct endpoint *ep, struct conn *c)
{
  const struct nbd_endpoint *ne = ep->priv;
  const struct endpoint_settings *set = ep->settings;
  struct nbd_handle *h, *old;

  if (c->in.armed || c->out.armed) {
    nbd_ep_abort (c); /* they complete as soon as the socket is shut */
    return 1;
  }
  h = handle_create (ep, ne->bitmap, false, NULL);
  if (!h)
    return -1;
  if (nbd_handshake_all (&h, 1, ep, set->verbose, set->timeout_ms, now_ms (),
                         NULL)
      == 0)
    return -1;
  if (nbd_get_size (h) != ep->size) {
    error_set ("%s: the server now has %" PRIi64 " bytes, not %" PRIi64
               " as when the copy started",
               ep->spec, nbd_get_size (h), ep->size);
    nbd_close (h);
    return -1;
  }
  enlarge_send_buffer (nbd_aio_get_fd (h), set->request_size);
  keep_alive (nbd_aio_get_fd (h));
  pthread_mutex_lock (&c->fd_lock);
  old = c->h;
  c->h = h;
  c->fd = nbd_aio_get_fd (h);
  c->more = c->parked = false;
  c->fault[0] = '\0';
  pthread_mutex_unlock (&c->fd_lock);
  nbd_close (old);
  return 0;
}

void
nbd_ep_close (struct endpoint *ep, bool clean)
{
  for (unsigned i = 0; i < ep->nconns; i++) {
    /* After a failure the server may be gone or stuck: do not wait on
       it for a polite disconnect. */
    /* Nor while a request is still unanswered (a question the copy
       stopped waiting for): the server would answer it first. */
    if (clean && nbd_aio_in_flight (ep->conns[i]->h) == 0) {
      conn_unpark (ep->conns[i]); /* or the disconnect would wait */
      nbd_shutdown (ep->conns[i]->h, 0);
    }
    nbd_close (ep->conns[i]->h);
    pthread_mutex_destroy (&ep->conns[i]->fd_lock);
    free (ep->conns[i]);
  }
  free (ep->priv);
}
