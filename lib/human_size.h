/* Parse sizes written the way people write them: "512", "1M", "4G",
 * "64KiB".  Suffixes are powers of 1024.
 */
#ifndef NBDCP_HUMAN_SIZE_H
#define NBDCP_HUMAN_SIZE_H

#include <stdint.h>

/* Parse STR into *SIZE.  Returns 0 on success, -1 if STR is empty, has
 * trailing junk, is negative, or does not fit in 63 bits.
 */
int human_size_parse (const char *str, int64_t *size);

/* Format SIZE for display into BUF ("1.5 GiB", "512 bytes").  Returns BUF. */
char *human_size_format (uint64_t size, char *buf, unsigned buflen);

#endif
