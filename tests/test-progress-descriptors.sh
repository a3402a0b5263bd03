#!/bin/bash
# Progress never goes into the copy, and never holds it up.
#
# Refused before anything is opened, with exit 1 and a message naming
# the option and the descriptor, the destination neither created nor
# changed: --progress=FD or --progress-json=FD on a closed descriptor
# (the destination file would be opened on that number and begin with
# a JSON line), one open only for reading, standard output when the
# destination is '-', a descriptor that is the destination file or the
# same pipe as standard output, and standard input when the source is
# '-'.
#
# Written without blocking: with a pipe that nobody reads and that is
# already full, --progress=FD and --progress-json=FD copies finish, exit
# 0 and are exact (cmp), and a signal ends one at once.
. "${srcdir:-.}/tests/functions.sh"

size=$((8 * 1024 * 1024))
head -c $size /dev/urandom >"$tmp/src.raw"
head -c $size /dev/urandom >"$tmp/old.raw"

# refused PATTERN CMD...: CMD (an nbdcp command line run by bash -c, so
# that it can close and redirect descriptors) exits 1 with a message
# matching PATTERN, and dst.raw (old data) is unchanged; new.raw, if
# named, is not created.
refused ()
{
  local pattern=$1 rc=0
  cp "$tmp/old.raw" "$tmp/dst.raw"
  rm -f "$tmp/new.raw"
  NBDCP="$NBDCP" tmp="$tmp" bash -c "$2" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 1 ] || { cat "$tmp/err"; fail "exit $rc, not 1: $2"; }
  grep -Eq -- "$pattern" "$tmp/err" ||
    fail "no message matching '$pattern': $(cat "$tmp/err") ($2)"
  cmp -s "$tmp/old.raw" "$tmp/dst.raw" || fail "the destination changed: $2"
  [ ! -e "$tmp/new.raw" ] || fail "the destination was created: $2"
  ! grep -q phase "$tmp/out" || fail "progress written to stdout: $2"
}

refused '^nbdcp: --progress-json=4: descriptor 4 is not open$' \
  'exec 4>&-; "$NBDCP" --progress-json=4 "$tmp/src.raw" "$tmp/new.raw"'
refused '^nbdcp: --progress=5: descriptor 5 is not open$' \
  'exec 5>&-; "$NBDCP" --progress=5 "$tmp/src.raw" "$tmp/new.raw"'
refused '^nbdcp: --progress=3: descriptor 3 is not open for writing$' \
  '"$NBDCP" --progress=3 "$tmp/src.raw" "$tmp/new.raw" 3<"$tmp/src.raw"'
refused '^nbdcp: --progress-json=1: descriptor 1 is the destination \(-\)' \
  '"$NBDCP" --progress-json=1 "$tmp/src.raw" - >"$tmp/dst.raw.out"; s=$?; cmp -s /dev/null "$tmp/dst.raw.out" || echo "stdout written" >&2; exit $s'
refused '^nbdcp: --progress=1: descriptor 1 is the destination \(-\)' \
  '"$NBDCP" --progress=1 "$tmp/src.raw" - | cat >/dev/null; exit ${PIPESTATUS[0]}'
refused '^nbdcp: --progress-json=3: descriptor 3 is the destination \(-\)' \
  '"$NBDCP" --progress-json=3 "$tmp/src.raw" - 3>&1 | cat >/dev/null; exit ${PIPESTATUS[0]}'
refused '^nbdcp: --progress=3: descriptor 3 is the destination \(.*dst.raw\)' \
  '"$NBDCP" --progress=3 "$tmp/src.raw" "$tmp/dst.raw" 3>>"$tmp/dst.raw"'
refused '^nbdcp: --progress-json=0: descriptor 0 is the source \(-\)' \
  '"$NBDCP" --progress-json=0 - "$tmp/new.raw" 0<>"$tmp/src.raw"'
# The same pipe named by a path: /dev/stdout, /dev/fd/1, a FIFO's name.
refused '^nbdcp: --progress=3: descriptor 3 is the destination \(/dev/stdout\)' \
  '"$NBDCP" --progress=3 "$tmp/src.raw" /dev/stdout 3>&1 | cat >"$tmp/out.raw"; exit ${PIPESTATUS[0]}'
refused '^nbdcp: --progress-json=3: descriptor 3 is the destination \(/dev/fd/1\)' \
  '"$NBDCP" --progress-json=3 "$tmp/src.raw" /dev/fd/1 3>&1 | cat >"$tmp/out.raw"; exit ${PIPESTATUS[0]}'
