/* --rate: a read waits until the job's rate limit has paid for it
 * (rate.c); the lane is woken at that time.
 */
#include <config.h>

#include "clock.h"
#include "feature_attach.h"
#include "rate.h"

static int64_t
rate_may_read (void *self, uint64_t offset, uint32_t len)
{
  uint64_t at = rate_take (self, len, now_ns ());

  (void) offset;
  return at ? (int64_t) (at / 1000000 + 1) : FEATURE_GO;
}

static const struct lane_feature_ops rate_ops = {
  .name = "rate",
  .may_read = rate_may_read,
};

int
rate_feature_attach (struct lane_features *fs, struct job *job,
                     struct copy_stats *stats)
{
  (void) stats;
  if (!job->rate.bytes_per_second)
    return 0;
  return lane_features_add (fs, &rate_ops, &job->rate);
}
