/* nbd+ssh:// URIs: what one names, whether it is safe to hand to ssh,
 * and the argument vector of the ssh that reaches its server.  Nothing
 * here runs anything (ssh_connect.c does).
 */
#ifndef NBDCP_SSH_URI_H
#define NBDCP_SSH_URI_H

#include <stdbool.h>
#include <stddef.h>

#define SSH_URI_DEFAULT_PORT "10809"
/* ServerAliveInterval given to ssh when the user's configuration sets
   none: with ssh's default ServerAliveCountMax of 3, a dead peer ends
   the connection after about two minutes, as nbdcp's TCP keep-alive. */
#define SSH_URI_ALIVE_INTERVAL "40"
/* The most words ssh_uri_argv writes, its final NULL included. */
#define SSH_URI_ARGV_MAX 16

/* What nbd+ssh://[USER@]HOST[:PORT]/[EXPORT][?socket=PATH] names, each
 * part percent-decoded.
 */
struct ssh_uri {
  char user[64];          /* "" for ssh's own choice */
  char host[256];         /* without the brackets of an IPv6 address */
  char port[6];           /* the NBD server's TCP port on the remote host */
  bool port_given;        /* the URI has :PORT */
  char socket[1024];      /* its Unix socket there (socket=), or "" */
  char export_name[4097]; /* the NBD export, "" for the default */
};

/* SPEC's scheme is nbd+ssh. */
bool ssh_uri_is (const char *spec);

/* Parse SPEC into U and check it: a USER or HOST that ssh could take
 * for an option or that holds characters a shell or ssh would read
 * (the nbd+ssh://-oProxyCommand=... attack), a socket PATH that the
 * remote shell would split or expand, a password, a query parameter
 * other than socket=.  Returns -1 after error_set() if it is refused.
 */
int ssh_uri_parse (const char *spec, struct ssh_uri *u);

/* Fill ARGV (SSH_URI_ARGV_MAX entries, pointing into U or at
 * constants) with the ssh command that relays U's server to its
 * standard input and output: ssh -T -o BatchMode=yes
 * [-o ServerAliveInterval=N] [-l USER] -- HOST nc (-U PATH | localhost
 * PORT).  ALIVE adds ServerAliveInterval.  Returns the number of words.
 */
size_t ssh_uri_argv (const struct ssh_uri *u, bool alive, const char **argv);

#endif
