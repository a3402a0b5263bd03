#!/bin/bash
# Endpoints that cannot work are refused with exit 1 and a clear 'nbdcp: ' message, before any data moves: missing or unopenable files, directories, '- -', bad brackets, the same file twice, unknown URI schemes (other names with a colon are files), null: as source, a destination too small, a closed stdout.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin file
requires_nbdkit_plugin memory
requires_nbdkit_filter log

MiB=$((1024 * 1024))
head -c $((2 * MiB + 777)) /dev/urandom >"$tmp/src"
cp "$tmp/src" "$tmp/src.orig"
out="$tmp/dest"

# refused PATTERN CMD...: expect_fail, and the message is one line
# (apart from the usage hint of command-line errors).
refused ()
{
  expect_fail "$@"
  [ "$(grep -vc "^Try 'nbdcp --help'" "$tmp/err")" -eq 1 ] ||
    { cat "$tmp/err" >&2; fail "not a one-line message: ${*:2}"; }
}
# raw_refused PATTERN CMD...: the same, but CMD keeps the caller's
# stdout (refused sends it to a file).
raw_refused ()
{
  local pattern=$1 r=0
  shift
  timeout --kill-after=10 60 "$@" 2>"$tmp/err" || r=$?
  [ $r -eq 1 ] || { cat "$tmp/err" >&2; fail "expected exit 1, got $r: $*"; }
  grep -Eq -- "$pattern" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "message does not match '$pattern': $*"; }
  [ "$(grep -c . "$tmp/err")" -eq 1 ] ||
    { cat "$tmp/err" >&2; fail "not a one-line message: $*"; }
}

# Each refusal must leave the source intact and create no destination.
intact ()
{
  cmp -s "$tmp/src" "$tmp/src.orig" || fail "$1: the source file was changed"
  [ ! -e "$out" ] || fail "$1: $out was created"
}

# Missing source, a dangling symlink, a path through a regular file.
refused "^nbdcp: $tmp/missing: No such file or directory$" \
  "$NBDCP" "$tmp/missing" "$out"
intact "missing source"
ln -s "$tmp/nowhere" "$tmp/dangling"
refused "^nbdcp: $tmp/dangling: No such file or directory$" \
  "$NBDCP" "$tmp/dangling" "$out"
intact "dangling symlink"
refused "^nbdcp: $tmp/src/x: Not a directory$" "$NBDCP" "$tmp/src/x" "$out"
refused "^nbdcp: $tmp/src/x: Not a directory$" "$NBDCP" "$tmp/src" "$tmp/src/x"
intact "path through a file"
# A destination in a directory that does not exist.
refused "^nbdcp: $tmp/nodir/out: No such file or directory$" \
  "$NBDCP" "$tmp/src" "$tmp/nodir/out"

# Directories, either side, and from a stream.
mkdir "$tmp/dir"
refused "^nbdcp: $tmp/dir: is a directory$" "$NBDCP" "$tmp/src" "$tmp/dir"
refused "^nbdcp: $tmp/dir: is a directory$" "$NBDCP" "$tmp/dir" "$out"
refused "^nbdcp: $tmp/dir: is a directory$" "$NBDCP" - "$tmp/dir" < <(cat "$tmp/src")
[ -z "$(ls -A "$tmp/dir")" ] || fail "something was written into the directory"
intact "directory"

# Files that cannot be opened: unreadable (not for root, who reads
# anything) and, for root, an immutable destination.
if [ "$(id -u)" -ne 0 ]; then
  cp "$tmp/src" "$tmp/secret"
  chmod 000 "$tmp/secret"
  refused "^nbdcp: $tmp/secret: Permission denied$" "$NBDCP" "$tmp/secret" "$out"
  refused "^nbdcp: $tmp/secret: Permission denied$" "$NBDCP" "$tmp/src" "$tmp/secret"
  chmod 600 "$tmp/secret"
  cmp "$tmp/src" "$tmp/secret" || fail "an unwritable destination was changed"
  intact "unreadable file"
else
  echo "running as root: chmod 000 cannot make a file unreadable; not checked"
  cp "$tmp/src" "$tmp/frozen"
  if chattr +i "$tmp/frozen" 2>/dev/null; then
    trap 'chattr -i "$tmp/frozen" 2>/dev/null; _cleanup' EXIT
    head -c 1000 /dev/urandom >"$tmp/other"
    refused "^nbdcp: $tmp/frozen: Operation not permitted$" \
      "$NBDCP" "$tmp/other" "$tmp/frozen"
    chattr -i "$tmp/frozen"
    cmp "$tmp/src" "$tmp/frozen" || fail "an immutable destination was changed"
  else
    echo "chattr +i does not work here: unopenable destination not checked"
  fi
fi

# '-' twice.
refused "^nbdcp: '-' cannot be both" "$NBDCP" - - </dev/null

