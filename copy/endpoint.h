/* The endpoint interface: what the engine needs from a source or a
 * destination, as a small ops table.
 *
 * The engine never asks what kind of endpoint it has (NBD server, file,
 * null:); it asks what the endpoint can do (caps) and submits
 * asynchronous requests to one of its connections.  A connection
 * belongs to one worker thread and is driven by that worker's io_uring:
 * before each wait the worker calls ops->arm() (where there is one),
 * which submits whatever the connection is waiting for (a poll on a
 * socket, say).  Requests finish by calling op_complete() from inside
 * the worker's loop, or from inside the submitting call for endpoints
 * that finish at once.  Ops marked optional may be NULL.
 */
#ifndef NBDCP_ENDPOINT_H
#define NBDCP_ENDPOINT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "extents.h"
#include "op_io.h"

struct io_uring;
struct conn; /* one connection; each kind defines it */

/* What the endpoints need of the command line, and nothing else: main
 * fills it once from the options (settings_for_endpoints) and gives it
 * to endpoint_open; it must live as long as the endpoints.
 */
struct endpoint_settings {
  bool verbose;           /* -v: libnbd's debug messages, notes */
  int64_t timeout_ms;     /* --timeout: a handshake's limit, 0 = the
                             default (nbd_handshake.c) */
  uint32_t request_size;  /* --request-size: NBD sockets' send buffers
                             are sized for it */
  bool direct;            /* --direct: O_DIRECT for local files */
  unsigned retry;         /* --retry: attempts at the first connections */
  int64_t retry_delay_ms; /* --retry-delay: the first wait before one */
  const char *bitmap;     /* --bitmap NAME, asked of an NBD source, or
                             NULL */
};

struct endpoint_caps {
  bool stream; /* sequential only: stdin, stdout, pipes */
  bool read_only;
  bool can_zero; /* has an efficient zero operation */
  bool can_flush;
  bool can_extents;         /* can tell holes from data */
  bool starts_zero;         /* reads as zero before the copy (a new file):
                               zeroing can be skipped */
  bool multi_conn;          /* advertises multi-conn (informational) */
  uint32_t min_block;       /* requests must be multiples of it, in
                               offset and length; 0 or 1: no constraint */
  uint32_t preferred_block; /* 0 if unknown */
  uint32_t max_request;     /* 0 if no limit */
};

struct endpoint;

struct endpoint_ops {
  const char *kind; /* for -v messages only */

  /* Open up to WANT connections; sets ep->size, ep->caps, ep->conns and
     ep->nconns (at least 1 on success). */
  int (*open) (struct endpoint *ep, bool writable, unsigned want);

  /* Asynchronous requests.  Return 0 when submitted (OP completes
     later), -1 with error_set() when they could not be. */
  int (*read) (struct conn *c, void *buf, uint32_t len, uint64_t offset,
               struct op *op);
  int (*write) (struct conn *c, const void *buf, uint32_t len, uint64_t offset,
                struct op *op);
  int (*zero) (struct conn *c, uint64_t len, uint64_t offset, bool allocate,
               struct op *op);
  /* Optional, sources with caps.can_extents: fill LIST for the range
     (see extents.h), then complete OP. */
  int (*extents) (struct conn *c, uint64_t len, uint64_t offset,
                  struct extent_list *list, struct op *op);
  int (*flush) (struct conn *c, struct op *op);
  /* Optional, sources that can report a dirty bitmap (--bitmap): the
     same as extents, answered before returning, on the first
     connection, before the copy starts. */
  int (*scan_extents) (struct endpoint *ep, uint64_t len, uint64_t offset,
                       struct extent_list *list);

  /* Optional: the worker that will drive C starts.  RING is its ring;
     BUFS is the pool the lane's buffers come from, registered with the
     ring as fixed buffer BUF_INDEX, or -1 if not registered. */
  void (*attach) (struct conn *c, struct io_uring *ring, const char *bufs,
                  size_t bufs_len, int buf_index);

  /* Optional (NBD): whether C's connection itself has gone (EOF, reset,
     shut down), as opposed to a request that a live server refused. */
  bool (*broken) (struct conn *c);
  /* Optional (NBD): what the server did wrong on C's connection, when
     its fault broke the connection or failed a request (libnbd's reason
     for giving the connection up, a read reply that did not cover its
     request), or NULL.  Cleared when the connection is made again. */
  const char *(*fault) (struct conn *c);
  /* Optional (NBD): replace C's broken connection with a new one to the
     same server.  Returns 0 when connected, 1 when C is not ready to be
     replaced yet (call again soon), -1 after error_set(). */
  int (*reconnect) (struct endpoint *ep, struct conn *c);

