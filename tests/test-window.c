/* Unit test for the in-flight window's controller (copy/window.c),
 * against simulated copies whose rate depends on the window in known
 * ways.  No servers: the clock is the simulation's.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "unit.h"
#include "window.h"

#define LANES 4
#define BUFFER (1024 * 1024)
#define SAMPLES 20000

/* Bytes per second a copy moves with LIMIT buffers per lane in flight. */
typedef double rate_model (unsigned limit);

static double
latency_bound (unsigned limit) /* doubles with the window */
{
  return limit * 100e6;
}

static double
cache_bound (unsigned limit) /* more in flight only costs */
{
  return 2e9 / (1 + limit / 8.0);
}

static double
flat (unsigned limit)
{
  (void) limit;
  return 1e9;
}

static double
best_at_8 (unsigned limit) /* grows up to 8, then falls */
{
  return limit <= 8 ? limit * 200e6 : 1.6e9 * 8 / limit;
}

struct outcome {
  unsigned final;     /* the limit at the end */
  unsigned at[65];    /* samples taken at each limit */
  unsigned changes;
};

/* Runs SAMPLES buffers of a copy with MAX buffers per lane through the
 * window; HELD_BACK says whether the window stops reads (a copy whose
 * lanes never fill their window gives it nothing to learn).
 */
static struct outcome
simulate (rate_model *model, unsigned max, bool adaptive, bool held_back)
{
  struct window w;
  struct outcome o = { 0 };
  int64_t now = 1000000000;

  window_init (&w, LANES, max, adaptive);
  for (unsigned i = 0; i < SAMPLES; i++) {
    unsigned limit = atomic_load (&w.limit);

    CHECK (limit >= 1 && limit <= max);
    if (held_back)
      CHECK (!window_allows (&w, limit));
    CHECK (window_allows (&w, limit - 1));
    o.at[limit]++;
    now += (int64_t) (BUFFER / model (limit) * 1e9);
    window_sample (&w, now, BUFFER);
  }
  o.final = atomic_load (&w.limit);
  o.changes = w.changes;
  window_destroy (&w);
  return o;
}

int
main (void)
{
  struct outcome o;

  /* Latency-bound: the window grows to all the buffers and stays. */
  o = simulate (latency_bound, 16, true, true);
  CHECK (o.final == 16);
  CHECK (o.at[16] > SAMPLES * 3 / 4);

  /* Each buffer more costs: the window shrinks to the minimum. */
  o = simulate (cache_bound, 16, true, true);
  CHECK (o.final == 2);
  CHECK (o.at[2] > SAMPLES * 3 / 4);

  /* A smaller window that gains nothing is not kept: the doubt goes
     to the larger one. */
  o = simulate (flat, 16, true, true);
  CHECK (o.at[16] > SAMPLES * 3 / 4);
  CHECK (o.at[2] + o.at[4] < SAMPLES / 10);

  /* The best window is in the middle: most of the copy runs there,
     the rest is trials on either side. */
  o = simulate (best_at_8, 64, true, true);
  CHECK (o.at[8] > SAMPLES * 3 / 4);
  CHECK (o.at[32] + o.at[64] < SAMPLES / 10);

  /* -R or --queue-size given: the window is what they allow. */
  o = simulate (cache_bound, 16, false, true);
  CHECK (o.final == 16 && o.changes == 0);

  /* Two buffers leave nothing to choose from. */
  o = simulate (cache_bound, 2, true, true);
  CHECK (o.final == 2 && o.changes == 0);

  /* Lanes that never fill the window: it stays where it started. */
  o = simulate (cache_bound, 16, true, false);
  CHECK (o.final == 16 && o.changes == 0);

  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
