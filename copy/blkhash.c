/* --blkhash (see blkhash.h), on GnuTLS's hash functions.
 *
 * Digests are kept per segment, in slots allocated before the copy.  A
 * lane takes a slot with each segment; the slot's digests are filled in
 * any order as reads finish (one digest per block: the engine never
 * splits a hash block between two requests, see settings.c), and once
 * all its bytes are in, the slot is complete.  Complete slots are fed
 * to the final hash strictly in segment order, by whichever lane
 * completes the segment the final hash waits for; a slot that completes
 * early waits for it.  With no slot free a lane takes no new segment
 * until one is fed: the segment being waited for is always held by a
 * lane that can finish it without a new slot, so this cannot deadlock.
 *
 * Blocks smaller than a digest (md5/1 to md5/8, sha512/32...) would
 * make a segment's digests larger than the segment itself (2 GiB for
 * md5/1): a slot then keeps the segment's bytes instead, and their
 * digests are made as the slot is fed.  A slot is never more than a
 * segment's bytes, nor more than the disk's.
 *
 * A block larger than the servers' largest request (settings.c) is read
 * in several requests, which finish in any order: the lane gathers the
 * pieces in one of its few "partial" blocks, reserved when the block's
 * first read is issued (blkhash_reserve), and makes the digest once the
 * block is whole.  A lane with all of them taken issues no read that
 * starts another block: the blocks it gathers have all their reads in
 * flight, so one is freed as they finish.  Zero pieces need no memory:
 * they come in order (the lane issues them one after the other), and
 * the piece that ends a block gives it the zero digest.
 *
 * For --verify, a slot also records which of its segment's granules
 * were read from the source (rather than taken as zero from its block
 * status), and feeding copies that into a map of the whole disk, one
 * bit per granule, which the verify pass consults (blkhash_read_run).
 */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_GNUTLS
#include <gnutls/crypto.h>
#endif

#include "blkhash.h"
#include "error.h"
#include "is_zero.h"
#include "minmax.h"
#include "segment.h"

static const char *const algo_names[] = { "md5", "sha1", "sha256", "sha512" };

const char *
blkhash_algo_name (int algo)
{
  return algo >= 0 && algo < (int) (sizeof algo_names / sizeof *algo_names)
             ? algo_names[algo]
             : NULL;
}

int
blkhash_algo_find (const char *name)
{
  for (int i = 0; blkhash_algo_name (i); i++)
    if (strcmp (name, algo_names[i]) == 0)
      return i;
  return -1;
}

static size_t
digest_len (int algo)
{
  static const size_t len[] = { 16, 20, 32, 64 };
  return len[algo];
}

/* A slot keeps the bytes, not the digests, of blocks smaller than a
   digest. */
static bool
keeps_bytes (int algo, uint32_t block)
{
  return block < digest_len (algo);
}

/* The bytes of one slot, for segments of at most SPAN bytes. */
static uint64_t
slot_bytes (int algo, uint32_t block, uint64_t span)
{
  if (keeps_bytes (algo, block))
    return span;
  return (span + block - 1) / block * digest_len (algo);
}

uint64_t
blkhash_memory (int algo, uint32_t block, uint64_t size, unsigned nslots)
{
  return nslots * slot_bytes (algo, block, MIN (SEGMENT_SIZE, size));
}

#ifdef HAVE_GNUTLS

/* A block being gathered from several reads. */
struct blkhash_partial {
  uint64_t offset; /* of the block, or PARTIAL_FREE */
  uint64_t bytes;  /* of it arrived so far */
  char *data;      /* one block */
};
#define PARTIAL_FREE UINT64_MAX

/* Bytes for N bits. */
static size_t
read_bits_bytes (uint64_t n)
{
  return (n + 7) / 8;
}

static bool
bit_get (const unsigned char *bits, uint64_t i)
{
  return bits[i / 8] & (1u << (i % 8));
}

static void
bit_set (unsigned char *bits, uint64_t i)
{
  bits[i / 8] |= 1u << (i % 8);
}

enum slot_state { SLOT_FREE, SLOT_HASHING, SLOT_COMPLETE };

struct blkhash_slot {
  enum slot_state state; /* changed under the lock */
  uint64_t segment;
  uint64_t bytes;           /* hashed so far; only its lane touches it */
  unsigned char *digests;   /* or the segment's bytes (keep_bytes) */
  unsigned char *read_bits; /* granules read from the source */
};

