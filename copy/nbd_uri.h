/* What nbdcp reads from an NBD URI itself (nbd_uri.c), for
 * nbd_connect.c.
 */
#ifndef NBDCP_NBD_URI_H
#define NBDCP_NBD_URI_H

#include <stdbool.h>
#include <stddef.h>

#include "endpoint.h"

/* URI asks for X.509 TLS over a Unix socket or vsock, which has no host
   name to check the server's certificate against. */
bool nbd_uri_x509_without_host_name (const char *uri);

/* URI says tls-verify-peer=false (or 0, no, off). */
bool nbd_uri_verify_peer_off (const char *uri);

/* Refuses (-1, error_set) an EP whose server's certificate this libnbd
   could not verify, unless the URI turns checking off; else 0. */
int nbd_uri_check_peer_verifiable (const struct endpoint *ep);

#ifdef HAVE_NBD_SET_TLS_HOSTNAME
/* The host name a certificate is checked against over a Unix socket or
   vsock, in NAME (SIZE bytes) or a constant. */
const char *nbd_uri_tls_host_name (const char *uri, char *name, size_t size);
#endif

#endif
