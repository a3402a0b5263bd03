/* The file endpoint's file (see file.c): opening it, creating a
 * destination that does not exist yet, setting its size, closing it.
 *
 * Opening changes nothing: an existing file is opened without O_TRUNC,
 * and a destination that does not exist yet is only checked (its
 * directory must exist and be writable); set_size, which main calls
 * once every check of the copy has passed, creates it.  A refused copy
 * leaves no new file behind and an existing one as it was.
 *
 * It does no I/O of the copy's (file.c).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint.h"
#include "error.h"
#include "file.h"

/* A destination that does not exist: check what creating it needs
 * (set_size creates it), so that a name that cannot be made fails as
 * soon as it would have when opened with O_CREAT, and with the same
 * message.  *ST gets what the new file will be: empty, regular, with
 * its directory's block size.
 */
static int
check_new_file (const struct endpoint *ep, struct stat *st)
{
  size_t len = strlen (ep->spec);
  char *copy = strdup (ep->spec);
  const char *dir;
  struct stat dir_st;
  int err = 0;

  if (!copy) {
    error_set ("out of memory");
    return -1;
  }
  dir = dirname (copy);
  if (len == 0)
    err = ENOENT;
  else if (ep->spec[len - 1] == '/')
    err = EISDIR; /* as open ("new/", O_CREAT) says */
  else if (stat (dir, &dir_st) == -1)
    err = errno;
  else if (!S_ISDIR (dir_st.st_mode))
    err = ENOTDIR;
  else if (faccessat (AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == -1)
    err = errno;
  else
    *st = (struct stat){
      .st_mode = S_IFREG | 0644,
      .st_blksize = dir_st.st_blksize,
    };
  free (copy);
  if (err) {
    error_set ("%s: %s", ep->spec, strerror (err));
    return -1;
  }
  return 0;
}

/* Open F's descriptor for EP (or, for a missing destination, note that
 * it is to be created), and describe the file in *ST.
 */
static int
open_fd (struct endpoint *ep, struct file *f, bool writable, struct stat *st)
{
  if (ep->std_fd >= 0) {
    /* '-': the descriptor we were given, shared with the shell. */
    f->fd = fcntl (ep->std_fd, F_DUPFD_CLOEXEC, 3);
    f->is_std = true;
  }
  else
    f->fd = open (ep->spec, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (f->fd == -1 && errno == ENOENT && writable && !f->is_std) {
    f->to_create = true;
    /* --resume: a journal cannot describe a file that did not exist. */
    ep->created = true;
    return check_new_file (ep, st);
  }
  if (f->fd == -1 || fstat (f->fd, st) == -1) {
    error_set ("%s: %s", ep->spec, strerror (errno));
    return -1;
  }
  return 0;
}

/* --direct: a second descriptor, with O_DIRECT. */
static int
open_direct (struct endpoint *ep, struct file *f, bool writable)
{
  f->direct_fd
      = open (ep->spec, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_DIRECT);
  if (f->direct_fd == -1) {
    error_set ("%s: cannot open with O_DIRECT (--direct): %s", ep->spec,
               strerror (errno));
    return -1;
  }
  return 0;
}

/* Close F's descriptors and free it. */
static void
file_free (struct file *f)
{
  if (f->fd >= 0)
    close (f->fd);
  if (f->direct_fd >= 0)
    close (f->direct_fd);
  free (f->zeroes);
  free (f);
}

int
file_open (struct endpoint *ep, bool writable, unsigned want)
{
  struct file *f = calloc (1, sizeof *f);
  struct stat st;

  if (!f) {
    error_set ("out of memory");
    return -1;
  }
  f->fd = f->direct_fd = -1;
  if (open_fd (ep, f, writable, &st) == -1)
    goto fail;
  if (S_ISBLK (st.st_mode)) {
    uint64_t size;
    if (ioctl (f->fd, BLKGETSIZE64, &size) == -1) {
      error_set ("%s: BLKGETSIZE64: %s", ep->spec, strerror (errno));
      goto fail;
    }
    f->is_device = true;
    ep->size = size;
    /* A read-only device opens read-write but refuses every write:
       refuse it now, as for a read-only NBD server. */
    int ro = 0;
    if (writable && ioctl (f->fd, BLKROGET, &ro) == 0 && ro) {
      error_set ("destination %s is read-only", ep->spec);
      goto fail;
    }
  }
  else if (S_ISREG (st.st_mode))
    ep->size = st.st_size;
  else {
    error_set ("%s: not a regular file or block device", ep->spec);
    goto fail;
  }
  /* A new file is opened with O_DIRECT once created (set_size). */
  if (ep->settings->direct && !f->to_create
      && open_direct (ep, f, writable) == -1)
    goto fail;
  f->zeroes = calloc (1, ZERO_CHUNK);
  ep->conns = calloc (want, sizeof *ep->conns);
  if (!f->zeroes || !ep->conns) {
    error_set ("out of memory");
    goto fail;
  }
  for (ep->nconns = 0; ep->nconns < want; ep->nconns++) {
    struct conn *c = calloc (1, sizeof *c);
    if (!c) {
      error_set ("out of memory");
      goto fail;
    }
    c->file = f;
    c->buf_index = -1;
    ep->conns[ep->nconns] = c;
  }
  ep->caps = (struct endpoint_caps){
    .can_zero = true,
    .can_flush = true,
    .can_extents = !f->is_device,
    .multi_conn = true,
    .preferred_block = st.st_blksize > 0 ? st.st_blksize : 4096,
    /* A file that is empty (or is to be created) reads as zero
       wherever nothing is written, before and after it is extended:
       the copy need not zero it. */
    .starts_zero = writable && S_ISREG (st.st_mode) && st.st_size == 0,
  };
  ep->priv = f;
  return 0;

fail:
  if (ep->conns)
    for (unsigned i = 0; i < ep->nconns; i++)
      free (ep->conns[i]);
  free (ep->conns);
  ep->conns = NULL;
  ep->nconns = 0;
  file_free (f);
  return -1;
}

/* set_size failed on a file it had just created: remove it, if the
 * name still has it (a refused copy leaves no file behind).
 */
static void
remove_created (const struct endpoint *ep, const struct file *f)
{
  struct stat a, b;

  if (f->created && fstat (f->fd, &a) == 0 && lstat (ep->spec, &b) == 0
      && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    unlink (ep->spec);
}

/* Create the destination that file_open found missing.  O_EXCL, so
 * that a file that appeared there since is neither truncated nor taken
 * for an empty one; but a dangling symbolic link is followed, as for
 * any destination, and its target created if it is still missing.
 */
static int
create_file (struct endpoint *ep, struct file *f)
{
  int flags = O_RDWR | O_CREAT | O_CLOEXEC;
  struct stat st;

  f->fd = open (ep->spec, flags | O_EXCL, 0644);
  f->created = f->fd >= 0;
  if (f->fd == -1 && errno == EEXIST && lstat (ep->spec, &st) == 0
      && S_ISLNK (st.st_mode))
    f->fd = open (ep->spec, flags, 0644);
  if (f->fd == -1) {
    error_set ("%s: %s", ep->spec, strerror (errno));
    return -1;
  }
  f->to_create = false;
  if (fstat (f->fd, &st) == -1 || !S_ISREG (st.st_mode) || st.st_size != 0) {
    error_set ("%s: a file appeared there after nbdcp found none; it is left "
               "as it is",
               ep->spec);
    return -1;
  }
  if (ep->settings->direct && open_direct (ep, f, true) == -1) {
    remove_created (ep, f);
    return -1;
  }
  return 0;
}

int
file_set_size (struct endpoint *ep, int64_t size)
{
  struct file *f = ep->priv;
  bool creating = f->to_create;

  if (creating && create_file (ep, f) == -1)
    return -1;
  /* Devices have the size they have; main checks it is enough. */
  if (f->is_device)
    return 0;
  if (size < 0)
    return 0; /* a stream's size is set when it ends */
  if (ftruncate (f->fd, size) == -1) {
    error_set ("%s: cannot set size to %" PRIi64 ": %s", ep->spec, size,
               strerror (errno));
    if (creating)
      remove_created (ep, f);
    return -1;
  }
  ep->size = size;
  return 0;
}

void
file_close (struct endpoint *ep, bool clean)
{
  struct file *f = ep->priv;

  for (unsigned i = 0; i < ep->nconns; i++)
    free (ep->conns[i]);
  if (!f)
    return;
  /* Positional I/O leaves the shared offset of stdin or stdout where it
     was (the start); leave it at the end, as reading or writing the
     file in order would, for whatever uses the descriptor next
     ('{ nbdcp SRC -; echo more; } > f'). */
  if (f->is_std && clean && ep->size >= 0)
    lseek (f->fd, ep->size, SEEK_SET);
  file_free (f);
}
