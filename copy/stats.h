/* The --stats summary printed when a copy ends, as text or JSON. */
#ifndef NBDCP_STATS_H
#define NBDCP_STATS_H

#include <stdbool.h>

#include "engine.h"

struct stats_context {
  unsigned src_connections, dst_connections;
  double elapsed; /* seconds */
  bool ok;        /* the copy succeeded */
};

void stats_print (const struct copy_stats *s, const struct stats_context *ctx,
                  bool json);

#endif
