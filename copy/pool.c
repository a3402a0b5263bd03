/* Buffer pool allocation (see pool.h). */
#include <config.h>

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "error.h"
#include "pool.h"

/* The x86-64 and arm64 (4K pages) transparent huge page. */
#define HUGE_PAGE ((size_t) 2 << 20)

int
pool_init (struct pool *pool, unsigned count, size_t size)
{
  long page = sysconf (_SC_PAGESIZE);
  void *base;

  *pool = (struct pool){ .size = size, .count = count };
  size_t bytes = count * size;
  size_t align = page > 0 ? (size_t) page : 4096;

  /* A pool of several huge pages is asked for in huge pages: its
     first use then faults once per 2 MiB, not once per 4 KiB, which
     is much of a short copy's CPU (see docs/performance.md).  A
     smaller pool would leave most of a huge page unused. */
  if (bytes >= 4 * HUGE_PAGE)
    align = HUGE_PAGE;
  if (posix_memalign (&base, align, bytes) != 0) {
    error_set ("cannot allocate %u buffers of %zu bytes", count, size);
    return -1;
  }
  if (align == HUGE_PAGE)
    madvise (base, bytes, MADV_HUGEPAGE); /* only advice: errors ignored */
  pool->base = base;
  pool->free = malloc (count * sizeof *pool->free);
  if (!pool->free) {
    free (base);
    error_set ("out of memory");
    return -1;
  }
  /* Hand out low indexes first: the same few buffers stay hot in cache
     when the pipeline is not full. */
  for (unsigned i = 0; i < count; i++)
    pool->free[i] = count - 1 - i;
  pool->nfree = count;
  return 0;
}

void
pool_destroy (struct pool *pool)
{
  free (pool->base);
  free (pool->free);
  pool->base = NULL;
  pool->free = NULL;
}