# Brackets.
refused "^nbdcp: '\\[' without a matching '\\]'" \
  "$NBDCP" -- [ nbdkit -r file "$tmp/src" "$out"
refused "^nbdcp: '\\[' without a matching '\\]'" "$NBDCP" -- "$tmp/src" [
refused "^nbdcp: '\\[ \\]' needs a command" "$NBDCP" -- [ ] "$out"
refused "^nbdcp: '\\[ \\]' needs a command" "$NBDCP" -- "$tmp/src" [ ]
intact "brackets"

# The same file, by name, through a hard link, a symlink, ./, and
# stdin redirected from it.
ln "$tmp/src" "$tmp/hard"
ln -s "$tmp/src" "$tmp/soft"
for dst in "$tmp/src" "$tmp/hard" "$tmp/soft" "$tmp/./src"; do
  refused '^nbdcp: source and destination are the same file' \
    "$NBDCP" "$tmp/src" "$dst"
done
refused '^nbdcp: source and destination are the same file' \
  "$NBDCP" - "$tmp/src" <"$tmp/src"
raw_refused '^nbdcp: source and destination are the same file' \
  "$NBDCP" "$tmp/src" - 1<>"$tmp/src"
intact "same file"

# Unknown URI schemes (SCHEME://) are refused, and nothing is created;
# an existing file of that name is fine.  Other names with a colon are
# files, as with nbdcopy; names starting with an NBD scheme and a colon
# are NBD URIs (libnbd says what is wrong with a malformed one).
refused '^nbdcp: http://x/y: unknown URI scheme' "$NBDCP" http://x/y "$out"
refused '^nbdcp: ndb://x/y: unknown URI scheme' "$NBDCP" "$tmp/src" ndb://x/y
[ ! -e ndb: ] || fail "ndb: was created"
refused '^nbdcp: nbd://\[bad: .*parse URI' "$NBDCP" 'nbd://[bad' "$out"
refused "^nbdcp: nbd:x: .*URI must begin with 'nbd://'" "$NBDCP" nbd:x "$out"
refused "^nbdcp: nbd\+unix:/x: .*URI must begin with 'nbd\+unix://'" \
  "$NBDCP" "$tmp/src" nbd+unix:/x
[ ! -e nbd+unix: ] || fail "nbd+unix: was created"
refused '^nbdcp: foo:bar: No such file or directory$' "$NBDCP" foo:bar "$out"
intact "unknown scheme"
mkdir "$tmp/http:"
: >"$tmp/http://x"
(cd "$tmp" && run_nbdcp src http://x) || fail "an existing file http://x is not usable"
cmp "$tmp/src" "$tmp/http://x" || fail "copy to the file http://x differs"
# Names with a colon, new and existing, as destination and source.
(cd "$tmp" && run_nbdcp src disk-2024-01-01T12:00.img) ||
  fail "a new file disk-2024-01-01T12:00.img is not usable"
cmp "$tmp/src" "$tmp/disk-2024-01-01T12:00.img" ||
  fail "copy to disk-2024-01-01T12:00.img differs"
(cd "$tmp" && run_nbdcp disk-2024-01-01T12:00.img foo:bar) ||
  fail "disk-2024-01-01T12:00.img -> foo:bar failed"
cmp "$tmp/src" "$tmp/foo:bar" || fail "copy to the file foo:bar differs"
(cd "$tmp" && run_nbdcp foo:bar null:x && run_nbdcp foo:bar ./new:file) ||
  fail "null:x or ./new:file is not usable as a file"
cmp "$tmp/src" "$tmp/null:x" || fail "copy to the file null:x differs"
cmp "$tmp/src" "$tmp/new:file" || fail "copy to ./new:file differs"
: >"$tmp/nbd:file"
(cd "$tmp" && run_nbdcp src ./nbd:file) || fail "./nbd:file is not usable"
cmp "$tmp/src" "$tmp/nbd:file" || fail "copy to ./nbd:file differs"

# null: as source.
refused '^nbdcp: null: can only be a destination$' "$NBDCP" null: "$out"
intact "null: source"

# A destination smaller than the source (an NBD export; files grow, and
# block devices are in test-loop-device.sh), refused before any write.
start_nbdkit small --filter=log memory size=$MiB logfile="$tmp/small.log"
refused "^nbdcp: destination .*\\($MiB bytes\\) is smaller than source $tmp/src \\($((2 * MiB + 777)) bytes\\)$" \
  "$NBDCP" "$tmp/src" "$(uri_of "$tmp/small.sock")"
if grep -E ' (Write|Zero|Trim) ' "$tmp/small.log"; then
  fail "a destination too small was written to"
fi

# stdout closed: '-' is nothing, and whatever the source opened in its
# place (a file, an NBD socket) must not be taken for stdout.
raw_refused '(-|stdout).*(Bad file descriptor|closed)' "$NBDCP" "$tmp/src" - >&-
intact "closed stdout (file source)"
start_nbdkit src -r file "$tmp/src"
r=0
timeout --kill-after=10 60 "$NBDCP" "$(uri_of "$tmp/src.sock")" - >&- 2>"$tmp/closed.err" || r=$?
if grep -q "invalid request" "$tmp/src.err"; then
  cat "$tmp/src.err" "$tmp/closed.err" >&2
  fail "closed stdout: nbdcp wrote the data into the NBD source's socket (exit $r)"
fi
raw_refused '(-|stdout).*(Bad file descriptor|closed)' \
  "$NBDCP" "$(uri_of "$tmp/src.sock")" - >&-
raw_refused '(-|stdin).*(Bad file descriptor|closed)' "$NBDCP" - "$out" <&-
intact "closed stdin"
