#!/bin/bash
# Buffer memory is bounded as in nbdcopy: --queue-size (16 MiB by
# default, at least one request) per lane, whatever -R says, and 1 GiB
# over all lanes.  With -R 64 and a destination slow enough for every
# buffer to fill, nbdcp's peak RSS stays near lanes x 16 MiB.  The copy
# is checked with qemu-img compare.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_filter delay
requires "$QEMU_IMG"
[ -x /usr/bin/time ] || skip "/usr/bin/time is not installed"
[ "${SANITIZED:-no}" = no ] || skip "sanitizers change memory use"

start_nbdkit src pattern size=512M
start_nbdkit dst --filter=delay memory size=512M wdelay=50ms
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")

/usr/bin/time -f '%M' -o "$tmp/rss" timeout 120 "$NBDCP" -C 4 -T 4 -R 64 \
  --request-size=4M "$src" "$dst" || fail "the copy failed"
"$QEMU_IMG" compare -q -f raw -F raw "$src" "$dst" ||
  fail "the destination differs from the source"
rss_kb=$(tail -1 "$tmp/rss")
echo "peak RSS ${rss_kb} KiB"
# 4 lanes x 16 MiB, plus the program: well under 192 MiB.  Without the
# bound every lane fills up to 64 buffers (about 512 MiB here).
[ "$rss_kb" -lt $((192 * 1024)) ] ||
  fail "peak RSS ${rss_kb} KiB: buffer memory is not bounded"

# An explicit --queue-size is capped at 1 GiB over all lanes (-v says so).
run_nbdcp -v -C 4 -T 4 --queue-size=1G "$src" "$dst" 2>"$tmp/v" ||
  { cat "$tmp/v"; fail "the copy with --queue-size=1G failed"; }
grep -q 'queue size lowered from 1073741824 to 268435456 bytes per connection' "$tmp/v" ||
  { cat "$tmp/v"; fail "the total buffer memory was not capped"; }
"$QEMU_IMG" compare -q -f raw -F raw "$src" "$dst" ||
  fail "the destination differs from the source"
