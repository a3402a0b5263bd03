/* The buffer pool: COUNT page-aligned buffers of SIZE bytes, allocated
 * once before copying starts and handed out by index.  pool_get and
 * pool_put are O(1) and never allocate.
 */
#ifndef NBDCP_POOL_H
#define NBDCP_POOL_H

#include <stddef.h>

struct pool {
  char *base; /* COUNT * SIZE bytes, page aligned */
  size_t size;
  unsigned count;
  unsigned nfree;
  unsigned *free; /* stack of free buffer indexes */
};

int pool_init (struct pool *pool, unsigned count, size_t size);
void pool_destroy (struct pool *pool);

/* Returns a free buffer's index, or -1 if every buffer is in use. */
static inline int
pool_get (struct pool *pool)
{
  return pool->nfree ? (int) pool->free[--pool->nfree] : -1;
}

static inline void
pool_put (struct pool *pool, unsigned index)
{
  pool->free[pool->nfree++] = index;
}

static inline char *
pool_data (const struct pool *pool, unsigned index)
{
  return pool->base + (size_t) index * pool->size;
}

#endif
