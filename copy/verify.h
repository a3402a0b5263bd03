/* --verify: after the copy, read the destination back and prove it
 * holds what was read from the source.
 */
#ifndef NBDCP_VERIFY_H
#define NBDCP_VERIFY_H

#include <signal.h>
#include <stdint.h>

#include "blkhash.h"
#include "endpoint.h"
#include "options.h"
#include "progress.h"
#include "settings.h"
#include "stats.h"

/* Refuse --verify for a destination that cannot be read back (null:, a
 * stream, standard output opened write-only), before anything is
 * opened.  Returns -1 after error_set().
 */
int verify_check_destination (const struct options *opts);

/* Read the first SIZE bytes of DST (flushed) through the engine, on
 * all of DST's connections, with COPY_SET's hash algorithm and block,
 * and compare their blkhash with SOURCE_HASH / SOURCE_HEX, the
 * source's from the copy.  Returns 0 if they are equal; -1 after
 * error_set() if the pass failed or the destination differs, naming
 * the first 128 MiB segment that differs.  STATS gets the pass's own
 * counts (bytes read, holes skipped).
 */
int verify_destination (const struct settings *copy_set,
                        const struct options *opts, struct endpoint *dst,
                        uint64_t size, const struct blkhash *source_hash,
                        const char *source_hex,
                        const volatile sig_atomic_t *interrupted,
                        struct progress *progress, struct copy_stats *stats);

#endif
