/* The copies nbdcp refuses because they cannot work, each found before
 * the destination is touched (see refuse.c).
 */
#ifndef NBDCP_REFUSE_H
#define NBDCP_REFUSE_H

#include <stdbool.h>

#include "endpoint.h"

/* A source larger than nbdcp copies (segment.h): refused before the
 * destination is opened or anything sized by the source allocated.
 */
int check_source_size (const struct endpoint *src);

/* True, after error_set(), if SRC and DST are the same local file. */
bool check_same_file (const struct endpoint *src, const struct endpoint *dst);

/* A read-only destination, and a copy whose size is not a multiple of
 * a side's minimum block size.  Before set_size.
 */
int check_endpoints (const struct endpoint *src, const struct endpoint *dst);

/* A destination smaller than the source.  After set_size, which has
 * given a regular file the source's size and left every other
 * destination as it was, so that this refuses only what it has not
 * touched.
 */
int check_destination_size (const struct endpoint *src,
                            const struct endpoint *dst);

#endif
