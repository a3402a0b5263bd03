#!/bin/bash
# Every destination connection is flushed exactly once, after all of its own writes, with or without multi-conn, and with --checkpoint but neither --retry nor --resume (with --retry, once per 128M checkpoint).
. "${srcdir:-.}/tests/functions.sh"

requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires_nbdkit_filter multi-conn
requires "$QEMU_IMG"

# check_flushes LOG CONNECTIONS: the destination saw CONNECTIONS
# connections (a number, or a range MIN-MAX), and each sent exactly one
# Flush, which succeeded, was
# sent when none of that connection's writes, zeroes or trims were in
# flight any more, and was followed by no more of them.  (Without
# multi-conn a flush only covers its own connection's writes, so this
# is what makes the copy durable.)
check_flushes ()
{
  awk -v want="$2" '
    $3 !~ /^connection=[0-9]+$/ { next }
    { c = substr($3, 12); act = $4 }
    act == "Connect" { conns[c] = 1; nconn++ }
    act == "Write" || act == "Zero" || act == "Trim" {
      if (flushes[c] > 0) {
        print "connection " c ": " act " after its flush"; bad = 1
      }
      busy[c]++
    }
    act == "...Write" || act == "...Zero" || act == "...Trim" { busy[c]-- }
    act == "Flush" {
      if (busy[c] > 0) {
        print "connection " c ": Flush sent with " busy[c] \
              " write(s) still in flight"
        bad = 1
      }
      flushes[c]++; total++
    }
    act == "...Flush" && $0 !~ / return=0/ {
      print "connection " c ": Flush failed: " $0; bad = 1
    }
    END {
      n = split(want, r, "-")
      lo = r[1]; hi = n > 1 ? r[2] : r[1]
      if (nconn < lo + 0 || nconn > hi + 0) {
        print "expected " want " connections, saw " nconn + 0; bad = 1
      }
      for (c in conns)
        if (flushes[c] != 1) {
          print "connection " c ": " flushes[c] + 0 " flushes"; bad = 1
        }
      print nconn + 0 " connections, " total + 0 " flushes"
      exit bad
    }' "$1"
}

# copy NAME SIZE MULTI-CONN NBDCP-OPTIONS...: copy a sparse-random disk
# of SIZE to a fresh memory disk, and compare the two; the copy's log
# is $tmp/NAME.log.  Unless MULTI-CONN is "-", the destination gets the
# multi-conn filter in that mode, after the log filter: the log then
# sees the client's flushes before the multi-conn filter can drop any.
copy ()
{
  local name=$1 size=$2 mc=() src dst runlength=65536
  [ "$3" = - ] || mc=(--filter=multi-conn multi-conn-mode="$3")
  shift 3
  # Runs of 64K give even a 4M disk some data; 1G disks get 1M runs,
  # which keep qemu-img's comparison quick (a few hundred extents).
  [ "$size" != 1G ] || runlength=1048576
  start_nbdkit "$name-src" \
    sparse-random size="$size" seed=7 percent=5 runlength=$runlength
  start_nbdkit "$name" --filter=log "${mc[@]:0:1}" \
    memory size="$size" logfile="$tmp/$name.all.log" "${mc[@]:1}"
  src=$(uri_of "$tmp/$name-src.sock")
  dst=$(uri_of "$tmp/$name.sock")
  run_nbdcp -v "$@" "$src" "$dst" 2>"$tmp/$name.nbdcp" || {
    cat "$tmp/$name.nbdcp" >&2
    fail "$name: nbdcp failed"
  }
  # The copy's part of the log, without qemu-img's connection below.
  cp "$tmp/$name.all.log" "$tmp/$name.log"
  grep -q ' Write ' "$tmp/$name.log" || fail "$name: nothing was written"
  check_same "$src" "$dst" "$name"
}

# Four connections to a server advertising multi-conn.
copy c4 1G - -C 4 -T 4
check_flushes "$tmp/c4.log" 4 || fail "-C 4: not one flush per connection"

# copy_with_extras NAME MIN SIZE MULTI-CONN NBDCP-OPTIONS...: copy as
# copy does, again (up to three times in all) while the destination saw
# fewer than MIN connections.  Without multi-conn, nbdcp drops extra
# connections that have not had the server's greeting a few
# milliseconds after the first connection's handshake (a server that
# serves one client at a time would leave them waiting forever;
# docs/design.md).  Under a slow build (ThreadSanitizer) extras are
# sometimes that late, so fewer connections can be a right answer; the
# test only means something with at least MIN of them.
copy_with_extras ()
{
  local name=$1 min=$2 try
  shift 2
  for try in 1 2 3; do
    copy "$name$try" "$@"
    cp "$tmp/$name$try.log" "$tmp/$name.log"
    cp "$tmp/$name$try.nbdcp" "$tmp/$name.nbdcp"
    [ "$(grep -c ' Connect ' "$tmp/$name.log" || :)" -lt "$min" ] || return 0
    echo "$name: fewer than $min connections were opened; again"
  done
}

# The same without multi-conn: nbdcp still uses the four connections it
# could open, so it must still flush each of them (the log filter is
# outermost, so it sees the client's flushes before multi-conn filters
# anything).
copy_with_extras nomc 2 1G disable -C 4 -T 4
grep -q 'destination.*multi-conn not advertised' "$tmp/nomc.nbdcp" ||
  fail "the multi-conn filter did not hide multi-conn"
check_flushes "$tmp/nomc.log" 2-4 ||
  fail "-C 4 without multi-conn: not one flush per connection"

# A disk smaller than one segment: one lane could use only one of four
# connections, so only one is opened, and flushed.
copy small 4M disable -C 4 -T 4
check_flushes "$tmp/small.log" 1 ||
  fail "-C 4, small disk: not one connection, flushed once"
# Two segments: two connections, each flushed, one of them after
# writing nothing if one lane took both segments.
copy_with_extras two 2 129M disable -C 4 -T 4
check_flushes "$tmp/two.log" 2 ||
  fail "-C 4, two segments: not one flush per connection"

# One connection: exactly one flush.
copy c1 1G - -C 1
check_flushes "$tmp/c1.log" 1 || fail "-C 1: not exactly one flush"
[ "$(grep -c ' Flush id=' "$tmp/c1.log")" -eq 1 ] ||
  fail "-C 1: not exactly one flush"

# --synchronous is one connection too.
copy sync 64M - --synchronous
check_flushes "$tmp/sync.log" 1 || fail "--synchronous: not exactly one flush"

# --checkpoint without --retry or --resume changes nothing (the man
# page says so): one flush per connection, at the end.  With --retry it
# flushes after every 128M of finished segments, eight over the 1G
# disk's eight segments on one connection (and the final flush: 9).
copy ckpt 1G - -C 2 -T 2 --checkpoint=128M
check_flushes "$tmp/ckpt.log" 2 ||
  fail "--checkpoint alone: not exactly one flush per connection"
copy ckptretry 1G - -C 1 -T 1 --checkpoint=128M --retry=1
n=$(awk '$4 == "Flush"' "$tmp/ckptretry.log" | wc -l)
[ "$n" -ge 8 ] && [ "$n" -le 9 ] ||
  fail "--checkpoint=128M --retry=1: $n flushes, not 8 or 9"
