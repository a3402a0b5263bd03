/* Unit test for extent_list_align: after fitting a server's extents to
 * a minimum block size, every boundary is on a block, no data is ever
 * called zero, and a block that was all zero stays zero.  And for
 * extent_list_restrict (--bitmap): no dirty byte is ever called clean,
 * a block that was all clean stays clean, and within the dirty ranges
 * the allocation map is kept as extent_list_align fits it.  And for
 * extent_list_cut: what it keeps is what the server said, and the zero
 * run it reports past the cut reads as zero, as far as the server said
 * so, also past the range asked for.  And for fold_below and
 * extent_list_read_on (fragmented sources): only holes shorter than
 * fold_below are made data, never data zero, and a short list is read
 * on to the end of its last request unless it ends in a long hole.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extents.h"

static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf (stderr, "FAIL line %d: %s: ", __LINE__, #cond);                 \
      fprintf (stderr, __VA_ARGS__);                                           \
      fputc ('\n', stderr);                                                    \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#define UNIT 512       /* servers answer in multiples of this */
#define MAX_UNITS 4096 /* the range asked for, at most */
#define CAP 64         /* entries in the list */

/* One byte per UNIT of the range: 1 data, 0 zero, -1 unknown. */
static signed char before[MAX_UNITS], after[MAX_UNITS];

static void
fill (signed char *map, const struct extent_list *list, uint64_t base)
{
  memset (map, -1, MAX_UNITS);
  for (size_t i = 0; i < list->len; i++)
    for (uint64_t o = list->v[i].offset;
         o < list->v[i].offset + list->v[i].length; o += UNIT)
      map[(o - base) / UNIT] = !list->v[i].zero;
}

static void
one_case (unsigned seed)
{
  struct extent store[CAP];
  struct extent_list list = { .v = store, .cap = CAP };
  uint64_t block = (uint64_t) UNIT << (rand () % 6); /* 512 .. 16K */
  uint64_t base = block * (rand () % 8);
  uint64_t units = 1 + rand () % MAX_UNITS;
  uint64_t end = base + units * UNIT;
  uint64_t pos = base;
  size_t nunits;

  /* A range ending on a block, as segments do, or a short answer. */
  if (rand () % 2)
    end = base + ((units * UNIT + block - 1) / block) * block;
  if (end - base > MAX_UNITS * UNIT)
    end -= block;
  if (end <= base)
    end = base + block;
  nunits = (end - base) / UNIT;
  extent_list_reset (&list, base, end);
  /* Runs of random length and type; sometimes stop short. */
  while (pos < end && !(rand () % 40 == 0 && pos > base)) {
    uint64_t len = UNIT * (1 + rand () % (rand () % 4 ? 8 : 200));
    extent_list_add (&list, pos, len, rand () % 2);
    pos += len;
  }
  fill (before, &list, base);
  uint64_t covered = extent_list_covered (&list);

  extent_list_align (&list, block);
  fill (after, &list, base);

  CHECK (list.len > 0, "seed %u: empty", seed);
  uint64_t expect = list.start;
  for (size_t i = 0; i < list.len; i++) {
    const struct extent *e = &list.v[i];
    uint64_t e_end = e->offset + e->length;
    CHECK (e->offset == expect, "seed %u: gap at %zu", seed, i);
    CHECK (e->length > 0, "seed %u: empty extent %zu", seed, i);
    CHECK (e->offset % block == 0, "seed %u: start %zu unaligned", seed, i);
    CHECK (e_end % block == 0 || e_end == list.end,
           "seed %u: end of %zu unaligned", seed, i);
    if (i > 0)
      CHECK (e->zero != list.v[i - 1].zero, "seed %u: not merged", seed);
    expect = e_end;
  }
  CHECK (expect <= list.end, "seed %u: beyond the range", seed);
  CHECK (expect <= covered || expect - list.start <= block,
         "seed %u: claims more than was known", seed);
  if (covered == list.end)
    CHECK (expect == list.end, "seed %u: lost the end", seed);
  else
    CHECK (expect >= (covered & ~(block - 1)) || expect - list.start == block,
           "seed %u: lost more than a block", seed);

  for (size_t u = 0; u < nunits; u++) {
    if (after[u] == -1)
      continue;
    /* No data byte may become zero. */
    CHECK (!(before[u] != 0 && after[u] == 0), "seed %u: data %zu zeroed", seed,
           u);
  }
  /* Whole blocks that were all zero, inside what is now covered, stay
     zero. */
  for (uint64_t b = list.start; b + block <= expect; b += block) {
    size_t u0 = (b - base) / UNIT, k = block / UNIT;
    int all_zero = 1;
    for (size_t j = 0; j < k; j++)
      all_zero &= before[u0 + j] == 0;
    if (all_zero)
      CHECK (after[u0] == 0, "seed %u: zero block at %llu became data", seed,
             (unsigned long long) b);
  }
}

