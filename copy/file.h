/* What the file endpoint's files share (file.c does the I/O,
 * file_open.c opens, creates and closes the file), and nothing else.
 */
#ifndef NBDCP_FILE_H
#define NBDCP_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <liburing.h>

#include "endpoint.h"
#include "ring_event.h"

/* Bytes of zeroes written at a time where fallocate cannot zero. */
#define ZERO_CHUNK (1024 * 1024)

struct file {
  int fd;        /* -1 while to_create */
  int direct_fd; /* O_DIRECT descriptor, or -1 */
  bool is_device;
  bool is_std;    /* a duplicate of stdin or stdout ('-') */
  bool to_create; /* a destination that does not exist yet: set_size
                     creates it */
  bool created;   /* created by set_size (O_EXCL): ours to remove if
                     set_size then fails */
  char *zeroes;   /* ZERO_CHUNK bytes, for fallbacks */
};

/* The early write-back requests of a connection (file.c's
 * write_back_and_drop), which no lane waits for.
 */
struct writeback {
  struct ring_event ev; /* first: completions find the struct from it */
  unsigned in_flight;   /* submitted, not yet completed */
};

struct conn {
  struct file *file;
  struct io_uring *ring;
  struct writeback writeback;
  const char *bufs; /* the lane's registered pool */
  size_t bufs_len;
  int buf_index;
};

/* The endpoint ops of file_open.c, for file.c's table. */
int file_open (struct endpoint *ep, bool writable, unsigned want);
int file_set_size (struct endpoint *ep, int64_t size);
void file_close (struct endpoint *ep, bool clean);

#endif
