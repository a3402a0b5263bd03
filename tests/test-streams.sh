#!/bin/bash
# Streams ('-' as stdin/stdout, FIFOs) are copied in order and byte-exact: stdin -> nbd/file/null:, nbd -> stdout (holes as zero bytes), FIFOs both ways; stdout and stdin redirected to files are used from where the descriptor is ('>>' appends, '{ echo; nbdcp; echo; } > f' keeps the order); --destination-is-zero into a stream still writes every zero byte; a reader that goes away (| head -c 1) ends nbdcp promptly, with no crash; a FIFO that nobody opens at the other end is waited for in open(2), and a signal ends the wait (exit 130, nothing created).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin file
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_plugin pattern
requires_nbdkit_plugin sparse-random
requires_nbdkit_filter checkwrite
requires_nbdkit_filter log
requires mkfifo
requires "$QEMU_IMG"

MiB=$((1024 * 1024))
size=$((3 * MiB + 777))
head -c $size /dev/urandom >"$tmp/src"
start_nbdkit src -r file "$tmp/src"
src=$(uri_of "$tmp/src.sock")

# stdin (a pipe) -> nbd: the stream's bytes land at the start, the
# rest of the larger destination is left as it was.
head -c $((5 * MiB)) /dev/urandom >"$tmp/dst"
cp "$tmp/dst" "$tmp/dst.orig"
start_nbdkit dst file "$tmp/dst"
cat "$tmp/src" | run_nbdcp - "$(uri_of "$tmp/dst.sock")" ||
  fail "stdin -> nbd failed"
cmp -n $size "$tmp/src" "$tmp/dst" || fail "stdin -> nbd: the data differs"
cmp <(tail -c +$((size + 1)) "$tmp/dst.orig") <(tail -c +$((size + 1)) "$tmp/dst") ||
  fail "stdin -> nbd: the destination past the stream's end was changed"
# and into a checker of the same bytes: every write checked, and (from
# the log, outside the checker) the writes cover the disk exactly once.
start_nbdkit chk --filter=log --filter=checkwrite file "$tmp/src" \
  logfile="$tmp/chk.log"
cat "$tmp/src" | run_nbdcp - "$(uri_of "$tmp/chk.sock")" ||
  fail "stdin -> checkwrite failed"
check_covered "$tmp/chk.log" $size
# The checker can fail: other bytes into it.  (Process substitution:
# stdin is still a pipe, and the writer's SIGPIPE does not count.)
expect_fail '^nbdcp: destination (write|zero) at offset' \
  "$NBDCP" - "$(uri_of "$tmp/chk.sock")" < <(head -c $size /dev/urandom)

# A stream longer than the destination: exit 1 with a message, no hang.
start_nbdkit tiny memory size=$MiB
expect_fail '^nbdcp: destination' \
  "$NBDCP" - "$(uri_of "$tmp/tiny.sock")" < <(cat "$tmp/src")
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "stream too long: not one line on stderr"; }
# stdin redirected from a regular file has a size, so it is refused
# before the copy.  (tiny afresh: the failed copy above may have left
# writes in flight on it, and nbdkit 1.32 may abort then; see
# restart_nbdkit in functions.sh.)
restart_nbdkit tiny memory size=$MiB
expect_fail 'smaller' "$NBDCP" - "$(uri_of "$tmp/tiny.sock")" <"$tmp/src"

# stdin -> file: a new file, and a larger file cut to the stream's
# length; runs of zeroes in the stream become holes.
{ head -c 100000 /dev/urandom; head -c $((8 * MiB)) /dev/zero; printf end; } >"$tmp/zeroes"
cat "$tmp/zeroes" | run_nbdcp - "$tmp/new" || fail "stdin -> new file failed"
cmp "$tmp/zeroes" "$tmp/new" || fail "stdin -> new file differs"
head -c $((12 * MiB)) /dev/urandom >"$tmp/old"
cat "$tmp/zeroes" | run_nbdcp - "$tmp/old" || fail "stdin -> larger file failed"
cmp "$tmp/zeroes" "$tmp/old" || fail "stdin -> larger file differs (or was not cut)"
truncate -s 1M "$tmp/probe"
if [ "$(stat -c %b "$tmp/probe")" -eq 0 ]; then
  kb=$(du -k "$tmp/old" | cut -f1)
  [ "$kb" -lt 1024 ] || fail "stdin -> file: the 8M of zeroes took ${kb}K"
