#!/bin/bash
# Nothing calls "up" (docs/design.md): the endpoint files (endpoint.c,
# nbd*.c, file.c, stream.c, null.c and their headers) include no header
# of the engine or of what drives it, not even through another header,
# and their objects use no symbol defined by main.c, the engine or the
# files above the endpoints.  Endpoints may call down (error.c, ring.c,
# extents.c, dirty_bitmap.c, lib/) and op_complete (op.c, declared in
# op_io.h for them).
. "${srcdir:-.}/tests/functions.sh"

copy="$srcdir/copy"
# The layers above the endpoints, as headers and as object names.
upper="lane job engine op pool window zero_run settings bitmap verify
       journal blkhash progress stats main"

endpoint_files=()
for f in "$copy"/endpoint.[ch] "$copy"/nbd*.[ch] "$copy"/file.c \
         "$copy"/stream.c "$copy"/null.c; do
  [ -f "$f" ] && endpoint_files+=("$f")
done
[ "${#endpoint_files[@]}" -ge 6 ] || fail "endpoint files not found in $copy"

# The headers FILE includes with quotes, and theirs, each once.
declare -A seen
closure ()
{
  local h
  for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$1"); do
    [ -n "${seen[$h]:-}" ] && continue
    seen[$h]=$1
    if [ -f "$copy/$h" ]; then
      closure "$copy/$h"
    elif [ -f "$srcdir/lib/$h" ]; then
      closure "$srcdir/lib/$h"
    fi
  done
}

bad=0
for f in "${endpoint_files[@]}"; do
  seen=()
  closure "$f"
  for u in $upper; do
    if [ -n "${seen[$u.h]:-}" ]; then
      echo "layering: ${f#$srcdir/} includes $u.h" \
           "(through ${seen[$u.h]#$srcdir/}): an endpoint must not" \
           "depend on the layers above it" >&2
      bad=1
    fi
  done
done

# The symbols: what the endpoint objects need that an upper object
# defines.  The objects are automake's (copy/nbdcp-NAME.o) in this
# build directory.
if command -v nm >/dev/null 2>&1 && [ -f copy/nbdcp-endpoint.o ]; then
  for u in $upper; do
    [ -f "copy/nbdcp-$u.o" ] || continue
    nm --defined-only -g "copy/nbdcp-$u.o" |
      awk -v f="$u.c" 'NF == 3 { print $3, f }'
  done | sort >"$tmp/upper-symbols"
  # Except what op_io.h declares for the endpoints (op_complete...).
  sed -n 's/^[a-z].*[ *]\(op_[a-z_]*\) (.*/\1/p' "$copy/op_io.h" \
    >"$tmp/allowed"
  [ -s "$tmp/allowed" ] || fail "no op_ functions found in op_io.h"
  for f in "${endpoint_files[@]}"; do
    case "$f" in *.c) ;; *) continue ;; esac
    o="copy/nbdcp-$(basename "$f" .c).o"
    [ -f "$o" ] || fail "$o not built"
    nm -u "$o" | awk '{ print $NF }' | sort >"$tmp/needs"
    join "$tmp/needs" "$tmp/upper-symbols" | grep -vwFf "$tmp/allowed" \
      >"$tmp/up" || :
    while read -r sym def; do
      echo "layering: ${f#$srcdir/} uses $sym, defined in $def:" \
           "an endpoint must not call up or read the layers above it" >&2
      bad=1
    done <"$tmp/up"
  done
else
  echo "objects or nm not found: checking the includes only"
fi

[ "$bad" -eq 0 ] || fail "the endpoints depend on what is above them (see above)"
