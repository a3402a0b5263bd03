/* --blkhash: the lane's reads and zero extents are hashed as they go
 * (blkhash.c does the hashing).  A segment is taken only with a digest
 * slot free for it, and a read that holds part of a hash block larger
 * than a request only with room to gather that block.
 */
#include <config.h>

#include <stdlib.h>

#include "blkhash.h"
#include "error.h"
#include "feature_attach.h"

struct hashing {
  struct job *job;
  struct blkhash_lane lane;
};

static uint64_t
disk_size (const struct hashing *h)
{
  return atomic_load (&h->job->size);
}

static int
hashing_take_segment (void *self, uint64_t *index, bool *fresh)
{
  struct hashing *h = self;
  struct job *job = h->job;

  (void) fresh;
  /* The index comes with the slot, under the hash's lock, so that
     segments are always taken with a slot and in order. */
  if (blkhash_take_segment (&h->lane, &job->next_segment, job->nsegments, index)
      == -1)
    return FEATURE_WAIT_OTHERS;
  return 1;
}

static int64_t
hashing_may_read (void *self, uint64_t offset, uint32_t len)
{
  struct hashing *h = self;

  /* A block read in pieces needs a place to be gathered; the lane's
     own reads in flight free those places. */
  return blkhash_reserve (&h->lane, offset, len, disk_size (h))
             ? FEATURE_GO
             : FEATURE_WAIT_OWN;
}

static void
hashing_zero_taken (void *self, uint64_t offset, uint64_t len)
{
  struct hashing *h = self;

  /* Zero extents are whole hash blocks (or end the disk); the pieces
     they are cut into are too, unless a block is larger than the
     destination's largest request, and then they come in order. */
  blkhash_add (&h->lane, offset, NULL, len, disk_size (h));
}

static void
hashing_data_read (void *self, uint64_t offset, const char *data, uint32_t len)
{
  struct hashing *h = self;

  if (!job_stopped (h->job))
    blkhash_add (&h->lane, offset, data, len, disk_size (h));
}

static void
hashing_segment_restarted (void *self, uint64_t segment)
{
  struct hashing *h = self;

  blkhash_restart_segment (&h->lane, segment);
}

static void
hashing_destroy (void *self)
{
  struct hashing *h = self;

  blkhash_lane_destroy (&h->lane);
  free (h);
}

static const struct lane_feature_ops hashing_ops = {
  .name = "blkhash",
  .take_segment = hashing_take_segment,
  .may_read = hashing_may_read,
  .zero_taken = hashing_zero_taken,
  .data_read = hashing_data_read,
  .segment_restarted = hashing_segment_restarted,
  .destroy = hashing_destroy,
};

int
blkhash_feature_attach (struct lane_features *fs, struct job *job,
                        struct copy_stats *stats)
{
  struct hashing *h;

  (void) stats;
  if (!job->hash)
    return 0;
  h = calloc (1, sizeof *h);
  if (!h) {
    error_set ("out of memory");
    return -1;
  }
  h->job = job;
  if (blkhash_lane_init (&h->lane, job->hash, job->set->hash_partials) == -1) {
    hashing_destroy (h);
    return -1;
  }
  if (lane_features_add (fs, &hashing_ops, h) == -1) {
    hashing_destroy (h);
    return -1;
  }
  return 0;
}
