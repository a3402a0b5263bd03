/* --verify (see verify.h).
 *
 * The second pass is an ordinary engine run: the destination, still
 * open, is its source, and a null: endpoint with as many connections
 * its destination, so reading uses every connection and hashes exactly
 * as the copy hashed the source.  It skips what the destination's block
 * status says are holes only where the copy found holes in the source
 * too (--verify=full asks for no block status and reads everything).
 * The copy's flushes have completed before it starts, so what it reads
 * is what the server holds, not only what it was sent (a server that
 * drops writes or returns other data is caught; one that loses data
 * only when it restarts later is not).  The hashes keep one
 * digest per segment, so a difference is reported by segment.
 */
#include <config.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "error.h"
#include "job.h"
#include "minmax.h"
#include "verify.h"

int
verify_check_destination (const struct options *opts)
{
  int flags;

  if (!endpoint_can_read_back (opts->dst, opts->dst_command)) {
    if (strcmp (opts->dst, "null:") == 0)
      error_set ("--verify: null: keeps nothing that could be read back");
    else
      error_set ("--verify: the destination %s is a stream and cannot be "
                 "read back",
                 opts->dst);
    return -1;
  }
  /* '-' as a file: the descriptor the shell opened, often write-only. */
  if (!opts->dst_command && strcmp (opts->dst, "-") == 0
      && ((flags = fcntl (1, F_GETFL)) == -1
          || (flags & O_ACCMODE) != O_RDWR)) {
    error_set ("--verify: standard output is not open for reading too "
               "(use '1<>FILE' rather than '>FILE', or name the file)");
    return -1;
  }
  return 0;
}

int
verify_destination (const struct settings *copy_set, const struct options *opts,
                    struct endpoint *dst, uint64_t size,
                    const struct blkhash *source_hash, const char *source_hex,
                    const volatile sig_atomic_t *interrupted,
                    struct progress *progress, struct copy_stats *stats)
{
  struct settings set = *copy_set;
  struct endpoint *sink;
  struct blkhash *hash = NULL;
  char hex[2 * BLKHASH_MAX_DIGEST + 1];
  int r;

  sink = endpoint_open ("null:", NULL, true, dst->nconns, dst->settings,
                        interrupted);
  if (!sink)
    return -1;
  sink->side = "--verify";
  set.lanes = MIN (dst->nconns, sink->nconns);
  /* Nothing is written: everything read goes to the hash. */
  set.allocated = false;
  set.destination_is_zero = true;
  set.ask_destination_zero = false;
  set.sparse_size = 0;
  set.checkpoint = 0; /* no retries: it only reads */
  set.retry = 0;
  /* Block status tells only where nothing need be read: with
     --verify=full it is not asked, and otherwise a hole or zero extent
     is believed only where the source was not read (see lane.c). */
  if (opts->verify_full)
    set.extents = false;
  else
    set.read_where_source_was = source_hash;
  note (set.verbose,
        "--verify%s: reading back %" PRIu64 " bytes of %s on %u "
        "connection%s",
        opts->verify_full ? "=full" : "", size, dst->spec, set.lanes,
        set.lanes == 1 ? "" : "s");

  r = engine_run (&(struct engine_params){
      .set = &set,
      .src = dst,
      .dst = sink,
      .size = size,
      .progress = progress_update,
      .progress_arg = progress,
      .interrupted = interrupted,
      .stats = stats,
      .hash_out = hex,
      .hash = &hash,
  });
  progress_finish (progress, 0, size, r == 0);
  endpoint_close (sink, r == 0);
  if (r == -1) {
    char why[1024];
    snprintf (why, sizeof why, "%s", error_get ());
    error_set ("--verify: reading the destination back: %s", why);
    return -1;
  }

  if (strcmp (hex, source_hex) != 0) {
    uint64_t seg = blkhash_first_difference (source_hash, hash);
    uint64_t nsegs = segment_count (size);
    char where[160] = "";

    if (seg != UINT64_MAX)
      snprintf (where, sizeof where,
                " in bytes %" PRIu64 " to %" PRIu64 " (segment %" PRIu64
                " of %" PRIu64 ")",
                segment_start (seg), segment_end (size, seg), seg + 1, nsegs);
    error_set ("--verify: the destination differs from the source%s: "
               "blkhash %s/%" PRIu32 " of the source %s, of the destination %s",
               where, blkhash_algo_name (set.hash_algo), set.hash_block,
               source_hex, hex);
    blkhash_free (hash);
    return -1;
  }
  blkhash_free (hash);
  note (set.verbose,
        "--verify: the destination's blkhash is the source's "
        "(%" PRIu64 " bytes read back, %" PRIu64 " in holes not read)",
        stats->data_bytes, stats->hole_bytes);
  return 0;
}
