/* A lane: one source connection and one destination connection working
 * through segments of the disk, with its own buffers (see lane.c).  The
 * worker thread that owns a lane is the only one that touches it.
 */
#ifndef NBDCP_LANE_H
#define NBDCP_LANE_H

#include <stdbool.h>
#include <stdint.h>

#include "blkhash.h"
#include "endpoint.h"
#include "job.h"
#include "op.h"
#include "pool.h"
#include "sparse.h"
#include "stats.h"

/* Extents a lane remembers at once; more are fetched as it goes. */
#define EXTENTS_PER_LANE 1024
/* Writes and zeroes one buffer may turn into after zero detection: as
   many as it has zero-detection blocks (a buffer of data and holes
   alternating block by block keeps its holes), within these bounds. */
#define MIN_RUNS_PER_BUFFER 32
#define MAX_RUNS_PER_BUFFER 256

struct buffer {
  unsigned index;  /* in the lane's pool */
  uint64_t offset; /* of the disk */
  uint32_t len;
  unsigned pending; /* runs still in flight */
  bool dest_zero;   /* the destination read as zero here when the read
                       was issued: its zero runs need not be sent */
  struct op read;
  struct op *runs; /* the lane's runs_per_buffer */
};

enum lane_state {
  LANE_COPYING,
  LANE_CHECKPOINT, /* flushing between segments (--checkpoint) */
  LANE_FLUSHING,   /* the last flush */
  LANE_RETRY_WAIT, /* a connection broke: reconnect at retry_at_ms */
  LANE_DONE,
};

struct lane {
  unsigned index; /* for messages */
  struct job *job;
  const struct settings *set;
  struct op_queue *done; /* the owning worker's */
  struct conn *src, *dst;
  enum lane_state state;

  struct pool pool;
  struct buffer *buffers; /* one per pool buffer */
  unsigned runs_per_buffer;
  struct op *run_ops;      /* the buffers' runs */
  struct run *run_scratch; /* zero detection's answer for one buffer */
  uint64_t queued_bytes;   /* in buffers that are in use */

  struct op *zero_ops; /* for zero extents: request slots */
  struct op **free_zero_ops;
  unsigned nfree_zero_ops;

  struct op extents_op, flush_op;
  bool extents_busy;
  /* The lane's last segment ended in a hole: its next block status
     request looks past its segment (see zero_run.h). */
  bool in_hole;
  struct extent extent_store[EXTENTS_PER_LANE];
  struct extent_list extents; /* of [pos, ...) in the current segment */
  size_t next_extent;
  /* --bitmap: the source's two answers, base:allocation and the dirty
     bitmap, before extent_list_restrict makes `extents` of them. */
  struct extent alloc_store[EXTENTS_PER_LANE], dirty_store[EXTENTS_PER_LANE];
  struct extent_list alloc, dirty;

  /* Where the destination reads as zero in the current segment, asked
     once per segment (lane_dest_zero.c). */
  struct extent dest_zero_store[EXTENTS_PER_LANE];
  struct extent_list dest_zero;
  struct op dest_zero_op;
  bool dest_zero_wanted, dest_zero_busy;
  /* Learnt past the segment: [ahead_from, ahead_to) read as zero when
     segments from ahead_untaken on had not been taken by any lane. */
  uint64_t dest_zero_ahead_from, dest_zero_ahead_to;
  uint64_t dest_zero_ahead_untaken;

  int64_t rate_wait_ms; /* --rate holds the next read until then, or 0 */

  uint64_t pos; /* next byte to issue */
  uint64_t segment_end;
  bool no_more_segments;
  bool eof; /* a stream source has ended */
  /* --blkhash: this lane's hashing, and whether it is waiting for a
     free digest slot to take its next segment. */
  struct blkhash_lane hash;
  bool hash_wait;

  unsigned inflight; /* requests in flight, both sides */
  /* Per connection, [0] the source's and [1] the destination's: for
     --timeout, which counts from a connection's last sign of life, not
     from when a request was sent (it may wait behind others). */
  struct {
    unsigned inflight;
    int64_t progress_ms; /* last completion, or when it became busy */
  } activity[2];
  struct copy_stats stats;

  /* --retry and --resume (set->checkpoint != 0): a lane finishes each
     segment before it takes the next, and a segment is only done once
     a later flush of the destination connection has succeeded.  Until
     then it is "unflushed"; a broken connection sends the unflushed
     segments and the current one back to be copied again ("redo"). */
  uint64_t segment;    /* the current segment, or NO_SEGMENT */
  uint64_t *unflushed; /* finished, not yet flushed */
  unsigned nunflushed;
  uint64_t unflushed_bytes;
  uint64_t *redo; /* to copy again, taken before new segments */
  /* The stats at the last successful flush: a rewind takes the counts
     back to them, since everything counted since is copied again. */
  struct copy_stats stats_at_flush;
  unsigned nredo;
  bool broken;          /* a connection broke: recover once drained */
  char broken_why[512]; /* the first failure that showed it */
  unsigned attempts;    /* reconnections since a segment was finished */
  int64_t retry_at_ms;
};

#define NO_SEGMENT UINT64_MAX

/* Set up L for JOB on connections SRC and DST; finished requests go on
 * DONE.  Allocates the lane's buffers: nothing is allocated after.
 */
int lane_init (struct lane *l, unsigned index, struct job *job,
               struct op_queue *done, struct conn *src, struct conn *dst);
void lane_destroy (struct lane *l);
/* The buffers each lane has, with settings SET. */
unsigned lane_buffers (const struct settings *set);
/* Issue as much work as buffers and request slots allow. */
void lane_issue (struct lane *l);
/* OP, a request of L, finished: act on it. */
void lane_op_done (struct lane *l, struct op *op);
/* Once a lane has nothing left to copy, flush it; then it is done. */
void lane_check_finished (struct lane *l);
/* For a lane in LANE_RETRY_WAIT whose time has come: reconnect its
 * broken connections and go back to copying, or wait again.
 */
void lane_retry (struct lane *l);
/* --timeout found OP of L stalled: true if the lane will reconnect
 * (--retry; its connection has been cut), false if the copy must fail.
 */
bool lane_timed_out (struct lane *l, const struct op *op, const char *why);
/* The request of L that has waited longest, or NULL. */
const struct op *lane_oldest_op (const struct lane *l);
/* The oldest request on a connection of L that has had requests in
 * flight and finished none for LIMIT_MS or more at NOW, or NULL.
 */
const struct op *lane_stalled_op (const struct lane *l, int64_t now,
                                  int64_t limit_ms);

#endif
