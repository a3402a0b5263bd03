/* Unit test for human_size_parse and human_size_format. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "human_size.h"

static int failures;

static void
ok (const char *str, int64_t want)
{
  int64_t got = -1;
  if (human_size_parse (str, &got) != 0 || got != want) {
    fprintf (stderr, "FAIL: '%s' -> %" PRIi64 ", want %" PRIi64 "\n", str, got,
             want);
    failures++;
  }
}

static void
bad (const char *str)
{
  int64_t got;
  if (human_size_parse (str, &got) == 0) {
    fprintf (stderr, "FAIL: '%s' accepted as %" PRIi64 "\n", str, got);
    failures++;
  }
}

int
main (void)
{
  char buf[32];

  ok ("0", 0);
  ok ("512", 512);
  ok ("1K", 1024);
  ok ("1k", 1024);
  ok ("64KiB", 65536);
  ok ("1M", 1048576);
  ok ("1MB", 1048576);
  ok ("4G", INT64_C (4294967296));
  ok ("2T", INT64_C (2199023255552));
  ok ("7E", INT64_C (7) << 60);
  ok ("010", 10); /* decimal, never octal */
  bad ("");
  bad ("-1");
  bad ("K");
  bad ("1X");
  bad ("1MM");
  bad ("1.5M");
  bad ("8E");                   /* 2^63 does not fit */
  bad ("99999999999999999999"); /* overflow */
  bad ("1 M");

  if (strcmp (human_size_format (512, buf, sizeof buf), "512 bytes") != 0
      || strcmp (human_size_format (1536, buf, sizeof buf), "1.5 KiB") != 0
      || strcmp (human_size_format (UINT64_C (4) << 30, buf, sizeof buf),
                 "4.0 GiB")
             != 0) {
    fprintf (stderr, "FAIL: human_size_format gave '%s'\n", buf);
    failures++;
  }
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
