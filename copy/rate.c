/* --rate: a bucket of read credit shared by all lanes.  Every read is
 * paid for in time: LEN bytes cost LEN / rate seconds, added to the time
 * the reads issued so far are paid up to.  A read may start once that
 * time is not in the future, so reads leave one by one as time passes,
 * never a whole queue at once.  A bucket left idle lends at most the
 * time of four such reads (within 20 to 250 ms) of credit: a lane that
 * wakes up a little late, as on a loaded machine, loses no rate, and a
 * burst after a pause stays that small.
 *
 * It counts what is read from the source; holes and zero extents, which
 * are not read, cost nothing.
 */
#include <config.h>

#include "minmax.h"
#include "rate.h"

#define RATE_SLACK_MIN_NS 20000000  /* 20 ms */
#define RATE_SLACK_MAX_NS 250000000 /* 250 ms */

void
rate_init (struct rate_limit *r, uint64_t bytes_per_second)
{
  r->bytes_per_second = bytes_per_second;
  atomic_init (&r->paid_until_ns, 0);
}

uint64_t
rate_take (struct rate_limit *r, uint64_t len, uint64_t now_ns)
{
  uint64_t cost = (uint64_t) ((double) len * 1e9 / r->bytes_per_second);
  uint64_t slack = MAX (4 * cost, (uint64_t) RATE_SLACK_MIN_NS);
  uint64_t earliest;
  uint_fast64_t paid = atomic_load (&r->paid_until_ns);

  slack = MIN (slack, (uint64_t) RATE_SLACK_MAX_NS);
  earliest = now_ns > slack ? now_ns - slack : 0;
  for (;;) {
    uint64_t start = MAX ((uint64_t) paid, earliest);

    if (start > now_ns)
      return start;
    /* Another lane may have paid meanwhile: then PAID is reloaded. */
    if (atomic_compare_exchange_weak (&r->paid_until_ns, &paid, start + cost))
      return 0;
  }
}