  /* Optional: the worker that drove C has ended and its ring is going
     away; forget whatever C had armed on it. */
  void (*detach) (struct conn *c);

  /* Optional, destinations: make the destination exactly SIZE bytes
     (regular files; SIZE -1: a stream's, set again when it ends).  The
     first change to the destination: main calls it once every check
     of the copy has passed (but the destination's size, which it
     settles), and a file that did not exist is created here, not by
     open.  On failure it leaves no file it created. */
  int (*set_size) (struct endpoint *ep, int64_t size);

  /* Optional: make C's requests in flight fail soon (the server stopped
     answering, or the user interrupted).  Called from another thread. */
  void (*abort) (struct conn *c);

  /* Optional: submit to RING whatever C waits on before the worker
     sleeps.  Endpoints that put requests on the ring when they are
     made, or finish them at once, have none. */
  void (*arm) (struct conn *c, struct io_uring *ring);

  /* Optional (stream sources): whether a read of C would wait for the
     stream now, nothing being there to read. */
  bool (*would_wait) (struct conn *c);

  /* Optional: whether C still has requests on its worker's ring that
     no lane waits for (a file's early write-back).  They hold what C
     opened: the worker lets them finish before it ends. */
  bool (*busy) (struct conn *c);

  /* Close every connection; CLEAN says the copy succeeded, so a polite
     disconnect is worth waiting for. */
  void (*close) (struct endpoint *ep, bool clean);
};

struct endpoint {
  const struct endpoint_ops *ops;
  const char *spec; /* as the user wrote it */
  const char *side; /* "source" or "destination" */
  const char *path; /* a local file, device or stream, else NULL */
  char **command;   /* [ CMD ARGS ... ], else NULL */
  int std_fd;       /* '-' used as a file: the descriptor to use (0 or
                       1) rather than opening spec again; else -1 */
  int64_t size;     /* -1 if unknown (a stream source) */
  bool created;     /* a file that did not exist before this run's open */
  /* The number of the signal that asked nbdcp to stop, or 0 (main's
     flag, given to endpoint_open).  Opening an endpoint can wait a long
     time (a server slow to start or to answer its handshake): it gives
     up when this is set, so that main can close what was opened and
     exit.  Never NULL. */
  const volatile sig_atomic_t *interrupted;
  const struct endpoint_settings *settings; /* given to endpoint_open */
  struct endpoint_caps caps;
  unsigned nconns;
  struct conn **conns;
  void *priv; /* the kind's own state */
  /* Memory that a request still in flight on a connection may write
     its reply into (a question the copy stopped waiting for): freed
     only once the connections are closed (endpoint_keep_until_closed). */
  void *kept[2];
};

/* The block size every request to EP must be a multiple of. */
static inline uint32_t
endpoint_min_block (const struct endpoint *ep)
{
  return ep->caps.min_block > 1 ? ep->caps.min_block : 1;
}

/* Pick the endpoint kind for SPEC and open it, with SETTINGS (kept in
 * ep->settings).  INTERRUPTED is the flag a signal sets (see struct
 * endpoint), read while opening and by a reconnect.  Returns NULL after
 * error_set() on failure.
 */
struct endpoint *endpoint_open (const char *spec, char **command, bool writable,
                                unsigned want,
                                const struct endpoint_settings *settings,
                                const volatile sig_atomic_t *interrupted);
void endpoint_close (struct endpoint *ep, bool clean);
/* MEM (from malloc) may still be written by the replies of requests in
 * flight on EP's connections: endpoint_close frees it after closing
 * them, when no reply can come any more.  (If EP already keeps as much
 * as it can, MEM is never freed: a leak beats a write into freed
 * memory.)
 */
void endpoint_keep_until_closed (struct endpoint *ep, void *mem);

/* True if SPEC (or COMMAND) on that side names a stream (stdin/stdout
 * not on a file at its start, a pipe, a socket, a character device):
 * such copies run on one connection, in order.  Decided as
 * endpoint_open decides.
 */
bool endpoint_is_stream (const char *spec, char **command, bool writable);

/* True if the destination SPEC (or COMMAND) is a file that does not
 * exist yet or is empty: it holds no earlier copy (--bitmap).
 */
bool endpoint_is_new_file (const char *spec, char **command);

/* True if the destination SPEC (or COMMAND) can be read back after the
 * copy (--verify): not null:, not a stream.
 */
bool endpoint_can_read_back (const char *spec, char **command);

extern const struct endpoint_ops nbd_endpoint_ops;
extern const struct endpoint_ops null_endpoint_ops;
extern const struct endpoint_ops file_endpoint_ops;
extern const struct endpoint_ops stream_endpoint_ops;

#endif
