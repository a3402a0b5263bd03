/* What a copy runs with: the command line's options fitted, once and
 * before anything is written, to what the two endpoints can do.  The
 * engine reads only this, never the options.
 */
#ifndef NBDCP_SETTINGS_H
#define NBDCP_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "endpoint.h"
#include "options.h"

struct blkhash; /* --verify: the copy's, held by pointer */

struct settings {
  unsigned lanes;            /* connection pairs, each with a thread */
  unsigned requests;         /* requests in flight per lane and side */
  uint32_t request_size;     /* bytes per read */
  uint64_t queue_size;       /* bytes in flight per lane */
  bool adaptive_window;      /* lanes size their window (window.h) */
  uint32_t sparse_size;      /* zero-detection block, 0 = off */
  uint32_t block;            /* every request is a multiple of it */
  uint32_t align;            /* extents are fitted to it: block, or the
                                --blkhash block if larger */
  uint32_t hash_block;       /* --blkhash block, 0 = no --blkhash */
  int hash_algo;             /* --blkhash algorithm */
  unsigned hash_partials;    /* blocks a lane gathers from several reads
                                at once: 0 = reads are whole blocks */
  uint64_t zero_max;         /* the longest zero request, 0 = a segment */
  uint32_t fold_below;       /* holes shorter than this between data are
                                read with it (extents.h, fold_below) */
  bool extents;              /* ask the source for holes */
  bool destination_extents;  /* may ask the destination where it reads
                                as zero (not --no-destination-extents) */
  bool allocated;            /* zero with NO_HOLE; data written whole */
  bool destination_is_zero;  /* send no zero requests */
  bool ask_destination_zero; /* skip zeroing where the destination says
                                it reads as zero (dest_zero.c) */
  bool verbose;
  unsigned retry;         /* --retry: 0 = a broken connection fails */
  int64_t retry_delay_ms; /* the first wait; doubled up to 30 s */
  uint64_t checkpoint;    /* bytes between a lane's flushes, 0 = only
                             at the end (no --retry, no --resume) */
  int64_t timeout_ms;     /* --timeout, 0 = none */
  uint64_t rate;          /* --rate: bytes read per second, 0 = no limit */
  uint32_t read_max;      /* no read is longer: request_size, or less
                             with --rate (rate.c) */
  const char *bitmap;     /* --bitmap NAME: copy only its dirty ranges */
  uint64_t dirty_bytes;   /* --bitmap: what will be copied (bitmap.c) */
  /* --verify's pass: the copy's hash of the source, whose record of
     where the source was read (blkhash_read_run) overrules the zero
     extents of the pass's source, the destination; else NULL. */
  const struct blkhash *read_where_source_was;
};

/* Fill S from OPTS and the opened endpoints.  Returns -1 after
 * error_set() when the copy cannot be done as asked (block sizes that
 * cannot be met), before anything is written.
 */
int settings_compute (struct settings *s, const struct options *opts,
                      const struct endpoint *src, const struct endpoint *dst);

/* Fill ES, what the endpoints are opened with, from OPTS. */
void settings_for_endpoints (struct endpoint_settings *es,
                             const struct options *opts);

/* Whether, with S, the copy asks DST where it already reads as zero. */
bool settings_ask_destination_zero (const struct settings *s,
                                    const struct endpoint *src,
                                    const struct endpoint *dst);

#endif
