#!/bin/bash
# The lane copies, the features ride along (docs/design.md, "Features:
# what rides along a lane"):
# - lane.c and the lane's other files (lane_*.[ch] but lane_feature.[ch])
#   call no feature by name: their objects use no symbol of blkhash.c,
#   journal.c, rate.c, verify.c or a feature_*.c file (only
#   lane_feature.c's events), and they include no feature header, not
#   even through another;
# - the feature files, source_extents.c and dest_zero.c do not know the
#   lane: they include no lane header and use no lane_ symbol but the
#   events' (lane_features_add);
# - no loop: lane.c calls source_extents.c and dest_zero.c, which call
#   nothing of the lane's.
. "${srcdir:-.}/tests/functions.sh"

copy="$srcdir/copy"
# rate.h is left out: the job holds the rate limit by value (job.h),
# and the symbols below show that the lane does not call it.
feature_headers="blkhash.h journal.h verify.h feature_attach.h"
feature_objects="blkhash journal rate verify"
for f in "$copy"/feature_*.c; do
  feature_objects+=" $(basename "$f" .c)"
done
[ -f "$copy/feature_list.c" ] || fail "copy/feature_list.c not found"
# The lane's own files: lane.c and those it is split into (lane_*.[ch]),
# but not lane_feature.[ch], the events that stand between.
lane_files=()
lane_headers=""
lane_objects=""
for f in "$copy"/lane*.[ch]; do
  case "$(basename "$f")" in lane_feature.*) continue ;; esac
  lane_files+=("$f")
  case "$f" in
    *.h) lane_headers+=" $(basename "$f")" ;;
    *.c) lane_objects+=" $(basename "$f" .c)" ;;
  esac
done
[ "${#lane_files[@]}" -ge 4 ] || fail "the lane's files not found in $copy"


bad=0
for f in "${lane_files[@]}"; do
  includes_none \
    "the lane must reach the features through lane_feature.h's events only" \
    "$f" $feature_headers feature_list.h || bad=1
done
for f in "$copy"/feature_*.[ch] "$copy"/source_extents.[ch] \
         "$copy"/dest_zero.[ch]; do
  includes_none "it must not know the lane" "$f" $lane_headers || bad=1
done

# The symbols, from automake's objects (copy/nbdcp-NAME.o) in this
# build directory.
if command -v nm >/dev/null 2>&1 && [ -f copy/nbdcp-lane.o ]; then
  for o in $feature_objects; do
    [ -f "copy/nbdcp-$o.o" ] || fail "copy/nbdcp-$o.o not built"
    symbols_defined "$o.c" "copy/nbdcp-$o.o"
  done | sort >"$tmp/feature-symbols"
  [ -s "$tmp/feature-symbols" ] || fail "no feature symbols found"
  for o in $lane_objects; do
    symbols_used_from "copy/nbdcp-$o.o" "$tmp/feature-symbols" >"$tmp/up" \
      || :
    while read -r sym def; do
      echo "layering: copy/$o.c uses $sym, defined in $def: the lane" \
           "must reach the features through events only" >&2
      bad=1
    done <"$tmp/up"
  done
  for f in "$copy"/feature_*.c "$copy"/source_extents.c "$copy"/dest_zero.c; do
    o="copy/nbdcp-$(basename "$f" .c).o"
    [ -f "$o" ] || fail "$o not built"
    nm -u "$o" | awk '{ print $NF }' |
      grep '^lane_' | grep -vx 'lane_features_add' >"$tmp/lane-uses" || :
    while read -r sym; do
      echo "layering: ${f#$srcdir/} uses $sym: it must not call the lane" >&2
      bad=1
    done <"$tmp/lane-uses"
  done
else
  echo "objects or nm not found: checking the includes only"
fi
[ "$bad" -eq 0 ] || fail "the lane and its features are tangled (see above)"
echo "lane and features: no feature called by name, no lane known below"
