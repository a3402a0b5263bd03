/* Per-thread error message buffer (see error.h). */
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
