/* Fitting the options to the endpoints (see settings.h): request, queue
 * and zero-detection sizes against block-size constraints, and the
 * rules that tie options together (--allocated, a destination that
 * starts as zeroes).
 */
#include <config.h>

#include <inttypes.h>

#include "error.h"
#include "minmax.h"
#include "rate.h"
#include "settings.h"

/* The zero-detection block when -S is not given. */
#define DEFAULT_SPARSE_SIZE 4096
/* Holes shorter than this between data are read with the data rather
   than skipped: reading them costs less than the requests they would
   cut the data into (docs/design.md, "Fragmented sources"). */
#define FOLD_HOLES_BELOW ((uint32_t) 32 * 1024)
/* Bytes in flight per lane when --queue-size is not given: nbdcopy's
   default, which -R x --request-size (32 x 512 KiB) also gives. */
#define DEFAULT_QUEUE_SIZE ((uint64_t) 16 * 1024 * 1024)
/* The most buffer memory a copy may have, over all lanes.  A lane
   always gets one request's worth, whatever this says. */
#define MAX_TOTAL_QUEUE ((uint64_t) 1024 * 1024 * 1024)

/* The memory a lane may give to gathering --blkhash blocks larger than
   a request (more when two blocks are larger). */
#define MAX_HASH_PARTIAL_MEMORY ((uint64_t) 64 * 1024 * 1024)

/* Largest power of 2 not above N (N >= 1). */
static uint32_t
round_down_pow2 (uint32_t n)
{
  uint32_t p = 1;
  while (p <= n / 2)
    p *= 2;
  return p;
}

/* The request size, against block-size constraints (minimum, preferred,
 * maximum; all powers of 2 but the maximum).  Every request is then a
 * multiple of both sides' minimum block in offset and length: reads and
 * writes come in request_size pieces of extents fitted to it
 * (extent_list_align).
 */
static int
settle_request_size (struct settings *s, const struct options *opts,
                     const struct endpoint *src, const struct endpoint *dst)
{
  uint32_t limit = MAX_REQUEST_SIZE;
  uint32_t preferred
      = MAX (src->caps.preferred_block, dst->caps.preferred_block);

  s->block = MAX (endpoint_min_block (src), endpoint_min_block (dst));
  if (src->caps.max_request)
    limit = MIN (limit, src->caps.max_request);
  if (dst->caps.max_request)
    limit = MIN (limit, dst->caps.max_request);
  limit = round_down_pow2 (limit);
  if (limit < s->block) {
    error_set ("the servers' block sizes do not fit together: requests must "
               "be multiples of %" PRIu32 " bytes but at most %" PRIu32,
               s->block, limit);
    return -1;
  }
  s->request_size = opts->request_size;
  if (opts->request_size_set && s->request_size < s->block) {
    error_set ("--request-size %" PRIu32 " is smaller than the %s's minimum "
               "block size, %" PRIu32 " bytes",
               s->request_size,
               endpoint_min_block (src) == s->block ? "source" : "destination",
               s->block);
    return -1;
  }
  /* The servers' preferred size, where larger than the default: smaller
     requests would make them read-modify-write. */
  if (!opts->request_size_set && preferred > s->request_size
      && IS_POWER_OF_2 (preferred)) {
    note (s->verbose,
          "request size raised from %" PRIu32 " to %" PRIu32
          " (the servers' preferred block size)",
          s->request_size, MIN (preferred, limit));
    s->request_size = MIN (preferred, limit);
  }
  if (s->request_size > limit) {
    note (s->verbose,
          "request size lowered from %" PRIu32 " to %" PRIu32
          " (the servers' maximum)",
          s->request_size, limit);
    s->request_size = limit;
  }
  s->request_size = MAX (s->request_size, s->block);
  /* --blkhash: extents are fitted to the hash block (a block with any
     data is data), so that each block is all read or all zero.  Reads
     are whole hash blocks where the servers allow requests that large;
     a larger block is read in several requests, and the lane gathers
     its pieces before hashing it (blkhash.c).  --verify hashes both
     sides the same way. */
  s->align = s->block;
  if (opts->blkhash || opts->verify) {
    s->hash_block = opts->blkhash_block;
    s->hash_algo = opts->blkhash_algo;
    if (s->request_size < MIN (s->hash_block, limit)) {
      note (s->verbose,
            "request size raised from %" PRIu32 " to %" PRIu32
            " (the --blkhash block size%s)",
            s->request_size, MIN (s->hash_block, limit),
            limit < s->hash_block ? ", up to the servers' maximum" : "");
      s->request_size = MIN (s->hash_block, limit);
    }
    s->align = MAX (s->block, s->hash_block);
  }
  /* A hole as long as a request costs a request to read. */
  s->fold_below = MIN (FOLD_HOLES_BELOW, s->request_size);
  /* Zero requests are bounded by the destination's maximum too: whole
     hash blocks if it allows, else pieces of them (hashed in order). */
  if (dst->caps.max_request) {
    s->zero_max = dst->caps.max_request / s->align * s->align;
    if (s->zero_max == 0)
      s->zero_max = dst->caps.max_request / s->block * s->block;
  }
  return 0;
}

