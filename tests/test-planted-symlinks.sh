#!/bin/bash
# Files planted where nbdcp writes never turn it against its user.
# Symbolic links to a victim file at the names a journal's or a
# checksum's temporary file could plausibly have (FILE.tmp, FILE.new,
# FILE~, ...) are never written through: the victim is untouched after
# a --resume copy that fails half way (its destination's server killed
# in the second segment) and after the rerun that finishes it, whose
# data qemu-img compares with the source.  A symbolic link at the name
# of --blkhash-file or of the journal is refused, dangling or not, and
# so is a journal that is a FIFO or belongs to another user (it could
# say segments were done that were not).
. "${srcdir:-.}/tests/functions.sh"
requires_resume
requires python3
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

size=$((256 * 1024 * 1024))
start_nbdkit src sparse-random $size seed=33 percent=4 runlength=1048576
src=$(uri_of "$tmp/src.sock")
printf 'precious\n' >"$tmp/victim"
cp "$tmp/victim" "$tmp/victim.orig"
# victim_untouched WHEN: the victim holds what it held, and nothing was
# created through a dangling link.
victim_untouched ()
{
  cmp -s "$tmp/victim" "$tmp/victim.orig" ||
    fail "$1: the victim now holds '$(head -c 80 "$tmp/victim")'"
  [ ! -e "$tmp/created" ] || fail "$1: a file was created through a link"
}
# plant FILE: links to the victim (and a dangling one to $tmp/created)
# at the names of FILE's temporary files that a writer might use.
plant ()
{
  local d b
  d=$(dirname "$1") b=$(basename "$1")
  for n in "$1.tmp" "$1.new" "$1.part" "$1~" "$1.swp" "$d/.$b.tmp" \
    "$d/.$b.swp" "$d/#$b#"; do
    ln -s "$tmp/victim" "$n"
  done
  ln -s "$tmp/created" "$1.temp"
}
# only_links DIR [NAME...]: DIR holds the planted links, still links,
# and the NAMEs, nothing else (no temporary file left behind).
only_links ()
{
  local dir=$1 n
  shift
  for n in "$dir"/* "$dir"/.[!.]*; do
    [ -e "$n" ] || [ -L "$n" ] || continue
    [ -L "$n" ] && continue
    case " $* " in *" $(basename "$n") "*) continue ;; esac
    fail "$n was left in $dir"
  done
}

# 1. A --resume copy that fails in its second segment.
mkdir "$tmp/jdir"
j=$tmp/jdir/copy.journal
plant "$j"
truncate -s $size "$tmp/dst.img"
start_breaking_nbdkit dst "$tmp/dst.img" $((128 << 20)) 0
dst=$(uri_of "$tmp/dst.sock")
r=0
run_nbdcp -C 1 --resume="$j" --checkpoint=128M "$src" "$dst" 2>"$tmp/err" ||
  r=$?
victim_untouched "a --resume copy that failed"
[ $r -eq 1 ] || { cat "$tmp/err" >&2; fail "the broken copy: exit $r, not 1"; }
[ -f "$j" ] && [ ! -L "$j" ] || fail "the failed copy left no journal"
head -1 "$j" | grep -qx "nbdcp journal 2" || fail "the journal's first line"
only_links "$tmp/jdir" copy.journal
restart_broken_nbdkit dst file "$tmp/dst.img"
# The failed copy left reads in flight on the source, and nbdkit 1.32
# may abort then (see restart_nbdkit in tests/functions.sh): it starts
# afresh, on the same socket (the journal names it).
restart_nbdkit src sparse-random $size seed=33 percent=4 runlength=1048576

# 2. Journals that are refused, before anything is written.
cp "$j" "$tmp/saved.journal"
ln -s "$tmp/victim" "$tmp/jdir/link.journal"
expect_fail "link.journal is a symbolic link" \
  "$NBDCP" --resume="$tmp/jdir/link.journal" "$src" "$dst"
ln -s "$tmp/created" "$tmp/jdir/dangling.journal"
expect_fail "dangling.journal is a symbolic link" \
  "$NBDCP" --resume="$tmp/jdir/dangling.journal" "$src" "$dst"
mkfifo "$tmp/jdir/fifo.journal"
expect_fail "fifo.journal is not a regular file" \
  "$NBDCP" --resume="$tmp/jdir/fifo.journal" "$src" "$dst"
rm "$tmp/jdir/fifo.journal"
if [ "$(id -u)" = 0 ]; then
  # A journal of this very copy, but another user's.
  cp "$j" "$tmp/jdir/other.journal"
  chown 65534 "$tmp/jdir/other.journal"
  expect_fail "other.journal belongs to user 65534, not to this user" \
    "$NBDCP" --resume="$tmp/jdir/other.journal" "$src" "$dst"
  rm "$tmp/jdir/other.journal"
fi
victim_untouched "refused journals"
cmp -s "$j" "$tmp/saved.journal" || fail "a refused run changed the journal"

# 3. The rerun finishes the copy and removes its journal.
run_nbdcp -C 1 --resume="$j" --checkpoint=128M "$src" "$dst" 2>"$tmp/err" ||
  { cat "$tmp/err" >&2; fail "the resumed copy failed"; }
victim_untouched "the resumed copy"
[ ! -e "$j" ] || fail "the journal was not removed"
only_links "$tmp/jdir"
check_same "$src" "$tmp/dst.img" "the resumed copy"

# 4. --blkhash-file: links at its temporary names are not followed; a
# link at its own name is refused.
start_nbdkit small pattern $((4 * 1024 * 1024))
small=$(uri_of "$tmp/small.sock")
mkdir "$tmp/hdir"
plant "$tmp/hdir/sum"
run_nbdcp --blkhash-file="$tmp/hdir/sum" "$small" "$tmp/small.raw"
victim_untouched "--blkhash-file"
check_same "$small" "$tmp/small.raw" "the copy with --blkhash-file"
[ "$(cat "$tmp/hdir/sum")" = "$(python3 "$ref" sha256 "$tmp/small.raw")" ] ||
  fail "--blkhash-file holds '$(cat "$tmp/hdir/sum")'"
only_links "$tmp/hdir" sum
ln -s "$tmp/victim" "$tmp/hdir/link.sum"
expect_fail "link.sum is a symbolic link" \
  "$NBDCP" --blkhash-file="$tmp/hdir/link.sum" "$small" null:
ln -s "$tmp/created" "$tmp/hdir/dangling.sum"
expect_fail "dangling.sum is a symbolic link" \
  "$NBDCP" --blkhash-file="$tmp/hdir/dangling.sum" "$small" null:
victim_untouched "--blkhash-file at a link"
[ -L "$tmp/hdir/link.sum" ] && [ -L "$tmp/hdir/dangling.sum" ] ||
  fail "a link at --blkhash-file's name was replaced"
only_links "$tmp/hdir" sum
