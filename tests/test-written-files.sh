#!/bin/bash
# The files nbdcp writes for itself are private and never half-written:
# the --resume journal (which holds both URIs) and the --blkhash-file
# are mode 0600 whatever the umask allows, a new one or one that
# replaced a 0644 file; a copy that fails half way with --blkhash-file,
# or that SIGTERM or SIGINT ends, leaves no temporary file and no
# partial checksum file, and an existing checksum file as it was
# (contents and mode).  Every copy
# that succeeds is compared with its source by qemu-img, and the
# checksum with the Python reference's.
. "${srcdir:-.}/tests/functions.sh"
requires_resume
requires python3
requires_nbdkit_filter error
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"
umask 022

size=$((64 * 1024 * 1024))
src=$(uri_of "$tmp/src.sock")
truncate -s $size "$tmp/dst.img"
dst=$(uri_of "$tmp/dst.sock")
# fresh_servers: the source, and the destination that fails every
# request while $tmp/fail exists, started afresh on the same sockets
# (a journal names them).  A failed copy leaves requests in flight on
# both, and nbdkit 1.32 may abort then (see restart_nbdkit in
# tests/functions.sh): each copy after one gets servers of its own.
fresh_servers ()
{
  restart_nbdkit src sparse-random $size seed=7 percent=20 runlength=65536
  restart_nbdkit dst --filter=error file "$tmp/dst.img" error-rate=1 \
    error-file="$tmp/fail"
}
fresh_servers
# mode_is FILE MODE
mode_is ()
{
  local m
  m=$(stat -c %a "$1")
  [ "$m" = "$2" ] || fail "$1 has mode $m, not $2"
}
# nothing_else DIR NAME...: DIR holds the NAMEs and nothing else.
nothing_else ()
{
  local dir=$1 want got
  shift
  want=$(printf '%s\n' "$@" | sort)
  got=$(cd "$dir" && ls -A | sort)
  [ "$got" = "$want" ] || fail "$dir holds: $(echo $got), not: $*"
}

# 1. The journal a failed first run leaves.
mkdir "$tmp/j"
touch "$tmp/fail"
expect_fail "destination .* failed" \
  "$NBDCP" --resume="$tmp/j/copy.journal" "$src" "$dst"
rm "$tmp/fail"
fresh_servers
mode_is "$tmp/j/copy.journal" 600
nothing_else "$tmp/j" copy.journal
# A rerun rewrites it (and removes it when it succeeds).
run_nbdcp --resume="$tmp/j/copy.journal" "$src" "$dst"
nothing_else "$tmp/j"
check_same "$src" "$tmp/dst.img" "the resumed copy"

# 2. --blkhash-file: a new file, then one that replaces a 0644 file.
mkdir "$tmp/h"
run_nbdcp --blkhash-file="$tmp/h/new.sum" "$src" "$tmp/copy.raw"
check_same "$src" "$tmp/copy.raw" "the copy with --blkhash-file"
want=$(python3 "$ref" sha256 "$tmp/copy.raw")
[ "$(cat "$tmp/h/new.sum")" = "$want" ] || fail "new.sum: wrong checksum"
mode_is "$tmp/h/new.sum" 600
echo old >"$tmp/h/old.sum"
chmod 644 "$tmp/h/old.sum"
run_nbdcp --blkhash-file="$tmp/h/old.sum" "$src" null:
[ "$(cat "$tmp/h/old.sum")" = "$want" ] || fail "old.sum: wrong checksum"
mode_is "$tmp/h/old.sum" 600
nothing_else "$tmp/h" new.sum old.sum

# 3. A copy that fails while copying: no temporary, no partial file,
# the existing file as it was.
echo old >"$tmp/h/old.sum"
chmod 644 "$tmp/h/old.sum"
touch "$tmp/fail"
expect_fail "destination .* failed" \
  "$NBDCP" --blkhash-file="$tmp/h/failed.sum" "$src" "$dst"
fresh_servers
expect_fail "destination .* failed" \
  "$NBDCP" --blkhash-file="$tmp/h/old.sum" "$src" "$dst"
rm "$tmp/fail"
nothing_else "$tmp/h" new.sum old.sum
[ "$(cat "$tmp/h/old.sum")" = old ] || fail "a failed copy changed old.sum"
mode_is "$tmp/h/old.sum" 644

# 4. A copy that a signal ends (it waits for --rate's credit, from a
# local file, so that no server sees its client vanish): the same.
for sig in TERM INT; do
  rm -f "$tmp/sig.raw" "$tmp/sig.err" # (the last run's 'copying' line)
  "$NBDCP" -v --rate=1M --blkhash-file="$tmp/h/old.sum" "$tmp/copy.raw" \
    "$tmp/sig.raw" 2>"$tmp/sig.err" &
  pid=$!
  wait_for_log_line "$tmp/sig.err" '^nbdcp: copying'
  kill -$sig $pid
  ends_within $pid 30 || fail "SIG$sig: nbdcp did not end"
  r=0
  wait $pid || r=$?
  [ $r -eq $((128 + $(kill -l $sig))) ] ||
    { cat "$tmp/sig.err"; fail "SIG$sig: exit $r"; }
  grep -q 'interrupted by signal' "$tmp/sig.err" ||
    { cat "$tmp/sig.err"; fail "SIG$sig: not 'interrupted by signal'"; }
  nothing_else "$tmp/h" new.sum old.sum
  [ "$(cat "$tmp/h/old.sum")" = old ] || fail "SIG$sig changed old.sum"
  mode_is "$tmp/h/old.sum" 644
done
