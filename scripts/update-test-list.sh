#!/bin/bash
# Rewrites the SHELL_TESTS list in Makefile.am from tests/test-*.sh, so
# a new test file only needs this run once (automake needs the list
# spelled out; GNU make wildcards are not portable automake).
set -eu
cd "$(dirname "$0")/.."
list=$(ls tests/test-*.sh | sort | sed 's/^/\t/; s/$/ \\/' | sed '$ s/ \\$//')
awk -v list="$list" '
  /^SHELL_TESTS = \\$/ { print; print list; skip = 1; next }
  skip && /\\$/ { next }
  skip { skip = 0; next }
  { print }' Makefile.am >Makefile.am.new
mv Makefile.am.new Makefile.am