struct blkhash {
  gnutls_digest_algorithm_t galgo;
  int algo;
  size_t dlen;
  uint32_t block;
  bool keep_bytes; /* slots keep bytes, hashed as they are fed */
  unsigned char zero_digest[BLKHASH_MAX_DIGEST]; /* of a whole block */
  char *zeroes;                                  /* one block */

  pthread_mutex_t lock; /* guards the fields below and slot states */
  gnutls_hash_hd_t final;
  /* keep_bytes: the blocks' digests as slots are fed, and the digest
     of the segment's digests (segment_digests). */
  gnutls_hash_hd_t feed_block, feed_segment;
  uint64_t next_feed; /* the segment the final hash waits for */
  struct blkhash_slot *slots;
  unsigned nslots;
  unsigned char *digest_store;
  /* One digest per segment fed, for --verify to name the first segment
     that differs: nsegments / 128 MiB of a disk, 256 KiB for 1 TiB in
     sha256.  A stream's grows as it goes (see grow_segment_digests). */
  unsigned char *segment_digests;
  uint64_t segment_digests_room; /* segments it has room for */
  /* One bit per granule of the disk: the source was read there (its
     block status said data, or it could not tell).  Sized with
     segment_digests, granules_per_segment bits a segment. */
  uint32_t granule;
  uint64_t granules_per_segment;
  unsigned char *read_map;
  unsigned char *read_bits_store;
  bool out_of_memory;
  bool lost_piece; /* a read piece came without a partial block */
};

bool
blkhash_available (void)
{
  return true;
}

static const gnutls_digest_algorithm_t galgos[]
    = { GNUTLS_DIG_MD5, GNUTLS_DIG_SHA1, GNUTLS_DIG_SHA256, GNUTLS_DIG_SHA512 };

struct blkhash *
blkhash_new (int algo, uint32_t block, uint64_t size, unsigned nslots,
             uint64_t nsegments)
{
  struct blkhash *h = calloc (1, sizeof *h);
  size_t per_slot;
  int r;

  if (!h) {
    error_set ("out of memory");
    return NULL;
  }
  h->algo = algo;
  h->galgo = galgos[algo];
  h->dlen = digest_len (algo);
  h->block = block;
  h->nslots = nslots;
  h->keep_bytes = keeps_bytes (algo, block);
  pthread_mutex_init (&h->lock, NULL);
  per_slot = slot_bytes (algo, block, MIN (SEGMENT_SIZE, size));
  h->granule = MAX (block, (uint32_t) BLKHASH_READ_GRANULE);
  h->granules_per_segment = SEGMENT_SIZE / h->granule;
  h->zeroes = calloc (1, block);
  h->slots = calloc (nslots, sizeof *h->slots);
  h->digest_store = malloc (MAX ((size_t) nslots * per_slot, (size_t) 1));
  h->read_bits_store
      = malloc ((size_t) nslots * read_bits_bytes (h->granules_per_segment));
  /* A stream starts with room for 1 GiB worth of segments. */
  h->segment_digests_room
      = nsegments == UINT64_MAX ? 8 : MAX (nsegments, (uint64_t) 1);
  h->segment_digests = malloc (h->segment_digests_room * h->dlen);
  h->read_map = calloc (
      1, read_bits_bytes (h->segment_digests_room * h->granules_per_segment));
  if (!h->zeroes || !h->slots || !h->digest_store || !h->segment_digests
      || !h->read_bits_store || !h->read_map) {
    error_set ("out of memory for --blkhash digests");
    blkhash_free (h);
    return NULL;
  }
  for (unsigned i = 0; i < nslots; i++) {
    h->slots[i].digests = h->digest_store + i * per_slot;
    h->slots[i].read_bits
        = h->read_bits_store + i * read_bits_bytes (h->granules_per_segment);
  }
  r = gnutls_hash_fast (h->galgo, h->zeroes, block, h->zero_digest);
  if (r == 0)
    r = gnutls_hash_init (&h->final, h->galgo);
  if (r == 0 && h->keep_bytes)
    r = gnutls_hash_init (&h->feed_block, h->galgo);
  if (r == 0 && h->keep_bytes)
    r = gnutls_hash_init (&h->feed_segment, h->galgo);
  if (r < 0) {
    error_set ("--blkhash: %s: %s", algo_names[algo], gnutls_strerror (r));
    blkhash_free (h);
    return NULL;
  }
  return h;
}

