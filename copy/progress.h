/* Progress reporting: the -p display on stderr and the --progress=FD
 * "N/100" lines that virt-v2v and other programs parse.
 *
 * -p on a terminal draws nbdcopy's bar (a spinner, the percent, a bar of
 * 40 '*' and '-'), redrawn in place, followed by the rate and the time
 * left; it ends with a full bar at 100% and a newline.  When stderr is
 * not a terminal, -p prints one plain line for each 10% step.  When the
 * size is not known (a stream source), -p shows the bytes done and the
 * rate only, and --progress=FD writes 0/100 until the copy ends.
 *
 * Once every byte is written, zeroed or skipped, only the flushes are
 * left: the bar says "flushing" rather than sit at 99%.  --verify's pass
 * has a bar of its own, "verifying" (on a terminal only).
 *
 * --progress-json=FD writes one JSON object per line for programs: the
 * phase ("copy", "flush", "verify"), bytes done and in all, the percent,
 * the rate and the time left, at most twice a second and at each change
 * of phase, and a last line ("end") with the outcome.
 */
#ifndef NBDCP_PROGRESS_H
#define NBDCP_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "progress_out.h"

enum progress_phase { PROGRESS_COPY, PROGRESS_FLUSH, PROGRESS_VERIFY };

struct progress {
  struct progress_outs *out; /* where it is written */
  bool enabled;              /* -p or --progress=FD: the display */
  int json_fd;               /* --progress-json=FD, or -1 */
  bool verifying;            /* --verify's pass */
  int json_phase;            /* the phase of the last JSON line, -1: none */
  double json_time;          /* when it was written */
  bool unknown_size;         /* a stream source: no percent, no ETA */
  int fd;                    /* --progress=FD, or -1 for stderr */
  bool tty;                  /* stderr is a terminal: redraw one line */
  int last_percent;          /* last percent written; -1 = none */
  int last_step;             /* plain lines: the last 10% step printed, 0-10 */
  double start;              /* seconds, monotonic */
  double rate_time;          /* sample used for the rate */
  uint64_t rate_bytes;
  double rate;         /* bytes per second, smoothed */
  double last_line;    /* when the last plain line was printed (unknown size) */
  unsigned spinner;    /* the bar's spinner: which character */
  uint64_t drawn_done; /* bytes done at the last redraw of the bar */
  size_t suffix_width; /* widest rate and ETA drawn after the bar */
};

/* SIZE_KNOWN is false for a stream source, whose end is not known.
 * With FD (--progress=FD), "0/100" is written at once.
 */
void progress_init (struct progress *p, bool enabled, struct progress_outs *out,
                    bool size_known);
/* For --verify's pass: a bar on a terminal if ENABLED, and JSON lines. */
void progress_init_verify (struct progress *p, bool enabled,
                           struct progress_outs *out);
/* Report DONE of TOTAL bytes; called a few times a second. */
void progress_update (void *p, uint64_t done, uint64_t total);
/* The copy is over: end the display (with 100% if it succeeded). */
void progress_finish (struct progress *p, uint64_t done, uint64_t total,
                      bool ok);
/* --progress-json: the last line, once nbdcp's outcome is known:
 * STATUS is "ok", "failed" or "interrupted".
 */
void progress_json_end (struct progress_outs *out, const char *status,
                        double elapsed);

#endif
