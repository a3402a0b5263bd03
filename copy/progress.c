/* Progress display (see progress.h).  Progress counts completed work
 * (bytes written, zeroed or skipped), so it never runs ahead of the
 * disk, and it only ever moves forward.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "human_size.h"
#include "progress.h"

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Without a terminal or a known size, a plain line this often. */
#define UNKNOWN_SIZE_LINE_SECONDS 10

void
progress_init (struct progress *p, bool enabled, int fd, bool size_known)
{
  *p = (struct progress){
    .enabled = enabled,
    .unknown_size = !size_known,
    .fd = fd,
    .tty = fd == -1 && isatty (2),
    .last_percent = -1,
  };
  p->start = p->rate_time = p->last_line = now ();
}

static void
write_fd_line (struct progress *p, int percent)
{
  char line[16];
  int n = snprintf (line, sizeof line, "%d/100\n", percent);
  /* Best effort: a reader that went away must not stop the copy. */
  if (write (p->fd, line, n) != n) {
  }
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

static void
draw (struct progress *p, int percent, uint64_t done, uint64_t total,
      bool final)
{
  char d[32], t[32], r[32], eta[32] = "";
  double elapsed = now () - p->start;

  human_size_format (done, d, sizeof d);
  human_size_format (total, t, sizeof t);
  human_size_format (final && elapsed > 0 ? done / elapsed : p->rate, r,
                     sizeof r);
  if (!final && p->rate > 0) {
    unsigned s = (total - done) / p->rate;
    snprintf (eta, sizeof eta, ", ETA %u:%02u", s / 60, s % 60);
  }
  else if (final)
    snprintf (eta, sizeof eta, " in %.1fs", elapsed);
  fprintf (stderr, "%s%3d%% %s of %s, %s/s%s%s", p->tty ? "\r" : "", percent, d,
           t, r, eta, p->tty ? "\033[K" : "\n");
  if (final && p->tty)
    fputc ('\n', stderr);
  fflush (stderr);
}

/* A stream source: how much so far and how fast, nothing about the
 * end, which is not known until it comes.
 */
static void
draw_unknown (struct progress *p, uint64_t done, bool final)
{
  char d[32], r[32], when[32] = "";
  double elapsed = now () - p->start;

  human_size_format (done, d, sizeof d);
  human_size_format (final && elapsed > 0 ? done / elapsed : p->rate, r,
                     sizeof r);
  if (final)
    snprintf (when, sizeof when, " in %.1fs", elapsed);
  fprintf (stderr, "%s%s, %s/s%s%s%s", p->tty ? "\r" : "", d, r, when,
           p->tty ? "\033[K" : "", !p->tty || final ? "\n" : "");
  fflush (stderr);
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
  int percent = total ? (int) (done * 100 / total) : 100;
  double t;

  if (!p->enabled)
    return;
  t = now ();
  update_rate (p, done, t);
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
  else if (p->tty)
    draw (p, percent, done, total, false);
  else if (percent / 10 > p->last_percent / 10 || p->last_percent < 0)
    draw (p, percent, done, total, false);
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
  else if (ok)
    draw (p, 100, total, total, true);
  else if (p->tty)
    fputc ('\n', stderr);
}
