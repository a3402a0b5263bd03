/* The NBD endpoint's own header, shared by its files and by no one
 * else: nbd_connect.c opens, reconnects and closes connections;
 * nbd_handshake.c runs their handshakes (and --bitmap's negotiation);
 * nbd_failure.c tells which failures to connect are final; nbd.c is the
 * endpoint's I/O, driven by the worker's io_uring.
 */
#ifndef NBDCP_NBD_H
#define NBDCP_NBD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <libnbd.h>

#include "endpoint.h"

struct socket_poll {
  struct ring_event ev;
  bool armed;
  struct conn *conn;
};

struct conn {
  struct nbd_handle *h;
  int fd;
  struct socket_poll in, out;
  /* The last read finished a reply, so another may be waiting: the next
     arm() reads on instead of polling (see conn_read in nbd.c). */
  bool more;
  /* A read found nothing while the handle was idle, which leaves libnbd
     waiting for a reply rather than ready to send: read once more before
     issuing a command. */
  bool parked;
  /* Commands on this connection whose reply libnbd has finished
     (command_done counts them), so that conn_read can tell whether a
     read finished one without asking libnbd (each call takes the
     handle's lock).  Only the thread driving the handle touches it. */
  unsigned commands_done;
  /* Guards fd against a reconnect (worker) racing an abort (main). */
  pthread_mutex_t fd_lock;
  /* The server's first fault on this connection (see ops->fault), or
     "": libnbd's error when it gave the connection up (its reason lives
     only in the thread's error, which the next call replaces), or a read
     reply that did not cover its request.  Written and read by the
     worker; cleared by a reconnect. */
  char fault[256];
};

/* What a reconnect needs to know besides ep->settings (in ep->priv). */
struct nbd_endpoint {
  const char *bitmap; /* --bitmap, on the source side, else NULL */
};

/* nbd_failure.c.  Whether a connection that failed with ERR (libnbd's
 * errno, 0 if none) and MSG (its message) would fail the same way if
 * tried again: the server answered (no such export, TLS required or
 * refused, not NBD), or this side cannot go on (a TLS key file missing).
 * A connection refused, reset or cut, a server shutting down, a broken
 * TLS handshake are not final.
 */
bool nbd_failure_is_final (int err, const char *msg);

/* nbd_handshake.c.  Runs the handshakes of H[0..N), begun at START
 * (now_ms), until each is ready or has failed, or its time is up, or
 * EP->interrupted is set.  Entries that did not become ready are closed
 * and set to NULL; the ready ones are moved to the front.  Returns the
 * number that are ready; with none, error_set() says why the first one
 * failed, and FINAL (if not NULL) whether that failure is final
 * (nbd_failure_is_final; a time-out is not).
 */
unsigned nbd_handshake_all (struct nbd_handle **h, unsigned n,
                            const struct endpoint *ep, bool verbose,
                            int64_t timeout_ms, int64_t start, bool *final);

/* nbd_handshake.c.  Run H, outside the engine's rings, until DONE (H,
 * ARG): polling its socket, 100 ms at most at a time so that a signal
 * is seen.  Fails when H dies (*FINAL says whether for good), at
 * DEADLINE (now_ms; "timed out"), or when *INTERRUPTED is set.  For the
 * handshakes, and for requests sent before the workers start.
 */
int nbd_drive (struct nbd_handle *h, bool (*done) (struct nbd_handle *, void *),
               void *arg, int64_t deadline,
               const volatile sig_atomic_t *interrupted, bool *final);

/* nbd_handshake.c.  --bitmap: take H (connecting in option mode)
 * through the handshake and fail unless the server agreed to BITMAP's
 * meta context, saying which contexts it offers.  On failure FINAL says
 * whether it is final: the server answered (no such bitmap, no such
 * export), as nbd_failure_is_final says.
 */
int nbd_negotiate_bitmap (struct nbd_handle *h, const struct endpoint *ep,
                          const char *bitmap, bool *final);

/* nbd.c.  A poll on a connection's socket completed (the handler of
 * struct socket_poll's event).
 */
void nbd_socket_ready (struct ring_event *ev, int res);

/* nbd.c.  If C's handle is parked (see struct conn), get it back to
 * READY, so that a command can be sent.
 */
void conn_unpark (struct conn *c);

/* nbd.c.  Shut C's socket down, failing its requests in flight. */
void nbd_ep_abort (struct conn *c);

/* nbd_connect.c: the ops that open, reconnect and close. */
int nbd_ep_open (struct endpoint *ep, bool writable, unsigned want);
int nbd_ep_reconnect (struct endpoint *ep, struct conn *c);
void nbd_ep_close (struct endpoint *ep, bool clean);

#endif
