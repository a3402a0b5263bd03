/* The copies nbdcp refuses because they cannot work: too large a
 * source, a file copied onto itself, a read-only or too small
 * destination, a size that a server's minimum block size cannot end
 * on.  main calls each before the destination is touched: before
 * set_size, which creates a new destination file or gives an existing
 * one the source's size (docs/nbdcp.pod promises that a refused copy
 * writes nothing).  What settings_compute refuses (block sizes that do
 * not fit together, --request-size below a minimum) is checked before
 * set_size too.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "error.h"
#include "human_size.h"
#include "refuse.h"
#include "segment.h"

int
check_source_size (const struct endpoint *src)
{
  char max[32];

  if (src->size < 0 || (uint64_t) src->size <= MAX_COPY_SIZE)
    return 0;
  human_size_format (MAX_COPY_SIZE, max, sizeof max);
  error_set ("source %s is too large: %" PRIi64 " bytes; nbdcp copies at "
             "most %" PRIu64 " bytes (%s)",
             src->spec, src->size, MAX_COPY_SIZE, max);
  return -1;
}

/* Copying a file onto itself would read what it has just written (or,
 * with '>>', append the file to itself).
 */
bool
check_same_file (const struct endpoint *src, const struct endpoint *dst)
{
  const char *a_path = src->path, *b_path = dst->path;
  struct stat a, b;

  if (!a_path || !b_path || stat (a_path, &a) == -1 || stat (b_path, &b) == -1
      || !(S_ISREG (a.st_mode) || S_ISBLK (a.st_mode)) || a.st_dev != b.st_dev
      || a.st_ino != b.st_ino)
    return false;
  error_set ("source and destination are the same file: %s", src->spec);
  return true;
}

int
check_endpoints (const struct endpoint *src, const struct endpoint *dst)
{
  if (dst->caps.read_only) {
    error_set ("destination %s is read-only", dst->spec);
    return -1;
  }
  /* The last block of the copy would be a request shorter than a
     server's minimum block, which such servers refuse (nbdkit's
     blocksize-policy filter does; qemu does not even open such an
     image).  Refusing now is better than failing at the end. */
  const struct endpoint *sides[] = { src, dst };
  for (unsigned i = 0; i < 2 && src->size > 0; i++) {
    const struct endpoint *ep = sides[i];
    if (src->size % endpoint_min_block (ep) != 0) {
      error_set ("%s %s has a minimum block size of %" PRIu32 " bytes, but "
                 "the copy's size, %" PRIi64 " bytes, is not a multiple of "
                 "it: its last %" PRIi64 " bytes cannot be %s",
                 ep->side, ep->spec, endpoint_min_block (ep), src->size,
                 src->size % endpoint_min_block (ep),
                 ep == src ? "read" : "written");
      return -1;
    }
  }
  return 0;
}

int
check_destination_size (const struct endpoint *src, const struct endpoint *dst)
{
  if (src->size >= 0 && dst->size < src->size) {
    error_set ("destination %s (%" PRIi64 " bytes) is smaller than "
               "source %s (%" PRIi64 " bytes)",
               dst->spec, dst->size, src->spec, src->size);
    return -1;
  }
  return 0;
}
