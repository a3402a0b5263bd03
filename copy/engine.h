/* The copy engine: segments, worker threads and their event loops. */
#ifndef NBDCP_ENGINE_H
#define NBDCP_ENGINE_H

#include <signal.h>
#include <stdint.h>

#include "endpoint.h"
#include "options.h"

/* The disk is handed out to workers in segments of this size. */
#define SEGMENT_SIZE ((uint64_t) 128 * 1024 * 1024)

struct copy_stats {
  uint64_t total_bytes;   /* the size copied (known at the end) */
  uint64_t data_bytes;    /* written as data */
  uint64_t zero_bytes;    /* zeroed on the destination */
  uint64_t skipped_bytes; /* left alone: --destination-is-zero */
  uint64_t hole_bytes;    /* of the source, never read (extents) */
  uint64_t requests;      /* requests issued, both sides */
  int error;              /* errno of the first failure, or 0 */
  unsigned lanes;         /* connection pairs used */
  unsigned workers;
};

/* Called a few times a second from the main thread while copying. */
typedef void (*progress_fn) (void *arg, uint64_t done, uint64_t total);

/* Copies the first SIZE bytes (UINT64_MAX: until a stream source ends)
 * of SRC to DST with the settings in OPTS; stops as after a failure
 * once *INTERRUPTED becomes non-zero (a signal handler sets it)
 * (already validated and adjusted to the endpoints by main).  Returns 0
 * when every byte was written and every destination connection that
 * was used was flushed; -1 after error_set() otherwise.
 */
int engine_run (const struct options *opts, struct endpoint *src,
                struct endpoint *dst, uint64_t size, progress_fn progress,
                void *progress_arg, const volatile sig_atomic_t *interrupted,
                struct copy_stats *stats);

#endif
