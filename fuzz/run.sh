#!/bin/bash
# Builds the libFuzzer harness with clang (ASan + UBSan) and fuzzes the
# command-line parser for FUZZ_SECONDS (default 60).  Crashes are left in
# fuzz/crashes/.  Needs clang and its fuzzer runtime (Debian: clang).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build/default}
out=$top/build/fuzz
mkdir -p "$out" "$top/fuzz/crashes" "$out/corpus"
command -v clang >/dev/null || { echo "fuzz: clang is not installed (apt-get install clang)"; exit 1; }
[ -f "$build/config.h" ] || { echo "fuzz: configure first (scripts/check.sh or ./configure)"; exit 1; }

clang -g -O1 -fsanitize=fuzzer,address,undefined \
  -I"$build" -I"$top/lib" -I"$top/copy" \
  $(pkg-config --cflags libnbd) \
  "$top/fuzz/fuzz-options.c" "$top/copy/options.c" "$top/lib/human_size.c" \
  $(pkg-config --libs libnbd) -o "$out/fuzz-options"

# Seeds: real command lines, NUL-separated.
printf -- '-C\0004\000--request-size=1M\000nbd://a/\000null:' >"$out/corpus/seed1"
printf -- '--\000[\000nbdkit\000memory\0001G\000]\000-' >"$out/corpus/seed2"
printf -- '-S\0004K\000--queue-size=64M\000--progress=3\000a\000b' >"$out/corpus/seed3"

"$out/fuzz-options" -max_total_time="${FUZZ_SECONDS:-60}" \
  -close_fd_mask=3 -artifact_prefix="$top/fuzz/crashes/" "$out/corpus"
