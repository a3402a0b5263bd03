/* --resume's journal (see journal.h).  The file is text:
 *
 *   nbdcp journal 1
 *   source nbd+unix:///?socket=/run/src.sock
 *   size 10737418240
 *   ...                    (the copy's identity: journal_identity.c)
 *   destination-file device 8:1 inode 1234 born 1700000000.5 size 10737418240
 *   done 0-17,19,22-23     (finished segments, in ranges)
 *
 * A journal whose copy identity differs is another copy's, and refused.
 * One whose destination line differs from what this run finds (or that
 * has none: format 1, before it was recorded) describes a destination
 * that is not there any more: it is void, and written again empty.
 *
 * It is rewritten whole when lanes have handed in flushed segments: a
 * few hundred bytes, written to a new temporary file beside PATH (a
 * name nobody can guess, mode 0600), synced and renamed over PATH, and
 * the directory synced (lib/atomic_file.c), so that a crash at any
 * moment leaves either the old journal or the new one, and a file or
 * symbolic link planted near PATH is never written through.  An
 * existing journal is read only if it is a regular file of this user.  Only the
 * main thread writes it (see journal.h): fdatasync and fsync take milliseconds,
 * which a worker would spend not issuing requests.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "error.h"
#include "journal.h"

#define MAGIC "nbdcp journal 2"
/* The format before the destination was recorded: such a journal is
   void, since nothing says it describes this destination. */
#define OLD_MAGIC "nbdcp journal 1"

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
      if (!journal_is_done (j, i)) {
        atomic_store_explicit (&j->done[i], 1, memory_order_relaxed);
        j->ndone++;
      }
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* A line of FP into *LINE, without its newline: its length, or -1. */
static ssize_t
read_line (char **line, size_t *cap, FILE *fp)
{
  ssize_t len = getline (line, cap, fp);

  if (len > 0 && (*line)[len - 1] == '\n')
    (*line)[--len] = '\0';
  return len;
}

/* What differs between the destination line RECORDED and FOUND ("KIND
 * KEY VALUE KEY VALUE ..."), into OUT: "inode 12, now 13; size 8, now
 * 0", or both lines whole if they are not of the same kind and keys.
 */
static void
describe_difference (const char *recorded, const char *found, char *out,
                     size_t size)
{
  char a[512], b[512], *sa, *sb;
  size_t n = 0;
  unsigned field = 0;

  snprintf (a, sizeof a, "%s", recorded);
  snprintf (b, sizeof b, "%s", found);
  char *ta = strtok_r (a, " ", &sa), *tb = strtok_r (b, " ", &sb);
  char *key = NULL;
  for (; ta && tb; field++) {
    bool is_value = field > 0 && field % 2 == 0;
    if (!is_value && strcmp (ta, tb) != 0)
      break; /* another kind, or other keys */
    if (!is_value)
      key = ta;
    else if (strcmp (ta, tb) != 0 && n < size)
      n += snprintf (out + n, size - n, "%s%s %s, now %s", n ? "; " : "", key,
                     ta, tb);
    ta = strtok_r (NULL, " ", &sa);
    tb = strtok_r (NULL, " ", &sb);
  }
  if (ta || tb || n == 0)
    snprintf (out, size, "it records '%s', the destination is now '%s'",
              recorded, found);
}

/* J is void: say why (j->voided), and load nothing. */
static int
void_journal (struct journal *j, const char *why)
{
  j->voided = strdup (why);
  if (!j->voided) {
    error_set ("out of memory");
    return -1;
  }
  return 1;
}

/* Check that the destination line that comes next in FP is DEST's. */
static int
check_destination (struct journal *j, FILE *fp, char **line, size_t *cap,
                   const struct journal_destination *dest)
{
  char why[1024];
  ssize_t len;

  if (dest->created) {
    snprintf (why, sizeof why, "%s did not exist before this run",
              dest->created);
    return void_journal (j, why);
  }
  len = read_line (line, cap, fp);
  if (len >= 0 && strcmp (*line, dest->found) == 0)
    return 0;
  describe_difference (len < 0 ? "(nothing)" : *line, dest->found, why,
                       sizeof why);
  return void_journal (j, why);
}

/* Compare the journal's lines with J->identity and DEST, then load
 * "done".  Returns 0 when loaded, 1 when void (j->voided says why),
 * -1 after error_set().
 */
static int
load (struct journal *j, FILE *fp, const struct journal_destination *dest)
{
  char *line = NULL, *want = j->identity;
  size_t cap = 0;
  ssize_t len;
  bool old;
  int r = -1;

  len = read_line (&line, &cap, fp);
  old = len > 0 && strcmp (line, OLD_MAGIC) == 0;
  if (!old && (len <= 0 || strcmp (line, MAGIC) != 0)) {
    error_set ("--resume: %s is not an nbdcp journal", j->path);
    goto out;
  }
  while (*want) {
    size_t n = strcspn (want, "\n");

    len = read_line (&line, &cap, fp);
    if (len < 0 || (size_t) len != n || strncmp (line, want, n) != 0) {
      error_set ("--resume: %s is the journal of another copy: it says "
                 "'%s' where this copy has '%.*s'; remove it to start "
                 "afresh",
                 j->path, len < 0 ? "(nothing)" : line, (int) n, want);
      goto out;
    }
    want += n + (want[n] == '\n');
  }
  if (old)
    r = void_journal (j, "it was written by an older nbdcp, which did not "
                         "record the destination");
  else
    r = check_destination (j, fp, &line, &cap, dest);
  if (r != 0)
    goto out;
  len = read_line (&line, &cap, fp);
  if (len < 5 || strncmp (line, "done ", 5) != 0
      || parse_done (j, line + 5) == -1) {
    error_set ("--resume: %s: its list of finished segments is damaged",
               j->path);
    r = -1;
  }
out:
  free (line);
  return r;
}

