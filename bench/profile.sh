#!/bin/bash
# Profile one copy with perf and DWARF call graphs, then fold the stacks
# (bench/fold-stacks.pl) into a readable report of the top frames.
#
#   bench/profile.sh                         # nbdcp on workload 2 (2G)
#   PROFILE_WORKLOAD=3 bench/profile.sh      # the 5 ms delay workload
#   PROFILE_TOOL=nbdcopy bench/profile.sh    # the same for nbdcopy
#
# Environment (defaults in brackets):
#   NBDCP             nbdcp binary [copy/nbdcp of this checkout]
#   PROFILE_TOOL      nbdcp, nbdcopy or qemu-img [nbdcp]
#   PROFILE_WORKLOAD  1 (sparse-random 10% onto itself), 2 (all data onto
#                     itself), 3 (2 with 5 ms delay), 6 (all-hole null ->
#                     null:), 7 (all data -> null:) or r (per-request
#                     cost: nbdkit pattern -> null: with --request-size=4096,
#                     for nbdcp and nbdcopy) [2]
#   PROFILE_SIZE      disk size [32G for 1, 1G for 3 and r, 1T for 6, else 2G]
#   PROFILE_FREQ      samples per second per CPU [997]
#   PROFILE_TOP       rows in each table [25]
#   PROFILE_OUT       output directory [bench/results/profile-DATE]
#   BENCH_TMPDIR      scratch directory [/var/tmp]
#
# The server (nbdkit) runs apart, so only the copier is recorded.
# Writes into PROFILE_OUT: perf.data, perf.script (perf script's text),
# stacks.folded (one line per distinct stack, with its sample count:
# the input of any flame graph tool) and profile.md (the tables).
set -u
set -o pipefail

bench_dir=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bench_dir/.." && pwd)
. "$bench_dir/lib.sh"

: "${NBDCP:=$top/copy/nbdcp}"
: "${PERF:=perf}"
tool=${PROFILE_TOOL:-nbdcp}
wl=${PROFILE_WORKLOAD:-2}
freq=${PROFILE_FREQ:-997}
ntop=${PROFILE_TOP:-25}
OUT=${PROFILE_OUT:-$bench_dir/results/profile-$(date +%Y%m%d-%H%M%S)}
SEED=${BENCH_SEED:-1}
TMO=${BENCH_TIMEOUT:-600}

install_packages perf:linux-perf nbdkit:nbdkit nbdcopy:libnbd-bin \
  qemu-img:qemu-utils perl:perl || bench_die "install the missing packages first"

# perf must work here: hardware counters are often missing in a VM, so
# fall back to the cpu-clock software event.
"$PERF" stat -e task-clock true >/dev/null 2>&1 ||
  bench_die "perf does not work here (see /proc/sys/kernel/perf_event_paranoid)"
if "$PERF" stat -x, -e cycles true 2>&1 | grep -q '<not supported>\|<not counted>'; then
  event=cpu-clock
else
  event=cycles
fi

case "$wl" in
  1) size=${PROFILE_SIZE:-32G}; plugin="sparse-random size=$size seed=$SEED"; dst=same ;;
  2) size=${PROFILE_SIZE:-2G}; plugin="sparse-random size=$size seed=$SEED percent=100"; dst=same ;;
  3) size=${PROFILE_SIZE:-1G}
     plugin="--filter=delay sparse-random size=$size seed=$SEED percent=100 rdelay=5ms wdelay=5ms"
     dst=same ;;
  6) size=${PROFILE_SIZE:-1T}; plugin="null size=$size"; dst=null: ;;
  7) size=${PROFILE_SIZE:-2G}; plugin="sparse-random size=$size seed=$SEED percent=100"; dst=null: ;;
  r) size=${PROFILE_SIZE:-1G}; plugin="pattern size=$size"; dst=null:
     case "$tool" in
       nbdcp) BENCH_NBDCP_OPTS="--request-size=4096${BENCH_NBDCP_OPTS:+ $BENCH_NBDCP_OPTS}" ;;
       nbdcopy) BENCH_NBDCOPY_OPTS="--request-size=4096${BENCH_NBDCOPY_OPTS:+ $BENCH_NBDCOPY_OPTS}" ;;
       *) bench_die "PROFILE_WORKLOAD=r is for nbdcp and nbdcopy" ;;
     esac ;;
  *) bench_die "PROFILE_WORKLOAD must be 1, 2, 3, 6, 7 or r" ;;
esac

mkdir -p "$OUT" || bench_die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
bench_make_scratch
cp "$NBDCP" "$bench_scratch/nbdcp" || bench_die "no nbdcp at $NBDCP"
NBDCP_RUN=$bench_scratch/nbdcp
tool_available "$tool" || bench_die "$tool is not available"

sock=$bench_scratch/src.sock
start_nbdkit "$sock" $plugin
uri=$(uri_of "$sock")
[ "$dst" = same ] && dst="\"$uri\""
cmd=$(tool_cmd "$tool" "\"$uri\"" "$dst" "$(parse_size "$size")")
program=$tool

tool_version ()
{
  case "$1" in
    nbdcp) "$NBDCP_RUN" --version 2>&1 | head -1 ;;
    nbdcopy) "$NBDCOPY" --version 2>&1 | head -1 ;;
    qemu-img) "$QEMU_IMG" --version 2>&1 | head -1 ;;
  esac
}

bench_log "recording: $cmd"
timeout -k 10 "$TMO" "$PERF" record -q -F "$freq" -e "$event" \
  --call-graph=dwarf,65528 -o "$OUT/perf.data" -- sh -c "exec $cmd" ||
  bench_die "perf record failed"
stop_all_servers

bench_log "folding stacks"
"$PERF" script -i "$OUT/perf.data" > "$OUT/perf.script" 2>"$OUT/perf-script.err" ||
  bench_die "perf script failed (see $OUT/perf-script.err)"
{
  echo "# Profile: $tool, workload $wl ($size)"
  echo
  echo "- date: $(date -u +'%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  echo "- $tool: $(tool_version "$tool") (git $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown))"
  echo "- server: \`nbdkit -U SOCK $plugin\` (not recorded)"
  echo "- recorded: \`perf record -F $freq -e $event --call-graph=dwarf,65528 -- ${cmd//$bench_scratch/\$SCRATCH}\`"
  echo "- folded stacks: stacks.folded (thread;outermost;...;innermost COUNT)"
  echo
  perl "$bench_dir/fold-stacks.pl" --folded "$OUT/stacks.folded" \
    --top "$ntop" --program "$program" < "$OUT/perf.script"
} > "$OUT/profile.md"
bench_log "done: $OUT/profile.md"
