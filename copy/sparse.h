/* Zero detection: split a buffer read from the source into runs of data
 * and runs of zero blocks, so zero blocks inside data extents become
 * zero requests and the destination stays sparse.
 */
#ifndef NBDCP_SPARSE_H
#define NBDCP_SPARSE_H

#include <stdbool.h>
#include <stddef.h>

struct run {
  size_t offset; /* within the buffer */
  size_t length;
  bool zero;
};

/* Scans DATA[0..LEN) in BLOCK-byte blocks (the last may be shorter) and
 * stores at most MAX_RUNS alternating runs in RUNS.  If more runs would
 * be needed, the last run covers the rest of the buffer as data, which
 * is always correct, only less sparse.  BLOCK 0 (or MAX_RUNS < 2)
 * means one data run.
 * Returns the number of runs (at least 1 when LEN > 0).
 */
size_t sparse_runs (const char *data, size_t len, size_t block,
                    struct run *runs, size_t max_runs);

#endif
