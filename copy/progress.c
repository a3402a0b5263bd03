/* Progress display (see progress.h).  Progress counts completed work
 * (bytes written, zeroed or skipped), so it never runs ahead of the
 * disk, and it only ever moves forward.  100% is shown only by
 * progress_finish, once the copy has been flushed.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "clock.h"
#include "human_size.h"
#include "progress.h"
#include "progress_out.h"

/* Without a terminal or a known size, a plain line this often. */
#define UNKNOWN_SIZE_LINE_SECONDS 10

/* The bar, as nbdcopy draws it: a spinner character, the percent in
   three columns, and BAR_WIDTH columns of '*' (done) and '-' (to do)
   in brackets.  The spinner turns one step at each redraw that follows
   some completed work, so a copy that is stuck has a still spinner;
   a finished copy shows a full block. */
#define BAR_WIDTH 40
static const char *const spinner_chars[] = {
  "\u259d", "\u2590", "\u2597", "\u2583",
  "\u2596", "\u258d", "\u2598", "\u2580",
};
#define SPINNER_DONE "\u2588"
#define NR_SPINNER (sizeof spinner_chars / sizeof spinner_chars[0])
/* Columns the bar takes: spinner, space, "NNN%", space, "[", bar, "]". */
#define BAR_COLUMNS (1 + 1 + 4 + 1 + 1 + BAR_WIDTH + 1)

/* Progress waits for no reader (progress_out.c): a line a reader
   cannot take now is dropped, but the last ones wait this long. */
#define LAST_LINE_WAIT_MS 1000

/* LINE (from snprintf: N may be negative or too long) to O, dropped if
   the reader is slow, unless it is the LAST line. */
static void
emit (struct progress_out *o, const char *line, int n, size_t size, bool last)
{
  if (n <= 0)
    return;
  if ((size_t) n >= size)
    n = size - 1;
  if (last)
    progress_out_last (o, line, n, LAST_LINE_WAIT_MS);
  else
    progress_out_line (o, line, n);
}

static void
write_fd_line (struct progress *p, int percent)
{
  char line[16];

  emit (&p->out->fd, line, snprintf (line, sizeof line, "%d/100\n", percent),
        sizeof line, percent == 100);
}

/* The display goes to FD (--progress=FD), or stderr if -1. */
static void
progress_setup (struct progress *p, bool enabled, struct progress_outs *out,
                int fd, bool size_known)
{
  *p = (struct progress){
    .enabled = enabled,
    .out = out,
    .json_fd = out->json.fd,
    .json_phase = -1,
    .unknown_size = !size_known,
    .fd = fd,
    .tty = fd == -1 && isatty (2),
    .last_percent = -1,
  };
  p->start = p->rate_time = p->last_line = now_seconds ();
  /* As nbdcopy: 0/100 before anything is copied. */
  if (enabled && p->fd >= 0) {
    write_fd_line (p, 0);
    p->last_percent = 0;
  }
}

void
progress_init_verify (struct progress *p, bool enabled,
                      struct progress_outs *out)
{
  /* A bar on stderr, whatever --progress=FD said. */
  progress_setup (p, enabled && isatty (2), out, -1, true);
  p->verifying = true;
}

void
progress_init (struct progress *p, bool enabled, struct progress_outs *out,
               bool size_known)
{
  progress_setup (p, enabled, out, out->fd.fd, size_known);
}

static const char *const phase_names[] = {
  [PROGRESS_COPY] = "copy",
  [PROGRESS_FLUSH] = "flush",
  [PROGRESS_VERIFY] = "verify",
};

/* --progress-json: a line for PHASE at T, if the phase changed or half
   a second has passed.  ETA and total are null while not known. */
static void
write_json (struct progress *p, enum progress_phase phase, uint64_t done,
            uint64_t total, double rate, double t)
{
  char line[320], eta[32] = "null", all[32] = "null";
  int percent = total ? (int) ((double) done * 100 / total) : 100;

  if ((int) phase == p->json_phase && t - p->json_time < 0.5)
    return;
  p->json_phase = phase;
  p->json_time = t;
  if (!p->unknown_size) {
    snprintf (all, sizeof all, "%" PRIu64, total);
    if (rate > 0 && done <= total)
      snprintf (eta, sizeof eta, "%.1f", (total - done) / rate);
  }
  if (p->unknown_size || percent > 99)
    percent = p->unknown_size ? 0 : 99; /* 100 only at the end */
  emit (&p->out->json, line,
        snprintf (line, sizeof line,
                  "{\"phase\": \"%s\", \"bytes_done\": %" PRIu64
                  ", \"bytes_total\": %s, \"percent\": %d"
                  ", \"bytes_per_second\": %.0f, \"eta_seconds\": %s"
                  ", \"elapsed_seconds\": %.1f}\n",
                  phase_names[phase], done, all, percent, rate, eta,
                  t - p->start),
        sizeof line, false);
}

