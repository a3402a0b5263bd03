/* A lane's memory: its buffers, the runs they may be split into, the
 * zero extents' request slots and the lists of extents, all allocated
 * once by lane_init, before the copy starts (nothing is allocated
 * after), and freed by lane_destroy.
 *
 * It does not attach the features (feature_list.c) or start the lane's
 * worker (engine.c).
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>

#include "error.h"
#include "lane_op.h"
#include "lane_setup.h"
#include "minmax.h"

unsigned
lane_buffers (const struct settings *set)
{
  /* No point in more buffers than the byte budget can keep busy. */
  if (set->queue_size / set->request_size < set->requests)
    return MAX (set->queue_size / set->request_size, (uint64_t) 1);
  return set->requests;
}

/* Runs a buffer may be split into: one per zero-detection block, so
 * that data and holes alternating block by block are written as such.
 */
static unsigned
lane_runs_per_buffer (const struct settings *set)
{
  uint64_t blocks = MIN_RUNS_PER_BUFFER;

  if (set->sparse_size)
    blocks = (set->request_size + set->sparse_size - 1) / set->sparse_size;
  blocks = MAX (blocks, (uint64_t) MIN_RUNS_PER_BUFFER);
  return MIN (blocks, (uint64_t) MAX_RUNS_PER_BUFFER);
}

int
lane_init (struct lane *l, unsigned index, struct job *job,
           struct op_queue *done, struct conn *src, struct conn *dst)
{
  const struct settings *set = job->set;
  unsigned nbuffers = lane_buffers (set);

  *l = (struct lane){
    .index = index,
    .job = job,
    .set = set,
    .done = done,
    .src = src,
    .dst = dst,
    .segment = NO_SEGMENT,
  };
  l->extents.v = l->extent_store;
  l->extents.cap = EXTENTS_PER_LANE;
  l->extents.fold_below = set->fold_below;
  source_extents_init (&l->source, set, &job->zero_run,
                       job->src->ops->extents && job->src->caps.can_extents);
  dest_zero_init (&l->dest, set->ask_destination_zero, set->align);
  if (pool_init (&l->pool, nbuffers, set->request_size) == -1)
    return -1;
  l->runs_per_buffer = lane_runs_per_buffer (set);
  l->buffers = calloc (nbuffers, sizeof *l->buffers);
  l->run_ops
      = calloc ((size_t) nbuffers * l->runs_per_buffer, sizeof *l->run_ops);
  l->run_scratch = calloc (l->runs_per_buffer, sizeof *l->run_scratch);
  l->zero_ops = calloc (set->requests, sizeof *l->zero_ops);
  l->free_zero_ops = calloc (set->requests, sizeof *l->free_zero_ops);
  if (!l->buffers || !l->run_ops || !l->run_scratch || !l->zero_ops
      || !l->free_zero_ops) {
    error_set ("out of memory");
    return -1;
  }
  for (unsigned i = 0; i < nbuffers; i++) {
    l->buffers[i].index = i;
    l->buffers[i].runs = &l->run_ops[(size_t) i * l->runs_per_buffer];
  }
  for (unsigned i = 0; i < set->requests; i++)
    lane_put_zero_op (l, &l->zero_ops[i]);
  op_queue_init (&l->late);
  return 0;
}

void
lane_destroy (struct lane *l)
{
  lane_features_destroy (&l->features);
  pool_destroy (&l->pool);
  free (l->buffers);
  free (l->run_ops);
  free (l->run_scratch);
  free (l->zero_ops);
  free (l->free_zero_ops);
}
