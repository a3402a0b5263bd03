/* The NBD protocol's side of qemu's dirty bitmaps: the meta context
 * that names one, the flag that marks an extent dirty, and how long a
 * name may be.  It knows nothing of the copy (bitmap.c has the checks
 * and the look before the copy; lane.c skips clean extents), so that
 * the NBD endpoint can use it without depending on anything above
 * the endpoint layer.
 */
#ifndef NBDCP_DIRTY_BITMAP_H
#define NBDCP_DIRTY_BITMAP_H

#include <stdbool.h>
#include <stddef.h>

/* qemu exports bitmap NAME as the meta context qemu:dirty-bitmap:NAME,
   whose extents have flag bit 0 set where dirty. */
#define BITMAP_CONTEXT_PREFIX "qemu:dirty-bitmap:"
#define BITMAP_STATE_DIRTY 1
/* Room for the context name: options.c bounds NAME's length. */
#define BITMAP_NAME_MAX 1024
#define BITMAP_CONTEXT_MAX (sizeof BITMAP_CONTEXT_PREFIX + BITMAP_NAME_MAX)

/* The meta context of bitmap NAME, into BUF. */
void bitmap_context (const char *name, char *buf, size_t size);

/* True if the meta context CONTEXT is a dirty bitmap's. */
bool bitmap_is_context (const char *context);

#endif