void
progress_json_end (struct progress_outs *out, const char *status,
                   double elapsed)
{
  char line[128];

  emit (&out->json, line,
        snprintf (line, sizeof line,
                  "{\"phase\": \"end\", \"status\": \"%s\""
                  ", \"elapsed_seconds\": %.1f}\n",
                  status, elapsed),
        sizeof line, true);
}

static void
update_rate (struct progress *p, uint64_t done, double t)
{
  double dt = t - p->rate_time;

  if (dt < 0.5)
    return;
  double sample = (done - p->rate_bytes) / dt;
  p->rate = p->rate == 0 ? sample : 0.7 * p->rate + 0.3 * sample;
  p->rate_time = t;
  p->rate_bytes = done;
}

/* The bytes per second over the whole copy so far: not zero once any
   bytes have moved. */
static double
average_rate (const struct progress *p, uint64_t done)
{
  double elapsed = now_seconds () - p->start;
  return elapsed > 0 ? done / elapsed : 0;
}

/* ", ETA M:SS" for TOTAL - DONE bytes at RATE, or "" if RATE is 0. */
static void
format_eta (char *buf, size_t size, uint64_t done, uint64_t total, double rate)
{
  *buf = '\0';
  if (rate > 0 && done <= total) {
    /* Rounded up: 0:00 only when nothing is left.  Capped, so that a
       copy that has barely started cannot overflow it. */
    double left = (total - done) / rate + 0.999;
    unsigned s = left < 6000000 ? left : 6000000;
    snprintf (buf, size, ", ETA %u:%02u", s / 60, s % 60);
  }
}

