#!/bin/bash
# make coverage: which lines of copy/ and lib/ each test executes.
#
# Builds the tree in build/coverage (configure --enable-coverage: -O0
# --coverage), then runs the tests of Makefile.am one at a time through
# `make check TESTS=...` (so each gets the environment make check gives
# it: srcdir, NBDCP, NBDKIT, ...).  Before each test the gcov counters
# are reset (every .gcda removed); after it, gcov's JSON output for the
# .gcda files is reduced to the lines, branches and functions that test
# reached (scripts/coverage.py capture).  At the end scripts/coverage.py
# report writes, in build/coverage:
#
#   summary.txt          line and branch coverage per file of copy/ and
#                        lib/, and in all
#   line-tests.tsv       copy/lane.c:123<TAB>test-a.sh test-b.sh: each
#                        line with code and the tests that execute it
#                        (none: an empty list)
#   test-times.tsv       each test's result and seconds (the mutant run
#                        tries the quickest first)
#   unreached-functions.txt  functions no test enters
#   coverage.info, html/ an lcov trace of the whole run and genhtml's
#                        pages for it (if genhtml is installed)
#
# A test whose nbdcp is killed by SIGKILL leaves no counts for that
# process (gcov writes them at exit); its other processes still count.
#
#   make coverage                          # every test (an hour or so)
#   COVERAGE_TESTS="tests/test-rate.sh tests/test-window" make coverage
#   COVERAGE_TIMEOUT=1200                  seconds a test may take
#   COVERAGE_REPORT_ONLY=1                 only redo the report
set -u
set -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build/coverage
timeout_s=${COVERAGE_TIMEOUT:-1200}

cd "$top" || exit 1
mkdir -p m4
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
  autoreconf -fi >/dev/null 2>&1 || { echo "coverage: autoreconf failed" >&2; exit 1; }
fi
mkdir -p "$build"
cd "$build" || exit 1

if [ -z "${COVERAGE_REPORT_ONLY:-}" ]; then
  if [ ! -f Makefile ] || ! grep -q -- '--coverage' Makefile; then
    "$top/configure" --enable-coverage >configure.log 2>&1 ||
      { echo "coverage: configure failed, see $build/configure.log" >&2; exit 1; }
  fi
  # make check with no tests builds the test programs and libraries.
  { make -j2 && make -j2 check TESTS=; } >make.log 2>&1 ||
    { echo "coverage: build failed, see $build/make.log" >&2; exit 1; }

  if [ -n "${COVERAGE_TESTS:-}" ]; then
    tests=$COVERAGE_TESTS
  else
    tests=$(printf 'print-tests:\n\t@echo $(TESTS)\n' |
              make -s --no-print-directory -f Makefile -f - print-tests)
  fi
  rm -rf per-test
  mkdir -p per-test
  : >test-times.tsv
  for t in $tests; do
    name=${t#tests/}
    trs=${t%.sh}.trs
    find . -name '*.gcda' -delete
    rm -f "$trs"
    start=$(date +%s.%N)
    timeout "$timeout_s" make -s check TESTS="$t" >/dev/null 2>&1
    end=$(date +%s.%N)
    result=$(sed -n 's/^:test-result: //p' "$trs" 2>/dev/null | head -1)
    [ -n "$result" ] || result=TIMEOUT
    secs=$(echo "$end - $start" | bc)
    printf '%s\t%s\t%.1f\n' "$name" "$result" "$secs" >>test-times.tsv
    printf '%-45s %-5s %6.1fs\n' "$name" "$result" "$secs"
    find . -name '*.gcda' -print0 |
      xargs -0 -r gcov --json-format --stdout -b 2>/dev/null |
      python3 "$top/scripts/coverage.py" capture "$name" >"per-test/$name.json"
  done
  find . -name '*.gcda' -delete
fi

# Every instrumented line, executed or not: gcov on the notes files
# alone (no .gcda) reports them all with a count of 0.
find . -name '*.gcno' -print0 |
  xargs -0 -r gcov --json-format --stdout -b 2>/dev/null |
  python3 "$top/scripts/coverage.py" capture all >per-test/.all.json
python3 "$top/scripts/coverage.py" report "$build" || exit 1
if command -v genhtml >/dev/null; then
  genhtml -q --branch-coverage -o html coverage.info >genhtml.log 2>&1 ||
    echo "coverage: genhtml failed, see $build/genhtml.log" >&2
fi
cat summary.txt