mkfifo "$tmp/dfifo"
refused '^nbdcp: --progress=3: descriptor 3 is the destination \(.*dfifo\)' \
  'exec 4<>"$tmp/dfifo"; "$NBDCP" --progress=3 "$tmp/src.raw" "$tmp/dfifo" 3>"$tmp/dfifo"'
refused '^nbdcp: --progress=3: descriptor 3 is the source \(/dev/stdin\)' \
  'cat "$tmp/src.raw" | "$NBDCP" --progress=3 /dev/stdin "$tmp/new.raw" 3>/dev/stdin'

# A FIFO that nobody reads, filled to the brim: fd 3 holds it open for
# reading and writing, so writes to it neither fail nor ever drain.
mkfifo "$tmp/fifo"
exec 3<>"$tmp/fifo"
# 64 KiB is a new pipe's capacity; the write of exactly that succeeds.
head -c 65536 /dev/zero >&3
for opt in --progress=3 --progress-json=3; do
  rm -f "$tmp/dst.raw"
  rc=0
  timeout --kill-after=5 30 "$NBDCP" $opt "$tmp/src.raw" "$tmp/dst.raw" 2>"$tmp/err" || rc=$?
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$opt to a full pipe: nbdcp blocked"
  [ $rc -eq 0 ] || { cat "$tmp/err"; fail "$opt to a full pipe: exit $rc"; }
  cmp "$tmp/src.raw" "$tmp/dst.raw" || fail "$opt to a full pipe: copy differs"
done

# A signal while progress cannot be written: nbdcp ends at once, with
# either kind of progress.
for opt in --progress-json=3 --progress=3; do
  # (The last run's log goes first: its 'copying' line must not be
  # taken for this run's.)
  rm -f "$tmp/dst.raw" "$tmp/err"
  "$NBDCP" -v $opt --rate=1M "$tmp/src.raw" "$tmp/dst.raw" 2>"$tmp/err" &
  pid=$!
  wait_for_log_line "$tmp/err" '^nbdcp: copying'
  kill -TERM $pid
  wait_until 10 _gone $pid ||
    { kill -KILL $pid; fail "$opt, SIGTERM: nbdcp blocked"; }
  rc=0
  wait $pid || rc=$?
  [ $rc -eq 143 ] || { cat "$tmp/err"; fail "$opt, SIGTERM: exit $rc, not 143"; }
done

# A signal in the last line's wait (at most a second for a slow reader,
# once the copy is done and the workers have ended): it ends the wait
# at once, and nbdcp exits 143 with the copy complete.  The wait is
# seen in /proc (signal_in_poll_wait): a poll of one descriptor for
# 1000 ms.  The copy takes a moment and the wait a second: a wait
# missed (a loaded machine) is tried again, up to five times.
for opt in --progress=3 --progress-json=3; do
  rm -f "$tmp/dst.raw"
  signal_in_poll_wait 1000 5 "$NBDCP" $opt "$tmp/src.raw" "$tmp/dst.raw"
  if [ "$caught" = unsupported ]; then
    echo "not x86_64 or no /proc/PID/syscall: the last line's wait is not signalled"
    break
  fi
  [ -n "$caught" ] || fail "$opt: the last line's wait was never seen"
  [ $rc -eq 143 ] || { cat "$tmp/err"; fail "$opt, SIGTERM in the last line's wait: exit $rc, not 143"; }
  cmp "$tmp/src.raw" "$tmp/dst.raw" || fail "$opt, SIGTERM in the last line's wait: copy differs"
  echo "$opt: exit $took s after SIGTERM in the last line's wait"
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 0.8 else 1)' "$took" ||
    fail "$opt: SIGTERM did not end the last line's wait"
done
exec 3>&-

# --progress=FD after a signal: the last line says how far the copy
# got, below 100/100 (what a pipeline reading it sees last).
rm -f "$tmp/dst.raw" "$tmp/err"
"$NBDCP" -v --progress=3 --rate=1M "$tmp/src.raw" "$tmp/dst.raw" \
  2>"$tmp/err" 3>"$tmp/plines" &
pid=$!
wait_for_log_line "$tmp/err" '^nbdcp: copying'
kill -INT $pid
rc=0
wait $pid || rc=$?
[ $rc -eq 130 ] || { cat "$tmp/err"; fail "--progress=FD, SIGINT: exit $rc, not 130"; }
last=$(tail -n 1 "$tmp/plines")
[[ $last =~ ^([0-9]+)/100$ ]] && [ "${BASH_REMATCH[1]}" -lt 100 ] ||
  { cat "$tmp/plines"; fail "--progress=FD after SIGINT: last line '$last'"; }
