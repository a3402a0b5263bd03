/* Messages: the one a failed function leaves for its caller, and the
 * notes that -v prints.
 *
 * Functions that fail return -1 after error_set(); the caller adds the
 * context it knows (operation, offset, length) when it reports.  The
 * buffer is per thread, so workers do not trample each other.
 */
#ifndef NBDCP_ERROR_H
#define NBDCP_ERROR_H

#include <stdbool.h>

void error_set (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
const char *error_get (void);

/* With VERBOSE, print "nbdcp: MESSAGE" on stderr: what nbdcp found or
 * decided (-v).
 */
void note (bool verbose, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

#endif
