/* Unit test for sparse_runs: zero detection splits buffers correctly. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparse.h"
#include "unit.h"

/* Runs must tile [0, len) exactly, alternate, and say the truth about
 * zero runs (data runs may contain zero blocks only when runs ran out).
 */
static void
check_tiling (const char *buf, size_t len, const struct run *r, size_t n)
{
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    CHECK (r[i].offset == pos);
    CHECK (r[i].length > 0);
    if (i > 0)
      CHECK (r[i].zero != r[i - 1].zero);
    if (r[i].zero)
      for (size_t j = 0; j < r[i].length; j++)
        CHECK (buf[r[i].offset + j] == 0);
    pos += r[i].length;
  }
  CHECK (pos == len);
}

int
main (void)
{
  enum { B = 4096, LEN = 64 * B + 100 };
  char *buf = calloc (1, LEN);
  struct run runs[32];
  size_t n;

  /* All zero: one zero run. */
  n = sparse_runs (buf, LEN, B, runs, 32);
  CHECK (n == 1 && runs[0].zero);
  check_tiling (buf, LEN, runs, n);

  /* Detection off: one data run. */
  n = sparse_runs (buf, LEN, 0, runs, 32);
  CHECK (n == 1 && !runs[0].zero);

  /* Data in block 3 and in the short tail. */
  buf[3 * B + 17] = 1;
  buf[LEN - 1] = 1;
  n = sparse_runs (buf, LEN, B, runs, 32);
  CHECK (n == 4);
  CHECK (runs[0].zero && runs[0].length == 3 * B);
  CHECK (!runs[1].zero && runs[1].length == B);
  CHECK (runs[2].zero && runs[2].length == 60 * B);
  CHECK (!runs[3].zero && runs[3].length == 100);
  check_tiling (buf, LEN, runs, n);

  /* Every other block data: more runs than room; the rest is data. */
  memset (buf, 0, LEN);
  for (size_t b = 0; b < 64; b += 2)
    buf[b * B] = 1;
  n = sparse_runs (buf, LEN, B, runs, 8);
  CHECK (n >= 7 && n <= 8);
  CHECK (!runs[n - 1].zero);
  check_tiling (buf, LEN, runs, n);

  /* Room for one run only: one data run. */
  n = sparse_runs (buf, LEN, B, runs, 1);
  CHECK (n == 1 && !runs[0].zero && runs[0].length == LEN);

  free (buf);
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
