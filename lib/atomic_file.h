/* Files written whole and put in place atomically, safely in a
 * directory that others may write to.  The contents go into a new
 * temporary file beside the final name, with a name nobody can guess
 * (mkostemp: O_CREAT|O_EXCL, so a file or symbolic link planted there
 * is never opened, and O_NOFOLLOW), mode 0600; it is synced and renamed
 * over the final name, and the directory is synced.  rename(2) replaces
 * the name itself and never follows a symbolic link there; even so an
 * existing final name that is not a regular file (a symbolic link, a
 * FIFO, a device, a directory) is refused, not replaced.  A failure
 * removes the temporary file and leaves the final name as it was (only
 * a failed fsync of the directory comes after the rename).
 */
#ifndef NBDCP_ATOMIC_FILE_H
#define NBDCP_ATOMIC_FILE_H

#include <stddef.h>

/* The size of a failure's message (two names and a reason). */
#define ATOMIC_FILE_WHY (2 * 4096 + 256)

struct atomic_file {
  char *path; /* the final name */
  char *tmp;  /* the temporary file's name while it exists, else NULL */
  int fd;     /* the temporary file, open for writing, or -1 */
  /* After a failure, what failed, naming the file: "fdatasync of NAME
     failed: REASON", "NAME is a symbolic link: refused ...". */
  char why[ATOMIC_FILE_WHY];
};

/* Create the temporary file for PATH.  Returns 0, or -1 with F->why
 * set and nothing left behind.  Call atomic_file_free in either case.
 */
int atomic_file_begin (struct atomic_file *f, const char *path);

/* Append LEN bytes of BUF to the temporary file.  Returns 0, or -1 with
 * F->why set and the temporary file removed.
 */
int atomic_file_write (struct atomic_file *f, const void *buf, size_t len);

/* fdatasync the temporary file, close it, rename it over the final name
 * (refused if that is now something other than a regular file) and
 * fsync the directory.  Returns 0, or -1 with F->why set and the
 * temporary file removed.
 */
int atomic_file_commit (struct atomic_file *f);

/* Remove the temporary file if it is still there (a write that was
 * abandoned), and free F's names.
 */
void atomic_file_free (struct atomic_file *f);

/* All of the above for LEN bytes of BUF: PATH holds them and 0 is
 * returned, or PATH is as it was, -1 is returned and WHY[0..WHYLEN)
 * says why.
 */
int atomic_file_replace (const char *path, const void *buf, size_t len,
                         char *why, size_t whylen);

#endif
