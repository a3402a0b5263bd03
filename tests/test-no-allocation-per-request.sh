#!/bin/bash
# The copy loop makes no heap allocation: under valgrind, a 1 GiB copy
# and an 8 GiB copy (8 times the requests) allocate the same number of
# blocks, once libnbd's own per-command bookkeeping is set aside.
#
# libnbd allocates a small structure for every command it sends and for
# every block status reply; nbdcp cannot avoid that, so the test takes
# valgrind's allocation tree (--xtree-memory) and subtracts what was
# allocated inside libnbd's per-request calls.  Everything else - main,
# set-up, the engine, the endpoints - must not grow with the disk.
. "${srcdir:-.}/tests/functions.sh"
requires "${VALGRIND:-valgrind}"
[ "${SANITIZED:-no}" = no ] || skip "valgrind does not run sanitizer builds"
requires callgrind_annotate
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin null

count ()
{
  local size=$1 xt=$tmp/xt-$1.kcg
  rm -f "$tmp"/*.sock
  start_nbdkit src -r sparse-random size="$size" percent=2 seed=42
  start_nbdkit dst null size="$size"
  timeout 300 "${VALGRIND:-valgrind}" -q --error-exitcode=99 \
    --xtree-memory=full --xtree-memory-file="$xt" \
    "$NBDCP" -C 2 -T 2 "$(uri_of "$tmp/src.sock")" "$(uri_of "$tmp/dst.sock")" ||
    fail "copy of $size under valgrind failed"
  stop_servers
  # Columns: curB curBk totB totBk ...; totBk is the number of blocks.
  callgrind_annotate --inclusive=yes "$xt" 2>/dev/null |
    awk -v size="$size" '
      function n(s) { gsub (/,/, "", s); return s + 0 }
      { gsub (/\([^)]*\)/, "") }
      / PROGRAM TOTALS$/ { total = n($4) }
      /:nbd_aio_(pread|pread_structured|pwrite|zero|block_status|flush|notify_read|notify_write)$/ {
        libnbd += n($4)
      }
      END {
        printf "%s: %d allocations, %d inside libnbd per-request calls, %d the rest\n",
          size, total, libnbd, total - libnbd > "/dev/stderr"
        print total - libnbd
      }'
}

small=$(count 1G)
large=$(count 8G)
[ "$small" -gt 0 ] || fail "no allocations counted: is the xtree readable?"
# Within 2%: the rest must not scale with the number of requests.
diff=$((large > small ? large - small : small - large))
[ $((diff * 100)) -le $((small * 2)) ] ||
  fail "allocations grew with the disk: $small for 1G, $large for 8G"
