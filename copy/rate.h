/* --rate: at most so many bytes per second read, over all lanes
 * together (rate.c).
 */
#ifndef NBDCP_RATE_H
#define NBDCP_RATE_H

#include <stdatomic.h>
#include <stdint.h>

struct rate_limit {
  uint64_t bytes_per_second; /* 0: no limit */
  /* The time up to which the reads issued so far are paid for. */
  atomic_uint_fast64_t paid_until_ns;
};

void rate_init (struct rate_limit *r, uint64_t bytes_per_second);

/* A read of LEN bytes wants to start at NOW_NS: 0 if it may (it is paid
 * for), else the time in nanoseconds at which to ask again.
 */
uint64_t rate_take (struct rate_limit *r, uint64_t len, uint64_t now_ns);

#endif
