#!/bin/bash
# --resume's journal lists only segments that are durable: a segment is
# recorded once a flush after its last write succeeded, never when its
# requests merely finished.  The destination here keeps writes in
# nbdkit's cache filter (cache=writeback) and writes them to its file
# only when a client flushes; it is killed with SIGKILL in the middle
# of the copy, so every unflushed write is lost, then served again from
# the file, and the same command is run again with the same journal.
#   A. The only flush is the last one (the default --checkpoint is the
#      whole disk): when the destination dies, several segments are
#      finished and none is flushed, so the journal must list none.
#   B. Each segment is flushed when it is finished (--checkpoint=128M):
#      the journal lists some, and each of them must be in the file.
# In both, nbdkit's log must show, for each segment the journal lists,
# a flush on the connection of its last write, sent after that write
# was answered; and the rerun must leave the file equal to the source.
. "${srcdir:-.}/tests/functions.sh"

requires_resume
requires_nbdkit_filter cache
requires_nbdkit_filter rate

size=$((1024 * 1024 * 1024))
seg=$((128 * 1024 * 1024))
# About 115 MB of data, in every segment, in about a hundred runs.
disk="sparse-random size=$size seed=21 percent=10 runlength=1048576"
start_nbdkit plain $disk
plain=$(uri_of "$tmp/plain.sock")

# serve_source [rate]: (re)start the source on $tmp/src.sock, slowed
# to about 15 MB/s (no burst) with "rate", so that the destination can
# be killed with segments finished and more to come: the copy takes
# eight seconds, and the test polls the log for when to kill.  At
# 60 MB/s, on a machine loaded to 20 runnable threads a core, the
# polls came too late.  The journal
# names the source by its URI, so a rerun must use the same socket.
serve_source ()
{
  if [ -n "${pid_src:-}" ]; then
    kill "$pid_src" 2>/dev/null || :
    wait "$pid_src" 2>/dev/null || :
  fi
  rm -f "$tmp/src.sock"
  if [ "${1:-}" = rate ]; then
    start_nbdkit src --filter=rate $disk rate=120M burstiness=0.2
  else
    start_nbdkit src $disk
  fi
  pid_src=${_pids[-1]}
}
src=$(uri_of "$tmp/src.sock")

# serve_destination NAME [cache]: serve $tmp/NAME.img, with "cache"
# through a writeback cache, logged in front of the cache (what the
# client asked and was told) to $tmp/NAME.log.  Its pid is in $pid_dst.
serve_destination ()
{
  rm -f "$tmp/$1.sock"
  if [ "${2:-}" = cache ]; then
    start_nbdkit "$1" --filter=log --filter=cache file "$tmp/$1.img" \
      cache=writeback logfile="$tmp/$1.log"
  else
    start_nbdkit "$1" file "$tmp/$1.img"
  fi
  pid_dst=${_pids[-1]}
}

# same_segment S FILE: segment S of FILE is segment S of the source
# (qemu-img compare of the two ranges).
same_segment ()
{
  local o=$(($1 * seg))
  "$QEMU_IMG" compare -q --image-opts \
    "driver=raw,offset=$o,size=$seg,file.driver=nbd,file.path=$tmp/plain.sock" \
    "driver=raw,offset=$o,size=$seg,file.driver=file,file.filename=$2"
}

# segments_touched LOG: how many segments have had a write or a zero.
segments_touched ()
{
  logged_writes "$1" 2>/dev/null | awk -v seg=$seg '{ print int($1 / seg) }' |
    sort -u | wc -l
}

# done_segments JOURNAL: the segments it lists as done, one a line.
done_segments ()
{
  sed -n 's/^done //p' "$1" 2>/dev/null | tr ',' '\n' |
    awk -F- 'NF == 1 && $1 != "" { print $1 }
             NF == 2 { for (i = $1; i <= $2; i++) print i }'
}

