#!/bin/bash
# nbdcp never reads a hole the source reports (but for holes shorter than
# 32K between data, which are read with it: docs/design.md, "Fragmented
# sources"), reads each data byte once, and copies exactly.
. "${srcdir:-.}/tests/functions.sh"

requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_plugin sparse-random
requires_nbdkit_filter log
requires "$QEMU_IMG"

# records LOG: what the source's log says, one line each, in decimal:
#   Z OFFSET LENGTH   an extent it reported as zero
#   D OFFSET LENGTH   an extent it reported as data (anything not zero)
#   R OFFSET COUNT    a read it served
# (hex() is $AWK_HEX, from functions.sh; mawk prints big numbers as
# 1e+09: hence %.0f.)
records ()
{
  awk "$AWK_HEX"'
    function arg(name,  i) {
      for (i = 5; i <= NF; i++)
        if (index($i, name "=") == 1)
          return hex(substr($i, length(name) + 2))
      print "no " name " in: " $0 > "/dev/stderr"
      exit 1
    }
    $4 == "Read" { printf "R %.0f %.0f\n", arg("offset"), arg("count") }
    $4 == "...Extents" {
      s = $0; sub(/.*extents=\(/, "", s); sub(/\).*/, "", s)
      n = split(s, e, " ")
      for (i = 1; i + 2 <= n; i += 3)
        printf "%s %.0f %.0f\n", (e[i+2] ~ /zero/ ? "Z" : "D"),
               hex(e[i]), hex(e[i+1])
    }' "$1"
}

# The holes nbdcp may read: shorter than this, with data on both sides.
FOLD=32768

# check_reads LOG SIZE: the extents the source reported cover the whole
# disk; no read overlaps a zero extent (adjacent ones joined) but for
# holes shorter than FOLD between data; no byte is read twice; and the
# bytes read add up to the data extents, plus at most those short
# holes.
check_reads ()
{
  records "$1" | sort -k2,2n -k1,1 >"$tmp/records" || return 1
  awk -v size="$2" -v fold=$FOLD '
    $1 == "Z" || $1 == "D" {
      if ($2 > covered) {
        printf "source extents leave %.0f..%.0f unreported\n", covered, $2
        bad = 1
      }
      if ($2 + $3 > covered) covered = $2 + $3
    }
    $1 == "Z" {
      if (nz > 0 && $2 <= zend[nz - 1]) {
        if ($2 + $3 > zend[nz - 1]) zend[nz - 1] = $2 + $3
      }
      else { zoff[nz] = $2; zend[nz] = $2 + $3; nz++ }
    }
    $1 == "D" {
      s = $2 > dend ? $2 : dend; e = $2 + $3 > size ? size : $2 + $3
      if (e > s) data += e - s
      if (e > dend) dend = e
    }
    $1 == "R" {
      roff[nr] = $2; rend[nr] = $2 + $3; nr++; read += $3
      if ($2 < rlast) {
        printf "read at %.0f overlaps the previous read, ending at %.0f\n",
               $2, rlast
        bad = 1
      }
      rlast = $2 + $3
    }
    END {
      if (covered < size) {
        printf "source extents stop at %.0f of %.0f\n", covered, size
        bad = 1
      }
      if (nr == 0) { print "no Read in the source log"; bad = 1 }
      for (j = 0; j < nz; j++) {
        short[j] = zend[j] - zoff[j] < fold && zoff[j] > 0 && zend[j] < size
        if (short[j]) shortbytes += zend[j] - zoff[j]
      }
      for (i = 0; i < nr; i++)
        for (j = 0; j < nz; j++)
          if (!short[j] && roff[i] < zend[j] && zoff[j] < rend[i]) {
            printf "read %.0f..%.0f overlaps zero extent %.0f..%.0f\n",
                   roff[i], rend[i], zoff[j], zend[j]
            bad = 1
          }
      if (read < data || read > data + shortbytes) {
        printf "read %.0f bytes, but the data extents hold %.0f (and the " \
               "short holes between them %.0f)\n", read, data, shortbytes
        bad = 1
      }
      printf "%d reads, %.0f bytes read of %.0f; %d zero extents reported\n",
             nr, read, size, nz
      exit bad
    }' "$tmp/records"
}

# 1. A source whose data is known exactly: one byte at 1M, 5000 bytes
# straddling the first 128M segment boundary, one byte at 256M; the rest
# is one big hole.
start_nbdkit src --filter=log \
  data '@1048576 1 @134215000 3*5000 @268435456 2' size=512M \
  logfile="$tmp/src.log"
start_nbdkit dst memory size=512M
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")

run_nbdcp "$src" "$dst"
# Keep the copy's log apart from qemu-img's reads below.
cp "$tmp/src.log" "$tmp/copy.log"
check_reads "$tmp/copy.log" $((512 * 1024 * 1024)) ||
  fail "data source: nbdcp read outside the data"
# Independently of what the data plugin reports: every read lies within
# 1M..2M, 127M..129M or 256M..257M, and at most 1M is read in all.
records "$tmp/copy.log" | awk '
  $1 == "R" {
    M = 1048576; total += $3
    if (!(($2 >= M && $2 + $3 <= 2 * M) ||
          ($2 >= 127 * M && $2 + $3 <= 129 * M) ||
          ($2 >= 256 * M && $2 + $3 <= 257 * M))) {
      printf "read %.0f..%.0f is nowhere near the data\n", $2, $2 + $3
      bad = 1
    }
  }
  END { if (total > 1048576) { printf "%.0f bytes read\n", total; bad = 1 }
        exit bad }' ||
  fail "data source: nbdcp read the big hole"
check_same "$src" "$dst" "data source"

# 2. sparse-random into memory.  1M runs give many extents (about 570)
# and segment boundaries inside data.  (Much smaller runs would make
# qemu-img's comparison slow: it asks for the block status of the rest
# of the disk at every extent.)  The destination is written exactly
# once over the whole disk, and ends equal to the source.
size=$((1024 * 1024 * 1024))
start_nbdkit sr -r --filter=log \
  sparse-random size=$size seed=4242 percent=25 runlength=1048576 \
  logfile="$tmp/sr.log"
start_nbdkit srdst --filter=log memory size=$size logfile="$tmp/srdst.log"
sr=$(uri_of "$tmp/sr.sock")
srdst=$(uri_of "$tmp/srdst.sock")
# Every byte written or zeroed, even where the new disk reads as zero.
run_nbdcp --no-destination-extents "$sr" "$srdst" ||
  fail "sparse-random copy failed"
cp "$tmp/sr.log" "$tmp/sr.copy.log"
check_reads "$tmp/sr.copy.log" $size || fail "sparse-random: nbdcp read a hole"
check_covered "$tmp/srdst.log" $size
check_same "$sr" "$srdst" "sparse-random"
