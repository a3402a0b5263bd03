#!/bin/bash
# nbdcp benchmark suite: nbdcp side by side with nbdcopy and
# qemu-img convert on the same workloads, timed by hyperfine, plus CPU
# cost (/usr/bin/time) and nbdcp option sweeps.  Writes hyperfine JSON,
# a Markdown report (bench/report.py) and two SVG charts
# (bench/charts.py) into $BENCH_OUT.
#
#   bench/run.sh                      # everything (about 25 minutes on 2 cores)
#   BENCH_QUICK=1 bench/run.sh        # tiny sizes, 1 run: a smoke test
#   BENCH_WORKLOADS="1 2 cpu" bench/run.sh
#
# Environment (defaults in brackets):
#   NBDCP            nbdcp binary [copy/nbdcp of this checkout]
#   NBDCOPY, QEMU_IMG, QEMU_NBD, QEMU_IO, NBDKIT, HYPERFINE
#   BENCH_WORKLOADS  any of 1-15 cpu req sweeps hash [1-7, 10-15, cpu, req, sweeps]
#   BENCH_TOOLS      [nbdcp nbdcopy qemu-img]
#   BENCH_QUICK=1    tiny sizes, 1 run, no warmup
#   BENCH_RUNS [5]  BENCH_WARMUP [1]  BENCH_CPU_RUNS [5]
#   BENCH_TIMEOUT    seconds allowed for one copy [600; quick 120]
#   BENCH_OUT        results directory [bench/results/DATE]
#   BENCH_CHARTS_DIR where bench/charts.py also writes bench-ratios.svg,
#                    bench-cpu.svg and bench-summary.tsv [docs/ of this
#                    checkout after a full run of the default set, else
#                    none; they always go into BENCH_OUT too]
#   BENCH_TMPDIR     where scratch files go; must be a real disk [/var/tmp]
#   BENCH_SEED       sparse-random seed [1]
#   BENCH_NBDCP_OPTS, BENCH_NBDCOPY_OPTS, BENCH_QEMU_IMG_OPTS  extra options
#   Sizes: BENCH_W1_SIZE [32G] W2 [8G] W3 [2G] W4 [8G] W5 [4G] W6 [1T]
#          W7 [8G] W8 [8G] BENCH_SWEEP2_SIZE [4G] BENCH_SWEEP3_SIZE [2G]
#          BENCH_W11_SIZE [256M; "256M 2G": a row each] BENCH_W12_SIZE [2G]
#          BENCH_W13_SIZE [128M] BENCH_W13B_SIZE [32M] BENCH_WR_SIZE [1G]
#          BENCH_W14_SIZE [256G]  BENCH_W15_RATES [16M 64M 256M]
#   BENCH_W12_CLUSTERS [4K 16K 64K]  BENCH_W12_TREE [/usr/share]
#   BENCH_W13_DELAY  latency of workload 13's second row [2ms]
#   Workload 8 (--bitmap) is optional: BENCH_WORKLOADS=8 runs it.
set -u
set -o pipefail

bench_dir=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bench_dir/.." && pwd)
. "$bench_dir/lib.sh"

