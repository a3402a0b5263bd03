/* nbd+ssh:// URIs (see ssh_uri.h): parsing, the checks that keep a URI
 * from smuggling options or shell syntax into ssh, and the argument
 * vector.  libnbd 1.14 has no nbd+ssh, so nbdcp reads the URI itself.
 *
 * Everything the URI gives ends up in one of two places.  USER and
 * HOST are words of ssh's own argument vector, built without a shell:
 * there the danger is ssh reading one as an option (a HOST of
 * "-oProxyCommand=..." was a libnbd CVE), or a ProxyCommand or Match
 * exec of the user's configuration putting it (%h, %r) into a shell
 * command.  PATH and PORT go into the command ssh runs on the remote
 * host, which ssh joins with spaces and hands to the remote user's
 * shell: there any shell syntax would be run.  Rather than quote for a
 * shell nbdcp cannot see (sh, csh and fish quote differently), each of
 * these is held to characters that mean nothing to a shell or to ssh,
 * and refused otherwise, before anything runs.  The export name never
 * reaches a shell: it goes to the server in the NBD handshake.
 */
#include <config.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ssh_uri.h"

#define SCHEME "nbd+ssh://"

/* Letters, digits and these, never first: host and user names. */
#define NAME_CHARS "._-"
/* Letters, digits and these: a socket path, which no shell splits,
   globs or expands (no space, quote, $, `, ;, &, |, <, >, *, ?, [, ~,
   !, \, #, {, parentheses). */
#define PATH_CHARS "._-/+,:=@%"

bool
ssh_uri_is (const char *spec)
{
  return strncmp (spec, SCHEME, strlen (SCHEME)) == 0;
}

/* Percent-decode the LEN bytes at P into OUT (SIZE bytes).  Returns -1
 * if it does not fit, or holds a NUL or a malformed escape.
 */
static int
decode (const char *p, size_t len, char *out, size_t size)
{
  size_t n = 0;

  for (size_t i = 0; i < len; i++) {
    char c = p[i];
    if (c == '%') {
      char hex[3] = { 0 };
      if (i + 2 >= len || !isxdigit ((unsigned char) p[i + 1])
          || !isxdigit ((unsigned char) p[i + 2]))
        return -1;
      hex[0] = p[i + 1];
      hex[1] = p[i + 2];
      c = (char) strtol (hex, NULL, 16);
      if (c == '\0')
        return -1;
      i += 2;
    }
    if (n + 1 >= size)
      return -1;
    out[n++] = c;
  }
  out[n] = '\0';
  return 0;
}

/* S is made of letters, digits and the characters of EXTRA only, and
 * its first is a letter or digit (FIRST_ALNUM) or at least not '-'.
 */
static bool
only (const char *s, const char *extra, bool first_alnum)
{
  if (!*s || s[0] == '-' || (first_alnum && !isalnum ((unsigned char) s[0])))
    return false;
  for (; *s; s++)
    if (!isalnum ((unsigned char) *s) && !strchr (extra, *s))
      return false;
  return true;
}

/* An IPv6 address as it stands between brackets. */
static bool
ipv6_address (const char *s)
{
  return *s && strspn (s, "0123456789abcdefABCDEF:.") == strlen (s)
         && strchr (s, ':');
}

/* USER@HOST:PORT, the LEN bytes at P, into U. */
static int
parse_authority (const char *spec, const char *p, size_t len, struct ssh_uri *u)
{
  const char *at = memrchr (p, '@', len), *end = p + len, *colon;

  if (at) {
    if (memchr (p, ':', at - p)) {
      error_set ("%s: a password in the URI is not used: log in with a key "
                 "(ssh-agent, ~/.ssh/config)",
                 spec);
      return -1;
    }
    if (decode (p, at - p, u->user, sizeof u->user) == -1
        || !only (u->user, NAME_CHARS, false)) {
      error_set ("%s: refused: the user name may hold only letters, digits, "
                 "'.', '_' and '-', and may not begin with '-'",
                 spec);
      return -1;
    }
    p = at + 1;
  }
  if (*p == '[') {
    const char *close = memchr (p, ']', end - p);
    if (!close || decode (p + 1, close - p - 1, u->host, sizeof u->host) == -1
        || !ipv6_address (u->host))
      goto bad_host;
    colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
    if (close + 1 < end && !colon)
      goto bad_host;
  }
  else {
    colon = memchr (p, ':', end - p);
    if (decode (p, (colon ? colon : end) - p, u->host, sizeof u->host) == -1
        || !only (u->host, NAME_CHARS, true))
      goto bad_host;
  }
  strcpy (u->port, SSH_URI_DEFAULT_PORT);
  if (colon) {
    size_t n = end - colon - 1;
    long port
        = n > 0 && n < sizeof u->port && strspn (colon + 1, "0123456789") >= n
              ? strtol (colon + 1, NULL, 10)
              : 0;
    if (port < 1 || port > 65535) {
      error_set ("%s: the port must be a number from 1 to 65535", spec);
      return -1;
    }
    snprintf (u->port, sizeof u->port, "%ld", port);
    u->port_given = true;
  }
  return 0;

bad_host:
  error_set ("%s: refused: the host must be a name of letters, digits, '.', "
             "'_' and '-' that begins with a letter or digit, or an address",
             spec);
  return -1;
}

