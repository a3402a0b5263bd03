#!/bin/bash
# No merge-conflict marker is left in the tree: a line that starts with
# seven '<', '=' or '>' (and, for '<' and '>', a space or the end of the
# line) in any file git tracks.  Not a copy but a check of the source,
# like test-layering.sh: a merge once left one in copy/engine.c and it
# compiled, since it sat in a comment.
. "${srcdir:-.}/tests/functions.sh"

requires git
cd "$srcdir"
git rev-parse --git-dir >/dev/null 2>&1 || skip "$srcdir is not a git checkout"

files=$(git ls-files)
[ -n "$files" ] || fail "git ls-files listed nothing in $srcdir"
# -I: binary files cannot hold a marker a compiler or reader would meet.
found=$(git ls-files -z |
  xargs -0 grep -n -I -E '^(<{7}( |$)|={7}$|>{7}( |$))' -- 2>/dev/null || :)
if [ -n "$found" ]; then
  echo "$found" >&2
  fail "merge-conflict markers are committed (above)"
fi
echo "no conflict marker in $(echo "$files" | wc -l) files"
