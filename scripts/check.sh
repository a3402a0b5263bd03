#!/bin/bash
# Sets everything up and runs the test suite: installs what is missing
# (as root), then builds and tests three variants out of tree:
#   build/default  warnings as errors; the whole suite
#   build/asan     AddressSanitizer + UndefinedBehaviorSanitizer; the
#                  whole suite (valgrind's test skips itself there)
#   build/tsan     ThreadSanitizer; the multi-threaded copy tests
# and ends with the line "N passed, N failed, N skipped" over all
# variants.  Exits non-zero if any test failed.
#
# CHECK_VARIANTS="default" (say) runs fewer variants.
set -u
cd "$(dirname "$0")/.."
top=$PWD
. scripts/install-deps.sh

install_deps || exit 1

# Multi-threaded copies, for ThreadSanitizer.
tsan_tests="
  tests/test-bitmap.sh
  tests/test-blkhash-large-blocks.sh
  tests/test-blkhash-small-blocks.sh
  tests/test-blkhash.sh
  tests/test-checkwrite.sh
  tests/test-destination-reads-zero.sh
  tests/test-fault-matrix.sh
  tests/test-file-endpoints.sh
  tests/test-flush-every-connection.sh
  tests/test-interrupt.sh
  tests/test-limited-clients.sh
  tests/test-planted-symlinks.sh
  tests/test-progress-lines.sh
  tests/test-rate.sh
  tests/test-resume-durable.sh
  tests/test-resume-journal-write.sh
  tests/test-resume.sh
  tests/test-retry-blkhash.sh
  tests/test-retry.sh
  tests/test-server-errors.sh
  tests/test-sparse-random-copy.sh
  tests/test-stats-fields.sh
  tests/test-stress-tiny-requests.sh
  tests/test-timeout.sh
  tests/test-verify-lying-holes.sh
  tests/test-verify.sh
  tests/test-written-files.sh
"

passed=0 failed=0 skipped=0 rc=0
summary=()

count ()
{
  local dir=$1 r t
  for t in "$dir"/tests/*.trs; do
    [ -f "$t" ] || continue
    r=$(sed -n 's/^:test-result: //p' "$t")
    case "$r" in
      PASS) passed=$((passed + 1)) ;;
      SKIP) skipped=$((skipped + 1)) ;;
      *) failed=$((failed + 1))
         summary+=("$r: ${dir#$top/}/${t#$dir/}")
         echo "== $r: ${t%.trs} =="
         tail -40 "${t%.trs}.log" ;;
    esac
  done
}

run_variant ()
{
  local name=$1 flags=$2 tests=$3 dir=$top/build/$1
  echo "== $name: configure $flags"
  mkdir -p "$dir"
  (
    cd "$dir" &&
      { [ -f Makefile ] || "$top/configure" $flags >configure.log 2>&1; } &&
      make -j"$(nproc)" >make.log 2>&1
  ) || {
    echo "== $name: build failed"
    tail -30 "$dir/make.log" "$dir/configure.log" 2>/dev/null
    failed=$((failed + 1)); summary+=("BUILD FAILED: $name"); rc=1
    return
  }
  rm -f "$dir"/tests/*.trs "$dir"/tests/*.log
  local start=$SECONDS
  if [ -n "$tests" ]; then
    (cd "$dir" && make -j"$(nproc)" check TESTS="$tests" >check.log 2>&1) || rc=1
  else
    (cd "$dir" && make -j"$(nproc)" check >check.log 2>&1) || rc=1
  fi
  echo "== $name: tests took $((SECONDS - start)) s"
  count "$dir"
}

mkdir -p m4
# An in-tree configuration would stop the out-of-tree builds.
[ -f Makefile ] && make distclean >/dev/null 2>&1
autoreconf -fi >/dev/null 2>&1 || { echo "autoreconf failed"; echo "0 passed, 1 failed"; exit 1; }

# TSan's shadow memory needs a fixed address layout on kernels with
# high mmap randomisation.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$top/tests/tsan.supp"

for v in ${CHECK_VARIANTS:-default asan tsan}; do
  case $v in
    default) run_variant default "--enable-werror" "" ;;
    asan) run_variant asan "--enable-werror --enable-sanitizers=address" "" ;;
    tsan) run_variant tsan "--enable-werror --enable-sanitizers=thread" \
            "$(for t in $tsan_tests; do [ -f "$t" ] && echo "$t"; done | tr '\n' ' ')" ;;
  esac
done

for s in "${summary[@]}"; do echo "$s"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
