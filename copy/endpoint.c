/* Choosing an endpoint kind from what the user wrote, and opening and
 * closing endpoints.  Kinds themselves live in one file each, NBD in
 * three: nbd.c, nbd_connect.c and nbd_handshake.c (also '[ CMD ]');
 * file.c, stream.c, null.c.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint.h"
#include "error.h"
#include "ssh_uri.h"

/* NBD URIs are recognised as nbdcopy does, by the scheme and its colon
 * alone: a malformed one ("nbd:host", "nbd:/x") still goes to libnbd,
 * which says what is wrong with it, rather than becoming a file named
 * after it.  A file whose name starts that way is written ./nbd:...
 */
static bool
is_nbd_uri (const char *spec)
{
  static const char *schemes[] = {
    "nbd", "nbds", "nbd+unix", "nbds+unix", "nbd+vsock", "nbds+vsock", NULL,
  };
  for (const char **s = schemes; *s; s++) {
    size_t len = strlen (*s);
    if (strncmp (spec, *s, len) == 0 && spec[len] == ':')
      return true;
  }
  return false;
}

/* SCHEME://... with a scheme as RFC 3986 spells it: a URI of a kind
 * nbdcp does not know (http://, a mistyped ndb://), unless a file of
 * that name exists.  Any other name with a colon is a file, as with
 * nbdcopy: disk-2024-01-01T12:00.img, foo:bar.
 */
static bool
is_other_uri (const char *spec)
{
  size_t n = strspn (spec, "abcdefghijklmnopqrstuvwxyz"
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
  return n > 0 && isalpha ((unsigned char) spec[0])
         && strncmp (spec + n, "://", 3) == 0;
}

/* Standard input or output redirected from or to a regular file or a
 * device can be used as that file (positional, parallel, sparse) only
 * if the copy is to start at its beginning, where '<' and '>' leave it.
 * Elsewhere ('>>', whose O_APPEND makes every write append whatever its
 * offset, or a descriptor already part-way through, as in
 * '{ echo header; nbdcp SRC -; } > f') it is used as a stream: read or
 * written in order from where it is, as cat would.
 */
static bool
std_fd_at_start (int fd, bool writable)
{
  int flags = fcntl (fd, F_GETFL);

  return lseek (fd, 0, SEEK_CUR) == 0 && flags != -1
         && !(writable && (flags & O_APPEND));
}

/* What kind of local path SPEC is: a stream, a file or device, or an
 * error (a directory, or a missing source).
 */
static const struct endpoint_ops *
local_kind (const char *spec, bool writable)
{
  int std_fd = writable ? STDOUT_FILENO : STDIN_FILENO;
  bool is_std = strcmp (spec, "-") == 0;
  struct stat st;
  int r;

  if (is_std)
    r = fstat (std_fd, &st);
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
  if ((S_ISREG (st.st_mode) || S_ISBLK (st.st_mode))
      && (!is_std || std_fd_at_start (std_fd, writable)))
    return &file_endpoint_ops;
  return &stream_endpoint_ops;
}

/* The one place that tells endpoint kinds apart: the kind that serves
 * SPEC (or COMMAND) on the source or, if WRITABLE, destination side.
 * Returns NULL after error_set() if none can.
 */
static const struct endpoint_ops *
classify (const char *spec, char **command, bool writable)
{
  if (command)
    return &nbd_endpoint_ops;
  if (strcmp (spec, "null:") == 0) {
    if (!writable) {
      error_set ("null: can only be a destination");
      return NULL;
    }
    return &null_endpoint_ops;
  }
  if (is_nbd_uri (spec))
    return &nbd_endpoint_ops;
  /* nbd+ssh: refused here, before anything runs, if unsafe. */
  if (ssh_uri_is (spec)) {
    struct ssh_uri u;
    return ssh_uri_parse (spec, &u) == 0 ? &nbd_endpoint_ops : NULL;
  }
  if (is_other_uri (spec) && access (spec, F_OK) == -1) {
    error_set (
        "%s: unknown URI scheme (expected nbd://, nbds://, "
        "nbd+unix://, nbds+unix://, nbd+vsock://, nbd+ssh://, null: or a "
        "file)",
        spec);
    return NULL;
  }
  return local_kind (spec, writable);
}

bool
endpoint_is_stream (const char *spec, char **command, bool writable)
{
  return classify (spec, command, writable) == &stream_endpoint_ops;
}

bool
endpoint_is_new_file (const char *spec, char **command)
{
  struct stat st;

  if (classify (spec, command, true) != &file_endpoint_ops)
    return false;
  if (strcmp (spec, "-") == 0 ? fstat (STDOUT_FILENO, &st) == -1
                              : stat (spec, &st) == -1)
    return errno == ENOENT;
  return S_ISREG (st.st_mode) && st.st_size == 0;
}

bool
endpoint_can_read_back (const char *spec, char **command)
{
  const struct endpoint_ops *ops = classify (spec, command, true);

  return ops && ops != &null_endpoint_ops && ops != &stream_endpoint_ops;
}

struct endpoint *
endpoint_open (const char *spec, char **command, bool writable, unsigned want,
               const struct endpoint_settings *settings,
               const volatile sig_atomic_t *interrupted)
{
  const struct endpoint_ops *ops = classify (spec, command, writable);
  struct endpoint *ep;

  if (!ops)
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
  ep->std_fd = -1;
  ep->interrupted = interrupted;
  ep->settings = settings;
  if (ops == &file_endpoint_ops || ops == &stream_endpoint_ops)
    ep->path = spec;
  /* stdin or stdout redirected from or to a file: that descriptor is
     used (opening the file again could truncate it, or fail for want
     of permission); its name is for messages and the same-file check. */
  if (ops == &file_endpoint_ops && strcmp (spec, "-") == 0) {
    ep->spec = writable ? "/dev/stdout" : "/dev/stdin";
    ep->std_fd = writable ? STDOUT_FILENO : STDIN_FILENO;
  }
  if (ep->path && strcmp (spec, "-") == 0)
    ep->path = writable ? "/dev/stdout" : "/dev/stdin";
  if (ops->open (ep, writable, want) == -1) {
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
  for (unsigned i = 0; i < sizeof ep->kept / sizeof ep->kept[0]; i++)
    free (ep->kept[i]);
  free (ep->conns);
  free (ep);
}

void
endpoint_keep_until_closed (struct endpoint *ep, void *mem)
{
  for (unsigned i = 0; i < sizeof ep->kept / sizeof ep->kept[0]; i++)
    if (!ep->kept[i]) {
      ep->kept[i] = mem;
      return;
    }
}
