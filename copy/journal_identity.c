/* What --resume's journal says the copy and its destination are (see
 * journal_identity.h).  The lines are built here from the endpoints;
 * journal.c only compares them with an existing journal's and writes
 * them.  Nothing here reads or writes the endpoints' data.
 *
 * The source is not read: resuming assumes it has not changed (a
 * snapshot, or a read-only export), which for a local file its device,
 * inode and modification time back up.  The destination is another
 * matter: the journal's segments are in it only if it is the very file
 * the earlier run wrote, at the size that run left it.  A file deleted
 * and created again, or replaced by another, has another inode (or, if
 * the inode number came back, another creation time); a file emptied
 * in place has another size.  An NBD server says only its size: a
 * server started again with a fresh disk of the same size cannot be
 * told from the one the earlier run wrote to.
 */
#include <config.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "journal_identity.h"
#include "segment.h"

void
journal_copy_identity (const struct endpoint *src, const struct endpoint *dst,
                       const char *bitmap, char *out, size_t size)
{
  struct stat st;
  size_t n = 0;
  const struct endpoint *sides[] = { src, dst };

  for (unsigned i = 0; i < 2; i++) {
    const struct endpoint *ep = sides[i];
    n += snprintf (out + n, size - n, "%s", ep->side);
    if (ep->command)
      for (char **a = ep->command; *a && n < size; a++)
        n += snprintf (out + n, size - n, " %s", *a);
    else if (n < size)
      n += snprintf (out + n, size - n, " %s", ep->spec);
    if (n < size)
      n += snprintf (out + n, size - n, "\n");
  }
  if (src->path && stat (src->path, &st) == 0 && n < size)
    n += snprintf (out + n, size - n,
                   "source-file device %llu inode %llu mtime %lld.%09ld\n",
                   (unsigned long long) st.st_dev,
                   (unsigned long long) st.st_ino,
                   (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  if (n < size)
    n += snprintf (out + n, size - n, "size %" PRIi64 "\nsegment-size %" PRIu64,
                   src->size, SEGMENT_SIZE);
  /* An incremental copy is another copy than a full one. */
  if (bitmap && n < size)
    snprintf (out + n, size - n, "\nbitmap %s", bitmap);
}

void
journal_destination_identity (const struct endpoint *src,
                              const struct endpoint *dst,
                              char found[JOURNAL_LINE_MAX],
                              char leaves[JOURNAL_LINE_MAX])
{
  struct statx stx;
  int64_t after = dst->size;
  char born[48] = "";

  if (!dst->path
      || statx (AT_FDCWD, dst->path, 0, STATX_BASIC_STATS | STATX_BTIME, &stx)
             == -1) {
    snprintf (found, JOURNAL_LINE_MAX, "destination-export size %" PRIi64,
              dst->size);
    snprintf (leaves, JOURNAL_LINE_MAX, "%s", found);
    return;
  }
  if (S_ISBLK (stx.stx_mode)) {
    /* The device's number, not its node's inode: /dev is made afresh
       at each boot, and a copy may be resumed after a crash. */
    snprintf (found, JOURNAL_LINE_MAX,
              "destination-device number %u:%u size %" PRIi64,
              stx.stx_rdev_major, stx.stx_rdev_minor, dst->size);
    snprintf (leaves, JOURNAL_LINE_MAX, "%s", found);
    return;
  }
  if (stx.stx_mask & STATX_BTIME)
    snprintf (born, sizeof born, " born %lld.%09u",
              (long long) stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec);
  /* A regular file is made the source's size (set_size) before the
     copy writes to it: that is what a rerun finds. */
  if (dst->ops->set_size && src->size >= 0)
    after = src->size;
  snprintf (found, JOURNAL_LINE_MAX,
            "destination-file device %u:%u inode %llu%s size %" PRIi64,
            stx.stx_dev_major, stx.stx_dev_minor,
            (unsigned long long) stx.stx_ino, born, (int64_t) stx.stx_size);
  snprintf (leaves, JOURNAL_LINE_MAX,
            "destination-file device %u:%u inode %llu%s size %" PRIi64,
            stx.stx_dev_major, stx.stx_dev_minor,
            (unsigned long long) stx.stx_ino, born, after);
}
