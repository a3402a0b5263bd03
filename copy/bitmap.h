/* --bitmap=NAME: incremental copies of the ranges a qemu dirty bitmap
 * marks dirty (see bitmap.c).
 */
#ifndef NBDCP_BITMAP_H
#define NBDCP_BITMAP_H

#include <stddef.h>
#include <stdint.h>

#include "dirty_bitmap.h"
#include "endpoint.h"
#include "options.h"
#include "settings.h"

/* Refuse, before anything is opened, --bitmap copies that cannot be
 * incremental: streams, and a destination file that does not exist or
 * is empty (it holds no previous copy to bring up to date).
 */
int bitmap_check_endpoints (const struct options *opts);

/* Refuse a source that cannot report a dirty bitmap (not NBD). */
int bitmap_check_source (const struct endpoint *src);

/* Refuse a destination smaller than the source, before a destination
 * file is given the source's size: it cannot hold the previous copy,
 * and extending it with zeroes would leave a copy that differs from the
 * source wherever the bitmap is clean beyond its old end.
 */
int bitmap_check_destination (const struct endpoint *src,
                              const struct endpoint *dst);

/* Look at the whole bitmap before the copy, without keeping it: sets
 * S->dirty_bytes, what the lanes will copy (for -p), and says with -v
 * how much is dirty and the granularity the extents show.
 */
int bitmap_scan (struct endpoint *src, struct settings *s);

#endif
