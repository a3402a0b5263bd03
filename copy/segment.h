/* The unit in which the disk is handed out to lanes: a lane copies
 * whole segments, so a copy has no use for more lanes (connection
 * pairs) than it has segments.
 */
#ifndef NBDCP_SEGMENT_H
#define NBDCP_SEGMENT_H

#include <stdint.h>

#define SEGMENT_SIZE ((uint64_t) 128 * 1024 * 1024)

/* The largest source nbdcp copies: 128 TiB, twice the largest virtual
 * disk of the common hypervisors and clouds (64 TiB).  Its bookkeeping
 * per segment (8192 segments a TiB) is allocated before the copy: 9 MiB
 * at this size (job.c's accounting, 8 bytes a segment; --resume's
 * journal, 1), and with --blkhash up to 320 MiB more (a digest of up to
 * 64 bytes and 256 bytes of read map a segment), twice with --verify.
 * A larger source (a server claiming 2^63-1 bytes, say) is refused
 * before anything is allocated for it (main.c).
 */
#define MAX_COPY_SIZE ((uint64_t) 128 * 1024 * 1024 * 1024 * 1024)

/* Segments in a disk of SIZE bytes. */
static inline uint64_t
segment_count (uint64_t size)
{
  return (size + SEGMENT_SIZE - 1) / SEGMENT_SIZE;
}

/* A segment index meaning "none". */
#define NO_SEGMENT UINT64_MAX

/* The first byte of segment INDEX. */
static inline uint64_t
segment_start (uint64_t index)
{
  return index * SEGMENT_SIZE;
}

/* The bytes of segment INDEX in a disk of SIZE bytes: SEGMENT_SIZE, less
 * for the last segment, 0 past the end.
 */
static inline uint64_t
segment_length (uint64_t size, uint64_t index)
{
  uint64_t start = segment_start (index);

  if (start >= size)
    return 0;
  return size - start < SEGMENT_SIZE ? size - start : SEGMENT_SIZE;
}

/* The end (exclusive) of segment INDEX in a disk of SIZE bytes. */
static inline uint64_t
segment_end (uint64_t size, uint64_t index)
{
  return segment_start (index) + segment_length (size, index);
}

#endif
