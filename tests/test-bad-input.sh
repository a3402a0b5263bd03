#!/bin/bash
# Bad command lines and endpoints, one table: each row is the exit status
# expected (1), an ERE for the message, and the arguments; each run is
# time-bounded and must not crash (no signal, no hang).  Then edge cases
# that must succeed, with the data checked: empty, 1-byte and 511-byte
# disks, and a 2 TiB source made of holes.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_plugin data
requires_nbdkit_plugin null
requires_nbdkit_filter exportname
requires_nbdkit_filter checkwrite
requires_nbdkit_filter log
requires python3
requires "$QEMU_IMG"

start_nbdkit src -r pattern size=1M
start_nbdkit dst memory size=1M
start_nbdkit small memory size=$((1024 * 1024 - 512))
start_nbdkit ro -r memory size=1M
start_nbdkit strict --filter=exportname memory size=1M \
  exportname-strict=true exportname=foo
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")
head -c 1048576 /dev/urandom >"$tmp/file.img"
ln -s "$tmp/file.img" "$tmp/link.img"
ln "$tmp/file.img" "$tmp/hard.img"
mkdir "$tmp/dir"

cases=0
failures=()

# t STATUS ERE ARGS...: one row of the table.  A failing row is recorded
# and the others still run, so one bug does not hide the next.
t ()
{
  local want=$1 ere=$2 r=0 why=
  shift 2
  cases=$((cases + 1))
  timeout --kill-after=5 20 "$NBDCP" "$@" </dev/null \
    >"$tmp/out" 2>"$tmp/err" || r=$?
  if [ "$r" -eq 124 ] || [ "$r" -eq 137 ]; then
    why="hung (killed after 20 s)"
  elif [ "$r" -ge 128 ]; then
    why="killed by signal $((r - 128))"
  elif [ "$r" -ne "$want" ]; then
    why="exit $r, expected $want"
  elif ! grep -Eq -- "$ere" "$tmp/err"; then
    why="message does not match /$ere/"
  fi
  if [ -n "$why" ]; then
    failures+=("case $cases: nbdcp $*: $why; stderr: $(head -c 600 "$tmp/err")")
    echo "FAIL case $cases: nbdcp $*: $why" >&2
    sed 's/^/    /' "$tmp/err" >&2
  fi
}

usage="Try 'nbdcp --help'"
num='is not a number from 1 to 1024'

# --- Options ---
t 1 "^nbdcp: unknown option or missing value: --no-such-option\$" --no-such-option null: null:
t 1 "^nbdcp: unknown option or missing value: -Z\$" -Z null: null:
t 1 "^nbdcp: unknown option or missing value: --request-size\$" --request-size
t 1 "^nbdcp: unknown option or missing value: -C\$" -C
t 1 "^nbdcp: unknown option or missing value: --flush=1\$" --flush=1 null: null:
t 1 "^nbdcp: unknown option or missing value: --version=1\$" --version=1
t 1 "^nbdcp: unknown option or missing value: --verbose=2\$" --verbose=2 null: null:
t 1 "$usage" --allocated=yes null: null:
t 1 "^nbdcp: --connections: '0' $num" -C 0 null: null:
t 1 "^nbdcp: --connections: '-1' $num" -C -1 null: null:
t 1 "^nbdcp: --connections: '99999999999999999999' $num" -C 99999999999999999999 null: null:
t 1 "^nbdcp: --connections: '1025' $num" -C 1025 null: null:
t 1 "^nbdcp: --connections: '1x' $num" -C 1x null: null:
t 1 "^nbdcp: --connections: '' $num" --connections= null: null:
t 1 "^nbdcp: --requests: '0' $num" -R 0 null: null:
t 1 "^nbdcp: --requests: '18446744073709551617' $num" --requests=18446744073709551617 null: null:
t 1 "^nbdcp: --threads: '-1' is not a number from 0 to 1024" -T -1 null: null:
t 1 "^nbdcp: --threads: 'x' is not a number from 0 to 1024" -T x null: null:
t 1 "^nbdcp: --threads: '1025' is not a number from 0 to 1024" -T 1025 null: null:
t 1 '^nbdcp: --request-size: .*power of 2' --request-size=0 null: null:
t 1 '^nbdcp: --request-size: .*power of 2' --request-size=1000 null: null:
t 1 '^nbdcp: --request-size: .*power of 2' --request-size=511 null: null:
t 1 '^nbdcp: --request-size: .*power of 2' --request-size=64M null: null:
t 1 '^nbdcp: --request-size: .*not a size' --request-size=99999999999999999999 null: null:
t 1 '^nbdcp: --request-size: .*not a size' --request-size=1Q null: null:
t 1 '^nbdcp: --sparse: .*multiple of 512' -S 1000 null: null:
t 1 '^nbdcp: --sparse: .*multiple of 512' -S 511 null: null:
t 1 '^nbdcp: --sparse: .*multiple of 512' -S 64M null: null:
t 1 '^nbdcp: --sparse: .*not a size' --sparse=-512 null: null:
t 1 '^nbdcp: --queue-size: 511 is neither 0 \(the default\) nor at least 512' --queue-size=511 null: null:
t 1 '^nbdcp: --queue-size: .*not a size' --queue-size=-1 null: null:
t 1 '^nbdcp: --queue-size: .*not a size' --queue-size=99999999999999999999 null: null:
t 1 "^nbdcp: --timeout: '0' is not a number of seconds" --timeout=0 null: null:
t 1 "^nbdcp: --timeout: 'abc' is not a number of seconds" --timeout=abc null: null:
t 1 "^nbdcp: --timeout: '-1' is not a number of seconds" --timeout=-1 null: null:
t 1 "^nbdcp: --timeout: '' is not a number of seconds" --timeout= null: null:
t 1 "^nbdcp: --timeout: 'nan' is not a number of seconds" --timeout=nan null: null:
t 1 "^nbdcp: --timeout: 'inf' is not a number of seconds" --timeout=inf null: null:
t 1 "^nbdcp: --timeout: '1e999' is not a number of seconds" --timeout=1e999 null: null:
t 1 "^nbdcp: --timeout: '0.001' is not a number of seconds" --timeout=0.001 null: null:
t 1 "^nbdcp: --timeout: '1,5' is not a number of seconds" --timeout=1,5 null: null:
t 1 "^nbdcp: --stats: 'xml' is not 'text' or 'json'" --stats=xml null: null:
t 1 "^nbdcp: --progress: '-1' is not a file descriptor" --progress=-1 null: null:
t 1 "^nbdcp: --progress: 'stderr' is not a file descriptor" --progress=stderr null: null:

