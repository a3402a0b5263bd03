/* The NBD endpoint's connections through ssh (nbd+ssh:// URIs): see
 * ssh_connect.c.
 */
#ifndef NBDCP_SSH_CONNECT_H
#define NBDCP_SSH_CONNECT_H

#include <libnbd.h>

#include "endpoint.h"

/* Connect H, a new handle, to the server EP->spec (an nbd+ssh:// URI)
 * names: run ssh, wait for the server's greeting to come through it,
 * and give libnbd the socket (the handshake goes on as with any other
 * connection).  The ssh process then belongs to H: closing H ends it.
 * Returns -1 after error_set() (ssh's own message in it, when ssh
 * failed) if ssh could not run or reach the server, or EP->interrupted
 * was set while waiting.
 */
int ssh_connect (struct nbd_handle *h, const struct endpoint *ep);

#endif
