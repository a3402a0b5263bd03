/* libFuzzer harness for the command line: option parsing and
 * validation (options_parse), sizes (human_size_parse), and the
 * "[ CMD ARGS ... ]" endpoint syntax.  The input is split at NUL bytes
 * into argv words.  Built and run by 'make fuzz' (see fuzz/run.sh).
 */
#include <config.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "human_size.h"
#include "options.h"

#define MAX_WORDS 64

/* Run with -close_fd_mask=3 (fuzz/run.sh does): --help and the error
 * messages would otherwise flood the fuzzer's output.
 */
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *copy = malloc (size + 1);
  char *argv[MAX_WORDS + 2];
  int argc = 0;
  struct options opts;
  int64_t n;

  if (!copy)
    return 0;
  memcpy (copy, data, size);
  copy[size] = '\0';

  argv[argc++] = (char *) "nbdcp";
  for (char *p = copy; p < copy + size && argc <= MAX_WORDS;
       p += strlen (p) + 1)
    argv[argc++] = p;
  argv[argc] = NULL;

  /* Each word on its own as a size, too. */
  for (int i = 1; i < argc; i++)
    human_size_parse (argv[i], &n);

  optind = 0; /* GNU getopt: start over, forget the last run */
  if (options_parse (argc, argv, &opts) == 0) {
    /* What parsed must be within the documented ranges. */
    if (opts.connections < 1 || opts.requests < 1 || opts.threads < 1
        || opts.threads > opts.connections || opts.request_size < 512
        || opts.request_size > MAX_REQUEST_SIZE
        || (opts.request_size & (opts.request_size - 1))
        || (opts.sparse_size > 0 && opts.sparse_size % 512) || !opts.src
        || !opts.dst)
      abort ();
  }
  free (copy);
  return 0;
}
