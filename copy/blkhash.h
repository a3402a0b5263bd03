/* --blkhash: a block checksum of the source computed while copying,
 * the same value as nbdcopy's --blkhash and blksum: H(d_0 || ... ||
 * d_{n-1} || le64(size)), d_i = H(block i).  Lanes hash the blocks of
 * the buffers they read (and give zero extents the digest of a zero
 * block) in any order; the digests of a segment are kept only until
 * the segment is complete and all earlier ones have been fed, in
 * order, to the final hash.
 */
#ifndef NBDCP_BLKHASH_H
#define NBDCP_BLKHASH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The algorithms, in the order of blkhash_algo_names. */
enum blkhash_algo { BLKHASH_MD5, BLKHASH_SHA1, BLKHASH_SHA256, BLKHASH_SHA512 };
#define BLKHASH_DEFAULT_ALGO BLKHASH_SHA256
#define BLKHASH_DEFAULT_BLOCK (64 * 1024)
#define BLKHASH_MAX_DIGEST 64
/* Digest slots are limited to this much memory in all (but there are
   always at least two). */
#define BLKHASH_MAX_MEMORY ((uint64_t) 64 * 1024 * 1024)
/* Where the source was read is recorded in granules of this many bytes
   (or the hash block, if larger): 2 MiB of memory per TiB of disk. */
#define BLKHASH_READ_GRANULE (64 * 1024)

/* ALGO's name, or NULL; and the algorithm named NAME, or -1. */
const char *blkhash_algo_name (int algo);
int blkhash_algo_find (const char *name);
/* Whether nbdcp was built with a hash library. */
bool blkhash_available (void);

struct blkhash;
struct blkhash_slot;
struct blkhash_partial;

/* A lane's part: its own hash context, the segments it is hashing, and
   the blocks larger than a request that it is gathering from several
   reads (blkhash_reserve). */
struct blkhash_lane {
  struct blkhash *h;
  void *ctx;                   /* gnutls_hash_hd_t */
  struct blkhash_slot **slots; /* segments taken and not yet complete */
  unsigned nslots;
  struct blkhash_partial *partials;
  unsigned npartials;
  char *partial_store; /* npartials blocks */
};

/* Everything is allocated here, before the copy starts: NSLOTS segment
 * slots of (SEGMENT_SIZE / BLOCK) digests each (or of SEGMENT_SIZE
 * bytes for blocks smaller than a digest; and no more than a disk of
 * SIZE bytes needs, UINT64_MAX if not known), and one digest per
 * segment for NSEGMENTS segments (UINT64_MAX for a stream: that array
 * then grows, by doubling, as segments are fed).  Returns NULL after
 * error_set().
 */
struct blkhash *blkhash_new (int algo, uint32_t block, uint64_t size,
                             unsigned nslots, uint64_t nsegments);
void blkhash_free (struct blkhash *h);
/* The memory blkhash_new takes for these parameters. */
uint64_t blkhash_memory (int algo, uint32_t block, uint64_t size,
                         unsigned nslots);

/* NPARTIALS: the blocks the lane may gather from several reads at once
 * (0 if every read holds whole blocks); each takes a block of memory,
 * allocated here.
 */
int blkhash_lane_init (struct blkhash_lane *hl, struct blkhash *h,
                       unsigned npartials);
void blkhash_lane_destroy (struct blkhash_lane *hl);

/* Take a slot for a segment and the segment's index from *NEXT (under
 * the hash's lock, so that segments are always taken with a slot and
 * in order).  Returns 1 with *INDEX set, 0 if no segment is left
 * (INDEX >= NSEGMENTS), -1 if no slot is free for now: try again once
 * other lanes have made progress.
 */
int blkhash_take_segment (struct blkhash_lane *hl, atomic_uint_fast64_t *next,
                          uint64_t nsegments, uint64_t *index);

/* Before a read of [OFFSET, OFFSET+LEN) that holds only part of a hash
 * block (a block larger than the servers' largest request): make sure
 * the lane has a place to gather that block.  True if it has (or the
 * read needs none), false if all NPARTIALS are taken by blocks whose
 * other reads are still in flight: issue the read later.  The reads of
 * a block are never more than one request each and lie in one block.
 */
bool blkhash_reserve (struct blkhash_lane *hl, uint64_t offset, uint64_t len,
                      uint64_t size);

/* The bytes [OFFSET, OFFSET+LEN) of the disk, DATA, or zeroes if DATA
 * is NULL.  Usually OFFSET is a multiple of the hash block, and LEN is
 * too unless the range ends the disk.  A block larger than a request
 * comes in pieces: a read's (DATA, reserved with blkhash_reserve), in
 * any order, gathered until the block is whole; or zero pieces, one
 * after the other from the block's start, a block being all data or
 * all zero pieces (extents are fitted to the hash block).  SIZE is the
 * disk size as far as known (UINT64_MAX for a stream that has not
 * ended).
 */
void blkhash_add (struct blkhash_lane *hl, uint64_t offset, const char *data,
                  size_t len, uint64_t size);

/* SEGMENT is about to be read again from its start (--retry): if this
 * lane is still hashing it, its count starts over (the digests are
 * simply made again) and the blocks it was gathering are dropped; if
 * it was complete, the reads are not hashed again (blkhash_add ignores
 * a segment the lane does not hold).
 */
void blkhash_restart_segment (struct blkhash_lane *hl, uint64_t segment);

/* Once every worker has ended: the final value for a disk of SIZE
 * bytes, in lowercase hex, into OUT (2 * BLKHASH_MAX_DIGEST + 1).
 * Returns -1 after error_set() if any block was not hashed.
 */
int blkhash_finish (struct blkhash *h, uint64_t size, char *out);

/* After blkhash_finish on both: the first segment whose digest differs
 * between A and B (made with the same algorithm, block and segment
 * sizes), or UINT64_MAX if none does.  Each segment's digest is the
 * hash of its blocks' digests, kept for --verify.
 */
uint64_t blkhash_first_difference (const struct blkhash *a,
                                   const struct blkhash *b);

/* After blkhash_finish: whether the source was read (its block status
 * said data, or it could not tell) or taken as zero (a hole or zero
 * extent) at OFFSET, into *READ, and for how many bytes from OFFSET, at
 * most LEN, that stays so.  Kept per granule (BLKHASH_READ_GRANULE, or
 * the hash block if larger): a granule the source was read in anywhere
 * counts as read.  For --verify: where the source was read, the
 * destination is read back whatever its block status claims.
 */
uint64_t blkhash_read_run (const struct blkhash *h, uint64_t offset,
                           uint64_t len, bool *read);

#endif
