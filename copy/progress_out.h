/* Where progress is written (-p on stderr, --progress=FD,
 * --progress-json=FD): descriptors checked before anything is opened,
 * and written to without ever blocking the copy or its exit
 * (progress_out.c).
 */
#ifndef NBDCP_PROGRESS_OUT_H
#define NBDCP_PROGRESS_OUT_H

#include <stdbool.h>
#include <stddef.h>

/* The unwritten end of the last line a slow reader took only part of,
   and a last line after it: progress lines are shorter than half. */
#define PROGRESS_OUT_PENDING 1024

struct progress_out {
  int fd;        /* as given, or -1: nothing is written */
  int write_fd;  /* what is written to: FD, or a non-blocking
                    description of the same pipe or terminal */
  bool own;      /* write_fd was opened here */
  bool socket;   /* written with send (MSG_DONTWAIT) */
  bool may_wait; /* a blocking descriptor: poll before writing */
  char pending[PROGRESS_OUT_PENDING];
  size_t npending;
  unsigned dropped; /* lines left out because the reader was slow */
};

/* All of a run's progress outputs. */
struct progress_outs {
  struct progress_out err;  /* -p on stderr */
  struct progress_out fd;   /* --progress=FD */
  struct progress_out json; /* --progress-json=FD */
};

/* Before anything is opened: refuse OPTION's descriptor FD (-1: not
 * given) if it is not open for writing, or if it is where the copy's
 * data goes or comes from: standard output with the destination "-",
 * standard input with the source "-", or the file SRC or DST names.
 * Returns -1 after error_set().
 */
int progress_out_check (int fd, const char *option, const char *src,
                        const char *dst);

/* Check (progress_out_check) and prepare a run's outputs: stderr, and
 * PROGRESS_FD and JSON_FD (-1: not given), for a copy from SRC to DST
 * (as given; NULL for a [ CMD ]).  -1 after error_set() if refused:
 * then OUTS writes nothing.
 */
int progress_outs_open (struct progress_outs *outs, int progress_fd,
                        int json_fd, const char *src, const char *dst);
void progress_outs_close (struct progress_outs *outs);

/* Prepare O for descriptor FD (-1: none). */
void progress_out_open (struct progress_out *o, int fd);
void progress_out_close (struct progress_out *o);

/* Write LINE (N bytes) if the reader can take it now, else drop it:
 * never blocks.  A line the reader took only part of is finished
 * before the next one is written.
 */
void progress_out_line (struct progress_out *o, const char *line, size_t n);
/* The same, but waiting up to WAIT_MS for a slow reader (a signal ends
 * the wait): for a last line that matters.
 */
void progress_out_last (struct progress_out *o, const char *line, size_t n,
                        int wait_ms);

#endif
