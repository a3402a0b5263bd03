/* The unit in which the disk is handed out to lanes: a lane copies
 * whole segments, so a copy has no use for more lanes (connection
 * pairs) than it has segments.
 */
#ifndef NBDCP_SEGMENT_H
#define NBDCP_SEGMENT_H

#include <stdint.h>

#define SEGMENT_SIZE ((uint64_t) 128 * 1024 * 1024)

/* Segments in a disk of SIZE bytes. */
static inline uint64_t
segment_count (uint64_t size)
{
  return (size + SEGMENT_SIZE - 1) / SEGMENT_SIZE;
}

#endif