quick=${BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then
  d_runs=1 d_warm=0 d_cpu=1 d_timeout=120
  d_w1=1G d_w2=256M d_w3=64M d_w4=256M d_w5=256M d_w6=64G d_w7=256M d_w8=256M
  d_s2=128M d_s3=32M
  d_w11=16M d_w12=256M d_w13=16M d_w13b=4M d_wr=64M d_w14=4G
else
  d_runs=5 d_warm=1 d_cpu=5 d_timeout=600
  d_w1=32G d_w2=8G d_w3=2G d_w4=8G d_w5=4G d_w6=1T d_w7=8G d_w8=8G
  d_s2=4G d_s3=2G
  d_w11=256M d_w12=2G d_w13=128M d_w13b=32M d_wr=1G d_w14=256G
fi
RUNS=${BENCH_RUNS:-$d_runs}
WARMUP=${BENCH_WARMUP:-$d_warm}
CPU_RUNS=${BENCH_CPU_RUNS:-$d_cpu}
TMO=${BENCH_TIMEOUT:-$d_timeout}
SEED=${BENCH_SEED:-1}
W1_SIZE=${BENCH_W1_SIZE:-$d_w1}
W2_SIZE=${BENCH_W2_SIZE:-$d_w2}
W3_SIZE=${BENCH_W3_SIZE:-$d_w3}
W4_SIZE=${BENCH_W4_SIZE:-$d_w4}
W5_SIZE=${BENCH_W5_SIZE:-$d_w5}
W6_SIZE=${BENCH_W6_SIZE:-$d_w6}
W7_SIZE=${BENCH_W7_SIZE:-$d_w7}
W8_SIZE=${BENCH_W8_SIZE:-$d_w8}
W11_SIZE=${BENCH_W11_SIZE:-$d_w11}
W12_SIZE=${BENCH_W12_SIZE:-$d_w12}
W12_CLUSTERS=${BENCH_W12_CLUSTERS:-4K 16K 64K}
W12_TREE=${BENCH_W12_TREE:-/usr/share}
W13_SIZE=${BENCH_W13_SIZE:-$d_w13}
W13B_SIZE=${BENCH_W13B_SIZE:-$d_w13b}
W13_DELAY=${BENCH_W13_DELAY:-2ms}
W14_SIZE=${BENCH_W14_SIZE:-$d_w14}
W15_RATES=${BENCH_W15_RATES:-16M 64M 256M}
WR_SIZE=${BENCH_WR_SIZE:-$d_wr}
S2_SIZE=${BENCH_SWEEP2_SIZE:-$d_s2}
S3_SIZE=${BENCH_SWEEP3_SIZE:-$d_s3}
WORKLOADS=${BENCH_WORKLOADS:-1 2 3 4 5 6 7 10 11 12 13 14 15 cpu req sweeps}
TOOLS=${BENCH_TOOLS:-nbdcp nbdcopy qemu-img}
DELAY="rdelay=5ms wdelay=5ms"

: "${NBDCP:=$top/copy/nbdcp}"
OUT=${BENCH_OUT:-$bench_dir/results/$(date +%Y%m%d-%H%M%S)}

# What the suite needs (Debian 12 package names).
install_packages hyperfine:hyperfine nbdkit:nbdkit qemu-img:qemu-utils \
  qemu-nbd:qemu-utils qemu-io:qemu-utils nbdcopy:libnbd-bin \
  nbdinfo:libnbd-bin "$GNU_TIME:time" python3:python3-minimal ||
  bench_die "install the missing packages first"
[ -x "$NBDCP" ] || bench_die "no nbdcp at $NBDCP (build it, or set NBDCP=)"

mkdir -p "$OUT" || bench_die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
bench_make_scratch

# Run a snapshot of nbdcp, so a rebuild during the run changes nothing.
cp "$NBDCP" "$bench_scratch/nbdcp" || bench_die "cannot copy $NBDCP"
NBDCP_RUN=$bench_scratch/nbdcp

avail_tools=()
for t in $TOOLS; do
  if tool_available "$t"; then avail_tools+=("$t")
  else bench_log "warning: $t is not available; skipped"; fi
done

# ---------------------------------------------------------------- machine
{
  echo "date=$(date -u +'%Y-%m-%d %H:%M UTC')"
  echo "host_nproc=$(nproc)"
  echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  echo "memory=$(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel=$(uname -srm)"
  echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "nbdcp=$("$NBDCP_RUN" --version 2>&1 | tr '\n' ' ')"
  echo "nbdcp_git=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "nbdcopy=$("$NBDCOPY" --version 2>&1 | tr '\n' ' ')"
  echo "qemu_img=$("$QEMU_IMG" --version 2>&1 | head -1)"
  echo "nbdkit=$("$NBDKIT" --version 2>&1 | head -1)"
  echo "hyperfine=$("$HYPERFINE" --version 2>&1 | head -1)"
  echo "scratch_fs=$bench_scratch_fstype ($(df -P "$bench_scratch" | awk 'NR==2 {print $1}'))"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "settings=quick=$quick runs=$RUNS warmup=$WARMUP cpu_runs=$CPU_RUNS seed=$SEED"
  echo "scratch=$bench_scratch"
  echo "nbdcp_path=$NBDCP_RUN"
} > "$OUT/machine.env"

# ---------------------------------------------------------------- helpers
# write_meta NAME key=value... : what the report says about a result.
write_meta ()
{
  local name=$1; shift
  printf '%s\n' "$@" > "$OUT/$name.meta"
}

# run_hyperfine NAME PREPARE TOOL CMD [TOOL CMD ...]: time every tool
# on the same workload, in rounds: each round is one hyperfine
# invocation running each tool once (the first round also warms each
# one up), and the order rotates from round to round.  The machine's
# speed drifts (the disk here stays slow for tens of seconds after big
# writes), and hyperfine's own order, all runs of one tool and then the
# next, let that drift land on one tool.  The rounds are merged into
# NAME.json (bench/merge-rounds.py).  Each command is bounded by
# timeout; its stderr is kept in NAME.TOOL.log.  Failures are recorded
# (exit codes in the JSON), not fatal.
run_hyperfine ()
{
  local name=$1 prepare=$2; shift 2
  local names=() cmds=() n=0 round i k warm rounds=()
  : > "$OUT/$name.cmds"
  : > "$OUT/$name.out"
  while [ $# -ge 2 ]; do
    printf '%s\t%s\n' "$1" "$2" >> "$OUT/$name.cmds"
    names+=("$1")
    cmds+=("timeout -k 10 $TMO $2 2>>$OUT/$name.$1.log")
    n=$((n + 1)); shift 2
  done
  bench_log "$name: $n commands, $RUNS runs each, in rotating rounds"
  for ((round = 0; round < RUNS; round++)); do
    warm=0; [ "$round" -eq 0 ] && warm=$WARMUP
    local args=(-w "$warm" -r 1 -i --style basic
                --export-json "$OUT/$name.round$round.json")
    [ -n "$prepare" ] && args+=(--prepare "$prepare")
    for ((k = 0; k < n; k++)); do
      i=$(( (round + k) % n ))
      args+=(-n "${names[i]}" "${cmds[i]}")
    done
    timeout -k 10 $(( (warm + 1) * n * (TMO + 20) + 60 )) \
      "$HYPERFINE" "${args[@]}" 2>&1 | tee -a "$OUT/$name.out" >&2 ||
      bench_log "warning: hyperfine for $name (round $round) failed"
    [ -f "$OUT/$name.round$round.json" ] &&
      rounds+=("$OUT/$name.round$round.json")
  done
  [ ${#rounds[@]} -gt 0 ] &&
    python3 "$bench_dir/merge-rounds.py" "$OUT/$name.json" "${rounds[@]}" ||
    bench_log "warning: no result for $name"
}

# harness PLUGIN-ARGS TOOL-CMD: the standard nbdkit harness.
harness () { echo "$NBDKIT -U - $1 --run '$2'"; }

# compare_tools NAME PLUGIN-ARGS SRC DST SIZE [PREPARE [ROW CMD]...]:
# every tool under the nbdkit harness, then any extra reference rows
# (a name and a command each), timed in the same rounds.
compare_tools ()
{
  local name=$1 plugin=$2 src=$3 dst=$4 size=$5 prepare=${6:-} t cmds=()
  shift $(($# < 6 ? $# : 6))
  for t in "${avail_tools[@]}"; do
    cmds+=("$t" "$(harness "$plugin" "$(tool_cmd "$t" "$src" "$dst" "$size")")")
  done
  run_hyperfine "$name" "$prepare" "${cmds[@]}" "$@"
}

sr () { echo "sparse-random size=$1 seed=$SEED${2:+ $2}"; }

# ---------------------------------------------------------------- workloads
w1 ()
{
  local b; b=$(parse_size "$W1_SIZE")
  write_meta w1 "label=1. sparse-random $W1_SIZE 10% data, onto itself" "title=1. sparse-random $W1_SIZE (10% data) onto itself" \
    "size=$b" "data_percent=10"
  compare_tools w1 "$(sr "$W1_SIZE")" '"$uri"' '"$uri"' "$b"
}

w2 ()
{
  local b; b=$(parse_size "$W2_SIZE")
  write_meta w2 "label=2. sparse-random $W2_SIZE all data, onto itself" "title=2. sparse-random $W2_SIZE percent=100 onto itself (all data)" \
    "size=$b" "data_percent=100"
  compare_tools w2 "$(sr "$W2_SIZE" percent=100)" '"$uri"' '"$uri"' "$b"
}

w3 ()
{
  local b; b=$(parse_size "$W3_SIZE")
  write_meta w3 "label=3. as 2, $W3_SIZE, 5 ms delay" "title=3. latency: sparse-random $W3_SIZE percent=100 onto itself behind --filter=delay $DELAY" \
    "size=$b" "data_percent=100"
  compare_tools w3 "--filter=delay $(sr "$W3_SIZE" percent=100) $DELAY" \
    '"$uri"' '"$uri"' "$b"
}

# Workload 9: workload 2 over TCP loopback (nbdkit -i 127.0.0.1 -p PORT;
# libnbd sets TCP_NODELAY), where request sizes behave differently.
w9 ()
{
  local b t cmds=() port=$((20000 + RANDOM % 20000))
  b=$(parse_size "$W2_SIZE")
  write_meta w9 "label=9. as 2 over TCP, $W2_SIZE" \
    "title=9. TCP loopback: sparse-random $W2_SIZE percent=100 onto itself, nbd://127.0.0.1:PORT" \
    "size=$b" "data_percent=100"
  for t in "${avail_tools[@]}"; do
    cmds+=("$t" "$NBDKIT -i 127.0.0.1 -p $port $(sr "$W2_SIZE" percent=100) --run '$(tool_cmd "$t" '"$uri"' '"$uri"' "$b")'")
  done
  run_hyperfine w9 "" "${cmds[@]}"
}

w4_dir () { mkdir -p "$bench_scratch/w4"; echo "$bench_scratch/w4"; }

# The source file of 4b: the same bytes as sparse-random seed SEED,
# written (holes kept) once by qemu-img.
w4_make_src ()
{
  local d; d=$(w4_dir)
  [ -f "$d/src.raw" ] && return 0
  bench_log "w4: writing the $W4_SIZE source file"
  timeout "$TMO" "$NBDKIT" -U - $(sr "$W4_SIZE") --run \
    "$QEMU_IMG convert -f raw -O raw \"\$uri\" $d/src.raw" ||
    bench_die "cannot create $d/src.raw"
  sync -f "$d"
}

# The disk's speed for 4a: dd writing as many bytes as the source has
# data, in 1 MiB O_DIRECT writes, into the same new file, and fsync.
# The copies must write those bytes too.  It is a reference, not a
# floor: writes through the page cache, written back as they go, can
# reach the disk in larger requests and beat it.
w4_disk_cmd ()
{
  local out=$1 data
  data=$(timeout "$TMO" "$NBDKIT" -U - $(sr "$W4_SIZE") --run \
    "$QEMU_IMG map --output=json -f raw \"\$uri\"" |
    python3 -c 'import json,sys; print(sum(e["length"] for e in json.load(sys.stdin) if e["data"]))') &&
    [ -n "$data" ] || return 1
  echo "dd if=/dev/zero of=$out bs=1M count=$(( (data + 1048575) / 1048576 )) oflag=direct conv=fsync status=none"
}

w4 ()
{
  local b d disk; b=$(parse_size "$W4_SIZE"); d=$(w4_dir)
  write_meta w4a "label=4a. NBD -> file, $W4_SIZE 10% data" "title=4a. NBD -> local file: sparse-random $W4_SIZE (10% data) -> a new file on $bench_scratch_fstype" \
    "size=$b" "data_percent=10" \
    "note=--prepare removes the file and runs sync -f before every run; the time includes each tool's final flush (nbdcopy --flush, qemu-img -t writeback)" \
    "note=the disk row is the disk's speed for these bytes: dd writes as many bytes as the source has data (qemu-img map) into the same new file, 1 MiB at a time with O_DIRECT, then fsync"
  disk=$(w4_disk_cmd "$d/out.raw") || bench_die "cannot map the 4a source"
  compare_tools w4a "$(sr "$W4_SIZE")" '"$uri"' "$d/out.raw" "$b" \
    "rm -f $d/out.raw && sync -f $d" disk "$disk"
  rm -f "$d/out.raw"
  w4_make_src
  write_meta w4b "label=4b. file -> NBD, $W4_SIZE 10% data" "title=4b. local file -> NBD: a $W4_SIZE file with holes (10% data) -> sparse-random, same seed (verifies every write)" \
    "size=$b" "data_percent=10" \
    "note=the source file is in the page cache (written just before)"
  compare_tools w4b "$(sr "$W4_SIZE")" "$d/src.raw" '"$uri"' "$b"
}

# A qcow2 image with scattered data (sparse-random, runs of ~1 MiB, 25%),
# qcow2 zero clusters over some of it and explicit zero data in places.
w5_make_image ()
{
  local d=$1 size=$2 step i off cmds=()
  bench_log "w5: building the $W5_SIZE qcow2 image"
  timeout "$TMO" "$NBDKIT" -U - $(sr "$W5_SIZE" "percent=25 runlength=1048576") \
    --run "$QEMU_IMG convert -f raw -O qcow2 \"\$uri\" $d/src.qcow2" ||
    bench_die "cannot build $d/src.qcow2"
  step=$((size / 16))
  for i in $(seq 0 15); do
    off=$((i * step))
    cmds+=(-c "write -z $((off + step / 4)) $((step / 64))"
           -c "write -P 0 $((off + step / 2)) $((step / 128))"
           -c "write -P $((i + 1)) $((off + 3 * step / 4)) $((step / 128))")
  done
  "$QEMU_IO" -f qcow2 "${cmds[@]}" "$d/src.qcow2" >/dev/null ||
    bench_die "qemu-io failed on $d/src.qcow2"
}

# w5_setup DIR SIZE: workload 5's image, an empty raw file and the two
# servers.  Sets w5_src and w5_dst (quoted URIs), w5_data (bytes of
# data in the image), w5_spid and w5_dpid, and w5_prepare (the command
# that empties the raw file before a run).
w5_setup ()
{
  local d=$1 b=$2
  w5_make_image "$d" "$b"
  w5_data=$("$QEMU_IMG" map --output=json -f qcow2 "$d/src.qcow2" |
         python3 -c 'import json,sys; print(sum(e["length"] for e in json.load(sys.stdin) if e["data"]))')
  "$QEMU_IMG" create -q -f raw "$d/dst.raw" "$b"
  start_qemu_nbd "$d/src.sock" -r -f qcow2 "$d/src.qcow2"; w5_spid=$server_pid
  start_qemu_nbd "$d/dst.sock" -f raw "$d/dst.raw"; w5_dpid=$server_pid
  w5_src="\"$(uri_of "$d/src.sock")\"" w5_dst="\"$(uri_of "$d/dst.sock")\""
  w5_prepare="truncate -s 0 $d/dst.raw && truncate -s $b $d/dst.raw && sync -f $d"
}

w5 ()
{
  local b d t cmds=()
  b=$(parse_size "$W5_SIZE")
  d=$bench_scratch/w5; mkdir -p "$d"
  w5_setup "$d" "$b"
  write_meta w5 "label=5. qcow2 -> raw, qemu-nbd, $W5_SIZE" "title=5. qcow2 $W5_SIZE ($((w5_data * 100 / b))% data, scattered extents, zero clusters) on qemu-nbd -> raw on qemu-nbd" \
    "size=$b" "data_percent=$((w5_data * 100 / b))" \
    "note=both qemu-nbd run with -t --shared=8; --prepare empties the raw file (truncate to 0 and back) and runs sync -f" \
    "note=qemu-nbd 7.2 with --shared=8 advertises multi-conn on both exports, so nbdcopy opens several connections too"
  for t in "${avail_tools[@]}"; do
    cmds+=("$t" "$(tool_cmd "$t" "$w5_src" "$w5_dst" "$b")")
  done
  run_hyperfine w5 "$w5_prepare" "${cmds[@]}"
  stop_server "$w5_dpid"; stop_server "$w5_spid"
  if "$QEMU_IMG" compare -q -f qcow2 -F raw "$d/src.qcow2" "$d/dst.raw"; then
    echo "note=after the last run, qemu-img compare: the raw destination equals the qcow2 source" >> "$OUT/w5.meta"
  else
    echo "note=WARNING: after the last run the destination differs from the source" >> "$OUT/w5.meta"
  fi
  rm -rf "$d"
}

w6 ()
{
  local b; b=$(parse_size "$W6_SIZE")
  write_meta w6 "label=6. $W6_SIZE all hole -> null:" "title=6. nbdkit null $W6_SIZE (all hole, reported by block status) -> null:" \
    "size=$b" "data_percent=0" \
    "note=qemu-img's destination is the null-co driver (--target-image-opts driver=null-co,size=N), the closest equivalent of null:"
  compare_tools w6 "null size=$W6_SIZE" '"$uri"' null: "$b"
}

w7 ()
{
  local b; b=$(parse_size "$W7_SIZE")
  write_meta w7 "label=7. $W7_SIZE all data -> null:" "title=7. read path: sparse-random $W7_SIZE percent=100 -> null:" \
    "size=$b" "data_percent=100" \
    "note=qemu-img's destination is the null-co driver"
  compare_tools w7 "$(sr "$W7_SIZE" percent=100)" '"$uri"' null: "$b"
}

# Workload 10: start-up, the fixed cost of a copy (process start,
# handshakes, threads, buffers).  One run of a 15 ms copy per round
# cannot show it through the noise, so each command is twenty
# copies of a 1 MiB disk (all hole) to null: under one server.
w10 ()
{
  local b t n=20 cmds=()
  b=$(parse_size 1M)
  write_meta w10 "label=10. tiny: 1M -> null:, $n copies" \
    "title=10. start-up: $n copies of nbdkit memory 1M -> null: under one server" \
    "size=$((b * n))" "data_percent=0" \
    "note=each command is $n copies in a row: divide by $n for one copy"
  for t in "${avail_tools[@]}"; do
    cmds+=("$t" "$(harness "memory size=1M" \
      "for i in \$(seq $n); do $(tool_cmd "$t" '"$uri"' null: "$b"); done")")
  done
  run_hyperfine w10 "" "${cmds[@]}"
}

# ---------------------------------------------------------------- fragmented
letters=(a b c d e f g h)

# count_requests NAME PLUGIN-ARGS DST SIZE: one more run of each tool,
# and of nbdcp --no-extents, with nbdkit-stats-filter on the source,
# to count the requests each one sends it; not timed.  Writes
# NAME.requests.tsv: tool, all requests, reads, block status.
count_requests ()
{
  local name=$1 plugin=$2 dst=$3 size=$4 t cmd st=$bench_scratch/stats.txt
  printf 'tool\trequests\treads\textents\n' > "$OUT/$name.requests.tsv"
  for t in "${avail_tools[@]}" nbdcp--no-extents; do
    case "$t" in
      nbdcp--no-extents)
        tool_available nbdcp || continue
        cmd="$NBDCP_RUN --no-extents${BENCH_NBDCP_OPTS:+ $BENCH_NBDCP_OPTS} \"\$uri\" $dst" ;;
      *) cmd=$(tool_cmd "$t" '"$uri"' "$dst" "$size") ;;
    esac
    rm -f "$st"
    if ! timeout -k 10 "$TMO" "$NBDKIT" -U - --filter=stats $plugin \
         statsfile="$st" --run "$cmd" 2>>"$OUT/$name.count.log" ||
       [ ! -s "$st" ]; then
      bench_log "warning: $name: the counting run of $t failed"
      continue
    fi
    awk -v t="$t" '$3 == "ops," { sub(":", "", $1); n[$1] = $2 }
      END { printf "%s\t%d\t%d\t%d\n", t, n["total"], n["read"], n["extents"] }' \
      "$st" >> "$OUT/$name.requests.tsv"
  done
  bench_log "$name: requests counted"
}

# Workload 11: a file with 4 KiB of data every 8 KiB (the issue's map),
# served by nbdkit file, read to null:, one row per size.
w11 ()
{
  local size b d f row i=0
  d=$bench_scratch/w11; mkdir -p "$d"
  for size in $W11_SIZE; do
    row=w11${letters[i]}; i=$((i + 1))
    b=$(parse_size "$size"); f=$d/frag.img
    bench_log "w11: writing the $size file"
    python3 "$bench_dir/make-images.py" frag "$f" "$size" ||
      bench_die "cannot write $f"
    write_meta "$row" "label=11${letters[i - 1]}. 4K data every 8K, $size file -> null:" \
      "title=11${letters[i - 1]}. fragmented file: $size, 4 KiB of data every 8 KiB, on nbdkit file -> null:" \
      "size=$b" "data_percent=50" \
      "note=$((b / 8192)) data extents of 4 KiB, each followed by a hole of 4 KiB; the file is in the page cache (written just before)" \
      "note=qemu-img's destination is the null-co driver"
    compare_tools "$row" "-r file $f" '"$uri"' null: "$b"
    count_requests "$row" "-r file $f" null: "$b"
    rm -f "$f"
  done
  rm -rf "$d"
}

# Workload 12: qcow2 images of a freshly installed filesystem (the
# files of $W12_TREE laid out as ext4 places them: bench/make-images.py
# fs), one row per cluster size, on qemu-nbd -> raw on qemu-nbd.
w12 ()
{
  local b d c row i=0 t ext data n spid dpid src dst prepare cmds
  b=$(parse_size "$W12_SIZE")
  d=$bench_scratch/w12; mkdir -p "$d"
  bench_log "w12: laying out the files of $W12_TREE in a $W12_SIZE image"
  read -r ext data < <(python3 "$bench_dir/make-images.py" fs "$d/fs.raw" \
    "$W12_SIZE" "$W12_TREE" "$SEED") && [ -n "$data" ] ||
    bench_die "cannot build $d/fs.raw"
  for c in $W12_CLUSTERS; do
    row=w12${letters[i]}; i=$((i + 1))
    "$QEMU_IMG" convert -f raw -O qcow2 -o cluster_size="$c" \
      "$d/fs.raw" "$d/src.qcow2" || bench_die "cannot build the $c qcow2"
    n=$("$QEMU_IMG" map --output=json -f qcow2 "$d/src.qcow2" | python3 -c '
import json, sys
n, end = 0, -1
for e in json.load(sys.stdin):
    if e["data"]:
        n += e["start"] != end
        end = e["start"] + e["length"]
print(n)')
    "$QEMU_IMG" create -q -f raw "$d/dst.raw" "$b"
    start_qemu_nbd "$d/src.sock" -r -f qcow2 "$d/src.qcow2"; spid=$server_pid
    start_qemu_nbd "$d/dst.sock" -f raw "$d/dst.raw"; dpid=$server_pid
    src="\"$(uri_of "$d/src.sock")\"" dst="\"$(uri_of "$d/dst.sock")\""
    prepare="truncate -s 0 $d/dst.raw && truncate -s $b $d/dst.raw && sync -f $d"
    write_meta "$row" "label=12${letters[i - 1]}. installed-OS qcow2 $W12_SIZE, $c clusters" \
      "title=12${letters[i - 1]}. qcow2 $W12_SIZE of a freshly installed filesystem, $c clusters ($((data * 100 / b))% data in $n extents) on qemu-nbd -> raw on qemu-nbd" \
      "size=$b" "data_percent=$((data * 100 / b))" \
      "note=the files of $W12_TREE (real sizes, path order) laid out as ext4 places them, a quarter removed and trimmed: $ext data extents in the raw layout, $n at $c clusters (bench/README.md)" \
      "note=both qemu-nbd run with -t --shared=8; --prepare empties the raw file and runs sync -f"
    cmds=()
    for t in "${avail_tools[@]}"; do
      cmds+=("$t" "$(tool_cmd "$t" "$src" "$dst" "$b")")
    done
    run_hyperfine "$row" "$prepare" "${cmds[@]}"
    stop_server "$dpid"; stop_server "$spid"
    if "$QEMU_IMG" compare -q -f qcow2 -F raw "$d/src.qcow2" "$d/dst.raw"; then
      echo "note=after the last run, qemu-img compare: the raw destination equals the qcow2 source" >> "$OUT/$row.meta"
    else
      echo "note=WARNING: after the last run the destination differs from the source" >> "$OUT/$row.meta"
    fi
    rm -f "$d/src.qcow2" "$d/dst.raw"
  done
  rm -rf "$d"
}

# Workload 13: a server whose block status answers data and hole
# extents of 512 bytes to 64 KiB, alternating (nbdkit-extentlist-filter
# over nbdkit file), to null:, without and with added latency.
w13 ()
{
  local b d n plugin row size
  d=$bench_scratch/w13; mkdir -p "$d"
  for row in w13a w13b; do
    size=$W13_SIZE; [ "$row" = w13b ] && size=$W13B_SIZE
    b=$(parse_size "$size")
    n=$(python3 "$bench_dir/make-images.py" alternating "$d/src.raw" \
          "$d/src.map" "$size" "$SEED") || bench_die "cannot build $d/src.raw"
    plugin="-r --filter=extentlist file $d/src.raw extentlist=$d/src.map"
    if [ "$row" = w13a ]; then
      write_meta "$row" "label=13a. 512B-64K extents, $size -> null:" \
        "title=13a. alternating extents: $size, data and holes of 512 B to 64 KiB ($n data extents), nbdkit extentlist + file -> null:"
    else
      # qemu-img asks for block status twice per extent, one request
      # at a time: at 2 ms that is minutes for 128M.
      plugin="-r --filter=delay --filter=extentlist file $d/src.raw extentlist=$d/src.map rdelay=$W13_DELAY delay-extents=$W13_DELAY"
      write_meta "$row" "label=13b. as 13a, $size, $W13_DELAY latency" \
        "title=13b. latency: as 13a, $size ($n data extents), behind --filter=delay rdelay=$W13_DELAY delay-extents=$W13_DELAY"
    fi
    printf '%s\n' "size=$b" "data_percent=$(awk -v b="$b" '{ s += $2 } END { printf "%d", s * 100 / b }' "$d/src.map")" \
      "note=extent lengths log-uniform from 512 B to 64 KiB, seeded (bench/make-images.py alternating); the data is in the page cache" \
      "note=qemu-img's destination is the null-co driver" >> "$OUT/$row.meta"
    compare_tools "$row" "$plugin" '"$uri"' null: "$b"
    count_requests "$row" "$plugin" null: "$b"
  done
  rm -rf "$d"
}

# Workload 14: a sparse disk onto a destination that reads as zero
# already (issue 35): a new qcow2 (made afresh before every run by
# --prepare, served by qemu-nbd as a subprocess) and a new nbdkit memory
# disk.  nbdcp without flags asks the destination where it reads as
# zero; the rows with --destination-is-zero show what skipping every
# zero costs; qemu-img writes the same new qcow2 without an NBD hop.
w14 ()
{
  local b d q plugin
  b=$(parse_size "$W14_SIZE")
  d=$bench_scratch/w14; mkdir -p "$d"; q=$d/new.qcow2
  plugin="-r $(sr "$W14_SIZE" percent=0.01)"
  write_meta w14a "label=14a. sparse $W14_SIZE onto a new qcow2" \
    "title=14a. sparse-random $W14_SIZE percent=0.01 onto a new qcow2 on qemu-nbd ([ qemu-nbd -f qcow2 ] subprocess)" \
    "size=$b" "data_percent=0" \
    "note=--prepare removes the qcow2 and makes it anew (qemu-img create -f qcow2); qemu-img convert -n writes the same new qcow2 directly"
  run_hyperfine w14a "rm -f $q && $QEMU_IMG create -q -f qcow2 $q $b" \
    nbdcp "$(harness "$plugin" "$NBDCP_RUN \"\$uri\" -- [ $QEMU_NBD -f qcow2 $q ]")" \
    nbdcp-dz "$(harness "$plugin" "$NBDCP_RUN --destination-is-zero \"\$uri\" -- [ $QEMU_NBD -f qcow2 $q ]")" \
    nbdcopy "$(harness "$plugin" "$NBDCOPY --flush \"\$uri\" -- [ $QEMU_NBD -f qcow2 $q ]")" \
    nbdcopy-dz "$(harness "$plugin" "$NBDCOPY --flush --destination-is-zero \"\$uri\" -- [ $QEMU_NBD -f qcow2 $q ]")" \
    qemu-img "$(harness "$plugin" "$QEMU_IMG convert -n -W -m 16 -f raw \"\$uri\" -O qcow2 $q")"
  write_meta w14b "label=14b. sparse $W14_SIZE onto a new memory disk" \
    "title=14b. sparse-random $W14_SIZE percent=0.01 onto a new nbdkit memory disk ([ nbdkit memory ] subprocess)" \
    "size=$b" "data_percent=0"
  run_hyperfine w14b "" \
    nbdcp "$(harness "$plugin" "$NBDCP_RUN \"\$uri\" -- [ $NBDKIT memory $b ]")" \
    nbdcp-dz "$(harness "$plugin" "$NBDCP_RUN --destination-is-zero \"\$uri\" -- [ $NBDKIT memory $b ]")" \
    nbdcopy "$(harness "$plugin" "$NBDCOPY --flush \"\$uri\" -- [ $NBDKIT memory $b ]")" \
    nbdcopy-dz "$(harness "$plugin" "$NBDCOPY --flush --destination-is-zero \"\$uri\" -- [ $NBDKIT memory $b ]")"
  rm -rf "$d"
}

# Workload 15: --rate.  All data, four seconds' worth at each rate, to
# null:; the report's rate is size / time, to set against the asked one.
w15 ()
{
  local rate b
  for rate in $W15_RATES; do
    b=$(( $(parse_size "$rate") * 4 ))
    write_meta "w15-$rate" "label=15. --rate=$rate, $((b >> 20))M all data -> null:" \
      "title=15. --rate=$rate: sparse-random $((b >> 20))M percent=100 -> null: (asked $(parse_size "$rate") bytes/s)" \
      "size=$b" "data_percent=100" "rate=$(parse_size "$rate")"
    run_hyperfine "w15-$rate" "" \
      nbdcp "$(harness "-r $(sr "$b" percent=100)" "$NBDCP_RUN --rate=$rate \"\$uri\" null:")"
  done
}

# ---------------------------------------------------------------- checksums
# hash_cmds PLUGIN DST OPTS...: nbdcp under the harness with each of
# OPTS ("-" for none), named nbdcp, nbdcp+blkhash, ...
hash_cmds ()
{
  local plugin=$1 dst=$2 o name; shift 2
  for o in "$@"; do
    name=nbdcp; [ "$o" = - ] || name="nbdcp+${o#--}"
    [ "$o" = - ] && o=
    printf '%s\0%s\0' "$name" \
      "$(harness "$plugin" "$NBDCP_RUN${o:+ $o} \"\$uri\" $dst")"
  done
}

# hash_row NAME LABEL TITLE SIZE DATA% NOTE PLUGIN OPTS...: nbdcp onto
# the same server, plain and with each of OPTS.
hash_row ()
{
  local name=$1 label=$2 title=$3 size=$4 pct=$5 note=$6 plugin=$7 x
  local cmds=()
  shift 7
  write_meta "$name" "label=$label" "title=$title" \
    "size=$(parse_size "$size")" "data_percent=$pct" "note=$note"
  while IFS= read -r -d '' x; do cmds+=("$x"); done \
    < <(hash_cmds "$plugin" '"$uri"' - "$@")
  run_hyperfine "$name" "" "${cmds[@]}"
}

# Hashing throughput: nbdcp --blkhash to null: against the same read
# without hashing, and against sha256sum of the same bytes (streamed by
# nbdcp to a pipe); openssl's single-core sha256 speed for reference.
wh ()
{
  local b plugin ssl cmds=()
  b=$(parse_size "$W7_SIZE")
  plugin=$(sr "$W7_SIZE" percent=100)
  ssl=$(openssl speed -evp sha256 -bytes 65536 -seconds 2 2>/dev/null |
        awk '/^sha256/ { print $NF }')
  write_meta wh1 "label=h1. --blkhash of $W7_SIZE all data -> null:" \
    "title=h1. checksum throughput: sparse-random $W7_SIZE percent=100 -> null:" \
    "size=$b" "data_percent=100" \
    "note=nbdcp / tool below 1 is the cost of hashing; openssl speed -evp sha256 (64 KiB blocks, one core): ${ssl:-?}"
  while IFS= read -r -d '' x; do cmds+=("$x"); done \
    < <(hash_cmds "$plugin" null: - --blkhash)
  cmds+=(sha256sum "$(harness "$plugin" "$NBDCP_RUN \"\$uri\" - | sha256sum")")
  run_hyperfine wh1 "" "${cmds[@]}"

  # The cost of --blkhash and --verify on copies (workloads 2 and 1).
  hash_row wh2 "h2. as 2, with --blkhash" \
    "h2. --blkhash on workload 2: sparse-random $W2_SIZE percent=100 onto itself" \
    "$W2_SIZE" 100 "target: --blkhash at most 1.5x the copy" \
    "$(sr "$W2_SIZE" percent=100)" --blkhash
  hash_row wh3 "h3. as 1, with --blkhash, --verify" \
    "h3. --blkhash and --verify on workload 1: sparse-random $W1_SIZE (10% data) onto itself" \
    "$W1_SIZE" 10 "targets: --blkhash at most 1.5x, --verify at most 2x the copy" \
    "$(sr "$W1_SIZE")" --blkhash --verify
}

# Workload 8, --bitmap: an incremental copy of a qcow2 image whose dirty
# bitmap marks about 5% of it, in runs of 64 KiB to 1 MiB at random
# (seeded) offsets, onto the previous full copy; against copying the
# whole image again with nbdcp and with qemu-img convert.  All three
# read through the same qemu-nbd -B and write into the same raw file,
# which holds the previous copy before the first run and the current
# image after each run, so every run starts from a valid previous copy.
w8 ()
{
  local b d src dst t data dirty cmds=() writes=()
  b=$(parse_size "$W8_SIZE")
  d=$bench_scratch/w8; mkdir -p "$d"
  bench_log "w8: building the $W8_SIZE qcow2 image"
  timeout "$TMO" "$NBDKIT" -U - $(sr "$W8_SIZE" "percent=25 runlength=1048576") \
    --run "$QEMU_IMG convert -f raw -O qcow2 \"\$uri\" $d/src.qcow2" ||
    bench_die "cannot build $d/src.qcow2"
  "$QEMU_IMG" bitmap --add --enable -g 64K "$d/src.qcow2" b0 ||
    bench_die "qemu-img bitmap failed"
  # The previous (full) copy, made once, before the guest's writes.
  timeout "$TMO" "$NBDCP_RUN" -- [ "$QEMU_NBD" -r -f qcow2 "$d/src.qcow2" ] \
    "$d/dst.raw" || bench_die "cannot make the full copy"
  mapfile -t writes < <(awk -v size="$b" -v seed="$SEED" 'BEGIN {
      srand(seed); k = 65536; target = size / 20
      while (done < target) {
        len = k * (1 + int(rand() * 16))
        off = int(rand() * (size - len) / k) * k
        printf "-c\nwrite -P %d %.0f %.0f\n", 1 + int(rand() * 250), off, len
        done += len
      }
    }')
  "$QEMU_IO" -f qcow2 "${writes[@]}" "$d/src.qcow2" >/dev/null ||
    bench_die "qemu-io failed on $d/src.qcow2"
  dirty=$("$NBDINFO" --map=qemu:dirty-bitmap:b0 -- \
            [ "$QEMU_NBD" -r -f qcow2 -B b0 "$d/src.qcow2" ] |
          awk '$3 == 1 { n += $2 } END { printf "%.0f", n }')
  data=$("$QEMU_IMG" map --output=json -f qcow2 "$d/src.qcow2" |
         python3 -c 'import json,sys; print(sum(e["length"] for e in json.load(sys.stdin) if e["data"]))')
  start_qemu_nbd "$d/src.sock" -r -f qcow2 -B b0 "$d/src.qcow2"; local spid=$server_pid
  src="\"$(uri_of "$d/src.sock")\"" dst=$d/dst.raw
  write_meta w8 "label=8. --bitmap, qcow2 $W8_SIZE, $((dirty * 100 / b))% dirty" \
    "title=8. incremental: qcow2 $W8_SIZE ($((data * 100 / b))% data) with $((dirty * 100 / b))% dirty (64K-1M runs) on qemu-nbd -B -> the previous raw copy" \
    "size=$b" "data_percent=$((data * 100 / b))" \
    "note=nbdcp is nbdcp --bitmap=b0 (copies the $dirty dirty bytes); nbdcp-full and qemu-img copy the whole image again; all onto the same raw file (-n for qemu-img)" \
    "note=qemu-nbd runs with -t --shared=8 -r -B b0; optional workload, not in the default list"
  for t in "${avail_tools[@]}"; do
    case "$t" in
      nbdcp)
        cmds+=(nbdcp "$NBDCP_RUN --bitmap=b0${BENCH_NBDCP_OPTS:+ $BENCH_NBDCP_OPTS} $src $dst")
        cmds+=(nbdcp-full "$(tool_cmd nbdcp "$src" "$dst" "$b")") ;;
      qemu-img)
        cmds+=(qemu-img "$QEMU_IMG convert -m 16 -W -n -t writeback${BENCH_QEMU_IMG_OPTS:+ $BENCH_QEMU_IMG_OPTS} -f raw -O raw $src $dst") ;;
    esac
  done
  run_hyperfine w8 "sync -f $d" "${cmds[@]}"
  stop_server "$spid"
  if "$QEMU_IMG" compare -q -f qcow2 -F raw "$d/src.qcow2" "$d/dst.raw"; then
    echo "note=after the last run, qemu-img compare: the raw copy equals the qcow2 source" >> "$OUT/w8.meta"
  else
    echo "note=WARNING: after the last run the copy differs from the source" >> "$OUT/w8.meta"
  fi
  rm -rf "$d"
}

