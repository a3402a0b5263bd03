#!/bin/bash
# Option parsing: --help, -V, --long-options and a few bad values.
. "${srcdir:-.}/tests/functions.sh"

"$NBDCP" --help | grep -q 'nbdcp \[OPTIONS\] SOURCE DESTINATION'
"$NBDCP" -V | grep -q '^nbdcp [0-9]'
"$NBDCP" -V | grep -q '^libnbd '
"$NBDCP" --long-options | grep -qx -- '--target-is-zero'
expect_fail 'power of 2' "$NBDCP" --request-size=1000 null: null:
