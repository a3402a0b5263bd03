/* The features that ride along a lane's copy: --blkhash, --verify's
 * read map, --resume's journal, --checkpoint's (and so --retry's)
 * bookkeeping, --rate.  The lane (lane.c) copies; at each step that a
 * feature may care about it raises an event, and each feature attached
 * to the lane gets the events it has a hook for, in the order the
 * features were attached (feature_list.c).  A new feature is a new file
 * with its hooks, registered in feature_attach.h and feature_list.c:
 * the lane's state machine does not change.
 *
 * Three kinds of hook.  Gates may hold the lane back (take_segment,
 * may_read).  Questions change what the lane does with a range
 * (done_before, zero_extent_read, segment_finished's answer, rewind).
 * The rest only observe.  Hooks run on the lane's worker thread, in
 * its loop: they must not block on I/O, and they must not allocate
 * (anything a feature needs is allocated when it is attached).
 */
#ifndef NBDCP_LANE_FEATURE_H
#define NBDCP_LANE_FEATURE_H

#include <stdbool.h>
#include <stdint.h>

/* Features one lane can have at once: there are five kinds. */
#define LANE_MAX_FEATURES 8

/* What a gate answers. */
#define FEATURE_GO 0
#define FEATURE_WAIT_OWN -1    /* until this lane's own requests finish */
#define FEATURE_WAIT_OTHERS -2 /* until other lanes make progress */
/* ... or, greater than 0, the time (now_ms) at which to ask again. */

/* A feature's hooks; any may be NULL.  SELF is the feature's state for
 * this lane, given when it was attached.
 */
struct lane_feature_ops {
  const char *name;

  /* Gate: choose the lane's next segment.  1 with *INDEX set (it may be
     past the last segment: none is left) and *FRESH false if the
     segment is one to copy again; 0 to leave the choice to the next
     feature (and finally to the shared counter); or FEATURE_WAIT_*. */
  int (*take_segment) (void *self, uint64_t *index, bool *fresh);
  /* Question: fresh segment INDEX was finished by an earlier run, so
     the lane passes over it (it is counted as resumed). */
  bool (*done_before) (void *self, uint64_t index);
  void (*segment_started) (void *self, uint64_t index);
  /* Gate: may the lane read [OFFSET, OFFSET+LEN) of the source now?
     A gate that says FEATURE_GO has granted it (--rate has charged the
     read) even if a later gate or the lane then makes the read wait. */
  int64_t (*may_read) (void *self, uint64_t offset, uint32_t len);
  /* Question: the source says [OFFSET, OFFSET+LEN) reads as zero.  How
     much of it from OFFSET is of one kind: to be read anyway (*READ)
     or trusted as zero.  Only one feature may answer this. */
  uint64_t (*zero_extent_read) (void *self, uint64_t offset, uint64_t len,
                                bool *read);
  /* [OFFSET, OFFSET+LEN) of the source is zero (a hole or zero
     extent): it is zeroed on the destination, or already reads as
     zero there. */
  void (*zero_taken) (void *self, uint64_t offset, uint64_t len);
  /* DATA, [OFFSET, OFFSET+LEN) of the source, was read and its writes
     are on their way (the buffer stays until they are done). */
  void (*data_read) (void *self, uint64_t offset, const char *data,
                     uint32_t len);
  /* Segment INDEX has nothing in flight any more (only raised to a lane
     with a feature that has this hook: such a lane finishes each
     segment before it takes the next).  True if the destination
     connection should be flushed now. */
  bool (*segment_finished) (void *self, uint64_t index);
  /* The lane's destination connection was flushed successfully. */
  void (*flushed) (void *self);
  /* Question: a connection broke and was made again.  Which segments
     must be copied again from their start: their number, and the list
     in *SEGMENTS.  Only one feature may answer this. */
  unsigned (*rewind) (void *self, const uint64_t **segments);
  /* SEGMENT is about to be copied again from its start. */
  void (*segment_restarted) (void *self, uint64_t segment);
  /* The lane is being destroyed: free what was allocated. */
  void (*destroy) (void *self);
};

struct lane_feature {
  const struct lane_feature_ops *ops;
  void *self;
};

/* The features attached to one lane. */
struct lane_features {
  struct lane_feature v[LANE_MAX_FEATURES];
  unsigned n;
};

/* Attach feature OPS with state SELF.  -1 after error_set() if full. */
int lane_features_add (struct lane_features *fs,
                       const struct lane_feature_ops *ops, void *self);
void lane_features_destroy (struct lane_features *fs);
/* Whether the lane must finish each segment before taking the next. */
bool lane_features_finish_segments (const struct lane_features *fs);

/* Raising the events: each calls the hooks, in order. */
int lane_features_take_segment (const struct lane_features *fs, uint64_t *index,
                                bool *fresh);
bool lane_features_done_before (const struct lane_features *fs, uint64_t index);
void lane_features_segment_started (const struct lane_features *fs,
                                    uint64_t index);
/* FEATURE_GO if every gate says so, else the first other answer. */
int64_t lane_features_may_read (const struct lane_features *fs, uint64_t offset,
                                uint32_t len);
/* All of [OFFSET, OFFSET+LEN) trusted as zero if no feature asks. */
uint64_t lane_features_zero_extent_read (const struct lane_features *fs,
                                         uint64_t offset, uint64_t len,
                                         bool *read);
void lane_features_zero_taken (const struct lane_features *fs, uint64_t offset,
                               uint64_t len);
void lane_features_data_read (const struct lane_features *fs, uint64_t offset,
                              const char *data, uint32_t len);
/* True if any feature wants a flush now. */
bool lane_features_segment_finished (const struct lane_features *fs,
                                     uint64_t index);
void lane_features_flushed (const struct lane_features *fs);
/* The segments to copy again after a reconnection (each is announced
 * to the features by segment_restarted before this returns): their
 * number, and the list in *SEGMENTS.
 */
unsigned lane_features_rewind (const struct lane_features *fs,
                               const uint64_t **segments);

#endif
