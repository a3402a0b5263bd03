/* What a lane holds: its connections, buffers, requests in flight and
 * where it is in the disk (struct lane).  lane.c drives it; the lane's
 * other files (lane_recover.c, ...) and the engine read and change it.
 * A header of its own so that those files need not include lane.h,
 * which is the engine's view of the lane and stands above them.
 * The worker thread that owns a lane is the only one that touches it.
 */
#ifndef NBDCP_LANE_STRUCT_H
#define NBDCP_LANE_STRUCT_H

#include <stdbool.h>
#include <stdint.h>

#include "dest_zero.h"
#include "endpoint.h"
#include "job.h"
#include "lane_feature.h"
#include "op.h"
#include "pool.h"
#include "source_extents.h"
#include "sparse.h"
#include "stats.h"

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
  /* What rides along: --blkhash, --resume, --checkpoint... (attached
     by the engine, feature_list.c).  The lane raises events to them. */
  struct lane_features features;

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
  /* The source's extents of [pos, ...) in the current segment, and
     how they are learnt (source_extents.c). */
  struct extent extent_store[EXTENTS_PER_LANE];
  struct extent_list extents;
  size_t next_extent;
  bool extents_busy;
  struct source_extents source;

  /* Where the destination reads as zero in the current segment, asked
     once per segment (dest_zero.c). */
  struct dest_zero dest;
  struct op dest_zero_op;
  bool dest_zero_busy;
  /* The question is only worth a short wait: one not answered by
     dest_zero_deadline_ms is given up (the segment is zeroed as without
     it, and this lane asks no more).  Its late reply, if it ever comes,
     lands on LATE, which nobody reads; until it does, the lane's memory
     must outlive the connection (engine.c keeps it). */
  bool dest_zero_given_up;
  struct op_queue late;

  /* A gate held the lane: look again soon (another lane must make
     progress, which no event on this lane's ring announces), or at
     wake_at_ms (0: no time set). */
  bool wait_for_others;
  int64_t wake_at_ms;

  uint64_t segment; /* the current segment, or NO_SEGMENT */
  uint64_t pos;     /* next byte to issue */
  uint64_t segment_end;
  bool no_more_segments;
  bool eof; /* a stream source has ended */

  /* Every request in flight, both sides, oldest first: put on it by
     lane_sent, taken off when it finishes (or is given up, below). */
  struct op_list sent;
  /* Per connection, [0] the source's and [1] the destination's: for
     --timeout, which counts from a connection's last sign of life, not
     from when a request was sent (it may wait behind others). */
  struct {
    unsigned inflight;
    int64_t progress_ms; /* last completion, or when it became busy */
  } activity[2];
  struct copy_stats stats;

  /* --retry: a broken connection stops the lane; once nothing is in
     flight it reconnects and the features say what to copy again
     (lane_recover.c). */
  bool broken;          /* a connection broke: recover once drained */
  char broken_why[512]; /* the first failure that showed it */
  unsigned attempts;    /* reconnections since a segment was finished */
  int64_t retry_at_ms;
};

#endif
