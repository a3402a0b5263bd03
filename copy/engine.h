/* The copy engine: segments, worker threads and their event loops. */
#ifndef NBDCP_ENGINE_H
#define NBDCP_ENGINE_H

#include <signal.h>
#include <stdint.h>

#include "blkhash.h"
#include "endpoint.h"
#include "journal.h"
#include "settings.h"
#include "stats.h"

/* Called a few times a second from the main thread while copying. */
typedef void (*progress_fn) (void *arg, uint64_t done, uint64_t total);

/* Copies the first SIZE bytes (UINT64_MAX: until a stream source ends)
 * of SRC to DST with SET; stops as after a failure once *INTERRUPTED
 * becomes non-zero (a signal handler sets it).  Returns 0 when every
 * byte was written, zeroed or skipped exactly once and every
 * destination connection that was used was flushed; -1 after
 * error_set() otherwise.  STATS is filled in either way.  With
 * --blkhash (SET->hash_block), the checksum of what was read is put
 * into HASH_OUT (2 * BLKHASH_MAX_DIGEST + 1 bytes) on success and, if
 * HASH is not NULL, the hash itself (with its per-segment digests,
 * for --verify) into *HASH, for the caller to blkhash_free.  JOURNAL
 * (--resume, else NULL) says which segments an earlier run finished,
 * and is told of each segment finished and flushed.
 */
int engine_run (const struct settings *set, struct endpoint *src,
                struct endpoint *dst, uint64_t size, progress_fn progress,
                void *progress_arg, const volatile sig_atomic_t *interrupted,
                struct copy_stats *stats, char *hash_out, struct blkhash **hash,
                struct journal *journal);

#endif