void
blkhash_free (struct blkhash *h)
{
  if (!h)
    return;
  if (h->final)
    gnutls_hash_deinit (h->final, NULL);
  if (h->feed_block)
    gnutls_hash_deinit (h->feed_block, NULL);
  if (h->feed_segment)
    gnutls_hash_deinit (h->feed_segment, NULL);
  pthread_mutex_destroy (&h->lock);
  free (h->zeroes);
  free (h->slots);
  free (h->digest_store);
  free (h->segment_digests);
  free (h->read_map);
  free (h->read_bits_store);
  free (h);
}

int
blkhash_lane_init (struct blkhash_lane *hl, struct blkhash *h,
                   unsigned npartials)
{
  gnutls_hash_hd_t ctx;
  int r;

  *hl = (struct blkhash_lane){ .h = h };
  hl->slots = calloc (h->nslots, sizeof *hl->slots);
  if (npartials > 0) {
    hl->partials = calloc (npartials, sizeof *hl->partials);
    hl->partial_store = malloc ((size_t) npartials * h->block);
  }
  if (!hl->slots || (npartials > 0 && (!hl->partials || !hl->partial_store))) {
    error_set ("out of memory for --blkhash blocks");
    return -1;
  }
  hl->npartials = npartials;
  for (unsigned i = 0; i < npartials; i++)
    hl->partials[i] = (struct blkhash_partial){
      .offset = PARTIAL_FREE,
      .data = hl->partial_store + (size_t) i * h->block,
    };
  r = gnutls_hash_init (&ctx, h->galgo);
  if (r < 0) {
    error_set ("--blkhash: %s", gnutls_strerror (r));
    return -1;
  }
  hl->ctx = ctx;
  return 0;
}

void
blkhash_lane_destroy (struct blkhash_lane *hl)
{
  if (hl->ctx)
    gnutls_hash_deinit ((gnutls_hash_hd_t) hl->ctx, NULL);
  free (hl->slots);
  free (hl->partials);
  free (hl->partial_store);
  hl->ctx = NULL;
  hl->slots = NULL;
  hl->partials = NULL;
  hl->partial_store = NULL;
  hl->npartials = 0;
}

static uint64_t
segment_blocks (const struct blkhash *h, uint64_t segment, uint64_t size)
{
  return (segment_length (size, segment) + h->block - 1) / h->block;
}

/* Make room for SEGMENT's digest (a stream source, whose size is not
 * known in advance): doubling, so a stream of N segments reallocates
 * log2(N / 8) times.  Called with the lock held.
 */
static bool
grow_segment_digests (struct blkhash *h, uint64_t segment)
{
  uint64_t room = h->segment_digests_room;
  size_t old_map = read_bits_bytes (room * h->granules_per_segment);
  size_t new_map;
  unsigned char *p;

  if (segment < room)
    return true;
  while (room <= segment)
    room *= 2;
  p = realloc (h->segment_digests, room * h->dlen);
  if (!p) {
    h->out_of_memory = true;
    return false;
  }
  h->segment_digests = p;
  new_map = read_bits_bytes (room * h->granules_per_segment);
  p = realloc (h->read_map, new_map);
  if (!p) {
    h->out_of_memory = true;
    return false;
  }
  memset (p + old_map, 0, new_map - old_map);
  h->read_map = p;
  h->segment_digests_room = room;
  return true;
}

/* The digest of a block of LEN bytes (a whole block, or the disk's
 * short last one) at DATA, or of zeroes if DATA is NULL, into OUT.
 */
static void
digest_block (struct blkhash *h, gnutls_hash_hd_t ctx, const char *data,
              size_t len, unsigned char *out)
{
  if (len == h->block && (!data || is_zero (data, len))) {
    memcpy (out, h->zero_digest, h->dlen);
    return;
  }
  gnutls_hash (ctx, data ? data : h->zeroes, len);
  gnutls_hash_output (ctx, out);
}

/* Digests made at a time from a slot that keeps bytes, before they are
   fed to the final hash in one call. */
#define FEED_BATCH 256

/* Feed slot S, which keeps its segment's bytes: the digests of its
 * blocks, made now, in order.  Called with the lock held.
 */