# ---------------------------------------------------------------- CPU cost
# server_cpu_ticks PID...: the user + system clock ticks the servers
# have used so far, all their threads together (/proc/PID/stat fields
# 14 and 15).
server_cpu_ticks ()
{
  local stat pid f ticks=0
  for pid in "$@"; do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    stat=${stat##*) }  # the command name may hold spaces: cut after it
    read -ra f <<< "$stat"
    ticks=$(( ticks + f[11] + f[12] ))
  done
  echo "$ticks"
}

# cpu_cmd TOOL SRC DST SIZE: tool_cmd, or $cpu_repeat copies of it in
# a row when that is set (workload 10).
cpu_cmd ()
{
  local cmd; cmd=$(tool_cmd "$@")
  if [ -n "${cpu_repeat:-}" ]; then
    echo "for i in \$(seq $cpu_repeat); do $cmd; done"
  else
    echo "$cmd"
  fi
}

# cpu_measure NAME SRC DST SIZE [PREPARE]: CPU_RUNS runs of each copier
# under /usr/bin/time, against the servers started apart ($cpu_servers,
# PIDs, or else $server_pid), whose CPU time over the same run goes in
# the last column: on a machine where copier and servers share the
# CPUs, what they use together bounds the wall time from below.
cpu_measure ()
{
  local name=$1 src=$2 dst=$3 size=$4 prepare=${5:-} t i k n cmd rc tf times
  local hz ticks0 server_s
  tf=$bench_scratch/time.out
  hz=$(getconf CLK_TCK)
  printf 'tool\trun\telapsed\tuser\tsys\tmaxrss_kib\texit\tserver_cpu\n' \
    > "$OUT/$name.tsv"
  : > "$OUT/$name.cmds"
  for t in "${avail_tools[@]}"; do
    printf '%s\t%s\n' "$t" "$(cpu_cmd "$t" "$src" "$dst" "$size")" \
      >> "$OUT/$name.cmds"
  done
  # In rounds, one run of each tool per round in a rotating order, as
  # the timed workloads do, so that a slow spell of the machine (or of
  # a server's page cache) does not fall on one tool's runs.
  n=${#avail_tools[@]}
  for i in $(seq 1 "$CPU_RUNS"); do
    for ((k = 0; k < n; k++)); do
      t=${avail_tools[(i - 1 + k) % n]}
      cmd=$(cpu_cmd "$t" "$src" "$dst" "$size")
      [ -n "$prepare" ] && sh -c "$prepare"
      rm -f "$tf"; rc=0
      ticks0=$(server_cpu_ticks ${cpu_servers:-$server_pid})
      timeout -k 10 "$TMO" "$GNU_TIME" -o "$tf" -f '%e %U %S %M' \
        sh -c "$cmd" 2>>"$OUT/$name.$t.log" || rc=$?
      server_s=$(awk -v a="$ticks0" -v b="$(server_cpu_ticks ${cpu_servers:-$server_pid})" \
        -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
      times=$(tail -1 "$tf" 2>/dev/null | tr ' ' '\t')
      case "$times" in *[0-9]*$'\t'*) ;; *) times=$'-\t-\t-\t-' ;; esac
      printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$i" "$times" "$rc" "$server_s" \
        >> "$OUT/$name.tsv"
    done
  done
  bench_log "$name: done"
}

cpu ()
{
  local b sock uri d
  sock=$bench_scratch/cpu.sock
  uri="\"$(uri_of "$sock")\""
  b=$(parse_size "$W1_SIZE")
  start_nbdkit "$sock" $(sr "$W1_SIZE")
  write_meta cpu-1 "title=CPU, workload 1: sparse-random $W1_SIZE (10% data) onto itself" \
    "size=$b" "data_percent=10" \
    "note=one persistent nbdkit -U SOCK started apart; the server's CPU time over each run is read from /proc"
  cpu_measure cpu-1 "$uri" "$uri" "$b"
  stop_server "$server_pid"

  b=$(parse_size "$W2_SIZE")
  start_nbdkit "$sock" $(sr "$W2_SIZE" percent=100)
  write_meta cpu-2 "title=CPU, workload 2: sparse-random $W2_SIZE percent=100 onto itself" \
    "size=$b" "data_percent=100" \
    "note=one persistent nbdkit -U SOCK started apart; the server's CPU time over each run is read from /proc"
  cpu_measure cpu-2 "$uri" "$uri" "$b"
  stop_server "$server_pid"

  b=$(parse_size "$W4_SIZE"); d=$(w4_dir)
  w4_make_src
  start_nbdkit "$sock" $(sr "$W4_SIZE")
  write_meta cpu-4a "title=CPU, workload 4a: sparse-random $W4_SIZE (10% data) -> a new local file" \
    "size=$b" "data_percent=10" "floor=w4a:disk" "note=the file is removed (and sync -f run) before every run"
  cpu_measure cpu-4a "$uri" "$d/out.raw" "$b" \
    "rm -f $d/out.raw && sync -f $d"
  rm -f "$d/out.raw"
  write_meta cpu-4b "title=CPU, workload 4b: a $W4_SIZE local file with holes -> sparse-random (same seed)" \
    "size=$b" "data_percent=10"
  cpu_measure cpu-4b "$d/src.raw" "$uri" "$b"
  stop_server "$server_pid"

  cpu_w5

  b=$(parse_size "$W7_SIZE")
  start_nbdkit "$sock" $(sr "$W7_SIZE" percent=100)
  write_meta cpu-7 "title=CPU, workload 7: sparse-random $W7_SIZE percent=100 -> null:" \
    "size=$b" "data_percent=100" \
    "note=one persistent nbdkit -U SOCK started apart; qemu-img writes to null-co"
  cpu_measure cpu-7 "$uri" null: "$b"
  stop_server "$server_pid"

  local port=$((20000 + RANDOM % 20000))
  b=$(parse_size "$W2_SIZE")
  start_nbdkit_tcp "$port" $(sr "$W2_SIZE" percent=100)
  write_meta cpu-9 "title=CPU, workload 9: sparse-random $W2_SIZE percent=100 onto itself over TCP loopback" \
    "size=$b" "data_percent=100" \
    "note=one persistent nbdkit -i 127.0.0.1 -p PORT started apart"
  cpu_measure cpu-9 "\"nbd://127.0.0.1:$port\"" "\"nbd://127.0.0.1:$port\"" "$b"
  stop_server "$server_pid"

  b=$(parse_size 1M)
  start_nbdkit "$sock" memory size=1M
  write_meta cpu-10 "title=CPU, workload 10: twenty copies of nbdkit memory 1M -> null:" \
    "size=$((b * 20))" "data_percent=0" \
    "note=one persistent nbdkit -U SOCK memory size=1M; each run is twenty copies in a row"
  cpu_repeat=20 cpu_measure cpu-10 "$uri" null: "$b"
  stop_server "$server_pid"
}

# Per-request cost: all data in 4 KiB requests (--request-size=4096) to
# null:, from nbdkit pattern (which costs its server little), nbdcp
# against nbdcopy (qemu-img has no request size option).  The report
# gives the copier's CPU time per request.
req ()
{
  local b sock uri t saved=("${avail_tools[@]}")
  b=$(parse_size "$WR_SIZE")
  sock=$bench_scratch/cpu.sock
  uri="\"$(uri_of "$sock")\""
  avail_tools=()
  for t in "${saved[@]}"; do
    case "$t" in nbdcp|nbdcopy) avail_tools+=("$t") ;; esac
  done
  start_nbdkit "$sock" pattern size="$WR_SIZE"
  write_meta cpu-req "title=Per-request cost: nbdkit pattern $WR_SIZE -> null: in 4 KiB requests" \
    "size=$b" "data_percent=100" "requests=$((b / 4096))" \
    "note=nbdcp and nbdcopy with --request-size=4096: $((b / 4096)) reads; one persistent nbdkit -U SOCK pattern started apart"
  BENCH_NBDCP_OPTS="--request-size=4096${BENCH_NBDCP_OPTS:+ $BENCH_NBDCP_OPTS}" \
  BENCH_NBDCOPY_OPTS="--request-size=4096${BENCH_NBDCOPY_OPTS:+ $BENCH_NBDCOPY_OPTS}" \
    cpu_measure cpu-req "$uri" null: "$b"
  stop_server "$server_pid"
  avail_tools=("${saved[@]}")
}

