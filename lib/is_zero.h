/* Fast test for an all-zero buffer.
 *
 * Checks the first 16 bytes directly, then compares the buffer with
 * itself shifted by 16 bytes: if the head is zero and every byte equals
 * the one 16 bytes before it, all bytes are zero.  memcmp is vectorised
 * by libc, so this runs at memory speed without hand-written SIMD.
 */
#ifndef NBDCP_IS_ZERO_H
#define NBDCP_IS_ZERO_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline bool
is_zero (const char *buf, size_t len)
{
  const size_t head = 16;
  size_t i;

  for (i = 0; i < head && i < len; i++)
    if (buf[i])
      return false;
  return len <= head || memcmp (buf, buf + head, len - head) == 0;
}

#endif
