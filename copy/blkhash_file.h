/* --blkhash-file=FILE: where the checksum goes (see blkhash_file.c). */
#ifndef NBDCP_BLKHASH_FILE_H
#define NBDCP_BLKHASH_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "atomic_file.h"
#include "options.h"

struct blkhash_file {
  bool open;
  bool atomic;          /* a file written through f, else written to fd */
  struct atomic_file f; /* a file replaced atomically */
  int fd;               /* a descriptor, FIFO or character device */
  const char *name;
};

/* The descriptor of this process that NAME stands for (/dev/stdout,
 * /dev/fd/N, /proc/self/fd/N, ...), or -1 if it names none.
 */
int blkhash_file_descriptor (const char *name);

/* Open --blkhash-file, if OPTS has one, before anything is written, so
 * that a FILE that cannot be written fails the copy first.  Returns 0,
 * or -1 after error_set().  Call blkhash_file_close in either case.
 */
int blkhash_file_open (struct blkhash_file *bf, const struct options *opts);

/* Write LEN bytes of LINE, the checksum, into the file (and put it in
 * place).  Returns 0, or -1 after error_set().
 */
int blkhash_file_write (struct blkhash_file *bf, const char *line, size_t len);

/* Close it; a file never written is removed (its temporary file). */
void blkhash_file_close (struct blkhash_file *bf);

#endif
