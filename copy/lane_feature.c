/* Raising a lane's events to the features attached to it (see
 * lane_feature.h): each event is a loop over the features that have a
 * hook for it.  A lane has at most a handful of features, so a loop
 * costs a few predictable branches per request.
 */
#include <config.h>

#include <stddef.h>

#include "error.h"
#include "lane_feature.h"

/* Call HOOK (ARGS...) on every feature of FS that has it. */
#define EACH_HOOK(fs, hook, ...)                                               \
  do {                                                                         \
    for (unsigned i_ = 0; i_ < (fs)->n; i_++)                                  \
      if ((fs)->v[i_].ops->hook)                                               \
        (fs)->v[i_].ops->hook ((fs)->v[i_].self, ##__VA_ARGS__);               \
  } while (0)

int
lane_features_add (struct lane_features *fs, const struct lane_feature_ops *ops,
                   void *self)
{
  if (fs->n == LANE_MAX_FEATURES) {
    error_set ("internal error: too many features for a lane");
    return -1;
  }
  fs->v[fs->n++] = (struct lane_feature){ .ops = ops, .self = self };
  return 0;
}

void
lane_features_destroy (struct lane_features *fs)
{
  EACH_HOOK (fs, destroy);
  fs->n = 0;
}

bool
lane_features_finish_segments (const struct lane_features *fs)
{
  for (unsigned i = 0; i < fs->n; i++)
    if (fs->v[i].ops->segment_finished)
      return true;
  return false;
}

int
lane_features_take_segment (const struct lane_features *fs, uint64_t *index,
                            bool *fresh)
{
  for (unsigned i = 0; i < fs->n; i++) {
    const struct lane_feature *f = &fs->v[i];
    int r;

    if (!f->ops->take_segment)
      continue;
    *fresh = true;
    r = f->ops->take_segment (f->self, index, fresh);
    if (r != 0)
      return r;
  }
  return 0;
}

bool
lane_features_done_before (const struct lane_features *fs, uint64_t index)
{
  for (unsigned i = 0; i < fs->n; i++)
    if (fs->v[i].ops->done_before
        && fs->v[i].ops->done_before (fs->v[i].self, index))
      return true;
  return false;
}

void
lane_features_segment_started (const struct lane_features *fs, uint64_t index)
{
  EACH_HOOK (fs, segment_started, index);
}

int64_t
lane_features_may_read (const struct lane_features *fs, uint64_t offset,
                        uint32_t len)
{
  for (unsigned i = 0; i < fs->n; i++) {
    const struct lane_feature *f = &fs->v[i];
    int64_t r;

    if (f->ops->may_read && (r = f->ops->may_read (f->self, offset, len)) != 0)
      return r;
  }
  return FEATURE_GO;
}

uint64_t
lane_features_zero_extent_read (const struct lane_features *fs, uint64_t offset,
                                uint64_t len, bool *read)
{
  for (unsigned i = 0; i < fs->n; i++)
    if (fs->v[i].ops->zero_extent_read)
      return fs->v[i].ops->zero_extent_read (fs->v[i].self, offset, len, read);
  *read = false;
  return len;
}

void
lane_features_zero_taken (const struct lane_features *fs, uint64_t offset,
                          uint64_t len)
{
  EACH_HOOK (fs, zero_taken, offset, len);
}

void
lane_features_data_read (const struct lane_features *fs, uint64_t offset,
                         const char *data, uint32_t len)
{
  EACH_HOOK (fs, data_read, offset, data, len);
}

bool
lane_features_segment_finished (const struct lane_features *fs, uint64_t index)
{
  bool flush = false;

  /* Every feature hears of it, whatever the first one answered. */
  for (unsigned i = 0; i < fs->n; i++)
    if (fs->v[i].ops->segment_finished
        && fs->v[i].ops->segment_finished (fs->v[i].self, index))
      flush = true;
  return flush;
}

void
lane_features_flushed (const struct lane_features *fs)
{
  EACH_HOOK (fs, flushed);
}

unsigned
lane_features_rewind (const struct lane_features *fs, const uint64_t **segments)
{
  unsigned n = 0;

  *segments = NULL;
  for (unsigned i = 0; i < fs->n && !*segments; i++)
    if (fs->v[i].ops->rewind)
      n = fs->v[i].ops->rewind (fs->v[i].self, segments);
  for (unsigned k = 0; k < n; k++)
    EACH_HOOK (fs, segment_restarted, (*segments)[k]);
  return n;
}
