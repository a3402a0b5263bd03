/* The file endpoint: regular files and block devices, read and written
 * asynchronously on the worker's own io_uring.
 *
 * Every connection shares the one open file (files are as good as
 * multi-conn: each worker has its own ring and writes its own regions).
 * Reads and writes into the lane's pool use the pool registered with the
 * ring (READ_FIXED/WRITE_FIXED), which spares the kernel from mapping
 * the pages on every request.
 *
 * Holes come from SEEK_DATA/SEEK_HOLE (regular files; devices report
 * everything as data).  Zeroing is fallocate through the ring:
 * PUNCH_HOLE|KEEP_SIZE, or ZERO_RANGE with --allocated; both work on
 * block devices too, where the kernel turns them into discard-with-
 * zeroes or write-zeroes.  Where the file system or device refuses, the
 * range is written with zeroes instead.  Flush is fdatasync via the ring;
 * to leave it little to do, each finished write starts its own
 * writeback at once (sync_file_range), as the copy goes on.  A file
 * that was empty when opened reads as zero already, so it is never
 * zeroed (starts_zero).
 *
 * Opening changes nothing, and a destination that does not exist yet
 * is created by set_size: see file_open.c, which opens, creates and
 * closes the file.
 *
 * With --direct the file is also opened O_DIRECT, and requests whose
 * offset, length and buffer are aligned use it; the rest (an unaligned
 * tail, say) go through the page cache on the ordinary descriptor.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(addr, len) ((void) 0)
#endif

#include "endpoint.h"
#include "error.h"
#include "file.h"
#include "minmax.h"
#include "ring.h"

/* O_DIRECT alignment that works on every device we expect. */
#define DIRECT_ALIGN 4096

enum file_op {
  FILE_READ,
  FILE_WRITE,
  FILE_ZERO,
  FILE_ZERO_ALLOCATE,
  FILE_FLUSH
};

static void
writeback_started (struct ring_event *ev, int res)
{
  struct writeback *wb = (struct writeback *) ev;

  /* A failure to write back early is caught by the flush at the end,
     which writes back whatever is left: only count it. */
  (void) res;
  wb->in_flight--;
}

/* Early write-back hold the file open while they run: the worker lets
 * them finish (see worker_run).
 */
static bool
file_busy (struct conn *c)
{
  return c->writeback.in_flight > 0;
}

static void
file_attach (struct conn *c, struct io_uring *ring, const char *bufs,
             size_t bufs_len, int buf_index)
{
  c->writeback.ev.handle = writeback_started;
  c->writeback.in_flight = 0;
  c->ring = ring;
  c->bufs = bufs;
  c->bufs_len = bufs_len;
  c->buf_index = buf_index;
}

static bool
in_pool (const struct conn *c, const char *buf, uint64_t len)
{
  return c->buf_index >= 0 && buf >= c->bufs
         && buf + len <= c->bufs + c->bufs_len;
}

/* The descriptor for a request: O_DIRECT when it is aligned. */
static int
fd_for (const struct conn *c, const char *buf, uint64_t len, uint64_t offset)
{
  const struct file *f = c->file;

  if (f->direct_fd >= 0 && offset % DIRECT_ALIGN == 0 && len % DIRECT_ALIGN == 0
      && (uintptr_t) buf % DIRECT_ALIGN == 0)
    return f->direct_fd;
  return f->fd;
}

static void file_done (struct ring_event *ev, int res);

/* Queue the (rest of the) request in IO on the ring. */
static void
submit (struct op_io *io)
{
  struct conn *c = io->conn;
  struct io_uring_sqe *sqe = ring_get_sqe (c->ring);
  char *buf = io->buf + io->done;
  uint64_t offset = io->offset + io->done;
  unsigned len = io->len - io->done;
  int fd = fd_for (c, buf, len, offset);

  switch (io->kind) {
  case FILE_READ:
    if (in_pool (c, buf, len))
      io_uring_prep_read_fixed (sqe, fd, buf, len, offset, c->buf_index);
    else
      io_uring_prep_read (sqe, fd, buf, len, offset);
    break;
  case FILE_WRITE:
    if (in_pool (c, buf, len))
      io_uring_prep_write_fixed (sqe, fd, buf, len, offset, c->buf_index);
    else
      io_uring_prep_write (sqe, fd, buf, len, offset);
    break;
  case FILE_ZERO:
    io_uring_prep_fallocate (sqe, c->file->fd,
                             FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                             io->offset, io->len);
    break;
  case FILE_ZERO_ALLOCATE:
    io_uring_prep_fallocate (sqe, c->file->fd, FALLOC_FL_ZERO_RANGE, io->offset,
                             io->len);
    break;
  case FILE_FLUSH:
    io_uring_prep_fsync (sqe, c->file->fd, IORING_FSYNC_DATASYNC);
    break;
  }
  io_uring_sqe_set_data (sqe, &io->ev);
}

static int
start (struct conn *c, struct op *op, int kind, char *buf, uint64_t len,
       uint64_t offset)
{
  struct op_io *io = op_io (op);

  if (!c->ring) {
    error_set ("file connection used before its worker attached it");
    return -1;
  }
  *io = (struct op_io){
    .ev.handle = file_done,
    .op = op,
    .conn = c,
    .buf = buf,
    .offset = offset,
    .len = len,
    .kind = kind,
  };
  submit (io);
  return 0;
}

/* fallocate could not zero here: write zeroes, synchronously (this is
 * the rare path of file systems and devices without hole punching).
 */