# Workload 5 ends in qemu-nbd's fdatasync, which waits for the disk and
# uses little CPU: its time alone (after a copy by nbdcopy without
# --flush) goes in a note, to be added to the last column for the
# least wall time the copy could take.
cpu_w5 ()
{
  local b d i t0 flush=()
  b=$(parse_size "$W5_SIZE")
  d=$bench_scratch/w5; mkdir -p "$d"
  w5_setup "$d" "$b"
  for i in $(seq 1 "$CPU_RUNS"); do
    sh -c "$w5_prepare"
    eval "timeout $TMO $NBDCOPY $w5_src $w5_dst" 2>/dev/null || continue
    t0=$(date +%s.%N)
    sync -f "$d/dst.raw"
    flush+=("$(echo "$(date +%s.%N) - $t0" | bc)")
  done
  write_meta cpu-5 "title=CPU, workload 5: qcow2 $W5_SIZE on qemu-nbd -> raw on qemu-nbd" \
    "size=$b" "data_percent=$((w5_data * 100 / b))" \
    "note=server CPU is both qemu-nbd's; the raw file is emptied (and sync -f run) before every run" \
    "flush_s=$(printf '%s\n' "${flush[@]}" | sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", v[int((NR + 1) / 2)] }')" \
    "note=the final fdatasync alone (sync -f after nbdcopy without --flush), which the server column does not count: $(printf '%s\n' "${flush[@]}" | sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "median %.2f s of %d", v[int((NR + 1) / 2)], NR; else printf "not measured" }'); the floor adds it"
  cpu_servers="$w5_spid $w5_dpid" \
    cpu_measure cpu-5 "$w5_src" "$w5_dst" "$b" "$w5_prepare"
  stop_server "$w5_dpid"; stop_server "$w5_spid"
  rm -rf "$d"
}

