#!/bin/bash
# '[ CMD ARGS ... ]' servers (socket activation) as source, destination and both copy the right bytes, and no server is left running after a copy that worked, one that failed, or one interrupted by SIGTERM; bad brackets and dead commands fail at once with exit 1.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin file
requires_nbdkit_plugin memory
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin pattern
requires_nbdkit_filter delay
requires pgrep
requires "$QEMU_IMG"

MiB=$((1024 * 1024))
# Every subprocess server gets a pid file named $tmp/sub-*, so the
# marker "$tmp/sub-" finds them in the process list.
marker="$tmp/sub-"

# No subprocess server may outlive nbdcp (a grace of 10 s for the exit
# to be reaped, generous for a loaded machine).
none_left ()
{
  ! pgrep -f -- "$marker" >/dev/null
}
no_leftover ()
{
  local what=$1 f
  wait_until 10 none_left || :
  if pgrep -af -- "$marker"; then
    pkill -f -- "$marker" || :
    fail "$what: a subprocess server is still running"
  fi
  for f in "$marker"*.pid; do
    [ -e "$f" ] || continue
    if kill -0 "$(cat "$f")" 2>/dev/null; then
      fail "$what: server $(cat "$f") of $f is still running"
    fi
  done
}

size=$((3 * MiB + 777))
head -c $size /dev/urandom >"$tmp/src"

# [ server ] -> file.
run_nbdcp -- [ nbdkit -r -P "${marker}1.pid" file "$tmp/src" ] "$tmp/out1" ||
  fail "[ nbdkit ] -> file failed"
cmp "$tmp/src" "$tmp/out1" || fail "[ nbdkit ] -> file differs"
[ -s "${marker}1.pid" ] || fail "test setup: the subprocess wrote no pid file"
no_leftover "[ nbdkit ] -> file"
# Without '--' too (option parsing stops at the first word anyway).
run_nbdcp [ nbdkit -r -P "${marker}2.pid" file "$tmp/src" ] "$tmp/out2"
cmp "$tmp/src" "$tmp/out2" || fail "[ nbdkit ] -> file (no --) differs"
no_leftover "[ nbdkit ] -> file (no --)"

# file -> [ server ]: a writable file export, then compared.
head -c $((4 * MiB)) /dev/urandom >"$tmp/dst"
cp "$tmp/dst" "$tmp/dst.orig"
run_nbdcp -- "$tmp/src" [ nbdkit -P "${marker}3.pid" file "$tmp/dst" ] ||
  fail "file -> [ nbdkit ] failed"
no_leftover "file -> [ nbdkit ]"
cmp -n $size "$tmp/src" "$tmp/dst" || fail "file -> [ nbdkit ] differs"
cmp <(tail -c +$((size + 1)) "$tmp/dst.orig") <(tail -c +$((size + 1)) "$tmp/dst") ||
  fail "file -> [ nbdkit ]: the destination past the source's end changed"

# [ server ] -> [ server ]: sparse-random into a file server, whose
# file outlives it; qemu-img compares the file with another instance of
# the source (the same seed serves the same bytes).
sr=(sparse-random size=$((256 * MiB)) seed=31 percent=20 runlength=1048576)
start_nbdkit srref -r "${sr[@]}"
srref=$(uri_of "$tmp/srref.sock")
truncate -s $((256 * MiB)) "$tmp/sr-dst.img"
run_nbdcp -- [ nbdkit -r -P "${marker}4.pid" "${sr[@]}" ] \
  [ nbdkit -P "${marker}5.pid" file "$tmp/sr-dst.img" ] ||
  fail "[ sparse-random ] -> [ file ] failed"
no_leftover "[ nbdkit ] -> [ nbdkit ]"
check_same "$srref" "$tmp/sr-dst.img" "[ sparse-random ] -> [ file ]"
# through a file in between, each step compared.
run_nbdcp -- [ nbdkit -r -P "${marker}6.pid" "${sr[@]}" ] "$tmp/sr.img"
check_same "$srref" "$tmp/sr.img" "[ sparse-random ] -> file"
truncate -s $((256 * MiB)) "$tmp/sr-back.img"
run_nbdcp -- "$tmp/sr.img" [ nbdkit -P "${marker}7.pid" file "$tmp/sr-back.img" ] ||
  fail "file -> [ file ] failed"
no_leftover "sparse-random through a file"
check_same "$srref" "$tmp/sr-back.img" "file -> [ file ]"
# A file through two servers.
truncate -s $size "$tmp/dst2"
run_nbdcp -- [ nbdkit -r -P "${marker}8.pid" file "$tmp/src" ] \
  [ nbdkit -P "${marker}9.pid" file "$tmp/dst2" ] ||
  fail "[ file ] -> [ file ] failed"
no_leftover "[ file ] -> [ file ]"
cmp "$tmp/src" "$tmp/dst2" || fail "[ file ] -> [ file ] differs"

