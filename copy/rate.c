/* --rate: a bucket of read credit shared by all lanes.  Every read is
 * paid for in time before it leaves: LEN bytes cost LEN / rate seconds,
 * added to the time the reads issued so far are paid up to, and a read
 * may start once that sum is not in the future.  The first read of a
 * copy pays too (the bucket starts empty), so N bytes take N / rate
 * seconds, not one read less.
 *
 * A bucket left idle lends at most RATE_SLACK_NS of credit (or one
 * read's cost, if a read costs more: it could never start otherwise),
 * so that a lane woken a little late, as on a loaded machine, loses no
 * rate.  Over any second the reads then pass the rate by at most that
 * credit: settings.c cuts reads to a 32nd of a second's worth (within
 * the servers' and --blkhash's blocks), so that no second passes it by
 * more than about 5%.
 *
 * It counts what is read from the source; holes and zero extents, which
 * are not read, cost nothing.
 */
#include <config.h>

#include "clock.h"
#include "minmax.h"
#include "rate.h"

#define RATE_SLACK_NS 50000000 /* 50 ms */

void
rate_init (struct rate_limit *r, uint64_t bytes_per_second)
{
  r->bytes_per_second = bytes_per_second;
  atomic_init (&r->paid_until_ns, now_ns ());
}

uint64_t
rate_take (struct rate_limit *r, uint64_t len, uint64_t now)
{
  uint64_t cost = (uint64_t) ((double) len * 1e9 / r->bytes_per_second);
  uint64_t slack = MAX (cost, (uint64_t) RATE_SLACK_NS);
  uint64_t earliest = now > slack ? now - slack : 0;
  uint_fast64_t paid = atomic_load (&r->paid_until_ns);

  for (;;) {
    uint64_t due = MAX ((uint64_t) paid, earliest) + cost;

    if (due > now)
      return due;
    /* Another lane may have paid meanwhile: then PAID is reloaded. */
    if (atomic_compare_exchange_weak (&r->paid_until_ns, &paid, due))
      return 0;
  }
}