# ---------------------------------------------------------------- sweeps
sweep ()
{
  local name=$1 plugin=$2 var=$3 values=$4 opt=$5 size=$6 title=$7
  write_meta "$name" "title=$title" "size=$(parse_size "$size")" "param=$var" \
    "option=$opt" "order=$((++sweep_n))"
  : > "$OUT/$name.cmds"
  local cmd
  cmd=$(harness "$plugin" "$NBDCP_RUN $opt={$var} \"\$uri\" \"\$uri\"")
  printf 'nbdcp %s={%s}\t%s\n' "$opt" "$var" "$cmd" > "$OUT/$name.cmds"
  bench_log "$name: $opt in $values"
  timeout -k 10 $(( (WARMUP + RUNS) * 6 * (TMO + 20) + 60 )) \
    "$HYPERFINE" -w "$WARMUP" -r "$RUNS" -i --style basic \
    --export-json "$OUT/$name.json" -L "$var" "$values" \
    -n "${opt#--}={$var}" "timeout -k 10 $TMO $cmd 2>>$OUT/$name.log" 2>&1 |
    tee "$OUT/$name.out" >&2 || bench_log "warning: hyperfine for $name failed"
}

sweep_n=0
sweeps ()
{
  local p2 p3
  p2=$(sr "$S2_SIZE" percent=100)
  p3="--filter=delay $(sr "$S3_SIZE" percent=100) $DELAY"
  sweep sweep-2-request-size "$p2" rs 256K,512K,1M,2M,4M --request-size "$S2_SIZE" \
    "Sweep --request-size, workload 2 ($S2_SIZE all data, onto itself)"
  sweep sweep-2-requests "$p2" r 1,4,16,64 --requests "$S2_SIZE" \
    "Sweep --requests, workload 2 ($S2_SIZE all data, onto itself)"
  sweep sweep-2-connections "$p2" c 1,2,4,8 --connections "$S2_SIZE" \
    "Sweep --connections, workload 2 ($S2_SIZE all data, onto itself)"
  sweep sweep-3-request-size "$p3" rs 256K,512K,1M,2M,4M --request-size "$S3_SIZE" \
    "Sweep --request-size, workload 3 ($S3_SIZE all data, 5 ms delay)"
  sweep sweep-3-requests "$p3" r 1,4,16,64 --requests "$S3_SIZE" \
    "Sweep --requests, workload 3 ($S3_SIZE all data, 5 ms delay)"
  sweep sweep-3-connections "$p3" c 1,2,4,8 --connections "$S3_SIZE" \
    "Sweep --connections, workload 3 ($S3_SIZE all data, 5 ms delay)"
}

