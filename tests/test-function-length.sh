#!/bin/bash
# No function in copy/ or lib/ is longer than 120 lines (from the line
# with its name to its closing brace), so each can be read without
# scrolling far (STYLE.md), except the option parser and the help text
# in copy/options.c, which grow with every option.  Not a copy but a
# check of the source, like test-layering.sh.
. "${srcdir:-.}/tests/functions.sh"

max=120
# FILE:FUNCTION allowed to be longer.
allowed="copy/options.c:print_help copy/options.c:parse_options"

files=()
for f in "$srcdir"/copy/*.[ch] "$srcdir"/lib/*.[ch]; do
  [ -f "$f" ] && files+=("$f")
done
[ "${#files[@]}" -ge 20 ] || fail "sources not found in $srcdir/copy"

# The layout is clang-format's (.clang-format): a definition's name
# starts a line ("name (" at column 0, its return type on the line
# before) and its body opens and closes with a brace at column 0.  A
# body whose name was not found is reported, not skipped.
for f in "${files[@]}"; do
  awk -v file="${f#$srcdir/}" '
    /^[A-Za-z_][A-Za-z0-9_]* \(/ { name = $1; start = FNR; next }
    /^\{/ {
      if (name == "") { print file ":" FNR, "?", 0; next }
      open = 1; next
    }
    /^\}/ && open {
      print file ":" start, name, FNR - start + 1
      open = 0; name = ""
    }' "$f"
done >"$tmp/functions"

awk '$2 == "?" { print "function length: " $1 ": a body at column 0" \
                  " without a name line before it" }' "$tmp/functions" \
  >"$tmp/unnamed"
if [ -s "$tmp/unnamed" ]; then
  cat "$tmp/unnamed" >&2
  fail "function bodies this test cannot name (see above)"
fi
grep -qx "copy/main.c:[0-9]* main [0-9]*" "$tmp/functions" ||
  fail "main not found in copy/main.c: the scan is broken"

bad=0
while read -r where name lines; do
  [ "$lines" -gt "$max" ] || continue
  case " $allowed " in *" ${where%%:*}:$name "*) continue ;; esac
  echo "function length: $where: $name is $lines lines, more than $max:" \
       "split a helper out of it" >&2
  bad=1
done <"$tmp/functions"

[ "$bad" -eq 0 ] || fail "functions over $max lines (see above)"
