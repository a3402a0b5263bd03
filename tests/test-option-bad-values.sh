#!/bin/bash
# Every option that takes a value refuses bad ones: each row of the
# table below is exit 1, a first line starting 'nbdcp: --OPTION' (the
# long name, also for -C, -R, -S, -T and -p) with what was wrong, then
# the usage hint, and nothing created.  The table must have a row for
# every option that --help shows with a value (a new option without
# one fails here).  Options that take no value refuse one
# (--NAME=x), and options whose value is required refuse to go
# without it; options that cannot go together are refused (--resume
# with --blkhash or --verify, --bitmap with --destination-is-zero,
# --blkhash or --verify, --blkhash into '-').  Then values that parse
# but name something unusable (a closed descriptor, a directory, a
# missing directory), refused before the destination is created.
# tests/checklist.md lists which other tests cover the other failure
# modes of each option.
. "${srcdir:-.}/tests/functions.sh"

head -c 65536 /dev/urandom >"$tmp/src.raw"
dst=$tmp/new.raw

usage="Try 'nbdcp --help' for more information."
failures=()
declare -A rows

# bad NAME ERE ARGS...: nbdcp ARGS SRC DST exits 1; its stderr is
# 'nbdcp: --NAME: ' and text matching ERE (anchored at the end), then
# the usage hint, and DST is not created.
bad ()
{
  local name=$1 ere=$2 r=0 why=
  shift 2
  rows[$name]=$((${rows[$name]:-0} + 1))
  timeout --kill-after=5 20 "$NBDCP" "$@" "$tmp/src.raw" "$dst" \
    </dev/null >"$tmp/out" 2>"$tmp/err" || r=$?
  if [ $r -ne 1 ]; then
    why="exit $r, expected 1"
  elif ! head -n 1 "$tmp/err" | grep -Eq -- "^nbdcp: --$name: $ere\$"; then
    why="first line is not 'nbdcp: --$name: $ere'"
  elif [ "$(wc -l <"$tmp/err")" -ne 2 ] ||
       [ "$(tail -n 1 "$tmp/err")" != "$usage" ]; then
    why="not one line and the usage hint"
  elif [ -e "$dst" ]; then
    why="the destination was created"
  fi
  rm -f "$dst"
  if [ -n "$why" ]; then
    failures+=("nbdcp $*: $why")
    echo "FAIL: nbdcp $*: $why" >&2
    sed 's/^/    /' "$tmp/err" >&2
  fi
}

count='is not a number from'
size="is not a size \\(examples: 4096, 64K, 1M\\)"
secs='is not a number of seconds from 0.01 to 86400'

bad connections "'0' $count 1 to 1024" -C 0
bad connections "'-1' $count 1 to 1024" -C -1
bad connections "'1025' $count 1 to 1024" --connections=1025
bad connections "'1x' $count 1 to 1024" -C 1x
bad connections "'' $count 1 to 1024" --connections=
bad connections "'2147483648' $count 1 to 1024" -C 2147483648
bad threads "'-1' $count 0 to 1024" -T -1
bad threads "'1025' $count 0 to 1024" --threads=1025
bad threads "'x' $count 0 to 1024" -T x
bad requests "'0' $count 1 to 1024" -R 0
bad requests "'1025' $count 1 to 1024" --requests=1025
bad requests "'2.5' $count 1 to 1024" -R 2.5
bad request-size "0 must be a power of 2 from 512 to 32M" --request-size=0
bad request-size "511 must be a power of 2 from 512 to 32M" --request-size=511
bad request-size "1000 must be a power of 2 from 512 to 32M" --request-size=1000
bad request-size "64M must be a power of 2 from 512 to 32M" --request-size=64M
bad request-size "'-512' $size" --request-size=-512
bad request-size "'1Q' $size" --request-size=1Q
bad request-size "'' $size" --request-size=
bad queue-size "511 is neither 0 \\(the default\\) nor at least 512" --queue-size=511
bad queue-size "'-1' $size" --queue-size=-1
bad queue-size "'lots' $size" --queue-size=lots
bad sparse "511 must be 0 or a multiple of 512 up to 32M" -S 511
bad sparse "1000 must be 0 or a multiple of 512 up to 32M" --sparse=1000
bad sparse "64M must be 0 or a multiple of 512 up to 32M" -S 64M
bad sparse "'-512' $size" --sparse=-512
bad sparse "'' $size" --sparse=
bad timeout "'0' $secs" --timeout=0
bad timeout "'0.001' $secs" --timeout=0.001
bad timeout "'86401' $secs" --timeout=86401
bad timeout "'nan' $secs" --timeout=nan
bad timeout "'1,5' $secs" --timeout=1,5
bad retry "'-1' $count 0 to 1000" --retry=-1
bad retry "'1001' $count 0 to 1000" --retry=1001
bad retry "'1.5' $count 0 to 1000" --retry=1.5
bad retry "'' $count 0 to 1000" --retry=
bad retry-delay "'0' $secs" --retry-delay=0
bad retry-delay "'-1' $secs" --retry-delay=-1
bad retry-delay "'inf' $secs" --retry-delay=inf
bad retry-delay "'1s' $secs" --retry-delay=1s
bad retry-delay "'' $secs" --retry-delay=
bad rate "0 is less than 1K bytes per second" --rate=0
bad rate "1023 is less than 1K bytes per second" --rate=1023
bad rate "'fast' $size" --rate=fast
bad rate "'-1M' $size" --rate=-1M
bad checkpoint "0 is less than a segment \\(128M\\)" --checkpoint=0
bad checkpoint "134217727 is less than a segment \\(128M\\)" --checkpoint=134217727
bad checkpoint "'1X' $size" --checkpoint=1X
bad bitmap "the bitmap's name must have 1 to 1024 bytes" --bitmap=
bad bitmap "the bitmap's name must have 1 to 1024 bytes" \
  --bitmap="$(printf '%01025d' 0)"
