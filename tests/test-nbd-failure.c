/* Unit test for nbd_failure_is_final: which failures to open an NBD
 * connection --retry tries again.  The messages and errnos are what
 * libnbd 1.14 gave against nbdkit 1.32 and qemu-nbd 7.2 in each case
 * (copied from runs; libnbd prefixes the call that failed).
 */
#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "nbd.h"
#include "unit.h"

#define NOTIFY "nbd_aio_notify_read: "

int
main (void)
{
  /* Failures to connect: retried. */
  CHECK (!nbd_failure_is_final (
      ENOENT, "nbd_aio_connect_uri: connect: No such file or directory"));
  CHECK (!nbd_failure_is_final (
      ECONNREFUSED, "nbd_aio_connect_uri: connect: Connection refused"));
  CHECK (!nbd_failure_is_final (
      ECONNREFUSED, "nbd_aio_connect_uri: connect: 127.0.0.1:1: could not "
                    "connect to remote host: Connection refused"));
  CHECK (
      !nbd_failure_is_final (ECONNREFUSED, NOTIFY "recv: Connection refused"));
  CHECK (!nbd_failure_is_final (EHOSTUNREACH, "connect: No route to host"));
  CHECK (!nbd_failure_is_final (EACCES,
                                "nbd_aio_connect_uri: connect: Permission "
                                "denied"));
  CHECK (!nbd_failure_is_final (
      0, "nbd_aio_connect_uri: getaddrinfo: hostname \"x.invalid\" port "
         "\"10809\": Name or service not known"));
  /* A connection that ended or broke in the handshake: retried. */
  CHECK (!nbd_failure_is_final (0, NOTIFY
                                "recv: server disconnected unexpectedly"));
  CHECK (!nbd_failure_is_final (ECONNRESET,
                                NOTIFY "recv: Connection reset by peer"));
  CHECK (!nbd_failure_is_final (EPIPE, NOTIFY "send: Broken pipe"));
  CHECK (!nbd_failure_is_final (
      0, NOTIFY "gnutls_handshake: The TLS connection was non-properly "
                "terminated. (-1/1)"));
  CHECK (!nbd_failure_is_final (
      0, NOTIFY "gnutls_handshake: Error in the push function. (2/1)"));
  CHECK (!nbd_failure_is_final (ESHUTDOWN,
                                NOTIFY "handshake: server is shutting down"));
  CHECK (!nbd_failure_is_final (0, NULL));

  /* The server's answers: final. */
  CHECK (nbd_failure_is_final (
      ENOENT, NOTIFY "handshake: server has no export named 'bad': No such "
                     "file or directory"));
  CHECK (nbd_failure_is_final (
      ENOENT, "nbd_aio_notify_write: handshake: server has no export named "
              "'bad': No such file or directory"));
  CHECK (nbd_failure_is_final (
      ENOTSUP, NOTIFY "handshake: server requires TLS encryption first: "
                      "Operation not supported"));
  CHECK (nbd_failure_is_final (
      ENOTSUP, NOTIFY "handshake: server refused TLS, but handle TLS setting "
                      "is 'require' (2): Operation not supported"));
  CHECK (nbd_failure_is_final (
      EINVAL, NOTIFY "handshake: server rejected NBD_OPT_GO as invalid"));
  CHECK (nbd_failure_is_final (0, NOTIFY
                               "handshake: server policy prevents NBD_OPT_GO"));
  CHECK (nbd_failure_is_final (
      0, NOTIFY "handshake: server did not send expected NBD magic"));
  /* What this side cannot do: final. */
  CHECK (nbd_failure_is_final (ENOENT, NOTIFY
                               "open: /k/none.psk: No such file or directory"));
  CHECK (nbd_failure_is_final (
      EINVAL, "nbd_aio_notify_write: /k/keys.psk: username bob was not found "
              "in PSK file: Invalid argument"));
  CHECK (nbd_failure_is_final (ENXIO,
                               NOTIFY "getlogin_r: No such device or address"));
  CHECK (nbd_failure_is_final (
      EINVAL, "nbd_aio_connect_uri: cannot parse socket parameter from NBD "
              "URI: Invalid argument"));

  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
