#!/bin/bash
# Block devices (loop devices, root only) as source and destination: every byte copied, holes zeroed on the device, the tail past the source left alone, --direct and --allocated too; a device smaller than the source is refused with 'smaller' and left untouched.
. "${srcdir:-.}/tests/functions.sh"
requires losetup
requires blockdev
requires_nbdkit_plugin memory
requires_nbdkit_plugin sparse-random
requires "$QEMU_IMG"
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"

loops=()
_detach ()
{
  local d
  for d in "${loops[@]}"; do
    losetup -d "$d" 2>/dev/null || :
  done
}
trap '_detach; _cleanup' EXIT

# attach VAR FILE [losetup options]: a loop device over FILE into $VAR.
attach ()
{
  local var=$1 file=$2 dev
  shift 2
  dev=$(losetup -f --show "$@" "$file" 2>"$tmp/losetup.err") ||
    skip "losetup cannot attach a loop device: $(cat "$tmp/losetup.err")"
  loops+=("$dev")
  [ -b "$dev" ] || fail "losetup gave $dev, not a block device"
  eval "$var=\$dev"
}

MiB=$((1024 * 1024))
head -c $((6 * MiB)) /dev/urandom >"$tmp/src.img"
head -c $((8 * MiB)) /dev/urandom >"$tmp/dst.img"
truncate -s $((2 * MiB)) "$tmp/small.img"
attach srcdev "$tmp/src.img"
attach dstdev "$tmp/dst.img"
attach smalldev "$tmp/small.img"
[ "$(blockdev --getsize64 "$srcdev")" -eq $((6 * MiB)) ] ||
  fail "test setup: $srcdev has the wrong size"

# Compare the first N bytes of two files or devices.
same () { cmp -n "$1" "$2" "$3" || fail "$4"; }

# device -> file: the file gets the device's size and bytes.
run_nbdcp "$srcdev" "$tmp/out.img" || fail "device -> file failed"
[ "$(stat -c %s "$tmp/out.img")" -eq $((6 * MiB)) ] ||
  fail "device -> file: the file has $(stat -c %s "$tmp/out.img") bytes"
cmp "$tmp/src.img" "$tmp/out.img" || fail "device -> file differs"

# device -> nbd.
start_nbdkit mem memory size=$((6 * MiB))
run_nbdcp "$srcdev" "$(uri_of "$tmp/mem.sock")" || fail "device -> nbd failed"
check_same "$tmp/src.img" "$(uri_of "$tmp/mem.sock")" "device -> nbd"

# file -> device, larger than the file (odd size): the file's bytes,
# then the device's old bytes, and the device keeps its size.
head -c $((3 * MiB + 777)) /dev/urandom >"$tmp/odd.img"
cp "$tmp/dst.img" "$tmp/dst.orig"
run_nbdcp "$tmp/odd.img" "$dstdev" || fail "file -> device failed"
[ "$(blockdev --getsize64 "$dstdev")" -eq $((8 * MiB)) ] ||
  fail "file -> device changed the device's size"
same $((3 * MiB + 777)) "$tmp/odd.img" "$dstdev" "file -> device differs"
cmp <(tail -c +$((3 * MiB + 778)) "$tmp/dst.orig") \
    <(tail -c +$((3 * MiB + 778)) "$dstdev") ||
  fail "file -> device: the device past the source's end was changed"

# device -> device.
run_nbdcp "$srcdev" "$dstdev" || fail "device -> device failed"
same $((6 * MiB)) "$srcdev" "$dstdev" "device -> device differs"

# A sparse NBD source onto the device full of random data: the holes
# must read as zeroes afterwards (plain, --allocated and --direct).
sr=(sparse-random size=$((6 * MiB)) seed=99 percent=40 runlength=262144)
start_nbdkit sr -r "${sr[@]}"
run_nbdcp "$(uri_of "$tmp/sr.sock")" "$tmp/sr.img"
check_same "$(uri_of "$tmp/sr.sock")" "$tmp/sr.img" "nbd -> file (the reference)"
for opt in "" --allocated --direct "--direct --allocated"; do
  head -c $((8 * MiB)) /dev/urandom >"$dstdev"
  # shellcheck disable=SC2086
  run_nbdcp $opt "$(uri_of "$tmp/sr.sock")" "$dstdev" ||
    fail "nbd -> device ($opt) failed"
  same $((6 * MiB)) "$tmp/sr.img" "$dstdev" "nbd -> device ($opt) differs"
done

# The device back into an NBD memory disk, with --direct on the device.
# A 6M device, as large as the disk.
start_nbdkit srmem memory size=$((6 * MiB))
truncate -s $((6 * MiB)) "$tmp/six.img"
attach sixdev "$tmp/six.img"
run_nbdcp "$(uri_of "$tmp/sr.sock")" "$sixdev"
check_same "$(uri_of "$tmp/sr.sock")" "$sixdev" "nbd -> 6M device"
run_nbdcp --direct "$sixdev" "$(uri_of "$tmp/srmem.sock")" ||
  fail "device -> nbd (--direct) failed"
check_same "$(uri_of "$tmp/sr.sock")" "$(uri_of "$tmp/srmem.sock")" \
  "device -> nbd (--direct)"

# Too small: refused before anything is written.
cp "$tmp/small.img" "$tmp/small.orig"
expect_fail "^nbdcp: destination $smalldev \\($((2 * MiB)) bytes\\) is smaller than source .*\\($((6 * MiB)) bytes\\)$" \
  "$NBDCP" "$srcdev" "$smalldev"
expect_fail 'smaller' "$NBDCP" "$tmp/src.img" "$smalldev"
expect_fail 'smaller' "$NBDCP" "$(uri_of "$tmp/sr.sock")" "$smalldev"
same $((2 * MiB)) "$tmp/small.orig" "$smalldev" \
  "a device too small for the copy was written to"
[ "$(blockdev --getsize64 "$smalldev")" -eq $((2 * MiB)) ] ||
  fail "the small device changed size"

# A read-only device: refused before anything is sent (exit 1, "is
# read-only"), nothing written.
attach rodev "$tmp/small.img" -r
head -c 4096 /dev/urandom >"$tmp/4k"
expect_fail "^nbdcp: destination $rodev is read-only$" "$NBDCP" "$tmp/4k" "$rodev"
same $((2 * MiB)) "$tmp/small.orig" "$rodev" "a read-only device was written to"
