#!/bin/bash
# Nothing calls "up" (docs/design.md), and three rules hold it:
#
# - The endpoint files (endpoint.c, nbd*.c, ssh_*.c, file*.c, stream.c, null.c
#   and their headers) include no header of the engine or of what
#   drives it, not even through another header, and their objects use
#   no symbol defined by main.c, the engine or the files above the
#   endpoints.  Endpoints may call down (error.c, ring.c, extents.c,
#   dirty_bitmap.c, lib/) and op_complete (op.c, declared in op_io.h
#   for them).
# - They do not include options.h either: what they need of the
#   command line is struct endpoint_settings (endpoint.h).
# - ring.[ch] and op.[ch], which the endpoints call down into, include
#   no endpoint header (ring_event.h and op_io.h are below both), and
#   their objects use no symbol an endpoint object defines.
. "${srcdir:-.}/tests/functions.sh"

copy="$srcdir/copy"
# The layers above the endpoints, as headers and as object names.
upper="lane lane_struct lane_op lane_setup lane_write lane_dest_zero
       lane_recover job engine worker op pool window zero_run settings bitmap
       verify journal journal_identity blkhash blkhash_file progress
       progress_out stats refuse main"
# And what the endpoints are given instead: the command line's options.
forbidden="$upper options"

endpoint_files=()
for f in "$copy"/endpoint.[ch] "$copy"/nbd*.[ch] "$copy"/ssh_*.[ch] "$copy"/file*.[ch] \
         "$copy"/stream.c "$copy"/null.c; do
  [ -f "$f" ] && endpoint_files+=("$f")
done
[ "${#endpoint_files[@]}" -ge 6 ] || fail "endpoint files not found in $copy"
endpoint_headers=()
for f in "${endpoint_files[@]}"; do
  case "$f" in *.h) endpoint_headers+=("$(basename "$f")") ;; esac
done
[ "${#endpoint_headers[@]}" -ge 2 ] || fail "endpoint headers not found"

# Below the endpoints, though the engine uses them too.
lower_files=()
for f in "$copy"/ring.[ch] "$copy"/ring_event.h "$copy"/op.[ch] \
         "$copy"/op_io.h; do
  [ -f "$f" ] && lower_files+=("$f")
done
[ "${#lower_files[@]}" -ge 4 ] || fail "ring and op files not found in $copy"


bad=0
upper_headers=()
for u in $upper; do
  upper_headers+=("$u.h")
done
for f in "${endpoint_files[@]}"; do
  includes_none "an endpoint must not depend on the layers above it" \
    "$f" "${upper_headers[@]}" || bad=1
  includes_none "an endpoint reads struct endpoint_settings, not the options" \
    "$f" options.h || bad=1
done
for f in "${lower_files[@]}"; do
  includes_none "ring and op are below the endpoints, which call down into them" \
    "$f" "${endpoint_headers[@]}" || bad=1
done

# The symbols: what the endpoint objects need that an upper object
# defines.  The objects are automake's (copy/nbdcp-NAME.o) in this
# build directory.
if command -v nm >/dev/null 2>&1 && [ -f copy/nbdcp-endpoint.o ]; then
  for u in $forbidden; do
    [ -f "copy/nbdcp-$u.o" ] || continue
    symbols_defined "$u.c" "copy/nbdcp-$u.o"
  done | sort >"$tmp/upper-symbols"
  # Except what op_io.h declares for the endpoints (op_complete...).
  sed -n 's/^[a-z].*[ *]\(op_[a-z_]*\) (.*/\1/p' "$copy/op_io.h" \
    >"$tmp/allowed"
  [ -s "$tmp/allowed" ] || fail "no op_ functions found in op_io.h"
  for f in "${endpoint_files[@]}"; do
    case "$f" in *.c) ;; *) continue ;; esac
    o="copy/nbdcp-$(basename "$f" .c).o"
    [ -f "$o" ] || fail "$o not built"
    symbols_used_from "$o" "$tmp/upper-symbols" | grep -vwFf "$tmp/allowed" \
      >"$tmp/up" || :
    while read -r sym def; do
      echo "layering: ${f#$srcdir/} uses $sym, defined in $def:" \
           "an endpoint must not call up or read the layers above it" >&2
      bad=1
    done <"$tmp/up"
  done
  # ring.o and op.o use nothing that an endpoint object defines.
  for f in "${endpoint_files[@]}"; do
    case "$f" in *.c) ;; *) continue ;; esac
    symbols_defined "${f#$srcdir/}" "copy/nbdcp-$(basename "$f" .c).o"
  done | sort >"$tmp/endpoint-symbols"
  for f in "${lower_files[@]}"; do
    case "$f" in *.c) ;; *) continue ;; esac
    o="copy/nbdcp-$(basename "$f" .c).o"
    [ -f "$o" ] || fail "$o not built"
    symbols_used_from "$o" "$tmp/endpoint-symbols" >"$tmp/up" || :
    while read -r sym def; do
      echo "layering: ${f#$srcdir/} uses $sym, defined in $def:" \
           "ring and op must not call up into the endpoints" >&2
      bad=1
    done <"$tmp/up"
  done
else
  echo "objects or nm not found: checking the includes only"
fi

[ "$bad" -eq 0 ] || fail "a file depends on a layer above its own (see above)"
