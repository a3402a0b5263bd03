/* --rate: at most so many bytes per second read, over all lanes
 * together (rate.c).
 */
#ifndef NBDCP_RATE_H
#define NBDCP_RATE_H

#include <stdatomic.h>
#include <stdint.h>

/* Reads are cut to at most a second's worth divided by this (settings.c),
   so that a single read never makes a second pass the rate by much. */
#define RATE_READS_PER_SECOND 32

struct rate_limit {
  uint64_t bytes_per_second; /* 0: no limit */
  /* The time up to which the reads issued so far are paid for. */
  atomic_uint_fast64_t paid_until_ns;
};

void rate_init (struct rate_limit *r, uint64_t bytes_per_second);

/* A read of LEN bytes wants to start at NOW (now_ns): 0 if it may (its
 * cost has been paid for since the last one), else the time in
 * nanoseconds at which to ask again.
 */
uint64_t rate_take (struct rate_limit *r, uint64_t len, uint64_t now);

#endif