static void
feed_bytes (struct blkhash *h, struct blkhash_slot *s, uint64_t size)
{
  unsigned char batch[FEED_BATCH * BLKHASH_MAX_DIGEST];
  uint64_t len = segment_length (size, s->segment);
  uint64_t pos = 0;

  while (pos < len) {
    size_t n = 0;
    for (; n < FEED_BATCH && pos < len; n++, pos += h->block)
      digest_block (h, h->feed_block, (const char *) s->digests + pos,
                    MIN ((uint64_t) h->block, len - pos), batch + n * h->dlen);
    gnutls_hash (h->final, batch, n * h->dlen);
    gnutls_hash (h->feed_segment, batch, n * h->dlen);
  }
  if (grow_segment_digests (h, s->segment))
    gnutls_hash_output (h->feed_segment,
                        h->segment_digests + s->segment * h->dlen);
  else
    gnutls_hash_output (h->feed_segment, batch); /* reset it */
}

/* Feed every complete slot that the final hash is waiting for.  Called
 * with the lock held.
 */
static void
feed_ready (struct blkhash *h, uint64_t size)
{
  bool fed;

  do {
    fed = false;
    for (unsigned i = 0; i < h->nslots; i++) {
      struct blkhash_slot *s = &h->slots[i];

      if (s->state != SLOT_COMPLETE || s->segment != h->next_feed)
        continue;
      if (h->keep_bytes)
        feed_bytes (h, s, size);
      else {
        size_t len = segment_blocks (h, s->segment, size) * h->dlen;
        gnutls_hash (h->final, s->digests, len);
        if (grow_segment_digests (h, s->segment))
          gnutls_hash_fast (h->galgo, s->digests, len,
                            h->segment_digests + s->segment * h->dlen);
      }
      if (grow_segment_digests (h, s->segment)) {
        uint64_t first = s->segment * h->granules_per_segment;
        for (uint64_t g = 0; g < h->granules_per_segment; g++)
          if (bit_get (s->read_bits, g))
            bit_set (h->read_map, first + g);
      }
      s->state = SLOT_FREE;
      h->next_feed++;
      fed = true;
    }
  } while (fed);
}

int
blkhash_take_segment (struct blkhash_lane *hl, atomic_uint_fast64_t *next,
                      uint64_t nsegments, uint64_t *index)
{
  struct blkhash *h = hl->h;
  struct blkhash_slot *s = NULL;
  int ret = 1;

  pthread_mutex_lock (&h->lock);
  for (unsigned i = 0; i < h->nslots && !s; i++)
    if (h->slots[i].state == SLOT_FREE)
      s = &h->slots[i];
  if (!s)
    ret = -1;
  else {
    *index = atomic_fetch_add (next, 1);
    if (*index >= nsegments)
      ret = 0;
    else {
      s->state = SLOT_HASHING;
      s->segment = *index;
      s->bytes = 0;
      memset (s->read_bits, 0, read_bits_bytes (h->granules_per_segment));
      hl->slots[hl->nslots++] = s;
    }
  }
  pthread_mutex_unlock (&h->lock);
  return ret;
}

/* Whether [OFFSET, OFFSET+LEN) is whole blocks (the last one may be the
 * disk's short one): no partial block is needed for it.
 */
static bool
whole_blocks (const struct blkhash *h, uint64_t offset, uint64_t len,
              uint64_t size)
{
  return offset % h->block == 0
         && (len % h->block == 0 || offset + len >= size);
}

bool
blkhash_reserve (struct blkhash_lane *hl, uint64_t offset, uint64_t len,
                 uint64_t size)
{
  const struct blkhash *h = hl->h;
  struct blkhash_partial *free_one = NULL;
  uint64_t start = offset / h->block * h->block;

  if (hl->npartials == 0 || whole_blocks (h, offset, len, size))
    return true;
  for (unsigned i = 0; i < hl->npartials; i++) {
    if (hl->partials[i].offset == start)
      return true;
    if (hl->partials[i].offset == PARTIAL_FREE && !free_one)
      free_one = &hl->partials[i];
  }
  if (!free_one)
    return false;
  free_one->offset = start;
  free_one->bytes = 0;
  return true;
}

/* Where the digest of the block at OFFSET goes in slot S. */
static unsigned char *
digest_of (const struct blkhash *h, struct blkhash_slot *s, uint64_t offset)
{
  return s->digests
         + (offset - segment_start (s->segment)) / h->block * h->dlen;
}