/* The journal's text into FP. */
static void
print_journal (struct journal *j, FILE *fp)
{
  bool first = true;

  fprintf (fp, "%s\n%s\n%s\ndone ", MAGIC, j->identity, j->destination);
  for (uint64_t i = 0; i < j->nsegments; i++) {
    uint64_t k = i;
    if (!journal_is_done (j, i))
      continue;
    while (k + 1 < j->nsegments && journal_is_done (j, k + 1))
      k++;
    fprintf (fp, first ? "%" PRIu64 : ",%" PRIu64, i);
    if (k > i)
      fprintf (fp, "-%" PRIu64, k);
    first = false;
    i = k;
  }
  fprintf (fp, "\n");
}

/* Write the journal through a new temporary file beside it (see
 * lib/atomic_file.h), checking every step.  The main thread only.
 */
static int
save (struct journal *j)
{
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream (&text, &len);
  char why[ATOMIC_FILE_WHY];
  int r;

  if (!fp) {
    error_set ("--resume: journal %s: %s", j->path, strerror (errno));
    return -1;
  }
  print_journal (j, fp);
  if (fclose (fp) != 0) {
    error_set ("--resume: journal %s: %s", j->path, strerror (errno));
    free (text);
    return -1;
  }
  r = atomic_file_replace (j->path, text, len, why, sizeof why);
  if (r == -1)
    error_set ("--resume: journal %s: %s", j->path, why);
  free (text);
  return r;
}

/* Open the journal at J->path for reading, or return NULL: with errno
 * ENOENT if there is none, else after error_set().  A symbolic link,
 * anything but a regular file, and a file that belongs to another user
 * are refused: a journal says which segments need not be copied, so a
 * journal someone else could have written could make the copy skip
 * data.
 */
static FILE *
open_existing (struct journal *j)
{
  struct stat st;
  FILE *fp;
  int fd;

  /* O_NONBLOCK: a FIFO planted there must not block the open. */
  fd = open (j->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd == -1) {
    if (errno == ELOOP)
      error_set ("--resume: %s is a symbolic link: refused (nbdcp never "
                 "follows one to its journal)",
                 j->path);
    else if (errno != ENOENT)
      error_set ("--resume: %s: %s", j->path, strerror (errno));
    return NULL;
  }
  if (fstat (fd, &st) == -1)
    error_set ("--resume: %s: %s", j->path, strerror (errno));
  else if (!S_ISREG (st.st_mode))
    error_set ("--resume: %s is not a regular file: refused", j->path);
  else if (st.st_uid != geteuid ())
    error_set ("--resume: %s belongs to user %u, not to this user (%u): "
               "refused",
               j->path, (unsigned) st.st_uid, (unsigned) geteuid ());
  else if (!(fp = fdopen (fd, "r")))
    error_set ("--resume: %s: %s", j->path, strerror (errno));
  else
    return fp;
  close (fd);
  errno = 0;
  return NULL;
}

int
journal_set_destination (struct journal *j, const char *leaves)
{
  char *line = strdup (leaves);

  if (!line) {
    error_set ("out of memory");
    return -1;
  }
  free (j->destination);
  j->destination = line;
  return 0;
}

int
journal_open (struct journal *j, const char *path, const char *identity,
              const struct journal_destination *dest, uint64_t nsegments)
{
  FILE *fp;
  int r;

  *j = (struct journal){ .path = path, .nsegments = nsegments };
  j->identity = strdup (identity);
  j->destination = strdup (dest->leaves);
  j->done = calloc (nsegments ? nsegments : 1, sizeof *j->done);
  if (!j->identity || !j->destination || !j->done) {
    error_set ("out of memory");
    return -1;
  }
  fp = open_existing (j);
  if (!fp && errno != ENOENT)
    return -1;
  if (!fp)
    return save (j);
  r = load (j, fp, dest);
  fclose (fp);
  if (r == -1)
    return -1;
  if (r == 1)
    return save (j); /* void: nothing of it is used, and it says so now */
  j->existed = true;
  return 0;
}

void
journal_hand_in (struct journal *j, const uint64_t *segments, unsigned n)
{
  for (unsigned i = 0; i < n; i++)
    atomic_store_explicit (&j->done[segments[i]], 1, memory_order_relaxed);
  /* Release: the main thread that sees the count sees the entries. */
  atomic_fetch_add_explicit (&j->handed, n, memory_order_release);
}

int
journal_write (struct journal *j)
{
  uint64_t handed;

  if (!journal_pending (j))
    return 0;
  handed = atomic_load_explicit (&j->handed, memory_order_acquire);
  if (save (j) == -1) {
    j->broken = true;
    return -1;
  }
  j->saved = handed;
  return 0;
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
  free (j->destination);
  free (j->voided);
  free (j->done);
  return r;
}