/* Bytes in flight per lane, which is what the lane's buffers take: as
 * nbdcopy, --queue-size (default 16 MiB) bounds them, not -R x
 * --request-size, and the whole copy has at most MAX_TOTAL_QUEUE.  A
 * lane always has room for one request.  The lane allocates
 * min(-R, queue size / request size) buffers, at least one.
 */
static void
settle_queue_size (struct settings *s, const struct options *opts)
{
  uint64_t queue = opts->queue_size ? opts->queue_size : DEFAULT_QUEUE_SIZE;

  if (queue * s->lanes > MAX_TOTAL_QUEUE) {
    uint64_t lowered = MAX_TOTAL_QUEUE / s->lanes;
    note (s->verbose,
          "queue size lowered from %" PRIu64 " to %" PRIu64
          " bytes per connection (at most %" PRIu64 " in all)",
          queue, lowered, MAX_TOTAL_QUEUE);
    queue = lowered;
  }
  s->queue_size = MAX (queue, (uint64_t) s->request_size);
}

/* Zero detection works in blocks that are a multiple of the minimum
 * block, so that zero runs are aligned too.
 */
static void
settle_sparse_size (struct settings *s, const struct options *opts,
                    const struct endpoint *dst)
{
  int64_t size = opts->sparse_size;

  /* --allocated writes data extents whole, as nbdcopy does: zero blocks
     inside data are data. */
  if (s->allocated) {
    if (size > 0)
      note (s->verbose, "-S is ignored with --allocated");
    s->sparse_size = 0;
    return;
  }
  if (size < 0) {
    uint32_t preferred = dst->caps.preferred_block;
    size = DEFAULT_SPARSE_SIZE;
    if (preferred > DEFAULT_SPARSE_SIZE && preferred <= MAX_REQUEST_SIZE
        && preferred % 512 == 0)
      size = preferred;
  }
  if (size > 0 && size % s->block != 0) {
    int64_t raised = (size + s->block - 1) / s->block * s->block;
    note (s->verbose,
          "zero-detection block raised from %" PRIi64 " to %" PRIi64
          " (the minimum block size)",
          size, raised);
    size = raised;
  }
  s->sparse_size = size;
}

/* --blkhash with a block larger than a read (a request, or a --rate
 * piece): the blocks a lane may gather from several reads at once, a
 * block of memory each.  Enough for the lane's queue to span, up to
 * 64 MiB, and always two (so that a lane reads the next block while
 * the last reads of one finish).
 */
static void
settle_hash_partials (struct settings *s)
{
  uint64_t span = MIN (s->queue_size, MAX_HASH_PARTIAL_MEMORY);

  if (!s->hash_block || s->read_max >= s->hash_block)
    return;
  s->hash_partials = MAX (span / s->hash_block, (uint64_t) 2);
  note (s->verbose,
        "--blkhash: blocks of %" PRIu32 " bytes are read %" PRIu32
        " bytes at a time, %u gathered at once per connection",
        s->hash_block, s->read_max, s->hash_partials);
}

/* --rate: a read is paid for before it leaves, and a read of a second's
 * worth would leave at once after a second of waiting, doubling that
 * second's rate.  So reads are cut to a RATE_READS_PER_SECOND-th of a
 * second's worth, a power of 2 that keeps whole minimum blocks; a rate
 * too low for that gets reads of one block.  Not whole --blkhash blocks
 * (s->align): a 64 KiB hash block at --rate=256K would be a quarter of
 * a second's worth, so one read early or late would pass the limit by
 * 25%.  A hash block read in pieces is gathered (settle_hash_partials).
 */
