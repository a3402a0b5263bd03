#!/bin/bash
# data, pattern and memory sources copied into a destination with the
# checkwrite filter, which fails any write that differs from what its
# plugin would read there (and zeroes where the plugin has data).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin data
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_filter checkwrite

# pattern: every byte is data.
start_nbdkit pat -r pattern size=300M
start_nbdkit patcheck --filter=checkwrite pattern size=300M
run_nbdcp "$(uri_of "$tmp/pat.sock")" "$(uri_of "$tmp/patcheck.sock")"

# data: sparse, with data at odd offsets and a zero block inside data.
disk='@0 "start" @4095 1 2 3 @1048576 ( 0xaa 0x55 ) * 8192 @209715200 "middle" @^4096 "end"'
start_nbdkit dat -r data "$disk" size=$((256 * 1024 * 1024 + 777))
start_nbdkit datcheck --filter=checkwrite data "$disk" \
  size=$((256 * 1024 * 1024 + 777))
run_nbdcp "$(uri_of "$tmp/dat.sock")" "$(uri_of "$tmp/datcheck.sock")"

# memory: fill it from pattern, then copy it out into a checker.
start_nbdkit mem memory size=300M
run_nbdcp "$(uri_of "$tmp/pat.sock")" "$(uri_of "$tmp/mem.sock")"
run_nbdcp "$(uri_of "$tmp/mem.sock")" "$(uri_of "$tmp/patcheck.sock")"

# The checker really checks: other data into it must fail.
expect_fail 'destination (write|zero) at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" "$(uri_of "$tmp/dat.sock")" "$(uri_of "$tmp/patcheck.sock")"