fi
# An empty stream makes an empty file.
run_nbdcp - "$tmp/empty" </dev/null || fail "empty stdin -> file failed"
[ -f "$tmp/empty" ] && [ "$(stat -c %s "$tmp/empty")" -eq 0 ] ||
  fail "empty stdin -> file: not an empty file"
: | run_nbdcp - "$tmp/old" || fail "empty pipe -> file failed"
[ "$(stat -c %s "$tmp/old")" -eq 0 ] || fail "empty pipe -> file: not cut to 0 bytes"

# stdin -> null:: all of it read (the writer is not cut off, and -v
# counts every byte).
{ cat "$tmp/src"; echo $? >"$tmp/cat.rc"; } |
  run_nbdcp -v - null: 2>"$tmp/null.err" || fail "stdin -> null: failed"
[ "$(cat "$tmp/cat.rc")" -eq 0 ] || fail "stdin -> null: the writer was cut off"
grep -Eq "done: $size bytes data, 0 zeroed" "$tmp/null.err" ||
  { cat "$tmp/null.err"; fail "stdin -> null: did not count $size bytes"; }

# nbd -> stdout, piped into cmp; and redirected to a file.
run_nbdcp "$src" - | cmp - "$tmp/src" || fail "nbd -> stdout (pipe) differs"
run_nbdcp "$src" - >"$tmp/stdout.file" || fail "nbd -> stdout (file) failed"
cmp "$tmp/src" "$tmp/stdout.file" || fail "nbd -> stdout (file) differs"

# stdout and stdin redirected to and from files, used from where the
# descriptor is, as cat would: '>>' appends (nothing before is cut or
# overwritten), output after other output follows it, and what comes
# after nbdcp's output follows it; stdin part-read is read from there.
# The source has holes (zero runs), so both zeroing paths are used.
printf 'HEADER\n' >"$tmp/app"
run_nbdcp "$tmp/zeroes" - >>"$tmp/app" || fail "file -> stdout >> file failed"
run_nbdcp "$src" - >>"$tmp/app" || fail "nbd -> stdout >> file failed"
cmp "$tmp/app" <(printf 'HEADER\n'; cat "$tmp/zeroes" "$tmp/src") ||
  fail "'>>': the file is not its old content followed by the copies"
{ echo before; run_nbdcp "$tmp/zeroes" -; echo after; } >"$tmp/grp1" ||
  fail "{ echo; nbdcp; echo; } > file failed"
cmp "$tmp/grp1" <(echo before; cat "$tmp/zeroes"; echo after) ||
  fail "output before and after nbdcp's in the same file: wrong bytes"
{ run_nbdcp "$tmp/zeroes" -; echo after; } >"$tmp/grp2" ||
  fail "{ nbdcp; echo; } > file failed"
cmp "$tmp/grp2" <(cat "$tmp/zeroes"; echo after) ||
  fail "output after nbdcp's in the same file: wrong bytes"
{ dd bs=1000 count=1 of=/dev/null status=none; run_nbdcp - "$tmp/rest"; } <"$tmp/zeroes" ||
  fail "part-read stdin -> file failed"
cmp "$tmp/rest" <(tail -c +1001 "$tmp/zeroes") ||
  fail "part-read stdin -> file: not the rest of the input"
