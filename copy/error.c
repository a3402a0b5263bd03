/* Per-thread error message buffer and -v notes (see error.h). */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "error.h"

static __thread char message[512];

void
error_set (const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (message, sizeof message, fmt, ap);
  va_end (ap);
}

const char *
error_get (void)
{
  return message[0] ? message : "unknown error";
}

void
note (bool verbose, const char *fmt, ...)
{
  va_list ap;

  if (!verbose)
    return;
  fprintf (stderr, "nbdcp: ");
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
}
