/* The wait before a repeated attempt: the first wait, doubled at each
 * attempt in a row, up to a ceiling.  Shared by --retry's
 * reconnections (lane_recover.c) and its first connections
 * (nbd_connect.c), so that both back off alike.
 */
#ifndef NBDCP_BACKOFF_H
#define NBDCP_BACKOFF_H

#include <stdint.h>

/* The longest wait between --retry's attempts (unless --retry-delay
   asks for longer from the start). */
#define RETRY_DELAY_MAX_MS 30000

/* The wait before attempt ATTEMPT (0 for the first) after FIRST_MS:
 * FIRST_MS doubled ATTEMPT times, but no longer than LONGEST_MS, or
 * than FIRST_MS if that is longer still.
 */
static inline int64_t
backoff_ms (int64_t first_ms, unsigned attempt, int64_t longest_ms)
{
  int64_t delay = first_ms;

  if (longest_ms < first_ms)
    longest_ms = first_ms;
  for (unsigned i = 0; i < attempt && delay < longest_ms; i++)
    delay *= 2;
  return delay < longest_ms ? delay : longest_ms;
}

#endif
