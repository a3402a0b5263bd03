/* Which failures to open an NBD connection are final: with --retry the
 * first connections are tried again when they could not be made or
 * broke on the way (a server being restarted), but not when the server
 * answered: trying again would get the same answer, minutes later.
 *
 * libnbd leaves an errno and a message.  What it says, for libnbd 1.14
 * against nbdkit and qemu-nbd:
 *   - connect() failed ("connect: ...", from nbd_aio_connect_uri or a
 *     TCP connect finishing later): ECONNREFUSED, ENOENT (no socket at
 *     the path), EHOSTUNREACH, ETIMEDOUT...: retried, but for a URI
 *     libnbd cannot use (EINVAL);
 *   - a host name that does not resolve (getaddrinfo, errno 0): retried;
 *   - the connection ended during the handshake: "recv: server
 *     disconnected unexpectedly" (errno 0), ECONNRESET, EPIPE: retried;
 *   - a TLS handshake that failed: gnutls's message, errno 0.  A wrong
 *     key looks the same as a cut connection (the server just closes
 *     it), so it is retried;
 *   - the server's answers: no such export (ENOENT, "handshake: server
 *     has no export named 'x'"), TLS required or refused (ENOTSUP), an
 *     option rejected (EINVAL), a policy refusal or bytes that are not
 *     NBD (errno 0, "handshake: ..."): final; but "server is shutting
 *     down" (ESHUTDOWN) is a server on its way to a restart: retried;
 *   - what this side cannot do once connected (a TLS key file missing,
 *     a user name not in it: ENOENT, EINVAL, ENXIO): final.
 * Anything the handshake's timeout ends is retried (nbd_handshake.c).
 */
#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "nbd.h"

/* MSG has the part WHAT ("connect: ") from libnbd: at its start or
 * after the name of the call that failed ("nbd_aio_connect_uri: connect:
 * No such file or directory"), not inside a word ("gnutls_handshake: "
 * is not "handshake: ").
 */
static bool
has_part (const char *msg, const char *what)
{
  for (const char *p = msg; (p = strstr (p, what)) != NULL; p++)
    if (p == msg || (p - msg >= 2 && p[-2] == ':' && p[-1] == ' '))
      return true;
  return false;
}

bool
nbd_failure_is_final (int err, const char *msg)
{
  if (!msg)
    msg = "";
  switch (err) {
  case ECONNREFUSED:
  case ECONNRESET:
  case ECONNABORTED:
  case ENOTCONN:
  case EPIPE:
  case ETIMEDOUT:
  case EHOSTUNREACH:
  case EHOSTDOWN:
  case ENETUNREACH:
  case ENETDOWN:
  case ENETRESET:
  case ESHUTDOWN:
  case EAGAIN:
  case EINTR:
    return false;
  }
  /* connect() failed (no socket at the path): nothing was answered.
     Only a URI that libnbd cannot use (EINVAL) would fail the same way
     again.  (One libnbd call can take a Unix socket from its connect()
     through the whole handshake, so the handle's state before the call
     does not tell.) */
  if (has_part (msg, "connect: "))
    return err == EINVAL;
  /* libnbd's own checks of what the server sent say "handshake:"; the
     other failures without an errno are a connection that ended
     ("recv: server disconnected unexpectedly") or a TLS handshake that
     broke. */
  if (err == 0)
    return has_part (msg, "handshake: ");
  return true;
}