/* The query (after '?', up to END): socket=PATH only. */
static int
parse_query (const char *spec, const char *q, const char *end,
             struct ssh_uri *u)
{
  while (q < end) {
    const char *amp = memchr (q, '&', end - q), *stop = amp ? amp : end;
    size_t klen = strcspn (q, "=&");

    if (q + klen > stop)
      klen = stop - q;
    if (klen == 6 && strncmp (q, "socket", 6) == 0 && q[6] == '=') {
      if (decode (q + 7, stop - q - 7, u->socket, sizeof u->socket) == -1
          || !only (u->socket, PATH_CHARS, false)) {
        error_set ("%s: refused: the socket path may hold only letters, "
                   "digits and %s, and may not begin with '-' (the "
                   "remote shell would read others)",
                   spec, PATH_CHARS);
        return -1;
      }
    }
    else if (klen > 0) {
      error_set ("%s: unknown query parameter '%.*s' (nbd+ssh:// takes "
                 "socket=PATH only)",
                 spec, (int) klen, q);
      return -1;
    }
    q = stop + (amp ? 1 : 0);
  }
  return 0;
}

int
ssh_uri_parse (const char *spec, struct ssh_uri *u)
{
  const char *p = spec + strlen (SCHEME), *frag, *end, *query, *path;
  size_t alen;

  memset (u, 0, sizeof *u);
  if (!ssh_uri_is (spec)) {
    error_set ("%s: not an nbd+ssh:// URI", spec);
    return -1;
  }
  frag = strchr (p, '#');
  end = frag ? frag : p + strlen (p);
  alen = strcspn (p, "/?#");
  if (alen == 0) {
    error_set ("%s: no host (nbd+ssh://[USER@]HOST[:PORT]/[EXPORT]"
               "[?socket=PATH])",
               spec);
    return -1;
  }
  if (parse_authority (spec, p, alen, u) == -1)
    return -1;
  path = p + alen;
  query = memchr (path, '?', end - path);
  if (query && parse_query (spec, query + 1, end, u) == -1)
    return -1;
  if (*path == '/'
      && decode (path + 1, (query ? query : end) - path - 1, u->export_name,
                 sizeof u->export_name)
             == -1) {
    error_set ("%s: the export name is too long or malformed", spec);
    return -1;
  }
  if (u->socket[0] && u->port_given) {
    error_set ("%s: both a port and socket= (the port is that of the NBD "
               "server on the remote host; the ssh port goes in "
               "~/.ssh/config)",
               spec);
    return -1;
  }
  return 0;
}

size_t
ssh_uri_argv (const struct ssh_uri *u, bool alive, const char **argv)
{
  size_t n = 0;

  argv[n++] = "ssh";
  argv[n++] = "-T"; /* no terminal: the session carries NBD */
  argv[n++] = "-o";
  argv[n++] = "BatchMode=yes";
  if (alive) {
    argv[n++] = "-o";
    argv[n++] = "ServerAliveInterval=" SSH_URI_ALIVE_INTERVAL;
  }
  if (u->user[0]) {
    argv[n++] = "-l";
    argv[n++] = u->user;
  }
  argv[n++] = "--";
  argv[n++] = u->host;
  argv[n++] = "nc";
  if (u->socket[0]) {
    argv[n++] = "-U";
    argv[n++] = u->socket;
  }
  else {
    argv[n++] = "localhost";
    argv[n++] = u->port;
  }
  argv[n] = NULL;
  return n;
}