/* Zeroes at [OFFSET, OFFSET+LEN), whole blocks or the pieces of one in
 * order: each block that ends in it gets the digest of a zero block.
 */
static void
add_zeroes (struct blkhash_lane *hl, struct blkhash_slot *s, uint64_t offset,
            uint64_t len, uint64_t size)
{
  struct blkhash *h = hl->h;
  uint64_t end = offset + len;

  for (uint64_t b = offset / h->block * h->block; b < end; b += h->block) {
    uint64_t block_end = MIN (b + h->block, size);
    if (block_end > end)
      break;
    digest_block (h, (gnutls_hash_hd_t) hl->ctx, NULL, block_end - b,
                  digest_of (h, s, b));
  }
}

/* A read of part of a block, DATA at [OFFSET, OFFSET+LEN): into the
 * block's partial, and the block's digest once it is whole.
 */
static void
add_piece (struct blkhash_lane *hl, struct blkhash_slot *s, uint64_t offset,
           const char *data, uint64_t len, uint64_t size)
{
  struct blkhash *h = hl->h;
  uint64_t start = offset / h->block * h->block;
  uint64_t block_len = MIN ((uint64_t) h->block, size - start);
  struct blkhash_partial *p = NULL;

  for (unsigned i = 0; i < hl->npartials && !p; i++)
    if (hl->partials[i].offset == start)
      p = &hl->partials[i];
  if (!p) {
    /* Not reserved (blkhash_reserve): a bug, reported at the end. */
    pthread_mutex_lock (&h->lock);
    h->lost_piece = true;
    pthread_mutex_unlock (&h->lock);
    return;
  }
  memcpy (p->data + (offset - start), data, len);
  p->bytes += len;
  if (p->bytes < block_len)
    return;
  digest_block (h, (gnutls_hash_hd_t) hl->ctx, p->data, block_len,
                digest_of (h, s, start));
  p->offset = PARTIAL_FREE;
}

void
blkhash_add (struct blkhash_lane *hl, uint64_t offset, const char *data,
             size_t len, uint64_t size)
{
  struct blkhash *h = hl->h;
  uint64_t segment = offset / SEGMENT_SIZE;
  struct blkhash_slot *s = NULL;
  unsigned k;

  for (k = 0; k < hl->nslots; k++)
    if (hl->slots[k]->segment == segment) {
      s = hl->slots[k];
      break;
    }
  /* A segment the lane no longer holds was complete before a retry
     had it copied again: its digests are made already. */
  if (!s)
    return;

  if (h->keep_bytes) {
    unsigned char *to = s->digests + (offset - segment_start (segment));
    if (data)
      memcpy (to, data, len);
    else
      memset (to, 0, len);
  }
  else if (!data)
    add_zeroes (hl, s, offset, len, size);
  else if (!whole_blocks (h, offset, len, size))
    add_piece (hl, s, offset, data, len, size);
  else
    for (size_t pos = 0; pos < len; pos += h->block)
      digest_block (h, (gnutls_hash_hd_t) hl->ctx, data + pos,
                    MIN ((size_t) h->block, len - pos),
                    digest_of (h, s, offset + pos));
  if (data && len > 0) {
    uint64_t start = offset - segment_start (segment);
    for (uint64_t g = start / h->granule; g <= (start + len - 1) / h->granule;
         g++)
      bit_set (s->read_bits, g);
  }
  s->bytes += len;
  if (s->bytes < segment_length (size, segment))
    return;

  /* Complete: no longer this lane's; feed it if it is its turn. */
  hl->slots[k] = hl->slots[--hl->nslots];
  pthread_mutex_lock (&h->lock);
  s->state = SLOT_COMPLETE;
  feed_ready (h, size);
  pthread_mutex_unlock (&h->lock);
}

void
blkhash_restart_segment (struct blkhash_lane *hl, uint64_t segment)
{
  for (unsigned k = 0; k < hl->nslots; k++)
    if (hl->slots[k]->segment == segment)
      hl->slots[k]->bytes = 0;
  for (unsigned i = 0; i < hl->npartials; i++)
    if (hl->partials[i].offset != PARTIAL_FREE
        && hl->partials[i].offset / SEGMENT_SIZE == segment)
      hl->partials[i].offset = PARTIAL_FREE;
}

