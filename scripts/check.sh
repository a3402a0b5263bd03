#!/bin/bash
# Sets everything up and runs the test suite: installs what is missing
# (as root), builds, runs 'make check', and ends with the line
# "N passed, N failed" (plus skipped).  Exits non-zero if any test failed.
set -u
cd "$(dirname "$0")/.."
. scripts/install-deps.sh

install_deps || exit 1
build_nbdcp || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }

rm -f tests/*.trs tests/*.log
make -j"$(nproc)" check >check.log 2>&1
rc=$?

passed=$(cat tests/*.trs 2>/dev/null | grep -c '^:test-result: PASS')
failed=$(cat tests/*.trs 2>/dev/null | grep -Ec '^:test-result: (FAIL|ERROR|XPASS)')
skipped=$(cat tests/*.trs 2>/dev/null | grep -c '^:test-result: SKIP')

for t in tests/*.trs; do
  r=$(sed -n 's/^:test-result: //p' "$t")
  echo "$r: ${t%.trs}"
  case "$r" in
    FAIL|ERROR|XPASS) sed 's/^/    /' "${t%.trs}.log" | tail -40 ;;
  esac
done
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # make check itself failed (a build error, say): show it and count it.
  tail -40 check.log
  failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