static void
settle_read_max (struct settings *s)
{
  uint64_t piece = s->rate / RATE_READS_PER_SECOND;

  s->read_max = s->request_size;
  if (!s->rate || piece >= s->request_size)
    return;
  piece = piece > 0 ? round_down_pow2 (piece) : 1;
  s->read_max = MAX (piece, (uint64_t) s->block);
  note (s->verbose, "--rate: reads of at most %" PRIu32 " bytes", s->read_max);
}

int
settings_compute (struct settings *s, const struct options *opts,
                  const struct endpoint *src, const struct endpoint *dst)
{
  *s = (struct settings){
    .lanes = MIN (src->nconns, dst->nconns),
    .requests = opts->requests,
    .adaptive_window = !opts->requests_set && !opts->queue_size,
    .extents = opts->extents,
    .destination_extents = opts->destination_extents,
    .allocated = opts->allocated,
    .destination_is_zero = opts->destination_is_zero,
    .verbose = opts->verbose,
    .timeout_ms = opts->timeout_ms,
    .rate = opts->rate,
    .retry = opts->retry,
    .retry_delay_ms = opts->retry_delay_ms,
    .bitmap = opts->bitmap,
  };

  if (settle_request_size (s, opts, src, dst) == -1)
    return -1;
  settle_queue_size (s, opts);
  settle_sparse_size (s, opts, dst);
  settle_read_max (s);
  settle_hash_partials (s);

  /* What was sent to a stream cannot be taken back, nor a stream read
     again: a copy with a stream on either side is not retried. */
  if ((src->caps.stream || dst->caps.stream) && s->retry) {
    note (s->verbose, "--retry ignored: a stream cannot be copied again");
    s->retry = 0;
  }
  /* With --retry or --resume, lanes flush as they go, so that what is
     done stays done (docs/design.md, "Retries and resume"). */
  if (s->retry || opts->resume)
    s->checkpoint = opts->checkpoint;

  /* A stream cannot skip ahead: every byte, zeroes included, must be
     written to it in order (as nbdcopy does). */
  if (dst->caps.stream && s->destination_is_zero) {
    note (s->verbose, "--destination-is-zero ignored: the destination is a "
                      "stream, every byte is written");
    s->destination_is_zero = false;
  }
  /* A destination known to read as zero needs no zeroing, unless it
     must end up allocated. */
  if (dst->caps.starts_zero && !dst->caps.stream && !s->allocated
      && !s->destination_is_zero) {
    note (s->verbose, "destination starts as zeroes: it will not be zeroed");
    s->destination_is_zero = true;
  }
  /* nbdcopy's meaning: the destination ends up allocated even if it
     read as zero already, so its holes are still zeroed (NO_HOLE). */
  if (s->allocated && s->destination_is_zero) {
    note (s->verbose, "--destination-is-zero is ignored with --allocated: "
                      "holes are still written to allocate them");
    s->destination_is_zero = false;
  }
  s->ask_destination_zero = settings_ask_destination_zero (s, src, dst);
  return 0;
}

bool
settings_ask_destination_zero (const struct settings *s,
                               const struct endpoint *src,
                               const struct endpoint *dst)
{
  /* Nothing to skip when nothing is zeroed, and --allocated zeroes
     holes to allocate them.  A stream cannot skip; null:, block
     devices and servers without block status cannot tell.  A stream
     source has no size to bound the segments' questions by. */
  return !src->caps.stream && s->destination_extents && !s->destination_is_zero
         && !s->allocated && !dst->caps.stream && dst->caps.can_extents
         && dst->ops->extents;
}

void
settings_for_endpoints (struct endpoint_settings *es,
                        const struct options *opts)
{
  *es = (struct endpoint_settings){
    .verbose = opts->verbose,
    .timeout_ms = opts->timeout_ms,
    .request_size = opts->request_size,
    .direct = opts->direct,
    .retry = opts->retry,
    .retry_delay_ms = opts->retry_delay_ms,
    .bitmap = opts->bitmap,
  };
}
