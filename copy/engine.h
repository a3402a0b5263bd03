/* The copy engine: segments, worker threads and their event loops. */
#ifndef NBDCP_ENGINE_H
#define NBDCP_ENGINE_H

#include <signal.h>
#include <stdint.h>

#include "blkhash.h"
#include "endpoint.h"
#include "job.h" /* progress_fn */
#include "journal.h"
#include "settings.h"
#include "stats.h"

/* What engine_run is to do, and where its results go. */
struct engine_params {
  const struct settings *set;
  struct endpoint *src, *dst;
  uint64_t size; /* bytes to copy; UINT64_MAX: until a stream source ends */
  progress_fn progress; /* or NULL */
  void *progress_arg;
  /* The copy stops as after a failure once this becomes non-zero (a
     signal handler sets it). */
  const volatile sig_atomic_t *interrupted;
  /* --resume, else NULL: says which segments an earlier run finished,
     and is told of each segment finished and flushed. */
  struct journal *journal;
  struct copy_stats *stats; /* filled in, whatever the result */
  /* --blkhash (set->hash_block): the checksum of what was read, put
     here (2 * BLKHASH_MAX_DIGEST + 1 bytes) on success. */
  char *hash_out;
  /* If not NULL, with --blkhash: the hash itself (with its per-segment
     digests, for --verify) on success, for the caller to blkhash_free. */
  struct blkhash **hash;
};

/* Copies the first P->size bytes of P->src to P->dst with P->set.
 * Returns 0 when every byte was written, zeroed or skipped exactly once
 * and every destination connection that was used was flushed; -1 after
 * error_set() otherwise.
 */
int engine_run (const struct engine_params *p);

#endif