/* The terminal's width, or 0 if not known. */
static unsigned
terminal_columns (void)
{
  struct winsize ws;
  return ioctl (2, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

/* Draw the bar for DONE of TOTAL bytes, then go back to the start of
   the line (or, when FINAL, to the next line).  What follows the bar
   is padded to the widest drawn so far, to cover what a longer one
   left, and left out if the line would not fit the terminal. */
static void
draw_bar (struct progress *p, int percent, uint64_t done, uint64_t total,
          enum progress_phase phase, bool final)
{
  char bar[BAR_WIDTH + 1], suffix[64] = "", r[32], eta[32], line[256];
  const char *spin;
  unsigned stars, columns;
  int width;
  double rate;

  /* The percent shown, in columns (rounded): the bar and the number
     agree. */
  stars = (percent * BAR_WIDTH + 50) / 100;
  if (stars > BAR_WIDTH || final)
    stars = BAR_WIDTH;
  if (!final && stars == BAR_WIDTH)
    stars = BAR_WIDTH - 1; /* a full bar only once flushed */
  memset (bar, '*', stars);
  memset (bar + stars, '-', BAR_WIDTH - stars);
  bar[BAR_WIDTH] = '\0';

  if (final)
    spin = SPINNER_DONE;
  else {
    if (done != p->drawn_done)
      p->spinner = (p->spinner + 1) % NR_SPINNER;
    p->drawn_done = done;
    spin = spinner_chars[p->spinner];
  }

  if (final) {
    double elapsed = now_seconds () - p->start;
    human_size_format (average_rate (p, done), r, sizeof r);
    snprintf (suffix, sizeof suffix, "%s %s/s in %.1fs",
              p->verifying ? " verified," : "", r, elapsed);
  }
  else if (phase == PROGRESS_FLUSH)
    snprintf (suffix, sizeof suffix, " flushing");
  else {
    /* Before the first sample of the smoothed rate, the average. */
    rate = p->rate > 0 ? p->rate : average_rate (p, done);
    if (rate > 0) {
      human_size_format (rate, r, sizeof r);
      format_eta (eta, sizeof eta, done, total, rate);
      snprintf (suffix, sizeof suffix, "%s %s/s%s",
                p->verifying ? " verifying," : "", r, eta);
    }
  }
  if (strlen (suffix) > p->suffix_width)
    p->suffix_width = strlen (suffix);
  width = p->suffix_width;
  columns = terminal_columns ();
  if (columns > 0 && BAR_COLUMNS + p->suffix_width >= columns) {
    *suffix = '\0';
    width = 0;
  }
  emit (&p->out->err, line,
        snprintf (line, sizeof line, "%s %3d%% [%s]%-*s%s", spin, percent, bar,
                  width, suffix, final ? "\n" : "\r"),
        sizeof line, final);
}

/* Without a terminal: one line for each 10% step that DONE has passed
   since the last line (several at once if the copy jumped), up to
   LAST_STEP.  The rate is over the whole copy so far, measured now. */
static void
print_steps (struct progress *p, uint64_t done, uint64_t total, int last_step,
             bool final)
{
  char t[32], r[32], eta[32], line[160];
  double rate = average_rate (p, done);

  human_size_format (total, t, sizeof t);
  human_size_format (rate, r, sizeof r);
  for (int step = p->last_step + 1; step <= last_step; step++) {
    if (step == 10 && final)
      emit (&p->out->err, line,
            snprintf (line, sizeof line, "100%% of %s, %s/s in %.1fs\n", t, r,
                      now_seconds () - p->start),
            sizeof line, true);
    else {
      format_eta (eta, sizeof eta, done, total, rate);
      emit (&p->out->err, line,
            snprintf (line, sizeof line, "%d%% of %s, %s/s%s\n", step * 10, t,
                      r, eta),
            sizeof line, false);
    }
    p->last_step = step;
  }
}

/* A stream source: how much so far and how fast, nothing about the
 * end, which is not known until it comes.
 */
static void
draw_unknown (struct progress *p, uint64_t done, bool final)
{
  char d[32], r[32], when[32] = "", line[160];
  double elapsed = now_seconds () - p->start;

  human_size_format (done, d, sizeof d);
  human_size_format (final && elapsed > 0 ? done / elapsed : p->rate, r,
                     sizeof r);
  if (final)
    snprintf (when, sizeof when, " in %.1fs", elapsed);
  emit (&p->out->err, line,
        snprintf (line, sizeof line, "%s%s, %s/s%s%s%s", p->tty ? "\r" : "", d,
                  r, when, p->tty ? "\033[K" : "",
                  !p->tty || final ? "\n" : ""),
        sizeof line, final);
}

static void
update_unknown (struct progress *p, uint64_t done, double t)
{
  if (p->fd >= 0) {
    /* Nothing to measure against: 0/100 until 100/100 at the end. */
    if (p->last_percent < 0)
      write_fd_line (p, 0);
    p->last_percent = 0;
  }
  else if (p->tty)
    draw_unknown (p, done, false);
  else if (t - p->last_line >= UNKNOWN_SIZE_LINE_SECONDS) {
    draw_unknown (p, done, false);
    p->last_line = t;
  }
}

void
progress_update (void *arg, uint64_t done, uint64_t total)
{
  struct progress *p = arg;
  int percent = total ? (int) ((double) done * 100 / total) : 100;
  enum progress_phase phase = PROGRESS_COPY;
  double t;

  if (!p->enabled && p->json_fd < 0)
    return;
  t = now_seconds ();
  update_rate (p, done, t);
  /* Every byte done, not yet finished: only the flushes are left. */
  if (p->verifying)
    phase = PROGRESS_VERIFY;
  else if (!p->unknown_size && total && done >= total)
    phase = PROGRESS_FLUSH;
  if (p->json_fd >= 0)
    write_json (p, phase, done, total,
                p->rate > 0 ? p->rate : average_rate (p, done), t);
  if (!p->enabled)
    return;
  if (p->unknown_size) {
    update_unknown (p, done, t);
    return;
  }
  /* 100 is written by progress_finish only, once the flush is done. */
  if (percent >= 100)
    percent = 99;
  if (p->fd >= 0) {
    if (percent > p->last_percent)
      write_fd_line (p, percent);
  }
  else if (total == 0) {
    /* An empty copy: nothing to show until it is over (then, without
       a terminal, all ten lines at once). */
  }
  else if (p->tty)
    draw_bar (p, percent, done, total, phase, false);
  else
    print_steps (p, done, total, percent / 10, false);
  if (percent > p->last_percent)
    p->last_percent = percent;
}

void
progress_finish (struct progress *p, uint64_t done, uint64_t total, bool ok)
{
  if (!p->enabled)
    return;
  if (p->fd >= 0) {
    if (ok)
      write_fd_line (p, 100);
    return;
  }
  if (ok && p->unknown_size)
    draw_unknown (p, total, true);
  else if (ok && p->tty)
    draw_bar (p, 100, total, total, PROGRESS_COPY, true);
  else if (ok)
    print_steps (p, total, total, 10, true);
  else if (p->tty)
    emit (&p->out->err, "\n", 1, 2, true);
}
