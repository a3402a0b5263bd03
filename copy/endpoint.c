/* Choosing an endpoint kind from what the user wrote, and opening and
 * closing endpoints.  Kinds themselves live in one file each: nbd.c
 * (also '[ CMD ]'), file.c, pipe.c, null.c.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint.h"
#include "error.h"
#include "options.h"

static bool
is_nbd_uri (const char *spec)
{
  static const char *schemes[] = {
    "nbd://",       "nbds://",       "nbd+unix://", "nbds+unix://",
    "nbd+vsock://", "nbds+vsock://", NULL,
  };
  for (const char **s = schemes; *s; s++)
    if (strncmp (spec, *s, strlen (*s)) == 0)
      return true;
  return false;
}

/* What kind of local path SPEC is: a stream, a file or device, or an
 * error (a directory, or a missing source).
 */
static const struct endpoint_ops *
local_kind (const char *spec, bool writable)
{
  struct stat st;
  int r;

  if (strcmp (spec, "-") == 0)
    r = fstat (writable ? STDOUT_FILENO : STDIN_FILENO, &st);
  else
    r = stat (spec, &st);
  if (r == -1) {
    if (errno == ENOENT && writable && strcmp (spec, "-") != 0)
      return &file_endpoint_ops; /* created */
    error_set ("%s: %s", spec, strerror (errno));
    return NULL;
  }
  if (S_ISDIR (st.st_mode)) {
    error_set ("%s: is a directory", spec);
    return NULL;
  }
  if (S_ISREG (st.st_mode) || S_ISBLK (st.st_mode))
    return &file_endpoint_ops;
  return &pipe_endpoint_ops;
}

bool
endpoint_is_stream (const char *spec)
{
  struct stat st;

  if (strcmp (spec, "-") == 0)
    return true; /* refined by local_kind for redirected files */
  if (strcmp (spec, "null:") == 0 || is_nbd_uri (spec)
      || stat (spec, &st) == -1)
    return false;
  return !S_ISREG (st.st_mode) && !S_ISBLK (st.st_mode)
         && !S_ISDIR (st.st_mode);
}

struct endpoint *
endpoint_open (const char *spec, char **command, bool writable, unsigned want,
               const struct options *opts)
{
  const struct endpoint_ops *ops;
  struct endpoint *ep;

  if (command)
    ops = &nbd_endpoint_ops;
  else if (strcmp (spec, "null:") == 0) {
    if (!writable) {
      error_set ("null: can only be a destination");
      return NULL;
    }
    ops = &null_endpoint_ops;
  }
  else if (is_nbd_uri (spec))
    ops = &nbd_endpoint_ops;
  else if ((strstr (spec, "://") || (strchr (spec, ':') && !strchr (spec, '/')))
           && access (spec, F_OK)) {
    error_set ("%s: unknown URI scheme (expected nbd://, nbds://, "
               "nbd+unix://, nbds+unix://, nbd+vsock://, null: or a file)",
               spec);
    return NULL;
  }
  else if (!(ops = local_kind (spec, writable)))
    return NULL;

  ep = calloc (1, sizeof *ep);
  if (!ep) {
    error_set ("out of memory");
    return NULL;
  }
  ep->ops = ops;
  ep->spec = spec;
  ep->command = command;
  ep->side = writable ? "destination" : "source";
  /* stdin or stdout redirected to a file is opened again by name. */
  if (ops == &file_endpoint_ops && strcmp (spec, "-") == 0)
    ep->spec = writable ? "/dev/stdout" : "/dev/stdin";
  if (ops->open (ep, writable, want, opts) == -1) {
    free (ep);
    return NULL;
  }
  return ep;
}

void
endpoint_close (struct endpoint *ep, bool clean)
{
  if (!ep)
    return;
  ep->ops->close (ep, clean);
  free (ep->conns);
  free (ep);
}