static int
write_zeroes (struct file *f, uint64_t offset, uint64_t len)
{
  while (len > 0) {
    ssize_t n
        = pwrite (f->fd, f->zeroes, MIN (len, (uint64_t) ZERO_CHUNK), offset);
    if (n == -1 && errno == EINTR)
      continue;
    if (n <= 0)
      return n == 0 ? EIO : errno;
    offset += n;
    len -= n;
  }
  return 0;
}

/* Write a finished write back to the disk now, and then drop it from
 * the page cache, rather than leaving gigabytes of dirty pages for the
 * flush at the end: the disk works while the copy goes on, and the
 * copy does not push everything else out of the page cache.  It also
 * keeps the copy on the same few pages of memory, which matters on a VM
 * whose balloon takes back memory the guest has freed (see
 * docs/performance.md).  The two requests are linked, so the pages are
 * dropped only once written (dirty pages would not be dropped anyway;
 * if the ring must be submitted between the two, they run unlinked and
 * the drop may miss some).  Nothing waits for them; durability is
 * still the flush's.
 */
static void
write_back_and_drop (struct op_io *io)
{
  struct conn *c = io->conn;
  struct io_uring_sqe *sqe;

  if (fd_for (c, io->buf, io->len, io->offset) == c->file->direct_fd)
    return; /* O_DIRECT: nothing in the page cache */
  sqe = ring_get_sqe (c->ring);
  io_uring_prep_sync_file_range (sqe, c->file->fd, io->len, io->offset,
                                 SYNC_FILE_RANGE_WAIT_BEFORE
                                     | SYNC_FILE_RANGE_WRITE
                                     | SYNC_FILE_RANGE_WAIT_AFTER);
  io_uring_sqe_set_data (sqe, &c->writeback.ev);
  c->writeback.in_flight++;
  sqe->flags |= IOSQE_IO_LINK;
  sqe = ring_get_sqe (c->ring);
  io_uring_prep_fadvise (sqe, c->file->fd, io->offset, io->len,
                         POSIX_FADV_DONTNEED);
  io_uring_sqe_set_data (sqe, &c->writeback.ev);
  c->writeback.in_flight++;
}

static void
file_done (struct ring_event *ev, int res)
{
  struct op_io *io = (struct op_io *) ev;

  if (res == -EINTR || res == -EAGAIN) {
    submit (io);
    return;
  }
  if ((io->kind == FILE_ZERO || io->kind == FILE_ZERO_ALLOCATE)
      && (res == -EOPNOTSUPP || res == -EINVAL || res == -ENODEV)) {
    op_complete (io->op, write_zeroes (io->conn->file, io->offset, io->len));
    return;
  }
  if (res < 0) {
    op_complete (io->op, -res);
    return;
  }
  if (io->kind == FILE_READ || io->kind == FILE_WRITE) {
    if (res == 0) {
      /* The file is shorter than it was when we opened it. */
      op_complete (io->op, EIO);
      return;
    }
    /* The kernel filled the buffer behind valgrind's back (a no-op
       when not running under valgrind). */
    if (io->kind == FILE_READ)
      VALGRIND_MAKE_MEM_DEFINED (io->buf + io->done, res);
    io->done += res;
    if (io->done < io->len) {
      submit (io); /* a short read or write: do the rest */
      return;
    }
    if (io->kind == FILE_WRITE)
      write_back_and_drop (io);
  }
  op_complete (io->op, 0);
}

static int
file_read (struct conn *c, void *buf, uint32_t len, uint64_t offset,
           struct op *op)
{
  return start (c, op, FILE_READ, buf, len, offset);
}

static int
file_write (struct conn *c, const void *buf, uint32_t len, uint64_t offset,
            struct op *op)
{
  /* Never written through: the ring only reads from it. */
  return start (c, op, FILE_WRITE, (char *) buf, len, offset);
}

static int
file_zero (struct conn *c, uint64_t len, uint64_t offset, bool allocate,
           struct op *op)
{
  return start (c, op, allocate ? FILE_ZERO_ALLOCATE : FILE_ZERO, NULL, len,
                offset);
}

static int
file_flush (struct conn *c, struct op *op)
{
  return start (c, op, FILE_FLUSH, NULL, 0, 0);
}

/* SEEK_DATA/SEEK_HOLE are answered from the file system's metadata
 * without I/O, so they run right here and the op finishes at once.
 */
static int
file_extents (struct conn *c, uint64_t len, uint64_t offset,
              struct extent_list *list, struct op *op)
{
  int fd = c->file->fd;
  uint64_t end = offset + len, pos = offset;

  while (pos < end && !list->full) {
    off_t data = lseek (fd, pos, SEEK_DATA);
    off_t hole;

    if (data == -1 && errno == ENXIO)
      data = end; /* nothing but hole up to the end of the file */
    else if (data == -1) {
      error_set ("lseek SEEK_DATA: %s", strerror (errno));
      return -1;
    }
    if ((uint64_t) data > pos) {
      extent_list_add (list, pos, MIN ((uint64_t) data, end) - pos, true);
      pos = MIN ((uint64_t) data, end);
      continue;
    }
    hole = lseek (fd, pos, SEEK_HOLE);
    if (hole == -1) {
      error_set ("lseek SEEK_HOLE: %s", strerror (errno));
      return -1;
    }
    extent_list_add (list, pos, MIN ((uint64_t) hole, end) - pos, false);
    pos = MIN ((uint64_t) hole, end);
  }
  op_complete (op, 0);
  return 0;
}

const struct endpoint_ops file_endpoint_ops = {
  .kind = "file",
  .open = file_open,
  .read = file_read,
  .write = file_write,
  .zero = file_zero,
  .extents = file_extents,
  .flush = file_flush,
  .attach = file_attach,
  .set_size = file_set_size,
  .busy = file_busy,
  .close = file_close,
};