# ---------------------------------------------------------------- main
start=$(date +%s)
bench_log "results in $OUT; scratch in $bench_scratch; tools: ${avail_tools[*]}"
for w in $WORKLOADS; do
  case "$w" in
    1) w1 ;; 2) w2 ;; 3) w3 ;; 4) w4 ;; 5) w5 ;; 6) w6 ;; 7) w7 ;; 8) w8 ;;
    9) w9 ;; 10) w10 ;; 11) w11 ;; 12) w12 ;; 13) w13 ;; 14) w14 ;; 15) w15 ;;
    req) req ;;
    hash) wh ;;
    cpu) cpu ;;
    sweeps) sweeps ;;
    *) bench_log "warning: unknown workload '$w'" ;;
  esac
done
stop_all_servers
end=$(date +%s)
{
  echo "elapsed_s=$((end - start))"
  echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
} >> "$OUT/machine.env"

python3 "$bench_dir/report.py" "$OUT" > "$OUT/report.md" ||
  bench_die "report.py failed"
python3 "$bench_dir/charts.py" "$OUT" "$OUT" ||
  bench_log "warning: charts.py failed"
# A full run of the default set also redraws docs/performance.md's charts.
if [ -z "${BENCH_CHARTS_DIR+set}" ] && [ "$quick" = 0 ] &&
   [ -z "${BENCH_WORKLOADS:-}" ]; then
  BENCH_CHARTS_DIR=$top/docs
fi
if [ -n "${BENCH_CHARTS_DIR:-}" ]; then
  python3 "$bench_dir/charts.py" "$OUT" "$BENCH_CHARTS_DIR" &&
    bench_log "charts and their numbers in $BENCH_CHARTS_DIR" ||
    bench_log "warning: charts.py failed for $BENCH_CHARTS_DIR"
fi
bench_log "done in $((end - start)) s: $OUT/report.md"
