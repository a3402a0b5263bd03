/* A lane's worker thread (worker.c): what the engine sets up for it,
 * and its event loop.
 */
#ifndef NBDCP_WORKER_H
#define NBDCP_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <liburing.h>

#include "job.h"
#include "lane.h"
#include "op.h"
#include "ring_event.h"

struct worker {
  pthread_t thread;
  struct job *job;
  struct io_uring ring;
  bool ring_ready;
  bool ring_disabled; /* until the thread enables it (ring_init) */
  bool buffers_registered;
  bool stall_noted;      /* its oldest request, once the job was aborted */
  int64_t next_check_ms; /* --timeout: when to look for stalls again */
  struct lane *lane;
  struct op_queue done;         /* its lane's finished requests */
  struct ring_event stop_event; /* the job's stop_fd polled */
};

/* The thread's body: W's event loop, until its lane is done (or the
 * job stops).  ARG is W.
 */
void *worker_run (void *arg);

#endif
