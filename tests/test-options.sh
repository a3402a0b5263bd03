#!/bin/bash
# The command line: --help, -V, the option lists, nbdcopy's options all
# accepted, and bad values refused with exit 1, a one-line message and
# the usage hint (no server needed: parsing happens first); -T 0 and
# --queue-size=0 mean the default.
. "${srcdir:-.}/tests/functions.sh"

"$NBDCP" --help >"$tmp/help"
grep -q 'nbdcp \[OPTIONS\] SOURCE DESTINATION' "$tmp/help"
"$NBDCP" -V | grep -q '^nbdcp [0-9]'
"$NBDCP" -V | grep -q '^libnbd [0-9]'
"$NBDCP" -V | grep -q '^liburing [0-9]'

# Every long option nbdcopy 1.14 has is accepted by nbdcp.
for o in --allocated --connections --destination-is-zero --flush \
         --no-extents --progress --queue-size --request-size --requests \
         --sparse --synchronous --target-is-zero --threads --verbose \
         --version --help; do
  "$NBDCP" --long-options | grep -qx -- "$o" || fail "missing option $o"
done
for o in -C -p -R -S -T -v -V; do
  "$NBDCP" --short-options | grep -qx -- "$o" || fail "missing option $o"
done

bad ()
{
  local pattern=$1
  shift
  expect_fail "$pattern" "$NBDCP" "$@"
  [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "expected message + hint: $*"
  grep -q "^Try 'nbdcp --help'" "$tmp/err" || fail "no usage hint: $*"
}

bad 'requests.*not a number from 1' -R 0 null: null:
bad 'requests.*not a number from 1' --requests=-4 null: null:
bad 'connections.*not a number from 1' -C 0 null: null:
bad 'connections.*not a number from 1' -C 99999999999999999999 null: null:
bad 'threads.*not a number from 0' -T x null: null:
bad 'queue-size.*neither 0 .* nor at least 512' --queue-size=100 null: null:
bad 'request-size.*power of 2' --request-size=1000 null: null:
bad 'request-size.*power of 2' --request-size=256 null: null:
bad 'request-size.*power of 2' --request-size=64M null: null:
bad 'request-size.*not a size' --request-size=1Q null: null:
bad 'sparse.*multiple of 512' -S 1000 null: null:
bad 'sparse.*not a size' --sparse=-512 null: null:
bad 'queue-size.*not a size' --queue-size=lots null: null:
bad 'progress.*not a file descriptor' --progress=stderr null: null:
bad 'unknown option' --no-such-option null: null:
bad 'unknown option' -Z null: null:
bad 'unknown option or missing value: -R' -R
bad 'unknown option or missing value: --request-size' --request-size
bad 'expected SOURCE and DESTINATION, got 0 arguments'
bad 'expected SOURCE and DESTINATION, got 1 argument$' null:
bad 'expected SOURCE and DESTINATION, got 3 arguments' a b c

# Valid values in every spelling parse (the copy then fails on the
# endpoints, which is a different, one-line message).
expect_fail 'null: can only be a destination' "$NBDCP" -C 2 -T 1 -R 4 \
  --request-size=64K --queue-size=1M -S 8192 --allocated \
  --destination-is-zero --flush --no-extents --synchronous -p -v \
  --target-is-zero --progress=2 --sparse 0 null: null:

# -T 0 and --queue-size=0 mean the default, as with nbdcopy: a copy
# with them works (files, so no server) and uses the defaults.
head -c $((3 * 1024 * 1024 + 5)) /dev/urandom >"$tmp/in"
"$NBDCP" -v -T 0 --queue-size=0 "$tmp/in" "$tmp/copy" 2>"$tmp/v" ||
  { cat "$tmp/v"; fail "-T 0 --queue-size=0 was refused or failed"; }
cmp "$tmp/in" "$tmp/copy" || fail "-T 0 --queue-size=0: the copy differs"
grep -Eq '^nbdcp: copying .* on [1-9][0-9]* threads?, 32 requests of 524288 bytes, queue 16777216 bytes' "$tmp/v" ||
  { grep '^nbdcp' "$tmp/v"; fail "-T 0 --queue-size=0: not the defaults"; }

# Found by fuzzing (fuzz/run.sh): a subprocess source and nothing after.
bad 'expected SOURCE and DESTINATION, got 1 argument$' -- [ nbdkit memory 1M ]
bad "'\[' without a matching '\]'" -- [ nbdkit memory 1M

# As with nbdcopy, options may come after SOURCE and DESTINATION.
expect_fail 'null: can only be a destination' "$NBDCP" null: null: --flush -C 2
bad "'\]' without a '\[' before it" -- [ nbdkit null ] ]
bad 'an empty SOURCE or DESTINATION' '' null:
# A subprocess's own options stay its own, with or without '--'.
expect_fail "read-only" "$NBDCP" [ nbdkit -r pattern 2M ] [ nbdkit -r memory 1M ]

# -V, --help and the option lists exit 0 only when what they print
# reaches standard output: closed, or a full disk, is exit 1 with one
# line naming the option and the cause (it used to be exit 0 with
# nothing said).
for o in -V --version --help --long-options --short-options; do
  case $o in -V) name=--version ;; *) name=$o ;; esac
  r=0
  "$NBDCP" $o >&- 2>"$tmp/err" || r=$?
  [ $r -eq 1 ] || fail "$o with standard output closed: exit $r, not 1"
  [ "$(cat "$tmp/err")" = "nbdcp: $name: cannot write to standard output: Bad file descriptor" ] ||
    fail "$o with standard output closed: $(cat "$tmp/err")"
  if [ -w /dev/full ]; then
    r=0
    "$NBDCP" $o >/dev/full 2>"$tmp/err" || r=$?
    [ $r -eq 1 ] || fail "$o into /dev/full: exit $r, not 1"
    [ "$(cat "$tmp/err")" = "nbdcp: $name: cannot write to standard output: No space left on device" ] ||
      fail "$o into /dev/full: $(cat "$tmp/err")"
  fi
  "$NBDCP" $o >"$tmp/out" || fail "$o: exit $?"
  [ -s "$tmp/out" ] || fail "$o printed nothing"
done
