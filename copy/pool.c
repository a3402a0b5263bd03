/* Buffer pool allocation (see pool.h). */
#include <config.h>

#include <stdlib.h>
#include <unistd.h>

#include "error.h"
#include "pool.h"

int
pool_init (struct pool *pool, unsigned count, size_t size)
{
  long page = sysconf (_SC_PAGESIZE);
  void *base;

  *pool = (struct pool){ .size = size, .count = count };
  if (posix_memalign (&base, page > 0 ? page : 4096, count * size) != 0) {
    error_set ("cannot allocate %u buffers of %zu bytes", count, size);
    return -1;
  }
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
