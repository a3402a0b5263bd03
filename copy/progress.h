/* Progress reporting: the -p display on stderr and the --progress=FD
 * "N/100" lines that virt-v2v and other programs parse.
 *
 * -p on a terminal draws nbdcopy's bar (a spinner, the percent, a bar of
 * 40 '*' and '-'), redrawn in place, followed by the rate and the time
 * left; it ends with a full bar at 100% and a newline.  When stderr is
 * not a terminal, -p prints one plain line for each 10% step.  When the
 * size is not known (a stream source), -p shows the bytes done and the
 * rate only, and --progress=FD writes 0/100 until the copy ends.
 */
#ifndef NBDCP_PROGRESS_H
#define NBDCP_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct progress {
  bool enabled;
  bool unknown_size; /* a stream source: no percent, no ETA */
  int fd;            /* --progress=FD, or -1 for stderr */
  bool tty;          /* stderr is a terminal: redraw one line */
  int last_percent;  /* last percent written; -1 = none */
  int last_step;     /* plain lines: the last 10% step printed, 0-10 */
  double start;      /* seconds, monotonic */
  double rate_time;  /* sample used for the rate */
  uint64_t rate_bytes;
  double rate;         /* bytes per second, smoothed */
  double last_line;    /* when the last plain line was printed (unknown size) */
  unsigned spinner;    /* the bar's spinner: which character */
  uint64_t drawn_done; /* bytes done at the last redraw of the bar */
  size_t suffix_width; /* widest rate and ETA drawn after the bar */
};

/* SIZE_KNOWN is false for a stream source, whose end is not known. */
void progress_init (struct progress *p, bool enabled, int fd, bool size_known);
/* Report DONE of TOTAL bytes; called a few times a second. */
void progress_update (void *p, uint64_t done, uint64_t total);
/* The copy is over: end the display (with 100% if it succeeded). */
void progress_finish (struct progress *p, uint64_t done, uint64_t total,
                      bool ok);

#endif
