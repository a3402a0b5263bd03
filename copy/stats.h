/* What a copy did, counted by the lanes and added up at the end, and
 * the --stats summary of it, as text or JSON.
 */
#ifndef NBDCP_STATS_H
#define NBDCP_STATS_H

#include <stdbool.h>
#include <stdint.h>

struct copy_stats {
  uint64_t total_bytes;        /* the size copied (known at the end) */
  uint64_t data_bytes;         /* written as data */
  uint64_t zero_bytes;         /* zeroed on the destination */
  uint64_t skipped_bytes;      /* left alone: the destination reads as zero */
  uint64_t already_zero_bytes; /* of the skipped, those the destination
                                  said read as zero (dest_zero.c) */
  uint64_t hole_bytes;         /* of the source, never read (extents) */
  uint64_t resumed_bytes;      /* done by an earlier run (--resume): skipped */
  uint64_t redone_bytes;       /* copied, then copied again after a reconnect
                                  (--retry): the attempts thrown away, not
                                  counted above */
  unsigned retries;            /* reconnection attempts (--retry), those
                                  that failed included */
  uint64_t clean_bytes;        /* --bitmap: of the skipped, those clean in the
                                  bitmap (neither read nor written) */
  uint64_t requests;           /* requests issued, both sides */
  uint64_t read_bytes;         /* read from the source, reads copied again
                                  after a reconnection included (what
                                  --rate limits) */
  int error;                   /* errno of the first failure, or 0 */
  unsigned lanes;              /* connection pairs used */
  unsigned workers;
};

/* Add S's counts (data, zero, skipped, holes, clean, requests) to SUM. */
void stats_add (struct copy_stats *sum, const struct copy_stats *s);

/* --retry: the bytes S counted as copied since MARK (S's earlier
 * value): data, zeroed and skipped, less the clean ones of --bitmap
 * (passed over, not copied).  What a rewind counts as redone.
 */
uint64_t stats_since (const struct copy_stats *s,
                      const struct copy_stats *mark);

/* --retry: what was counted since MARK (S's earlier value) is to be
 * copied again: take S's data, zeroed, skipped, holes and clean counts
 * back to MARK's.  The others (requests, resumed, redone, retries)
 * stay.
 */
void stats_rewind (struct copy_stats *s, const struct copy_stats *mark);

struct stats_context {
  unsigned src_connections, dst_connections;
  double elapsed;     /* seconds */
  bool ok;            /* the copy succeeded */
  const char *bitmap; /* --bitmap NAME, else NULL */
  uint64_t rate;      /* --rate, bytes per second, or 0 */
  /* Why zero runs were skipped where the destination did not say it
     read as zero: "--destination-is-zero", "the destination is new",
     or NULL (none were). */
  const char *skip_reason;
};

void stats_print (const struct copy_stats *s, const struct stats_context *ctx,
                  bool json);

#endif
