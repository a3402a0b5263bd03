/* --resume: what the journal says the copy and its destination are, so
 * that a rerun can tell whether an existing journal describes it.
 */
#ifndef NBDCP_JOURNAL_IDENTITY_H
#define NBDCP_JOURNAL_IDENTITY_H

#include <stddef.h>

#include "endpoint.h"

#define JOURNAL_LINE_MAX 256

/* The copy: the endpoints as given, a local source file's device,
 * inode and modification time, the size, the segment size and BITMAP
 * (--bitmap's name, or NULL), as newline-separated lines in OUT.  A
 * journal whose lines differ is another copy's.
 */
void journal_copy_identity (const struct endpoint *src,
                            const struct endpoint *dst, const char *bitmap,
                            char *out, size_t size);

/* The destination, as one line, before anything is written to it
 * (FOUND) and as this run leaves it, its size set (LEAVES): a local
 * file's device, inode, creation time (where the file system records
 * it) and size; a block device's number and size; else (NBD) its size.
 * A journal is void unless the line it records is what a rerun finds.
 */
void journal_destination_identity (const struct endpoint *src,
                                   const struct endpoint *dst,
                                   char found[JOURNAL_LINE_MAX],
                                   char leaves[JOURNAL_LINE_MAX]);

#endif
