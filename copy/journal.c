/* --resume's journal (see journal.h).  The file is text:
 *
 *   nbdcp journal 1
 *   source nbd+unix:///?socket=/run/src.sock
 *   size 10737418240
 *   ...                    (the copy's identity, as main builds it)
 *   done 0-17,19,22-23     (finished segments, in ranges)
 *
 * It is rewritten whole at each checkpoint: a few hundred bytes, written
 * to PATH.tmp, synced and renamed over PATH, so that a crash at any
 * moment leaves either the old journal or the new one.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "journal.h"

#define MAGIC "nbdcp journal 1"

/* Parse "done A-B,C,..." into J->done. */
static int
parse_done (struct journal *j, const char *list)
{
  const char *p = list;

  while (*p) {
    char *end;
    uint64_t a, b;

    errno = 0;
    a = strtoull (p, &end, 10);
    b = a;
    if (end != p && *end == '-') {
      p = end + 1;
      b = strtoull (p, &end, 10);
    }
    if (errno || end == p || a > b || b >= j->nsegments
        || (*end && *end != ','))
      return -1;
    for (uint64_t i = a; i <= b; i++)
      if (!j->done[i]) {
        j->done[i] = 1;
        j->ndone++;
      }
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* Compare the journal's lines with J->identity, then load "done". */
static int
load (struct journal *j, FILE *fp)
{
  char *line = NULL, *want = j->identity;
  size_t cap = 0;
  ssize_t len;
  int r = -1;

  len = getline (&line, &cap, fp);
  if (len > 0 && line[len - 1] == '\n')
    line[--len] = '\0';
  if (len <= 0 || strcmp (line, MAGIC) != 0) {
    error_set ("--resume: %s is not an nbdcp journal", j->path);
    goto out;
  }
  while (*want) {
    size_t n = strcspn (want, "\n");

    len = getline (&line, &cap, fp);
    if (len > 0 && line[len - 1] == '\n')
      line[--len] = '\0';
    if (len < 0 || (size_t) len != n || strncmp (line, want, n) != 0) {
      error_set ("--resume: %s is the journal of another copy: it says "
                 "'%s' where this copy has '%.*s'; remove it to start "
                 "afresh",
                 j->path, len < 0 ? "(nothing)" : line, (int) n, want);
      goto out;
    }
    want += n + (want[n] == '\n');
  }
  len = getline (&line, &cap, fp);
  if (len > 0 && line[len - 1] == '\n')
    line[--len] = '\0';
  if (len < 5 || strncmp (line, "done ", 5) != 0
      || parse_done (j, line + 5) == -1) {
    error_set ("--resume: %s: its list of finished segments is damaged",
               j->path);
    goto out;
  }
  r = 0;
out:
  free (line);
  return r;
}

/* Write the journal to PATH.tmp, sync it, and rename it over PATH.
 * Called with the lock held (or before the copy starts).
 */
static int
save (struct journal *j)
{
  char tmp[4096];
  FILE *fp;
  int fd, r;
  bool first = true;

  snprintf (tmp, sizeof tmp, "%s.tmp", j->path);
  fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd == -1 || !(fp = fdopen (fd, "w"))) {
    error_set ("--resume: %s: %s", tmp, strerror (errno));
    if (fd != -1)
      close (fd);
    return -1;
  }
  fprintf (fp, "%s\n%s\ndone ", MAGIC, j->identity);
  for (uint64_t i = 0; i < j->nsegments; i++) {
    uint64_t k = i;
    if (!j->done[i])
      continue;
    while (k + 1 < j->nsegments && j->done[k + 1])
      k++;
    fprintf (fp, first ? "%" PRIu64 : ",%" PRIu64, i);
    if (k > i)
      fprintf (fp, "-%" PRIu64, k);
    first = false;
    i = k;
  }
  fprintf (fp, "\n");
  r = fflush (fp) == 0 && fdatasync (fd) == 0 ? 0 : -1;
  if (fclose (fp) != 0)
    r = -1;
  if (r == 0 && rename (tmp, j->path) == -1)
    r = -1;
  if (r == -1) {
    error_set ("--resume: cannot write %s: %s", j->path, strerror (errno));
    unlink (tmp);
    return -1;
  }
  /* The rename itself is durable once the directory is synced. */
  char dir[4096];
  snprintf (dir, sizeof dir, "%s", j->path);
  fd = open (dirname (dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd != -1) {
    fsync (fd);
    close (fd);
  }
  return 0;
}

int
journal_open (struct journal *j, const char *path, const char *identity,
              uint64_t nsegments)
{
  FILE *fp;

  *j = (struct journal){ .path = path, .nsegments = nsegments };
  pthread_mutex_init (&j->lock, NULL);
  j->identity = strdup (identity);
  j->done = calloc (nsegments ? nsegments : 1, 1);
  if (!j->identity || !j->done) {
    error_set ("out of memory");
    return -1;
  }
  fp = fopen (path, "re");
  if (!fp && errno != ENOENT) {
    error_set ("--resume: %s: %s", path, strerror (errno));
    return -1;
  }
  if (!fp)
    return save (j);
  j->existed = true;
  if (load (j, fp) == -1) {
    fclose (fp);
    return -1;
  }
  fclose (fp);
  return 0;
}

int
journal_mark_done (struct journal *j, const uint64_t *segments, unsigned n)
{
  int r;

  pthread_mutex_lock (&j->lock);
  for (unsigned i = 0; i < n; i++)
    if (!j->done[segments[i]]) {
      j->done[segments[i]] = 1;
      j->ndone++;
    }
  r = save (j);
  pthread_mutex_unlock (&j->lock);
  return r;
}

int
journal_close (struct journal *j, bool copy_complete)
{
  int r = 0;

  if (copy_complete && j->path && unlink (j->path) == -1 && errno != ENOENT) {
    error_set ("--resume: cannot remove %s: %s", j->path, strerror (errno));
    r = -1;
  }
  free (j->identity);
  free (j->done);
  pthread_mutex_destroy (&j->lock);
  return r;
}
