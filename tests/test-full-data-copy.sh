#!/bin/bash
# A disk with no holes at all (percent=100) and one with random bytes in
# every block: the data path, verified by sparse-random itself.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random

"$NBDKIT" -U - sparse-random size=512M percent=100 \
  --run "timeout 120 $NBDCP \$uri \$uri"
"$NBDKIT" -U - sparse-random size=256M random-content=true runlength=1048576 \
  --run "timeout 120 $NBDCP \$uri \$uri"
