# Shared helpers for nbdcp's shell tests.  Source it first:
#   . "${srcdir:-.}/tests/functions.sh"
# Each test gets a private temporary directory ($tmp) and every server
# it starts is killed when the test exits, however it exits.

set -e
set -o pipefail

: "${NBDCP:=$PWD/copy/nbdcp}"
: "${NBDKIT:=nbdkit}"
: "${QEMU_NBD:=qemu-nbd}"
: "${QEMU_IMG:=qemu-img}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nbdcp-test.XXXXXX")
_pids=()

# Stop every server started so far (qemu-nbd may already have exited
# when its last client left), so that image files are closed.
stop_servers ()
{
  local pid
  for pid in "${_pids[@]}"; do
    kill "$pid" 2>/dev/null || :
  done
  for pid in "${_pids[@]}"; do
    wait "$pid" 2>/dev/null || :
  done
  _pids=()
}

_cleanup ()
{
  stop_servers
  rm -rf "$tmp"
}
trap _cleanup EXIT

skip ()
{
  echo "SKIP: $*"
  exit 77
}

fail ()
{
  echo "FAIL: $*" >&2
  exit 1
}

requires ()
{
  command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"
}

requires_nbdkit_plugin ()
{
  requires "$NBDKIT"
  "$NBDKIT" "$1" --dump-plugin >/dev/null 2>&1 ||
    skip "nbdkit plugin $1 is not installed"
}

requires_nbdkit_filter ()
{
  requires "$NBDKIT"
  "$NBDKIT" --filter="$1" null --dump-plugin >/dev/null 2>&1 ||
    skip "nbdkit filter $1 is not installed"
}

uri_of ()
{
  echo "nbd+unix:///?socket=$1"
}

# Wait until Unix socket $1 exists (the server is listening).
wait_for_socket ()
{
  local i
  for i in $(seq 1 100); do
    [ -S "$1" ] && return 0
    sleep 0.1
  done
  fail "server socket $1 did not appear"
}

# start_nbdkit NAME ARGS...: start nbdkit on socket $tmp/NAME.sock in the
# foreground (killed at exit).  Sets $uri_NAME... use: uri_of $tmp/NAME.sock
start_nbdkit ()
{
  local name=$1
  shift
  "$NBDKIT" -f --exit-with-parent -U "$tmp/$name.sock" "$@" \
    2>>"$tmp/$name.err" &
  _pids+=($!)
  wait_for_socket "$tmp/$name.sock"
}

# start_qemu_nbd NAME ARGS...: the same for qemu-nbd.
start_qemu_nbd ()
{
  local name=$1
  shift
  "$QEMU_NBD" -k "$tmp/$name.sock" "$@" 2>>"$tmp/$name.err" &
  _pids+=($!)
  wait_for_socket "$tmp/$name.sock"
}

# run_nbdcp ARGS...: nbdcp with a time limit, so no test can hang.
run_nbdcp ()
{
  timeout --kill-after=10 120 "$NBDCP" "$@"
}

# expect_fail PATTERN CMD ARGS...: CMD must exit 1 (not 0, not a signal,
# not a timeout) and print a message matching PATTERN (grep -E) on stderr.
expect_fail ()
{
  local pattern=$1 r=0
  shift
  timeout --kill-after=10 120 "$@" >"$tmp/out" 2>"$tmp/err" || r=$?
  if [ "$r" -ne 1 ]; then
    cat "$tmp/err" >&2
    fail "expected exit 1, got $r: $*"
  fi
  if ! grep -Eq -- "$pattern" "$tmp/err"; then
    cat "$tmp/err" >&2
    fail "message does not match '$pattern': $*"
  fi
}

# An awk function hex(s) turning "0x1f" (as nbdkit's log filter prints
# offsets and counts) into a number; awk here may be mawk, which has no
# strtonum.  Use as: awk "$AWK_HEX"' ... hex(x) ...'
AWK_HEX='
function hex(s,  i, n) {
  n = 0; s = tolower(s); sub(/^0x/, "", s)
  for (i = 1; i <= length(s); i++)
    n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
  return n
}
'
