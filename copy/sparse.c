/* Zero detection in block-sized steps (see sparse.h). */
#include <config.h>

#include "is_zero.h"
#include "minmax.h"
#include "sparse.h"

size_t
sparse_runs (const char *data, size_t len, size_t block, struct run *runs,
             size_t max_runs)
{
  size_t n = 0;

  if (len == 0 || max_runs == 0)
    return 0;
  if (block == 0 || max_runs < 2) {
    runs[0] = (struct run){ 0, len, false };
    return 1;
  }
  for (size_t pos = 0; pos < len;) {
    size_t step = MIN (block, len - pos);
    bool zero = is_zero (data + pos, step);

    if (n > 0 && runs[n - 1].zero == zero)
      runs[n - 1].length += step;
    else if (n == max_runs - 1 && n > 0) {
      /* Out of runs: the rest goes as one data run. */
      if (runs[n - 1].zero)
        runs[n++] = (struct run){ pos, len - pos, false };
      else
        runs[n - 1].length += len - pos;
      return n;
    }
    else
      runs[n++] = (struct run){ pos, step, zero };
    pos += step;
  }
  return n;
}
