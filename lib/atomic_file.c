/* Writing a file through a temporary file with an unguessable name and
 * a rename (see atomic_file.h).  Nothing here knows what the file is
 * for; the caller puts the reason in its own message.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"

/* Close and remove the temporary file, if there is one. */
static void
discard (struct atomic_file *f)
{
  if (f->fd >= 0)
    close (f->fd);
  f->fd = -1;
  if (f->tmp)
    unlink (f->tmp);
  free (f->tmp);
  f->tmp = NULL;
}

/* Remember "STEP NAME failed: strerror(ERR)" and remove the temporary. */
static int
failed (struct atomic_file *f, const char *step, const char *name, int err)
{
  snprintf (f->why, sizeof f->why, "%s %s failed: %s", step, name,
            strerror (err));
  discard (f);
  return -1;
}

/* The final name must be absent or a regular file: a symbolic link is
 * never followed, and nothing else is silently replaced.
 */
static int
check_final_name (struct atomic_file *f)
{
  struct stat st;
  const char *what;

  if (lstat (f->path, &st) == -1)
    return errno == ENOENT ? 0 : failed (f, "lstat of", f->path, errno);
  if (S_ISREG (st.st_mode))
    return 0;
  what = S_ISLNK (st.st_mode)   ? "a symbolic link"
         : S_ISDIR (st.st_mode) ? "a directory"
                                : "not a regular file";
  discard (f);
  snprintf (f->why, sizeof f->why,
            "%s is %s: refused (only a regular file is replaced, and a "
            "symbolic link is never followed)",
            f->path, what);
  return -1;
}

int
atomic_file_begin (struct atomic_file *f, const char *path)
{
  *f = (struct atomic_file){ .fd = -1 };
  f->path = strdup (path);
  if (!f->path || asprintf (&f->tmp, "%s.XXXXXX", path) == -1) {
    f->tmp = NULL;
    snprintf (f->why, sizeof f->why, "out of memory");
    return -1;
  }
  if (check_final_name (f) == -1)
    return -1;
  /* O_EXCL (mkostemp's own) refuses any name that exists, a dangling
     symbolic link included; the mode is 0600. */
  f->fd = mkostemp (f->tmp, O_CLOEXEC | O_NOFOLLOW);
  if (f->fd == -1) {
    int err = errno;
    free (f->tmp);
    f->tmp = NULL; /* mkostemp created nothing */
    snprintf (f->why, sizeof f->why,
              "%s: %s (creating a temporary file beside it)", path,
              strerror (err));
    return -1;
  }
  return 0;
}

int
atomic_file_write (struct atomic_file *f, const void *buf, size_t len)
{
  const char *p = buf;

  while (len > 0) {
    ssize_t n = write (f->fd, p, len);
    if (n == -1 && errno == EINTR)
      continue;
    if (n == -1)
      return failed (f, "writing", f->tmp, errno);
    p += n;
    len -= n;
  }
  return 0;
}

/* fsync the directory that holds F->path, so that the rename lasts. */
static int
sync_directory (struct atomic_file *f)
{
  char *copy = strdup (f->path);
  const char *dir;
  int fd, err = 0;

  if (!copy)
    return failed (f, "fsync of the directory of", f->path, errno);
  dir = dirname (copy);
  fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd == -1 || fsync (fd) == -1)
    err = errno;
  if (fd >= 0)
    close (fd);
  if (err)
    failed (f, "fsync of directory", dir, err);
  free (copy);
  return err ? -1 : 0;
}

int
atomic_file_commit (struct atomic_file *f)
{
  int fd = f->fd;

  if (fdatasync (fd) == -1)
    return failed (f, "fdatasync of", f->tmp, errno);
  f->fd = -1;
  if (close (fd) == -1)
    return failed (f, "closing", f->tmp, errno);
  if (check_final_name (f) == -1)
    return -1;
  if (rename (f->tmp, f->path) == -1) {
    int err = errno;
    snprintf (f->why, sizeof f->why, "renaming %s to %s failed: %s", f->tmp,
              f->path, strerror (err));
    discard (f);
    return -1;
  }
  free (f->tmp);
  f->tmp = NULL;
  return sync_directory (f);
}

void
atomic_file_free (struct atomic_file *f)
{
  discard (f);
  free (f->path);
  f->path = NULL;
}

int
atomic_file_replace (const char *path, const void *buf, size_t len, char *why,
                     size_t whylen)
{
  struct atomic_file f;
  int r = -1;

  if (atomic_file_begin (&f, path) == 0 && atomic_file_write (&f, buf, len) == 0
      && atomic_file_commit (&f) == 0)
    r = 0;
  if (r == -1)
    snprintf (why, whylen, "%s", f.why);
  atomic_file_free (&f);
  return r;
}