algos='\(ALGO: md5, sha1, sha256 or sha512\)'
bad blkhash "'' is not ALGO\\[/BLOCKSIZE\\] $algos" --blkhash=
bad blkhash "'/64K' is not ALGO\\[/BLOCKSIZE\\] $algos" --blkhash=/64K
bad blkhash "'abcdefghijklmnopq' is not ALGO\\[/BLOCKSIZE\\] $algos" \
  --blkhash=abcdefghijklmnopq
bad blkhash "unknown algorithm 'sha3' \\(md5, sha1, sha256 or sha512\\)" \
  --blkhash=sha3
bad blkhash "block size '3' must be a power of 2 from 1 to 32M" --blkhash=md5/3
bad blkhash "block size '0' must be a power of 2 from 1 to 32M" --blkhash=sha1/0
bad blkhash "block size '64M' must be a power of 2 from 1 to 32M" \
  --blkhash=sha256/64M
bad blkhash "block size '' must be a power of 2 from 1 to 32M" --blkhash=md5/
bad blkhash-file "an empty file name" --blkhash-file=
bad resume "an empty file name" --resume=
bad verify "'' is not 'data' or 'full'" --verify=
bad verify "'yes' is not 'data' or 'full'" --verify=yes
bad stats "'' is not 'text' or 'json'" --stats=
bad stats "'JSON' is not 'text' or 'json'" --stats=JSON
bad progress "'-1' is not a file descriptor" --progress=-1
bad progress "'' is not a file descriptor" --progress=
bad progress "'2147483648' is not a file descriptor" --progress=2147483648
bad progress "'stderr' is not a file descriptor" --progress=stderr
bad progress-json "'-1' is not a file descriptor" --progress-json=-1
bad progress-json "'' is not a file descriptor" --progress-json=
bad progress-json "'3.0' is not a file descriptor" --progress-json=3.0

# Every option that --help shows with a value ('--NAME=' or
# '--NAME[=') has rows above.
"$NBDCP" --help >"$tmp/help"
valued=$(grep -o -- '--[a-z-]*\[\?=' "$tmp/help" | sed 's/^--//; s/\[\?=$//' |
  sort -u)
[ -n "$valued" ] || fail "no option with a value found in --help"
for name in $valued; do
  [ "${rows[$name]:-0}" -gt 0 ] ||
    failures+=("--$name takes a value (--help) but has no bad-value row")
done
required=$(grep -o -- '--[a-z-]*=' "$tmp/help" | sed 's/^--//; s/=$//' |
  sort -u)

# refused ERE ARGS...: nbdcp ARGS exits 1, its first line matching ERE,
# the usage hint after it.
refused ()
{
  local ere=$1 r=0
  shift
  timeout --kill-after=5 20 "$NBDCP" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" ||
    r=$?
  if [ $r -ne 1 ] || ! head -n 1 "$tmp/err" | grep -Eq -- "$ere" ||
     [ "$(tail -n 1 "$tmp/err")" != "$usage" ] || [ -e "$dst" ]; then
    failures+=("nbdcp $*: exit $r, $(head -n 1 "$tmp/err")")
    echo "FAIL: nbdcp $*: exit $r" >&2
    sed 's/^/    /' "$tmp/err" >&2
  fi
  rm -f "$dst"
}