# check_flushed_after_writes LOG SEGMENTS...: in nbdkit's LOG, each
# segment's last successful write or zero on each connection was
# followed on that connection by a flush that was sent after the write
# was answered, and that succeeded.
check_flushed_after_writes ()
{
  local log=$1
  shift
  awk -v done="$*" -v seg=$seg "$AWK_HEX"'
    BEGIN { n = split(done, d, " "); for (i = 1; i <= n; i++) isdone[d[i]] = 1 }
    $4 == "Write" || $4 == "Zero" || $4 == "Trim" {
      for (i = 5; i <= NF; i++) {
        if ($i ~ /^offset=/) off[$3 " " $5] = hex(substr($i, 8))
        if ($i ~ /^count=/) cnt[$3 " " $5] = hex(substr($i, 7))
      }
    }
    ($4 == "...Write" || $4 == "...Zero" || $4 == "...Trim") \
        && $6 == "return=0" {
      k = $3 " " $5
      for (s = int(off[k] / seg); s <= int((off[k] + cnt[k] - 1) / seg); s++) {
        last[s SUBSEP $3] = NR
        flushed[s SUBSEP $3] = 0
      }
    }
    $4 == "Flush" { sent[$3 " " $5] = NR }
    $4 == "...Flush" && $6 == "return=0" {
      for (k in last) {
        split(k, a, SUBSEP)
        if (a[2] == $3 && last[k] < sent[$3 " " $5]) flushed[k] = 1
      }
    }
    END {
      for (k in last) {
        split(k, a, SUBSEP)
        if (isdone[a[1]] && !flushed[k]) {
          printf "segment %s: its last write on %s (log line %d) was " \
                 "never flushed\n", a[1], a[2], last[k]
          bad = 1
        }
      }
      exit bad
    }' "$log" >"$tmp/flushed.out" || {
    cat "$tmp/flushed.out" >&2
    fail "the journal lists segments that were not flushed"
  }
}

_waited_or_ended ()
{
  eval "$1" || ! kill -0 "$2" 2>/dev/null
}

# crash_and_resume NAME MIN_DONE WAIT_FOR NBDCP_ARGS...: copy into a
# fresh file through a writeback cache; once WAIT_FOR (a command) is
# true, kill the destination with SIGKILL; check the journal against
# the log and the file; serve the file again and rerun the same copy.
crash_and_resume ()
{
  local name=$1 min_done=$2 wait_for=$3 r=0 i
  shift 3
  local j=$tmp/$name.journal
  truncate -s $size "$tmp/$name.img"
  serve_destination $name cache
  local dst
  dst=$(uri_of "$tmp/$name.sock")
  serve_source rate
  timeout 120 "$NBDCP" -C 2 --resume="$j" "$@" "$src" "$dst" \
    2>"$tmp/$name.err1" &
  local copy=$!
  # WAIT_FOR, or the copy ended: 60 s at most (the copy takes about 8 s
  # unloaded; the checks below fail if the kill came too late).
  wait_until 60 _waited_or_ended "$wait_for" $copy || :
  kill -KILL $pid_dst
  wait $pid_dst 2>/dev/null || :
  wait $copy || r=$?
  [ $r -eq 1 ] || { cat "$tmp/$name.err1" >&2; fail "$name: exit $r, not 1"; }
  # The kill came while segments remained to copy, or the test proves
  # nothing.
  [ "$(segments_touched "$tmp/$name.log")" -lt 8 ] ||
    fail "$name: the destination was killed too late"
  [ -f "$j" ] || fail "$name: no journal after the failed run"
  local done_list
  done_list=$(done_segments "$j" | tr '\n' ' ')
  echo "$name: segments in the journal after the crash: ${done_list:-none}"
  [ $(echo $done_list | wc -w) -ge "$min_done" ] ||
    fail "$name: fewer than $min_done segments in the journal"
  check_flushed_after_writes "$tmp/$name.log" $done_list
  # What the journal lists is in the file, though the server died.
  for i in $done_list; do
    same_segment $i "$tmp/$name.img" ||
      fail "$name: segment $i is in the journal but not in the file"
  done

  # The same command again, onto the file served afresh (without the
  # cache, which would only slow this run down), from an unthrottled
  # source on the same socket.
  serve_destination $name
  serve_source
  run_nbdcp -C 2 --resume="$j" "$@" "$src" "$dst" 2>"$tmp/$name.err2" ||
    { cat "$tmp/$name.err2" >&2; fail "$name: the resumed run failed"; }
  [ ! -e "$j" ] || fail "$name: the journal was not removed after success"
  kill $pid_dst
  wait $pid_dst 2>/dev/null || :
  check_same "$plain" "$tmp/$name.img" "$name: resumed after a crash"
}

# A. Killed once four segments have had writes: with two lanes, which
# finish a segment before taking another, two or more are finished.
crash_and_resume A 0 '[ "$(segments_touched "$tmp/A.log")" -ge 4 ]'

# B. Killed once the journal lists three segments.
crash_and_resume B 3 '[ "$(done_segments "$tmp/B.journal" | wc -l)" -ge 3 ]' \
  --checkpoint=128M
exit 0
