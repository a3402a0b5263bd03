/* What an io_uring completion points at.  Its own header, below both
 * ring.h and the endpoints, so that the ring helpers and requests
 * (op.h) need nothing of the endpoint layer.
 */
#ifndef NBDCP_RING_EVENT_H
#define NBDCP_RING_EVENT_H

/* io_uring completions carry the address of a ring_event as user_data;
 * the worker calls its handler with the completion's result.
 */
struct ring_event {
  void (*handle) (struct ring_event *ev, int res);
};

#endif