int
blkhash_finish (struct blkhash *h, uint64_t size, char *out)
{
  unsigned char le[8], digest[BLKHASH_MAX_DIGEST];

  pthread_mutex_lock (&h->lock);
  /* A stream's last segment may have been complete only once its size
     was known (a read that found the end and nothing more). */
  for (unsigned i = 0; i < h->nslots; i++) {
    struct blkhash_slot *s = &h->slots[i];
    if (s->state == SLOT_HASHING
        && s->bytes == segment_length (size, s->segment))
      s->state = SLOT_COMPLETE;
  }
  feed_ready (h, size);
  if (h->out_of_memory) {
    pthread_mutex_unlock (&h->lock);
    error_set ("--blkhash: out of memory for segment digests");
    return -1;
  }
  if (h->lost_piece) {
    pthread_mutex_unlock (&h->lock);
    error_set ("--blkhash: internal error: a block was read in pieces "
               "with no place to gather them");
    return -1;
  }
  if (segment_start (h->next_feed) < size) {
    pthread_mutex_unlock (&h->lock);
    error_set ("--blkhash: internal error: the blocks from offset %llu on "
               "were not all hashed",
               (unsigned long long) segment_start (h->next_feed));
    return -1;
  }
  for (int i = 0; i < 8; i++)
    le[i] = size >> (8 * i);
  gnutls_hash (h->final, le, sizeof le);
  gnutls_hash_output (h->final, digest);
  pthread_mutex_unlock (&h->lock);
  for (size_t i = 0; i < h->dlen; i++)
    sprintf (out + 2 * i, "%02x", digest[i]);
  out[2 * h->dlen] = '\0';
  return 0;
}

uint64_t
blkhash_first_difference (const struct blkhash *a, const struct blkhash *b)
{
  uint64_t n = MIN (a->next_feed, b->next_feed);

  for (uint64_t i = 0; i < n; i++)
    if (memcmp (a->segment_digests + i * a->dlen,
                b->segment_digests + i * b->dlen, a->dlen)
        != 0)
      return i;
  return a->next_feed == b->next_feed ? UINT64_MAX : n;
}

uint64_t
blkhash_read_run (const struct blkhash *h, uint64_t offset, uint64_t len,
                  bool *read)
{
  uint64_t end = offset + len;
  uint64_t known = h->next_feed * h->granules_per_segment;
  uint64_t g = offset / h->granule;
  /* Past what was fed nothing is known: read it. */
  bool first = g >= known || bit_get (h->read_map, g);

  *read = first;
  for (g++; g * h->granule < end; g++)
    if ((g >= known || bit_get (h->read_map, g)) != first)
      return g * h->granule - offset;
  return len;
}

#else /* !HAVE_GNUTLS */

struct blkhash {
  int unused;
};

bool
blkhash_available (void)
{
  return false;
}

struct blkhash *
blkhash_new (int algo, uint32_t block, uint64_t size, unsigned nslots,
             uint64_t nsegments)
{
  error_set ("--blkhash is not built in (nbdcp was built without GnuTLS)");
  return NULL;
}

void
blkhash_free (struct blkhash *h)
{
}

int
blkhash_lane_init (struct blkhash_lane *hl, struct blkhash *h,
                   unsigned npartials)
{
  error_set ("--blkhash is not built in");
  return -1;
}

void
blkhash_lane_destroy (struct blkhash_lane *hl)
{
}

int
blkhash_take_segment (struct blkhash_lane *hl, atomic_uint_fast64_t *next,
                      uint64_t nsegments, uint64_t *index)
{
  return 0;
}

bool
blkhash_reserve (struct blkhash_lane *hl, uint64_t offset, uint64_t len,
                 uint64_t size)
{
  return true;
}

void
blkhash_add (struct blkhash_lane *hl, uint64_t offset, const char *data,
             size_t len, uint64_t size)
{
}

int
blkhash_finish (struct blkhash *h, uint64_t size, char *out)
{
  error_set ("--blkhash is not built in");
  return -1;
}

uint64_t
blkhash_first_difference (const struct blkhash *a, const struct blkhash *b)
{
  return UINT64_MAX;
}

void
blkhash_restart_segment (struct blkhash_lane *hl, uint64_t segment)
{
}

uint64_t
blkhash_read_run (const struct blkhash *h, uint64_t offset, uint64_t len,
                  bool *read)
{
  *read = true;
  return len;
}

#endif
