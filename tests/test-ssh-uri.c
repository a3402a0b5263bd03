/* Unit test for ssh_uri.c: what an nbd+ssh:// URI names, the argument
 * vector of its ssh, and the URIs refused because ssh would take a
 * part for an option or a shell would read one (the libnbd CVE's
 * nbd+ssh://-oProxyCommand=...).
 */
#include <config.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ssh_uri.h"
#include "unit.h"

static struct ssh_uri u;

static bool
parses (const char *spec)
{
  return ssh_uri_parse (spec, &u) == 0;
}

/* SPEC is refused with a message containing WHAT. */
static bool
refused (const char *spec, const char *what)
{
  if (ssh_uri_parse (spec, &u) == 0)
    return false;
  if (!strstr (error_get (), what)) {
    fprintf (stderr, "%s: message '%s' lacks '%s'\n", spec, error_get (), what);
    return false;
  }
  return true;
}

/* The argument vector, words joined by spaces. */
static const char *
argv_of (bool alive)
{
  static char line[2048];
  const char *argv[SSH_URI_ARGV_MAX];
  size_t n = ssh_uri_argv (&u, alive, argv);

  line[0] = '\0';
  for (size_t i = 0; i < n; i++)
    snprintf (line + strlen (line), sizeof line - strlen (line), "%s%s",
              i ? " " : "", argv[i]);
  return argv[n] == NULL ? line : "(no final NULL)";
}

int
main (void)
{
  CHECK (ssh_uri_is ("nbd+ssh://h/"));
  CHECK (!ssh_uri_is ("nbd://h/"));
  CHECK (!ssh_uri_is ("nbd+ssh:/h"));

  /* The forms, and their ssh. */
  CHECK (parses ("nbd+ssh://host"));
  CHECK (strcmp (u.host, "host") == 0 && u.user[0] == '\0');
  CHECK (strcmp (u.port, "10809") == 0 && u.export_name[0] == '\0');
  CHECK (strcmp (argv_of (true), "ssh -T -o BatchMode=yes -o "
                                 "ServerAliveInterval=40 -- host nc "
                                 "localhost 10809")
         == 0);
  CHECK (strcmp (argv_of (false),
                 "ssh -T -o BatchMode=yes -- host nc localhost 10809")
         == 0);
  CHECK (parses ("nbd+ssh://alice@disk-1.example.com:10900/exp%20one"));
  CHECK (strcmp (u.user, "alice") == 0);
  CHECK (strcmp (u.host, "disk-1.example.com") == 0);
  CHECK (strcmp (u.port, "10900") == 0);
  CHECK (strcmp (u.export_name, "exp one") == 0);
  CHECK (strcmp (argv_of (false), "ssh -T -o BatchMode=yes -l alice -- "
                                  "disk-1.example.com nc localhost 10900")
         == 0);
  CHECK (parses ("nbd+ssh://root@10.0.0.2/?socket=/run/qemu%2Bnbd/s.sock"));
  CHECK (strcmp (u.socket, "/run/qemu+nbd/s.sock") == 0);
  CHECK (strcmp (argv_of (false), "ssh -T -o BatchMode=yes -l root -- "
                                  "10.0.0.2 nc -U /run/qemu+nbd/s.sock")
         == 0);
  CHECK (parses ("nbd+ssh://[::1]/e?socket=s"));
  CHECK (strcmp (u.host, "::1") == 0 && strcmp (u.socket, "s") == 0);
  CHECK (parses ("nbd+ssh://[fe80::1]:99/e"));
  CHECK (strcmp (u.host, "fe80::1") == 0 && strcmp (u.port, "99") == 0);
  CHECK (parses ("nbd+ssh://h/a;b$c`d#frag"));
  CHECK (strcmp (u.export_name, "a;b$c`d") == 0); /* never meets a shell */

  /* Options for ssh, and what a shell or ssh's %h would read. */
  CHECK (refused ("nbd+ssh://-oProxyCommand=touch%20X/", "refused: the host"));
  CHECK (refused ("nbd+ssh://%2DoProxyCommand=x/", "refused: the host"));
  CHECK (refused ("nbd+ssh://-oProxyCommand=x@h/", "refused: the user"));
  CHECK (refused ("nbd+ssh://%2Dlx@h/", "refused: the user"));
  CHECK (refused ("nbd+ssh://h;touch%20x/", "refused: the host"));
  CHECK (refused ("nbd+ssh://h$(x)/", "refused: the host"));
  CHECK (refused ("nbd+ssh://a%20b/", "refused: the host"));
  CHECK (refused ("nbd+ssh://.h/", "refused: the host"));
  CHECK (refused ("nbd+ssh://[::1;x]/", "refused: the host"));
  CHECK (refused ("nbd+ssh://[::1]x/", "refused: the host"));
  CHECK (refused ("nbd+ssh://u%00@h/", "refused: the user"));
  CHECK (refused ("nbd+ssh://h/?socket=/tmp/a%20b", "refused: the socket"));
  CHECK (refused ("nbd+ssh://h/?socket=/tmp/a;reboot", "refused: the socket"));
  CHECK (refused ("nbd+ssh://h/?socket=$HOME/s", "refused: the socket"));
  CHECK (refused ("nbd+ssh://h/?socket=~/s", "refused: the socket"));
  CHECK (refused ("nbd+ssh://h/?socket=-e/bin/sh", "refused: the socket"));
  CHECK (refused ("nbd+ssh://h/?socket=/a%27b", "refused: the socket"));
  CHECK (refused ("nbd+ssh://h/?socket=", "refused: the socket"));

  /* Other mistakes. */
  CHECK (refused ("nbd+ssh:///e", "no host"));
  CHECK (refused ("nbd+ssh://u:pw@h/", "password"));
  CHECK (refused ("nbd+ssh://h:0/", "port"));
  CHECK (refused ("nbd+ssh://h:65536/", "port"));
  CHECK (refused ("nbd+ssh://h:1x/", "port"));
  CHECK (refused ("nbd+ssh://h:/", "port"));
  CHECK (refused ("nbd+ssh://h:10809/?socket=/s", "both a port and socket"));
  CHECK (refused ("nbd+ssh://h/?tls=on", "unknown query parameter 'tls'"));
  CHECK (refused ("nbd+ssh://h/%zz", "export name"));

  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
