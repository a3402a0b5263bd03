#!/bin/bash
# data, pattern and memory sources copied into a destination with the
# checkwrite filter, which fails any write that differs from what its
# plugin would read there (and zeroes where the plugin has data).  The
# checker sees only the requests it gets, so its log must also show
# writes covering the whole disk exactly once; and the same sources
# copied into memory are compared by qemu-img.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin data
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_filter checkwrite
requires_nbdkit_filter log
requires "$QEMU_IMG"

# checked NAME SIZE SRC-URI PLUGIN-ARGS...: copy SRC-URI into a new
# checkwrite destination over PLUGIN-ARGS, logging to $tmp/NAME.log.
# (The log filter goes first, outside checkwrite: checkwrite answers
# writes itself, so a log inside it would see none.)
checked ()
{
  local name=$1 size=$2 src=$3
  shift 3
  start_nbdkit "$name" --filter=log --filter=checkwrite "$@" \
    logfile="$tmp/$name.log"
  # Every byte written, zeroes included, even where the checker reads
  # as zero already.
  run_nbdcp --no-destination-extents "$src" "$(uri_of "$tmp/$name.sock")" ||
    fail "$name: copy into the checker failed"
  check_covered "$tmp/$name.log" "$size"
}

# pattern: every byte is data.
size=$((300 * 1024 * 1024))
start_nbdkit pat -r pattern size=$size
pat=$(uri_of "$tmp/pat.sock")
checked patcheck $size "$pat" pattern size=$size

# data: sparse, with data at odd offsets and a zero block inside data.
disk='@0 "start" @4095 1 2 3 @1048576 ( 0xaa 0x55 ) * 8192 @209715200 "middle" @^4096 "end"'
dsize=$((256 * 1024 * 1024 + 777))
start_nbdkit dat -r data "$disk" size=$dsize
dat=$(uri_of "$tmp/dat.sock")
checked datcheck $dsize "$dat" data "$disk" size=$dsize
start_nbdkit datmem memory size=$dsize
run_nbdcp "$dat" "$(uri_of "$tmp/datmem.sock")"
check_same "$dat" "$(uri_of "$tmp/datmem.sock")" "data -> memory"

# memory: fill it from pattern (and compare), then copy it out into a
# checker.
start_nbdkit mem memory size=$size
mem=$(uri_of "$tmp/mem.sock")
run_nbdcp "$pat" "$mem"
check_same "$pat" "$mem" "pattern -> memory"
checked memcheck $size "$mem" pattern size=$size

# The checker really checks: other data into it must fail.
expect_fail 'destination (write|zero) at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" "$dat" "$(uri_of "$tmp/patcheck.sock")"