# --- Argument counts and endpoint syntax ---
t 1 '^nbdcp: expected SOURCE and DESTINATION, got 0 arguments$'
t 1 '^nbdcp: expected SOURCE and DESTINATION, got 1 argument$' "$src"
t 1 '^nbdcp: expected SOURCE and DESTINATION, got 3 arguments$' "$src" "$dst" null:
t 1 "^nbdcp: '\\[' without a matching '\\]'" -- [ null:
t 1 "^nbdcp: '\\[' without a matching '\\]'" -- "$src" [ nbdkit memory 1M
t 1 "^nbdcp: '\\[ \\]' needs a command" -- [ ] null:
t 1 "^nbdcp: '-' cannot be both SOURCE \\(stdin\\) and DESTINATION \\(stdout\\)" - -
t 1 '^nbdcp: null: can only be a destination$' null: null:
t 1 '^nbdcp: null: can only be a destination$' null: "$dst"
t 1 '^nbdcp: an empty SOURCE or DESTINATION$' '' null:

# --- URIs ---
t 1 '^nbdcp: nbd://localhost:99999999/: .+' nbd://localhost:99999999/ null:
t 1 '^nbdcp: nbd://localhost:-1/: .+' nbd://localhost:-1/ null:
t 1 '^nbdcp: nbd\+unix:///: .*socket' 'nbd+unix:///' null:
t 1 '^nbdcp: nbd\+unix://: .*socket' 'nbd+unix://' null:
t 1 '^nbdcp: nbd://\[::1/: .*unable to parse URI' 'nbd://[::1/' null:
t 1 '^nbdcp: nbd://local host/: .*unable to parse URI' 'nbd://local host/' null:
t 1 '^nbdcp: foo:bar: No such file or directory$' foo:bar null:
t 1 '^nbdcp: http://x/: unknown URI scheme' http://x/ null:
t 1 "^nbdcp: nbd:foo: .*URI must begin with 'nbd://'" nbd:foo null:
t 1 "^nbdcp: nbds\\+vsock:1: .*URI must begin with 'nbds\\+vsock://'" nbds+vsock:1 null:
t 1 '^nbdcp: nbd\+unix:///\?socket=.*/nonexistent\.sock: .*No such file or directory \(not retried; see --retry\)$' \
  "nbd+unix:///?socket=$tmp/nonexistent.sock" null:
t 1 '^nbdcp: nbd://127\.0\.0\.1:1/: .*Connection refused \(not retried; see --retry\)$' nbd://127.0.0.1:1/ null:
t 1 '^nbdcp: nbds://127\.0\.0\.1:1/: .*Connection refused \(not retried; see --retry\)$' nbds://127.0.0.1:1/ null:
# A socket path that is a directory, not a socket.
t 1 '^nbdcp: nbd\+unix:///\?socket=[^ ]*: .*connect: .+' \
  "$src" "nbd+unix:///?socket=$tmp"
# Unreachable vsock peer: the connect times out (or vsock is absent);
# either way exit 1 promptly.
t 1 '^nbdcp: nbd\+vsock://99999/: .+' 'nbd+vsock://99999/' null:

# --- Exports ---
t 1 "^nbdcp: nbd\\+unix:///nosuchexport\\?socket=.*: .*no export named 'nosuchexport'" \
  "nbd+unix:///nosuchexport?socket=$tmp/strict.sock" null:
t 1 "no export named ''" "$(uri_of "$tmp/strict.sock")" null:
if command -v "$QEMU_NBD" >/dev/null && command -v "$QEMU_IMG" >/dev/null; then
  "$QEMU_IMG" create -q -f raw "$tmp/q.raw" 1M
  start_qemu_nbd q -f raw -x name --shared=0 "$tmp/q.raw"
  t 1 "no export named 'nosuchexport'" \
    "nbd+unix:///nosuchexport?socket=$tmp/q.sock" null:
  t 1 "no export named ''" "$(uri_of "$tmp/q.sock")" null:
fi

# --- TLS ---
t 1 '^nbdcp: nbds\+unix://.*: .*server refused TLS' \
  "nbds+unix:///?socket=$tmp/src.sock&tls-verify-peer=false" null:
# X.509 over a Unix socket: refused before connecting where libnbd
# cannot check the certificate there (test-tls-unix-verify.sh).
t 1 '^nbdcp: nbds\+unix://.*: .*(cannot verify.*tls-psk-file=|server refused TLS)' \
  "nbds+unix:///?socket=$tmp/src.sock" null:
if command -v psktool >/dev/null; then
  psktool -u alice -p "$tmp/keys.psk" >/dev/null
  start_nbdkit tls --tls=require --tls-psk="$tmp/keys.psk" -r pattern size=1M
  t 1 '^nbdcp: nbd\+unix://.*: .*requires TLS' \
    "$(uri_of "$tmp/tls.sock")" null:
  t 1 'username bob was not found' \
    "nbds+unix://bob@/?socket=$tmp/tls.sock&tls-psk-file=$tmp/keys.psk" null:
  t 1 'nonexistent\.psk: No such file or directory' \
    "nbds+unix://alice@/?socket=$tmp/tls.sock&tls-psk-file=$tmp/nonexistent.psk" null:
  # (The right key works: the rows above failed for the reason given.)
  run_nbdcp "nbds+unix://alice@/?socket=$tmp/tls.sock&tls-psk-file=$tmp/keys.psk" "$dst"
  check_same "$src" "$dst" "TLS with the right key"
fi

# --- Unusable destinations and sources ---
t 1 '^nbdcp: destination .* \(1048064 bytes\) is smaller than source .* \(1048576 bytes\)$' \
  "$src" "$(uri_of "$tmp/small.sock")"
t 1 '^nbdcp: destination .* is read-only$' "$src" "$(uri_of "$tmp/ro.sock")"
t 1 '^nbdcp: destination .* is read-only$' "$src" "$src"
t 1 'is a directory$' "$src" "$tmp/dir"
t 1 'is a directory$' "$tmp/dir" null:
t 1 'is a directory$' "$tmp/dir" "$tmp/dir"
t 1 '^nbdcp: source and destination are the same file' "$tmp/file.img" "$tmp/file.img"
t 1 '^nbdcp: source and destination are the same file' "$tmp/file.img" "$tmp/./file.img"
t 1 '^nbdcp: source and destination are the same file' "$tmp/file.img" "$tmp/link.img"
t 1 '^nbdcp: source and destination are the same file' "$tmp/hard.img" "$tmp/file.img"
t 1 'nonexistent\.img: No such file or directory$' "$tmp/nonexistent.img" null:
t 1 'No such file or directory$' "$src" "$tmp/nonexistent-dir/out.img"
# (A source of its own: the failed copy leaves reads in flight on it,
# and nbdkit 1.32 may abort then; see restart_nbdkit in functions.sh.)
start_nbdkit full-src -r pattern size=1M
t 1 '^nbdcp: destination write at offset [0-9]+ length [0-9]+ failed: No space left on device$' \
  "$(uri_of "$tmp/full-src.sock")" /dev/full
# Subprocess servers that exit at once (the message depends on when
# nbdcp notices: connect refused or reset).
t 1 '^nbdcp: false: .*(connect|recv|handshake)' -- [ false ] null:
t 1 '^nbdcp: [^ ]*nonexistent-command: .*(connect|recv|handshake)' \
  -- [ "$tmp/nonexistent-command" ] null:
t 1 '^nbdcp: [^ ]*nbdkit: .*(connect|recv|handshake)' \
  -- "$src" [ "$NBDKIT" --no-such-nbdkit-option memory 1M ]


# --- Edge cases that must succeed (the table's verdict comes last) ---
# Empty disks: NBD to NBD, to a file (size 0), to stdout (nothing).
start_nbdkit empty -r null size=0
start_nbdkit empty_dst memory size=0
run_nbdcp "$(uri_of "$tmp/empty.sock")" "$(uri_of "$tmp/empty_dst.sock")"
run_nbdcp "$(uri_of "$tmp/empty.sock")" "$tmp/empty.out"
[ -f "$tmp/empty.out" ] && [ ! -s "$tmp/empty.out" ] || fail "empty copy: bad output file"
run_nbdcp "$(uri_of "$tmp/empty.sock")" - >"$tmp/empty.stdout"
[ ! -s "$tmp/empty.stdout" ] || fail "empty copy wrote to stdout"
run_nbdcp "$(uri_of "$tmp/empty_dst.sock")" null:

# 1 byte and 511 bytes (not a multiple of 512): file -> NBD -> file.
for n in 1 511 513; do
  head -c $n /dev/urandom >"$tmp/in$n"
  start_nbdkit in$n -r file "$tmp/in$n"
  start_nbdkit mem$n memory size=$n
  run_nbdcp "$(uri_of "$tmp/in$n.sock")" "$(uri_of "$tmp/mem$n.sock")"
  check_same "$tmp/in$n" "$(uri_of "$tmp/mem$n.sock")" "$n-byte disk -> NBD"
  run_nbdcp "$(uri_of "$tmp/mem$n.sock")" "$tmp/out$n"
  cmp "$tmp/in$n" "$tmp/out$n" || fail "$n-byte disk copied wrong"
  run_nbdcp "$(uri_of "$tmp/mem$n.sock")" - >"$tmp/stdout$n"
  cmp "$tmp/in$n" "$tmp/stdout$n" || fail "$n-byte disk copied wrong to stdout"
done
start_nbdkit one -r data "0x31"
run_nbdcp "$(uri_of "$tmp/one.sock")" "$tmp/one.out"
[ "$(cat "$tmp/one.out")" = 1 ] || fail "1-byte data disk copied wrong"

# 2 TiB (more than 2^40) of holes with two bytes of data, one of them
# the very last byte: quick, and checked by the destination itself
# (checkwrite over the same data, with a log outside it to show that
# the writes cover the disk), by qemu-img, and by the statistics.
two_t='@1099511627776 0x55 @2199023255551 0x66'
two_t_bytes=$((2 * 1024 ** 4))
start_nbdkit huge -r data "$two_t" size=2T
start_nbdkit huge_check --filter=log --filter=checkwrite data "$two_t" size=2T \
  logfile="$tmp/huge_check.log"
start_nbdkit huge_mem memory size=2T
huge=$(uri_of "$tmp/huge.sock")
start=$SECONDS
# Every byte sent to the checker, even where it reads as zero already.
run_nbdcp --stats=json --no-destination-extents "$huge" \
  "$(uri_of "$tmp/huge_check.sock")" 2>"$tmp/huge1"
run_nbdcp --stats=json "$huge" "$(uri_of "$tmp/huge_mem.sock")" 2>"$tmp/huge2"
run_nbdcp --stats=json "$(uri_of "$tmp/huge_mem.sock")" null: 2>"$tmp/huge3"
# Not a speed target (a loaded machine took 55 s): reading the holes
# would take hours, and the statistics below say what was read.
[ $((SECONDS - start)) -lt 600 ] || fail "2 TiB of holes took $((SECONDS - start)) s"
check_covered "$tmp/huge_check.log" $two_t_bytes
check_same "$huge" "$(uri_of "$tmp/huge_mem.sock")" "2 TiB -> memory"
for f in huge1 huge2 huge3; do
  python3 - "$tmp/$f" <<'PY' || fail "2 TiB stats wrong: $(cat "$tmp/$f")"
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
assert len(lines) == 1
s = json.loads(lines[0])
size = 2 * 1024 ** 4
assert s["ok"] is True and s["size"] == size, s
assert s["data_bytes"] + s["zero_bytes"] + s["skipped_bytes"] == size, s
assert 0 < s["data_bytes"] <= 2 * 1024 * 1024, s
assert s["hole_bytes"] >= size - 2 * 1024 * 1024, s
PY
done
# And the memory disk, copied in turn into a checker.
start_nbdkit huge_check2 --filter=log --filter=checkwrite data "$two_t" size=2T \
  logfile="$tmp/huge_check2.log"
run_nbdcp --no-destination-extents "$(uri_of "$tmp/huge_mem.sock")" "$(uri_of "$tmp/huge_check2.sock")"
check_covered "$tmp/huge_check2.log" $two_t_bytes

echo "bad-input table: $cases cases, ${#failures[@]} failed"
if [ ${#failures[@]} -gt 0 ]; then
  printf '%s\n' "${failures[@]}" >&2
  fail "${#failures[@]} of $cases bad-input cases failed"
fi