# A file appended to itself is refused, as cat refuses it.
cp "$tmp/src" "$tmp/self"
r=0
run_nbdcp "$tmp/self" - >>"$tmp/self" 2>"$tmp/self.err" || r=$?
[ $r -eq 1 ] && grep -q '^nbdcp: source and destination are the same file' "$tmp/self.err" ||
  { cat "$tmp/self.err"; fail "file >> itself: exit $r, not refused"; }
cmp "$tmp/self" "$tmp/src" || fail "file >> itself: the file was changed"

# A sparse source to stdout: holes come out as zero bytes, exactly the
# bytes the server serves.  A small data disk, checked with od ...
start_nbdkit dat -r data '@4 1 2 3 @8190 0xff @^4096 "end"' size=12290
run_nbdcp "$(uri_of "$tmp/dat.sock")" - | od -A d -t x1 >"$tmp/dat.od"
cat >"$tmp/dat.expected" <<'EOF'
0000000 00 00 00 00 01 02 03 00 00 00 00 00 00 00 00 00
0000016 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
*
0008176 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ff 00
0008192 65 6e 64 00 00 00 00 00 00 00 00 00 00 00 00 00
0008208 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
*
0012288 00 00
0012290
EOF
diff -u "$tmp/dat.expected" "$tmp/dat.od" || fail "data disk -> stdout: wrong bytes"
# A stream cannot skip: --destination-is-zero is ignored for it (said
# under -v) and the holes still come out as zero bytes.
run_nbdcp -v --destination-is-zero "$(uri_of "$tmp/dat.sock")" - 2>"$tmp/diz.err" |
  od -A d -t x1 >"$tmp/diz.od" || { cat "$tmp/diz.err"; fail "--destination-is-zero -> stdout failed"; }
diff -u "$tmp/dat.expected" "$tmp/diz.od" ||
  fail "--destination-is-zero -> stdout: wrong bytes"
grep -q 'destination-is-zero ignored' "$tmp/diz.err" ||
  fail "--destination-is-zero -> stdout: no -v note that it is ignored"
# ... and a large sparse-random disk against nbdcopy's output and
# against nbdcp's own copy to a regular file.
start_nbdkit sr -r sparse-random size=$((64 * MiB)) seed=11 percent=25 runlength=524288
sr=$(uri_of "$tmp/sr.sock")
run_nbdcp "$sr" "$tmp/sr.file"
check_same "$sr" "$tmp/sr.file" "sparse-random -> file"
run_nbdcp "$sr" - | cmp - "$tmp/sr.file" || fail "sparse-random -> stdout differs from -> file"
if command -v nbdcopy >/dev/null 2>&1; then
  run_nbdcp "$sr" - | cmp - <(nbdcopy "$sr" -) ||
    fail "sparse-random -> stdout differs from nbdcopy's"
fi
run_nbdcp --destination-is-zero "$sr" - | cmp - "$tmp/sr.file" ||
  fail "sparse-random --destination-is-zero -> stdout differs from -> file"
# and the stream back into a memory disk.
start_nbdkit srmem memory size=$((64 * MiB))
run_nbdcp "$sr" - | run_nbdcp - "$(uri_of "$tmp/srmem.sock")" ||
  fail "sparse-random -> stdout -> stdin -> memory failed"
check_same "$sr" "$(uri_of "$tmp/srmem.sock")" \
  "sparse-random -> stdout -> stdin -> memory"