/* Random answers of a server for [base, end): runs of random length,
   sometimes stopping short, into LIST. */
static void
random_answer (struct extent_list *list, uint64_t base, uint64_t end)
{
  uint64_t pos = base;

  while (pos < end && !(rand () % 30 == 0 && pos > base)) {
    uint64_t len = UNIT * (1 + rand () % (rand () % 4 ? 8 : 200));
    extent_list_add (list, pos, len, rand () % 2);
    pos += len;
  }
}

static void
restrict_case (unsigned seed)
{
  struct extent out_store[CAP], alloc_store[CAP], dirty_store[CAP];
  struct extent_list out = { .v = out_store, .cap = CAP };
  struct extent_list alloc = { .v = alloc_store, .cap = CAP };
  struct extent_list dirty = { .v = dirty_store, .cap = CAP };
  uint64_t block = (uint64_t) UNIT << (rand () % 6);
  uint64_t base = block * (rand () % 8);
  uint64_t end = base + block * (1 + rand () % (MAX_UNITS * UNIT / block));
  bool holes = rand () % 4 != 0;
  static signed char clean_before[MAX_UNITS], alloc_after[MAX_UNITS];

  extent_list_reset (&out, base, end);
  extent_list_reset (&alloc, base, end);
  extent_list_reset (&dirty, base, end);
  if (rand () % 10)
    random_answer (&alloc, base, end);
  if (rand () % 10)
    random_answer (&dirty, base, end);
  /* In the dirty list zero means clean: before[] is 1 where dirty. */
  fill (before, &dirty, base);
  memcpy (clean_before, before, MAX_UNITS);

  extent_list_restrict (&out, &alloc, &dirty, holes, block);
  /* ALLOC was fitted in place: what the dirty ranges must keep. */
  fill (alloc_after, &alloc, base);

  CHECK (out.len > 0, "restrict seed %u: empty", seed);
  uint64_t expect = base;
  for (size_t i = 0; i < out.len; i++) {
    const struct extent *e = &out.v[i];
    uint64_t e_end = e->offset + e->length;

    CHECK (e->offset == expect, "restrict seed %u: gap at %zu", seed, i);
    CHECK (e->length > 0, "restrict seed %u: empty extent", seed);
    CHECK (e->offset % block == 0 && (e_end % block == 0 || e_end == end),
           "restrict seed %u: extent %zu unaligned", seed, i);
    CHECK (!(e->clean && e->zero), "restrict seed %u: clean and zero", seed);
    if (i > 0)
      CHECK (e->clean != out.v[i - 1].clean
                 || (!e->clean && e->zero != out.v[i - 1].zero),
             "restrict seed %u: not merged at %zu", seed, i);
    for (uint64_t o = e->offset; o < e_end; o += UNIT) {
      size_t u = (o - base) / UNIT;
      /* A unit the bitmap called dirty, or did not answer for, is
         never skipped. */
      if (e->clean)
        CHECK (clean_before[u] == 0, "restrict seed %u: dirty %zu clean", seed,
               u);
      else if (!holes)
        CHECK (!e->zero, "restrict seed %u: hole without extents", seed);
      else
        CHECK (e->zero == (alloc_after[u] == 0),
               "restrict seed %u: unit %zu not as allocated", seed, u);
    }
    expect = e_end;
  }
  CHECK (expect <= end, "restrict seed %u: beyond the range", seed);
  /* Whole blocks all clean in what was answered stay clean. */
  for (uint64_t b = base; b + block <= expect; b += block) {
    size_t u0 = (b - base) / UNIT, k = block / UNIT;
    int all_clean = 1;
    for (size_t j = 0; j < k; j++)
      all_clean &= clean_before[u0 + j] == 0;
    for (size_t i = 0; i < out.len && all_clean; i++)
      if (out.v[i].offset <= b && b < out.v[i].offset + out.v[i].length)
        CHECK (out.v[i].clean, "restrict seed %u: clean block %llu copied",
               seed, (unsigned long long) b);
  }
}

