/* What nbdcp reads from an NBD URI itself, beside libnbd: its query
 * parameters (libnbd 1.14 ignores tls-verify-peer=), and the TLS checks
 * and settings that depend on its scheme (see nbd_uri.h).
 */
#include <config.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libnbd.h>

#include "endpoint.h"
#include "error.h"
#include "nbd_uri.h"

/* Copies the text from P up to the first of STOP (or the end) into
 * OUT (SIZE bytes, cut if longer), percent-decoded.  Returns where it
 * stopped.
 */
static const char *
uri_decode (const char *p, const char *stop, char *out, size_t size)
{
  size_t n = 0;

  for (; *p && !strchr (stop, *p); p++) {
    char c = *p;
    if (c == '%' && isxdigit ((unsigned char) p[1])
        && isxdigit ((unsigned char) p[2])) {
      char hex[3] = { p[1], p[2], '\0' };
      c = (char) strtol (hex, NULL, 16);
      p += 2;
    }
    if (n + 1 < size)
      out[n++] = c;
  }
  out[n] = '\0';
  return p;
}

/* The value of the query parameter NAME in URI, percent-decoded, in
 * VALUE (SIZE bytes, cut if longer).  Returns whether the parameter is
 * there.
 */
static bool
uri_query (const char *uri, const char *name, char *value, size_t size)
{
  const char *p = strchr (uri, '?');
  char key[64];

  while (p && *p) {
    p = uri_decode (p + 1, "=&#", key, sizeof key);
    value[0] = '\0';
    if (*p == '=')
      p = uri_decode (p + 1, "&#", value, size);
    if (strcmp (key, name) == 0)
      return true;
    if (*p == '#')
      break;
  }
  return false;
}

/* URI asks for TLS with X.509 certificates (nbds+, without a pre-shared
 * key) over a transport that has no host name to check the server's
 * certificate against: a Unix socket or vsock.
 */
bool
nbd_uri_x509_without_host_name (const char *uri)
{
  char psk[8];

  /* Only well-formed ones: libnbd's own message is better for others. */
  return (strncasecmp (uri, "nbds+unix://", 12) == 0
          || strncasecmp (uri, "nbds+vsock://", 13) == 0)
         && !uri_query (uri, "tls-psk-file", psk, sizeof psk);
}

/* URI says tls-verify-peer=false (or 0, no, off): its user asked not to
 * have the server's certificate checked.  libnbd 1.14 does not read the
 * parameter; nbdcp applies it itself (nbd_connect.c).
 */
bool
nbd_uri_verify_peer_off (const char *uri)
{
  char v[8];

  return uri_query (uri, "tls-verify-peer", v, sizeof v)
         && (strcasecmp (v, "false") == 0 || strcmp (v, "0") == 0
             || strcasecmp (v, "no") == 0 || strcasecmp (v, "off") == 0);
}

/* libnbd checks a server's certificate against a host name, and a Unix
 * socket or vsock has none: libnbd 1.14 then accepts a certificate
 * signed by any CA.  Without nbd_set_tls_hostname, which lets nbdcp
 * name the host to check, such a copy is refused before anything is
 * sent, unless the URI turns checking off.
 */
int
nbd_uri_check_peer_verifiable (const struct endpoint *ep)
{
#ifndef HAVE_NBD_SET_TLS_HOSTNAME
  if (!ep->command && nbd_uri_x509_without_host_name (ep->spec)
      && !nbd_uri_verify_peer_off (ep->spec)) {
    error_set ("%s: libnbd %s cannot verify a server's X.509 certificate "
               "over a Unix socket or vsock (it checks certificates only "
               "against a host name): connect over TCP with a host name "
               "(nbds://HOST/...), use a pre-shared key (tls-psk-file=), "
               "or use nbdcp built with a newer libnbd (one with "
               "nbd_set_tls_hostname); tls-verify-peer=false in the URI "
               "accepts any certificate",
               ep->spec, LIBNBD_PKG_VERSION);
    return -1;
  }
#endif
  return 0;
}

#ifdef HAVE_NBD_SET_TLS_HOSTNAME
/* The host name a certificate is checked against over a Unix socket or
 * vsock: an nbds+unix URI's host part (nbds+unix://alice@HOST/?socket=),
 * otherwise localhost (a vsock URI's host is a CID).  A tls-hostname=
 * in the URI, where libnbd reads one, wins: it is read after this.
 */
const char *
nbd_uri_tls_host_name (const char *uri, char *name, size_t size)
{
  const char *p = strstr (uri, "://");
  size_t len;

  if (strncasecmp (uri, "nbds+unix://", 12) != 0 || !p)
    return "localhost";
  p += 3;
  len = strcspn (p, "/?#");
  if (memchr (p, '@', len)) {
    const char *at = memchr (p, '@', len);
    len -= at + 1 - p;
    p = at + 1;
  }
  if (len == 0 || len >= size)
    return "localhost";
  memcpy (name, p, len);
  name[len] = '\0';
  return name;
}
#endif
