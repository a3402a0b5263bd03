/* Human-readable sizes: parsing for options, formatting for messages. */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "human_size.h"

/* Returns the power of 1024 a suffix letter stands for, or -1. */
static int
suffix_power (char c)
{
  static const char letters[] = "KMGTPE";
  const char *p = strchr (letters, toupper ((unsigned char) c));
  return c && p ? (int) (p - letters) + 1 : -1;
}

int
human_size_parse (const char *str, int64_t *size)
{
  const char *p = str;
  char *end;
  unsigned long long n;
  int power = 0;

  while (isspace ((unsigned char) *p))
    p++;
  /* strtoull accepts "-1" and wraps it; sizes are never negative. */
  if (!isdigit ((unsigned char) *p))
    return -1;
  errno = 0;
  n = strtoull (p, &end, 10);
  if (errno != 0 || end == p)
    return -1;
  if (*end) {
    power = suffix_power (*end);
    if (power < 0)
      return -1;
    end++;
    /* Accept "K", "KB" and "KiB" alike: all mean 1024. */
    if (*end == 'i')
      end++;
    if (*end == 'B')
      end++;
  }
  if (*end)
    return -1;
  while (power-- > 0) {
    if (n > (unsigned long long) INT64_MAX / 1024)
      return -1;
    n *= 1024;
  }
  if (n > (unsigned long long) INT64_MAX)
    return -1;
  *size = (int64_t) n;
  return 0;
}

char *
human_size_format (uint64_t size, char *buf, unsigned buflen)
{
  static const char *units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
  double v = size;
  int u = -1;

  if (size < 1024) {
    snprintf (buf, buflen, "%u bytes", (unsigned) size);
    return buf;
  }
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  snprintf (buf, buflen, "%.1f %s", v, units[u]);
  return buf;
}