/* A server's answer for a list ending at END, cut at CUT: the truth is
 * random runs of data and zero, the answer goes on past END or stops
 * short of it, and may be split at any unit.
 */
static void
cut_case (unsigned seed)
{
  struct extent store[CAP];
  struct extent_list list = { .v = store, .cap = CAP };
  static signed char truth[2 * MAX_UNITS];
  uint64_t end_units = 1 + rand () % MAX_UNITS;
  uint64_t answer_units = 1 + rand () % (2 * MAX_UNITS);
  uint64_t cut_units = 1 + rand () % end_units;
  uint64_t u = 0, zero_end, want;

  for (uint64_t i = 0; i < 2 * MAX_UNITS;) {
    uint64_t run = 1 + rand () % (rand () % 2 ? 8 : 1024);
    signed char data = rand () % 2;
    for (; run > 0 && i < 2 * MAX_UNITS; run--)
      truth[i++] = data;
  }
  extent_list_reset (&list, 0, end_units * UNIT);
  while (u < answer_units) {
    uint64_t n = 1;
    while (u + n < answer_units && truth[u + n] == truth[u] && rand () % 16)
      n++;
    extent_list_add (&list, u * UNIT, n * UNIT, !truth[u]);
    u += n;
  }
  zero_end = extent_list_cut (&list, cut_units * UNIT);

  CHECK (list.end == cut_units * UNIT, "cut seed %u: end not moved", seed);
  for (size_t i = 0; i < list.len; i++) {
    CHECK (list.v[i].offset + list.v[i].length <= list.end,
           "cut seed %u: extent %zu past the cut", seed, i);
    for (uint64_t o = list.v[i].offset; o < list.v[i].offset + list.v[i].length;
         o += UNIT)
      CHECK (truth[o / UNIT] == !list.v[i].zero, "cut seed %u: unit %llu wrong",
             seed, (unsigned long long) (o / UNIT));
  }
  CHECK (zero_end >= list.end, "cut seed %u: zero run before the cut", seed);
  for (uint64_t o = list.end; o < zero_end; o += UNIT)
    CHECK (truth[o / UNIT] == 0, "cut seed %u: unit %llu called zero", seed,
           (unsigned long long) (o / UNIT));
  /* With room for every extent, the run is all the answer said. */
  want = cut_units;
  while (want < answer_units && truth[want] == 0)
    want++;
  if (!list.full)
    CHECK (zero_end == want * UNIT, "cut seed %u: zero run to %llu, not %llu",
           seed, (unsigned long long) (zero_end / UNIT),
           (unsigned long long) want);
}

/* A server's answer of random runs, some shorter than the fold, added
 * to a list that folds them; then, if the answer stopped short, read
 * on with requests of REQUEST bytes.
 */