# Options without a value refuse one; the others need theirs.
"$NBDCP" --long-options | sed 's/^--//' >"$tmp/longs"
[ "$(wc -l <"$tmp/longs")" -ge 30 ] || fail "--long-options: $(cat "$tmp/longs")"
flags=0
while read -r name; do
  if ! grep -qx -- "$name" <<<"$valued"; then
    flags=$((flags + 1))
    refused "^nbdcp: unknown option or missing value: --$name=x\$" \
      "--$name=x" "$tmp/src.raw" "$dst"
  elif grep -qx -- "$name" <<<"$required"; then
    refused "^nbdcp: unknown option or missing value: --$name\$" \
      "$tmp/src.raw" "$dst" "--$name"
  fi
done <"$tmp/longs"
[ $flags -ge 12 ] || fail "only $flags options without a value found"
for o in C R S T; do
  refused "^nbdcp: unknown option or missing value: -$o\$" \
    "$tmp/src.raw" "$dst" "-$o"
done

# Options that cannot go together, refused as the command line is
# read (the other refusals of a pair need servers: test-bitmap.sh).
refused "^nbdcp: --resume cannot be combined with --blkhash: " \
  --resume="$tmp/j" --blkhash "$tmp/src.raw" "$dst"
refused "^nbdcp: --resume cannot be combined with --blkhash: " \
  --resume="$tmp/j" --blkhash-file="$tmp/sum" "$tmp/src.raw" "$dst"
refused "^nbdcp: --resume cannot be combined with --verify: " \
  --resume="$tmp/j" --verify "$tmp/src.raw" "$dst"
refused "^nbdcp: --bitmap cannot be used with --destination-is-zero: " \
  --bitmap=b0 --target-is-zero "$tmp/src.raw" "$dst"
refused "^nbdcp: --bitmap cannot be used with --blkhash: " \
  --bitmap=b0 --blkhash=md5 "$tmp/src.raw" "$dst"
refused "^nbdcp: --bitmap cannot be used with --verify: " \
  --bitmap=b0 --verify=full "$tmp/src.raw" "$dst"
refused "^nbdcp: --blkhash would print the checksum into the copy on standard output: use --blkhash-file\$" \
  --blkhash "$tmp/src.raw" -
[ ! -e "$tmp/j" ] && [ ! -e "$tmp/sum" ] || fail "a refused pair left a file"

# Values that parse but name something nbdcp cannot use: refused
# before the destination is created.
unusable ()
{
  local ere=$1 r=0
  shift
  timeout --kill-after=5 20 "$NBDCP" "$@" "$tmp/src.raw" "$dst" </dev/null \
    >"$tmp/out" 2>"$tmp/err" || r=$?
  if [ $r -ne 1 ] || ! grep -Eq -- "$ere" "$tmp/err" || [ -e "$dst" ]; then
    failures+=("nbdcp $*: exit $r, $(head -n 1 "$tmp/err")")
    echo "FAIL: nbdcp $*: exit $r" >&2
    sed 's/^/    /' "$tmp/err" >&2
  fi
  rm -f "$dst"
}
mkdir "$tmp/dir"
exec 8>&-
unusable '^nbdcp: --progress=8: descriptor 8 is not open$' --progress=8
unusable '^nbdcp: --progress-json=8: descriptor 8 is not open$' \
  --progress-json=8
unusable "^nbdcp: --resume: $tmp/dir is not a regular file: refused\$" \
  --resume="$tmp/dir"
unusable "^nbdcp: --resume: journal $tmp/nodir/j: .*No such file or directory" \
  --resume="$tmp/nodir/j"
unusable "^nbdcp: --blkhash-file: $tmp/dir is a directory: refused" \
  --blkhash-file="$tmp/dir"
unusable "^nbdcp: --blkhash-file: $tmp/nodir/sum: No such file or directory" \
  --blkhash-file="$tmp/nodir/sum"
[ ! -e "$tmp/nodir" ] || fail "a refused copy made $tmp/nodir"

echo "$(( $(IFS=+; echo "${rows[*]}") )) bad values of ${#rows[@]} options," \
  "$flags options without a value"
if [ ${#failures[@]} -gt 0 ]; then
  printf '%s\n' "${failures[@]}" >&2
  fail "${#failures[@]} cases failed"
fi