# FIFOs: as destination and as source, and FIFO -> stdout.
mkfifo "$tmp/fifo"
run_nbdcp "$src" "$tmp/fifo" 2>"$tmp/fifo.err" & fifo_pid=$!
cmp "$tmp/fifo" "$tmp/src" || fail "nbd -> FIFO differs"
wait $fifo_pid || { cat "$tmp/fifo.err"; fail "nbd -> FIFO: nbdcp failed"; }
cat "$tmp/src" >"$tmp/fifo" & cat_pid=$!
run_nbdcp "$tmp/fifo" "$tmp/fromfifo" || fail "FIFO -> file failed"
wait $cat_pid
cmp "$tmp/src" "$tmp/fromfifo" || fail "FIFO -> file differs"
cat "$tmp/src" >"$tmp/fifo" & cat_pid=$!
run_nbdcp "$tmp/fifo" - | cmp - "$tmp/src" || fail "FIFO -> stdout differs"
wait $cat_pid
start_nbdkit fifomem memory size=$size
cat "$tmp/src" >"$tmp/fifo" & cat_pid=$!
run_nbdcp "$tmp/fifo" "$(uri_of "$tmp/fifomem.sock")" || fail "FIFO -> nbd failed"
wait $cat_pid
check_same "$tmp/src" "$(uri_of "$tmp/fifomem.sock")" "FIFO -> nbd"

# The reader goes away: nbdcp must end at once (the time limit is 20s
# for a 1G disk), not 0 (the copy did not complete), and not be killed
# by a signal other than SIGPIPE.
start_nbdkit pat -r pattern size=1G
set +e
timeout --kill-after=5 20 "$NBDCP" "$(uri_of "$tmp/pat.sock")" - 2>"$tmp/head.err" |
  head -c 1 >"$tmp/head.out"
r=${PIPESTATUS[0]}
set -e
echo "nbdcp ... - | head -c 1: exit $r, stderr: '$(cat "$tmp/head.err")'"
[ "$(stat -c %s "$tmp/head.out")" -eq 1 ] || fail "| head -c 1 got no byte"
case $r in
  0) fail "| head -c 1: nbdcp exited 0 though the copy did not complete" ;;
  124|137) fail "| head -c 1: nbdcp hung (timeout)" ;;
  141) ;; # SIGPIPE
  1) ;;
  *) fail "| head -c 1: nbdcp exited $r" ;;
esac
if [ -s "$tmp/head.err" ]; then
  [ "$(wc -l <"$tmp/head.err")" -eq 1 ] && grep -q '^nbdcp: ' "$tmp/head.err" ||
    fail "| head -c 1: stderr is not one 'nbdcp: ' line"
fi

# A FIFO nobody has open at the other end: nbdcp waits in open(2), as a
# shell redirection would (the man page says so), and a signal ends the
# wait: exit 130, "interrupted by signal 2", and as a source no
# destination file created.  Both wait in the same place, so -v's
# lines before it are what is waited for; the signal may also come
# while still opening, with the same result.
mkfifo "$tmp/nobody-reads" "$tmp/nobody-writes"
head -c 65536 /dev/urandom >"$tmp/small.raw"
for dir in reads writes; do
  if [ $dir = reads ]; then
    "$NBDCP" -v "$tmp/small.raw" "$tmp/nobody-reads" 2>"$tmp/fifo.err" &
  else
    "$NBDCP" -v "$tmp/nobody-writes" "$tmp/fifo-out.raw" 2>"$tmp/fifo.err" &
  fi
  pid=$!
  # Opened in the kernel's FIFO wait: /proc says so; no fixed sleep.
  wait_until 30 grep -qx 'wait_for_partner\|fifo_open' "/proc/$pid/wchan" ||
    { cat "/proc/$pid/wchan" >&2 2>/dev/null; fail "FIFO nobody $dir: nbdcp is not waiting in open"; }
  kill -INT $pid
  ends_within $pid 10 || fail "FIFO nobody $dir: SIGINT did not end the wait"
  r=0
  wait $pid || r=$?
  [ $r -eq 130 ] || { cat "$tmp/fifo.err" >&2; fail "FIFO nobody $dir: exit $r, not 130"; }
  [ "$(grep -v '^libnbd' "$tmp/fifo.err" | tail -1)" = "nbdcp: interrupted by signal 2 (Interrupt)" ] ||
    { cat "$tmp/fifo.err" >&2; fail "FIFO nobody $dir: not the signal's line"; }
done
[ ! -e "$tmp/fifo-out.raw" ] || fail "FIFO nobody writes: the destination was created"
