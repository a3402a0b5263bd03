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
  list->zero_past_end = end;
  list->dirty = NULL;
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

  /* Past the end, only how far the zero run from the end goes is
     kept (see extent_list_cut). */
  if (zero && end > list->end && MAX (offset, list->end) <= list->zero_past_end)
    list->zero_past_end = MAX (list->zero_past_end, end);

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
  /* Data after a small hole after data: the hole is read with the data
     around it.  (A hole that starts the list may be the end of a long
     one that started before it: it is not read.) */
  if (!zero && list->len >= 2 && last->length < list->fold_below) {
    list->len--;
    list->v[list->len - 1].length += last->length + length;
    return;
  }
  if (list->len == list->cap) {
    list->full = true;
    return;
  }
  list->v[list->len++]
      = (struct extent){ .offset = offset, .length = length, .zero = zero };
}

uint64_t
extent_list_cut (struct extent_list *list, uint64_t end)
{
  uint64_t zero_end = end;

  /* The zero extents from END on, then what was said past the end. */
  for (size_t i = 0; i < list->len; i++) {
    const struct extent *e = &list->v[i];

    if (e->offset + e->length <= end)
      continue;
    if (!e->zero || e->offset > zero_end)
      break;
    zero_end = e->offset + e->length;
  }
  if (zero_end == list->end)
    zero_end = list->zero_past_end;

  while (list->len > 0) {
    struct extent *last = &list->v[list->len - 1];

    if (last->offset < end) {
      last->length = MIN (last->length, end - last->offset);
      break;
    }
    list->len--;
  }
  list->end = end;
  list->zero_past_end = zero_end;
  return zero_end;
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
      list->v[n++]
          = (struct extent){ .offset = a, .length = b - a, .zero = e.zero };
    out_end = b;
  }
  /* Too little was known to say anything about a whole block: call the
     first block data, which is always correct. */
  if (n == 0) {
    uint64_t len = MIN (block, list->end - list->start);
    list->v[n++] = (struct extent){ .offset = list->start, .length = len };
    out_end = list->start + len;
  }
  list->len = n;
  if (out_end < list->end)
    list->full = true;
}

void
extent_list_read_on (struct extent_list *list, uint64_t request)
{
  struct extent *last = list->len ? &list->v[list->len - 1] : NULL;
  uint64_t covered = extent_list_covered (list), end;

  if (!last || covered >= list->end || request == 0)
    return;
  if (last->zero && last->length >= list->fold_below)
    return;
  if (last->zero && list->len >= 2) {
    list->len--;
    list->v[list->len - 1].length += last->length;
    last = &list->v[list->len - 1];
  }
  last->zero = false;
  /* The reads of LAST start at its offset, one REQUEST apart. */
  end = last->offset + (last->length - 1) / request * request + request;
  end = MIN (end, list->end);
  if (end > covered)
    last->length = end - last->offset;
  list->full = end < list->end;
}

/* Append [offset, offset+length) as ZERO/CLEAN to OUT, joining the
 * last extent if it is the same kind.  False if OUT is full.
 */
static bool
append (struct extent_list *out, uint64_t offset, uint64_t length, bool zero,
        bool clean)
{
  struct extent *last = out->len ? &out->v[out->len - 1] : NULL;

  if (last && last->clean == clean && (clean || last->zero == zero)) {
    last->length += length;
    return true;
  }
  if (out->len == out->cap) {
    out->full = true;
    return false;
  }
  out->v[out->len++]
      = (struct extent){ offset, length, clean ? false : zero, clean };
  return true;
}

void
extent_list_restrict (struct extent_list *out, struct extent_list *alloc,
                      struct extent_list *dirty, bool holes, uint64_t block)
{
  uint64_t start = out->start, end = out->end, pos;
  size_t i = 0, j = 0;

  if (!holes || alloc->len == 0) {
    extent_list_reset (alloc, start, end);
    extent_list_add (alloc, start, end - start, false);
  }
  if (dirty->len == 0) {
    extent_list_reset (dirty, start, end);
    extent_list_add (dirty, start, end - start, false);
  }
  extent_list_align (alloc, block);
  extent_list_align (dirty, block);
  end = MIN (extent_list_covered (alloc), extent_list_covered (dirty));

  /* Walk both lists at once: each piece between two boundaries of
     either list is clean, or whatever ALLOC says it is. */
  out->len = 0;
  out->full = false;
  for (pos = start; pos < end;) {
    const struct extent *a = &alloc->v[i], *d = &dirty->v[j];
    uint64_t a_end = a->offset + a->length, d_end = d->offset + d->length;
    uint64_t piece_end = MIN (a_end, d_end);

    piece_end = MIN (piece_end, end);
    if (!append (out, pos, piece_end - pos, a->zero, d->zero))
      return;
    pos = piece_end;
    if (pos == a_end)
      i++;
    if (pos == d_end)
      j++;
  }
  if (end < out->end)
    out->full = true;
}
