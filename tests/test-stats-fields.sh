#!/bin/bash
# The --stats=json fields that test-stats-json.sh does not hold to a
# value, each against a reader independent of nbdcp:
# - "source_connections" and "destination_connections": the Connect
#   lines of each server's log, and the smaller of -C and -T (the disk
#   has eight segments, so it never limits them); "lanes" and "threads"
#   that same number (the man page: the smaller of -C and -T sets both);
# - "requests": every request the two servers logged (reads, writes,
#   zeroes, flushes, block status), and with a disk of data only, the
#   reads are the size over --request-size;
# - "hole_bytes": 0 with --no-extents, which asks for no block status
#   and reads the whole disk, while without it the same disk's holes
#   are counted.
# And a copy with standard error closed (nbdcp gives it /dev/null):
# --stats, --stats=json and -p then go nowhere, the copy is made and
# exits 0; a failed one still exits 1.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires "$QEMU_IMG"
requires python3

# copy NAME SOURCE-ARGS -- NBDCP-ARGS: copy from nbdkit SOURCE-ARGS into
# a memory disk of the same size, both behind the log filter
# ($tmp/NAME-src.log, $tmp/NAME-dst.log), --stats=json into
# $tmp/NAME.stats; compared with the source.
copy ()
{
  local name=$1 size source=()
  shift
  while [ "$1" != -- ]; do source+=("$1"); shift; done
  shift
  size=$(printf '%s\n' "${source[@]}" | sed -n 's/^size=//p')
  start_nbdkit "$name-src" -r --filter=log "${source[@]}" \
    logfile="$tmp/$name-src.log"
  start_nbdkit "$name-dst" --filter=log memory size="$size" \
    logfile="$tmp/$name-dst.log"
  run_nbdcp --stats=json "$@" "$(uri_of "$tmp/$name-src.sock")" \
    "$(uri_of "$tmp/$name-dst.sock")" 2>"$tmp/$name.stats" ||
    { cat "$tmp/$name.stats" >&2; fail "$name: nbdcp $* failed"; }
  # Before qemu-img's requests join the logs.
  cp "$tmp/$name-src.log" "$tmp/$name-src.copy.log"
  cp "$tmp/$name-dst.log" "$tmp/$name-dst.copy.log"
  check_same "$(uri_of "$tmp/$name-src.sock")" \
    "$(uri_of "$tmp/$name-dst.sock")" "$name"
}

# fields NAME PYTHON-ASSERTIONS: run the assertions with s (the stats),
# src and dst (the two logs: "connects", "requests", "reads": a list of
# read lengths, "kinds": counts by kind).
fields ()
{
  python3 - "$tmp/$1.stats" "$tmp/$1-src.copy.log" "$tmp/$1-dst.copy.log" \
    "$2" <<'PY' || fail "$1: $(grep '^{' "$tmp/$1.stats")"
import json, re, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
assert len(lines) == 1, "expected one JSON line, got %d" % len(lines)
s = json.loads(lines[0])
def log(path):
    r = {"connects": 0, "requests": 0, "reads": [], "kinds": {}}
    for line in open(path):
        f = line.split()
        if len(f) < 4:
            continue
        if f[3] == "Connect":
            r["connects"] += 1
        if f[3] in ("Read", "Write", "Zero", "Trim", "Flush", "Extents", "Cache"):
            r["requests"] += 1
            r["kinds"][f[3]] = r["kinds"].get(f[3], 0) + 1
            if f[3] == "Read":
                r["reads"].append(int(re.search(r"count=(0x[0-9a-f]+)", line).group(1), 16))
    return r
src, dst = log(sys.argv[2]), log(sys.argv[3])
print(sys.argv[4].strip().replace("\n", "; "))
print("  stats: requests %d, connections %d/%d, lanes %d, threads %d, hole_bytes %d"
      % (s["requests"], s["source_connections"], s["destination_connections"],
         s["lanes"], s["threads"], s["hole_bytes"]))
print("  logged: %d + %d requests, %d/%d connections, source %s, destination %s"
      % (src["requests"], dst["requests"], src["connects"], dst["connects"],
         src["kinds"], dst["kinds"]))
assert s["ok"] is True
exec(sys.argv[4])
PY
}

# Connections, lanes and threads against -C and -T; requests against
# what the servers logged.  1G of sparse-random: eight segments.
sparse=(sparse-random size=1G percent=2 seed=3 runlength=1048576)
for ct in "3 2" "1 3" "4 4" "2 1"; do
  set -- $ct
  copy c$1t$2 "${sparse[@]}" -- -C $1 -T $2
  fields c$1t$2 "
n = min($1, $2)
assert s['source_connections'] == src['connects'] == n
assert s['destination_connections'] == dst['connects'] == n
assert s['lanes'] == s['threads'] == n
assert s['requests'] == src['requests'] + dst['requests']
"
done

# Requests against --request-size: 16M of data only, one lane
# (sparse-random, whose block status the log filter sees: pattern has
# none, and nbdkit answers for it before the filter).
for rs in 1M 4M; do
  copy rs$rs sparse-random size=16M percent=100 seed=5 -- -C 1 \
    --request-size=$rs
  fields rs$rs "
rs = {'1M': 1 << 20, '4M': 4 << 20}['$rs']
assert src['reads'] == [rs] * (16 * 1024 * 1024 // rs), src['reads']
assert s['requests'] == src['requests'] + dst['requests']
assert s['requests'] >= 2 * len(src['reads'])
"
done

# hole_bytes: the sparse disk's holes are counted, but not with
# --no-extents, which reads everything and asks for no block status.
copy holes "${sparse[@]}" -- -C 2 -T 2
fields holes "
assert s['hole_bytes'] > 512 * 1024 * 1024
assert s['hole_bytes'] + sum(src['reads']) == s['size']
"
copy noext "${sparse[@]}" -- -C 2 -T 2 --no-extents
fields noext "
assert s['hole_bytes'] == 0
assert 'Extents' not in src['kinds']
assert sum(src['reads']) == s['size']
"

# Standard error closed: the reports go to the /dev/null put in its
# place, the copy is made and exits 0.
start_nbdkit small -r pattern size=4M
small=$(uri_of "$tmp/small.sock")
for opts in --stats --stats=json -p "--stats=json -p -v"; do
  rm -f "$tmp/closed.raw"
  r=0
  # shellcheck disable=SC2086
  "$NBDCP" $opts "$small" "$tmp/closed.raw" 2>&- || r=$?
  [ $r -eq 0 ] || fail "$opts with standard error closed: exit $r"
  check_same "$small" "$tmp/closed.raw" "$opts with standard error closed"
done
# A copy that fails says so by its exit status alone.
r=0
"$NBDCP" --stats=json -p "$small" "$tmp/no/such/dir/x.raw" 2>&- || r=$?
[ $r -eq 1 ] || fail "a failed copy with standard error closed: exit $r, not 1"
