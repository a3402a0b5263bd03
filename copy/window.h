/* How many of its buffers each lane keeps in flight: the window, one
 * for the whole copy.
 *
 * More bytes in flight than the servers need only queue up in them and
 * push the data out of the CPU caches, as a local qemu-nbd does; but
 * behind latency fewer buffers move less (see docs/performance.md).
 * No fixed depth suits both, so the copy measures.  The window starts with
 * all the buffers and, after two phases to warm up, tries half of it
 * for a phase (a phase: 32 finished buffers per lane).  The smaller
 * window is kept only if it moved clearly more data per second, and
 * then halved again; otherwise the trial is undone and the next one
 * goes the other way, some phases later.  The doubt goes to the larger
 * window: one too small can halve a latency-bound copy, one too large
 * costs a CPU-bound copy far less.  All lanes share the window, so that
 * a trial measures what it does to the whole copy, not one lane taking
 * from the others.
 *
 * An explicit -R, --synchronous or --queue-size fixes the window at
 * what they allow.
 */
#ifndef NBDCP_WINDOW_H
#define NBDCP_WINDOW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct window {
  atomic_uint limit;     /* buffers a lane may have in flight now */
  atomic_bool held_back; /* the window stopped a read in this phase */
  unsigned max;          /* a lane's buffers */
  bool adaptive;         /* false: limit stays max */

  pthread_mutex_t lock; /* guards the fields below */
  unsigned phase_samples; /* buffers per phase */
  unsigned phases;        /* phases measured, the first one is warm-up */
  bool on_trial;          /* the limit was just changed */
  bool growing;           /* ... or will be: doubled, else halved */
  bool skip;              /* the next phase is not measured */
  unsigned wait;          /* phases before the next trial */
  unsigned backoff;       /* phases to wait after the next failed trial */
  double kept_rate;       /* bytes/s of the last phase at the kept limit */
  int64_t phase_start_ns; /* this phase's start */
  uint64_t bytes;         /* its buffers' bytes */
  unsigned samples;       /* ... and their number */
  unsigned changes;       /* times the limit moved, for -v */
};

/* LANES lanes of MAX buffers each. */
void window_init (struct window *w, unsigned lanes, unsigned max,
                  bool adaptive);
void window_destroy (struct window *w);

/* May a lane with IN_USE buffers in flight start another?  Remembers a
 * refusal: only a window that holds reads back is worth enlarging.
 */
static inline bool
window_allows (struct window *w, unsigned in_use)
{
  if (in_use < atomic_load_explicit (&w->limit, memory_order_relaxed))
    return true;
  /* Stored only when it changes: every lane reads the limit beside it. */
  if (w->adaptive
      && !atomic_load_explicit (&w->held_back, memory_order_relaxed))
    atomic_store_explicit (&w->held_back, true, memory_order_relaxed);
  return false;
}

/* A buffer of BYTES finished at NOW (ns, CLOCK_MONOTONIC). */
void window_sample (struct window *w, int64_t now, uint64_t bytes);

#endif
