/* The meta context names of qemu's dirty bitmaps (see dirty_bitmap.h).
 * Protocol only: what an incremental copy does with them is bitmap.c's
 * and lane.c's.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "dirty_bitmap.h"

void
bitmap_context (const char *name, char *buf, size_t size)
{
  snprintf (buf, size, "%s%s", BITMAP_CONTEXT_PREFIX, name);
}

bool
bitmap_is_context (const char *context)
{
  return strncmp (context, BITMAP_CONTEXT_PREFIX,
                  strlen (BITMAP_CONTEXT_PREFIX))
         == 0;
}