# qemu-nbd as a subprocess too (sizes of whole sectors: qemu-nbd
# rounds up).
if command -v "$QEMU_NBD" >/dev/null 2>&1; then
  head -c $((2 * MiB)) /dev/urandom >"$tmp/sub-q.img"
  run_nbdcp -- [ "$QEMU_NBD" -r -f raw "$tmp/sub-q.img" ] "$tmp/q.out" ||
    fail "[ qemu-nbd ] -> file failed"
  cmp "$tmp/sub-q.img" "$tmp/q.out" || fail "[ qemu-nbd ] -> file differs"
  truncate -s $((2 * MiB)) "$tmp/sub-q2.img"
  run_nbdcp -- "$tmp/q.out" [ "$QEMU_NBD" -f raw "$tmp/sub-q2.img" ] ||
    fail "file -> [ qemu-nbd ] failed"
  cmp "$tmp/sub-q.img" "$tmp/sub-q2.img" || fail "file -> [ qemu-nbd ] differs"
  no_leftover "qemu-nbd"
fi

# Failed copies leave no server behind either.
expect_fail '^nbdcp: destination .*\(1048576 bytes\) is smaller than source .*\('$size' bytes\)$' \
  "$NBDCP" -- [ nbdkit -r -P "${marker}10.pid" file "$tmp/src" ] \
  [ nbdkit -P "${marker}11.pid" memory size=1M ]
no_leftover "destination too small"
# Wrong data: a checker of another seed refuses the writes.
expect_fail '^nbdcp: destination (write|zero) at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" -- "$tmp/sr.img" [ nbdkit -P "${marker}12.pid" sparse-random size=$((256 * MiB)) \
  seed=32 percent=20 runlength=1048576 ]
no_leftover "refused writes"
# A server that fails to start.
expect_fail '^nbdcp: .*' \
  "$NBDCP" -- [ nbdkit -P "${marker}13.pid" no-such-plugin-nbdcp-test ] "$tmp/out3"
no_leftover "server failing to start"
[ ! -e "$tmp/out3" ] || [ ! -s "$tmp/out3" ] ||
  fail "server failing to start: the destination got data"
# Interrupted in the middle of a copy (a slow source): exit 128+15,
# and the servers are gone.  The signal comes once both servers have
# written their pid files and the source's log shows reads (the copy is
# under way), not after a fixed time that a loaded machine may outrun.
requires_nbdkit_filter log
"$NBDCP" -- [ nbdkit -r -P "${marker}14.pid" --filter=log --filter=delay \
  pattern size=1G rdelay=1 logfile="$tmp/term.log" ] \
  [ nbdkit -P "${marker}15.pid" memory size=1G ] 2>"$tmp/term.err" & pid=$!
wait_until 60 test -s "${marker}14.pid" || fail "SIGTERM: no source pid file"
wait_until 60 test -s "${marker}15.pid" || fail "SIGTERM: no destination pid file"
wait_for_requests "$tmp/term.log" 1 Read
kill -0 $pid 2>/dev/null || fail "SIGTERM: nbdcp ended before the signal"
kill -TERM $pid
r=0
timeout 20 tail --pid=$pid -f /dev/null || fail "SIGTERM: nbdcp did not exit"
wait $pid || r=$?
[ $r -ne 0 ] || fail "SIGTERM: nbdcp exited 0"
echo "interrupted copy: exit $r, stderr: $(grep '^nbdcp:' "$tmp/term.err" || :)"
no_leftover "interrupted copy"

# Commands that exit at once (not found, or no server at all): exit 1
# within seconds, every time (30 s at most: an ASan nbdcp on a loaded
# machine took over 10; a handshake spinning to its deadline takes 60).  Repeated, because it is a race: the
# socket can be closed while the connect is still in progress, and the
# handshake must not then spin on POLLERR|POLLHUP until its deadline.
for i in $(seq 1 30); do
  for cmd in "$tmp/no-such-command" true; do
    r=0
    timeout 30 "$NBDCP" [ "$cmd" ] "$tmp/out4" 2>"$tmp/dead.err" || r=$?
    [ $r -eq 1 ] || {
      cat "$tmp/dead.err" >&2
      fail "[ $cmd ] (try $i): exit $r, not 1$([ $r -eq 124 ] && echo ': no answer within 30s')"
    }
    grep -q '^nbdcp: ' "$tmp/dead.err" || fail "[ $cmd ]: no nbdcp: message"
  done
done

# Brackets that do not close, or hold nothing.
expect_fail "^nbdcp: '\\[' without a matching '\\]'" \
  "$NBDCP" -- [ nbdkit -r file "$tmp/src" "$tmp/out5"
expect_fail "^nbdcp: '\\[' without a matching '\\]'" \
  "$NBDCP" -- "$tmp/src" [ nbdkit memory size=1M
expect_fail "^nbdcp: '\\[ \\]' needs a command" "$NBDCP" -- [ ] "$tmp/out5"
no_leftover "bad brackets"
[ ! -e "$tmp/out5" ] || fail "bad brackets: a destination was created"
