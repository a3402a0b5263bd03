/* Extent lists (see extents.h): adding what a server reports, and
 * fitting the result to a minimum block size.
 */
#include <config.h>

#include "extents.h"
#include "minmax.h"

void
extent_list_reset (struct extent_list *list, uint64_t start, uint64_t end)
{
  list->len = 0;
  list->start = start;
  list->end = end;
  list->full = false;
}

uint64_t
extent_list_covered (const struct extent_list *list)
{
  const struct extent *last = list->len ? &list->v[list->len - 1] : NULL;

  return last ? last->offset + last->length : list->start;
}

void
extent_list_add (struct extent_list *list, uint64_t offset, uint64_t length,
                 bool zero)
{
  struct extent *last = list->len ? &list->v[list->len - 1] : NULL;
  uint64_t expected = extent_list_covered (list);
  uint64_t end = offset + length;

  /* Keep only what continues the list without a gap, inside the range
     asked for: servers may answer beyond it. */
  if (list->full || offset > expected || end <= expected)
    return;
  if (end > list->end)
    end = list->end;
  if (end <= expected)
    return;
  offset = expected;
  length = end - offset;

  if (last && last->zero == zero) {
    last->length += length;
    return;
  }
  if (list->len == list->cap) {
    list->full = true;
    return;
  }
  list->v[list->len++] = (struct extent){ offset, length, zero };
}

static uint64_t
round_up (uint64_t n, uint64_t block)
{
  return (n + block - 1) & ~(block - 1);
}

static uint64_t
round_down (uint64_t n, uint64_t block)
{
  return n & ~(block - 1);
}

void
extent_list_align (struct extent_list *list, uint64_t block)
{
  uint64_t covered = extent_list_covered (list);
  uint64_t end = covered, out_end = list->start;
  size_t n = 0;

  if (block <= 1 || list->len == 0)
    return;
  if (end < list->end)
    end = round_down (end, block);

  /* Rebuild the list in place: the output never has more entries than
     the input.  Moving each boundary towards the zero side keeps the
     pieces contiguous; a zero extent inside one block vanishes and the
     data on both sides of it meet. */
  for (size_t i = 0; i < list->len; i++) {
    const struct extent e = list->v[i];
    uint64_t a = e.offset, b = e.offset + e.length;

    if (e.zero) {
      a = round_up (a, block);
      b = round_down (b, block);
    }
    else {
      a = round_down (a, block);
      b = round_up (b, block);
    }
    if (i == list->len - 1 || b > end)
      b = end;
    a = MAX (a, out_end);
    if (a >= b)
      continue;
    if (n > 0 && list->v[n - 1].zero == e.zero)
      list->v[n - 1].length = b - list->v[n - 1].offset;
    else
      list->v[n++] = (struct extent){ a, b - a, e.zero };
    out_end = b;
  }
  /* Too little was known to say anything about a whole block: call the
     first block data, which is always correct. */
  if (n == 0) {
    uint64_t len = MIN (block, list->end - list->start);
    list->v[n++] = (struct extent){ list->start, len, false };
    out_end = list->start + len;
  }
  list->len = n;
  if (out_end < list->end)
    list->full = true;
}