static void
fold_case (unsigned seed)
{
  struct extent store[CAP];
  struct extent_list list = { .v = store, .cap = CAP, .fold_below = 0 };
  static signed char truth[MAX_UNITS];
  uint64_t end_units = 1 + rand () % MAX_UNITS;
  uint64_t answer_units = 1 + rand () % end_units;
  uint64_t fold_units = rand () % 16, request_units = 1 + rand () % 64;
  uint64_t covered, u;
  bool long_hole_last;

  for (uint64_t i = 0; i < MAX_UNITS;) {
    uint64_t run = 1 + rand () % (rand () % 2 ? 8 : 64);
    signed char data = rand () % 2;
    for (; run > 0 && i < MAX_UNITS; run--)
      truth[i++] = data;
  }
  extent_list_reset (&list, 0, end_units * UNIT);
  list.fold_below = fold_units * UNIT;
  for (u = 0; u < answer_units;) {
    uint64_t n = 1;
    while (u + n < answer_units && truth[u + n] == truth[u] && rand () % 16)
      n++;
    extent_list_add (&list, u * UNIT, n * UNIT, !truth[u]);
    u += n;
  }
  covered = extent_list_covered (&list);
  CHECK (list.full || covered == answer_units * UNIT,
         "fold seed %u: the answer is not all kept", seed);
  for (size_t i = 0; i < list.len; i++) {
    const struct extent *e = &list.v[i];
    CHECK (i == 0 || e->offset == list.v[i - 1].offset + list.v[i - 1].length,
           "fold seed %u: extent %zu not contiguous", seed, i);
    CHECK (i == 0 || e->zero != list.v[i - 1].zero,
           "fold seed %u: extent %zu not joined", seed, i);
    CHECK (!e->zero || i == 0 || i + 1 == list.len
               || e->length >= list.fold_below,
           "fold seed %u: short hole %zu kept before data", seed, i);
    for (uint64_t o = e->offset; o < e->offset + e->length; o += UNIT) {
      uint64_t a = o / UNIT, b = a;
      CHECK (truth[a] == 0 || !e->zero, "fold seed %u: data unit %llu zero",
             seed, (unsigned long long) a);
      if (truth[a] != 0 || e->zero)
        continue;
      /* Zero called data: it must lie in a short hole after data. */
      while (a > 0 && truth[a - 1] == 0)
        a--;
      while (b + 1 < answer_units && truth[b + 1] == 0)
        b++;
      CHECK ((b + 1 - a) * UNIT < list.fold_below && a > 0,
             "fold seed %u: a hole of %llu units at %llu read", seed,
             (unsigned long long) (b + 1 - a), (unsigned long long) a);
    }
  }

  long_hole_last = list.len > 0 && list.v[list.len - 1].zero
                   && list.v[list.len - 1].length >= list.fold_below;
  extent_list_read_on (&list, request_units * UNIT);
  if (covered == list.end || long_hole_last || list.len == 0) {
    CHECK (extent_list_covered (&list) == covered,
           "fold seed %u: read on past a whole answer or a long hole", seed);
    return;
  }
  {
    const struct extent *last = &list.v[list.len - 1];
    uint64_t last_end = last->offset + last->length;
    CHECK (!last->zero, "fold seed %u: read on ends in a hole", seed);
    CHECK (last_end >= covered, "fold seed %u: list shrunk", seed);
    CHECK (last_end == list.end || last->length % (request_units * UNIT) == 0,
           "fold seed %u: read on to %llu, not a whole request from %llu", seed,
           (unsigned long long) last_end, (unsigned long long) last->offset);
    CHECK (last_end - covered <= request_units * UNIT,
           "fold seed %u: read on by more than a request", seed);
  }
}

int
main (void)
{
  /* Each kind of case on the same 20000 seeds, until over 20 failures. */
  void (*const cases[]) (unsigned)
      = { fold_case, cut_case, restrict_case, one_case };

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (unsigned seed = 1; seed <= 20000 && failures <= 20; seed++) {
      srand (seed);
      cases[i](seed);
    }
  if (failures) {
    fprintf (stderr, "%d failures\n", failures);
    return 1;
  }
  printf ("extent_list_align, extent_list_restrict, extent_list_cut, "
          "fold_below, extent_list_read_on: 20000 random lists each fitted "
          "correctly\n");
  return 0;
}
