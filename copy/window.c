/* The copy's in-flight window (see window.h): the controller only.  It
 * sees buffer times, never requests or servers.
 */
#include "window.h"

#include "minmax.h"

/* Buffers per lane in a phase: the rate over fewer is mostly noise
   (see docs/performance.md). */
#define PHASE_SAMPLES_PER_LANE 32
/* The smaller of two windows is kept only if it moved this much more
   data per second: too small a window can halve a latency-bound copy,
   too large a one costs a CPU-bound copy less (docs/performance.md). */
#define GAIN 1.1
/* Phases at the start that are not measured. */
#define WARM_UP_PHASES 2
/* After a trial failed, phases before the next one: 2, then twice as
   many after each failure in a row, up to this.  A short copy must not
   spend its life at the wrong window because its first trial failed. */
#define FIRST_BACKOFF_PHASES 2
#define SETTLED_PHASES 16
/* The window never goes below this: one buffer is being read while
   another is written. */
#define MIN_LIMIT 2

void
window_init (struct window *w, unsigned lanes, unsigned max, bool adaptive)
{
  w->max = max;
  w->adaptive = adaptive && max > MIN_LIMIT;
  /* All of it: a latency-bound copy runs at the rate of its window,
     while a CPU-bound one loses less while the window comes down. */
  atomic_init (&w->limit, max);
  atomic_init (&w->held_back, false);
  pthread_mutex_init (&w->lock, NULL);
  w->phase_samples = lanes * PHASE_SAMPLES_PER_LANE;
  w->phases = 0;
  w->on_trial = false;
  w->growing = false; /* from the largest window, only down */
  w->backoff = FIRST_BACKOFF_PHASES;
  w->skip = false;
  w->wait = 0;
  w->kept_rate = 0;
  w->phase_start_ns = 0;
  w->bytes = 0;
  w->samples = 0;
  w->changes = 0;
}

void
window_destroy (struct window *w)
{
  pthread_mutex_destroy (&w->lock);
}

static void
window_set (struct window *w, unsigned limit)
{
  limit = MIN (limit, w->max);
  limit = MAX (limit, (unsigned) MIN_LIMIT);
  if (limit != atomic_load (&w->limit))
    w->changes++;
  atomic_store (&w->limit, limit);
}

/* A phase ended with RATE (bytes per second): judge a trial, maybe
 * start one.
 */
static void
window_phase_ended (struct window *w, double rate)
{
  unsigned limit = atomic_load (&w->limit);

  if (w->phases++ < WARM_UP_PHASES)
    return; /* connections and buffers are new */
  if (w->skip) {
    w->skip = false;
    /* A smaller window still draining the larger one's buffers
       should look faster, not slower: if it already looks slower,
       the trial is lost, and a latency-bound copy must not spend
       another phase on it. */
    if (!(w->on_trial && !w->growing && GAIN * rate < w->kept_rate))
      return;
  }
  if (w->on_trial) {
    /* Does the smaller of the two windows clearly move more? */
    double larger = w->growing ? rate : w->kept_rate;
    double smaller = w->growing ? w->kept_rate : rate;
    bool larger_wins = smaller < GAIN * larger;

    w->on_trial = false;
    if (larger_wins != w->growing) {
      /* Undone; the next trial goes the other way. */
      window_set (w, w->growing ? limit / 2 : limit * 2);
      w->growing = !w->growing;
      w->wait = w->backoff;
      w->backoff = MIN (w->backoff * 2, (unsigned) SETTLED_PHASES);
      w->skip = true; /* the trial's buffers are still in flight */
      return;
    }
    w->backoff = FIRST_BACKOFF_PHASES;
  }
  w->kept_rate = rate;
  if (w->wait > 0) {
    w->wait--;
    return;
  }
  if (w->growing ? limit >= w->max : limit <= MIN_LIMIT) {
    /* At the end of the range: look back the other way later. */
    w->growing = !w->growing;
    w->wait = SETTLED_PHASES;
    return;
  }
  window_set (w, w->growing ? limit * 2 : limit / 2);
  w->on_trial = true;
  /* Queues take a phase to settle: the trial is judged on the next. */
  w->skip = true;
}

void
window_sample (struct window *w, int64_t now, uint64_t bytes)
{
  if (!w->adaptive)
    return;
  pthread_mutex_lock (&w->lock);
  if (w->phase_start_ns == 0)
    w->phase_start_ns = now;
  w->bytes += bytes;
  if (++w->samples >= w->phase_samples) {
    /* A window that held nothing back says nothing about its size. */
    if (atomic_exchange (&w->held_back, false) && now > w->phase_start_ns)
      window_phase_ended (w, w->bytes * 1e9 / (now - w->phase_start_ns));
    w->phase_start_ns = now;
    w->bytes = 0;
    w->samples = 0;
  }
  pthread_mutex_unlock (&w->lock);
}
