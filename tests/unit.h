/* What the C unit tests share: CHECK counts a condition that does not
 * hold and says where it is.  A test ends with
 * "return failures ? EXIT_FAILURE : EXIT_SUCCESS;".
 */
#ifndef NBDCP_TESTS_UNIT_H
#define NBDCP_TESTS_UNIT_H

#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf (stderr, "FAIL line %d: %s\n", __LINE__, #cond);                 \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#endif
