#!/bin/bash
# The man page renders, and documents every option that nbdcp --help,
# --long-options and --short-options know about.
. "${srcdir:-.}/tests/functions.sh"
requires man
[ -f "$MANPAGE" ] || skip "man page not built (no pod2man)"

MANWIDTH=200 man -l "$MANPAGE" >"$tmp/man.txt" 2>"$tmp/man.err"
[ -s "$tmp/man.txt" ] || fail "man -l produced nothing"
if [ -s "$tmp/man.err" ]; then
  cat "$tmp/man.err" >&2
  fail "man -l warned"
fi
grep -q '^NAME' "$tmp/man.txt" || fail "no NAME section"

# --help's options, and the complete lists, all appear in the man page.
# (--help is kept in a file: grep -q on a pipe may end before nbdcp has
# written all of it, and pipefail would then count the SIGPIPE.)
"$NBDCP" --help >"$tmp/help"
grep -oE -- '(^| )--?[a-zA-Z][-a-zA-Z]*' "$tmp/help" | tr -d ' ' |
  sort -u >"$tmp/help-options"
{ "$NBDCP" --long-options; "$NBDCP" --short-options; } >>"$tmp/help-options"
missing=0
while read -r o; do
  grep -qF -- "$o" "$tmp/man.txt" || { echo "not in the man page: $o"; missing=1; }
  case "$o" in
    --long-options|--short-options) ;;
    *) grep -qF -- "$o" "$tmp/help" ||
         { echo "not in --help: $o"; missing=1; } ;;
  esac
done < <(sort -u "$tmp/help-options")
[ "$missing" -eq 0 ] || fail "options missing from the documentation"
