# Helpers shared by bench/run.sh and bench/profile.sh.  Source it.
#
# Provides: installing what the benchmarks need (as root), a scratch
# directory and server bookkeeping cleaned up by an EXIT trap, starting
# persistent nbdkit / qemu-nbd servers on Unix sockets, and the command
# line of each copier (nbdcp, nbdcopy, qemu-img) for a SOURCE and a
# DESTINATION.

: "${NBDKIT:=nbdkit}"
: "${NBDCOPY:=nbdcopy}"
: "${QEMU_IMG:=qemu-img}"
: "${QEMU_NBD:=qemu-nbd}"
: "${QEMU_IO:=qemu-io}"
: "${NBDINFO:=nbdinfo}"
: "${HYPERFINE:=hyperfine}"
: "${GNU_TIME:=/usr/bin/time}"

bench_log () { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
bench_die () { bench_log "error: $*"; exit 1; }

# install_packages CMD:PACKAGE ... : apt-get install the packages whose
# command is missing, when running as root on Debian; otherwise just
# say what is missing.
install_packages ()
{
  local want=() pair cmd pkg
  for pair in "$@"; do
    cmd=${pair%%:*} pkg=${pair#*:}
    command -v "$cmd" >/dev/null 2>&1 || want+=("$pkg")
  done
  [ ${#want[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    bench_log "installing ${want[*]}"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -qq >/dev/null 2>&1 || :
    timeout 900 apt-get install -y -qq --no-install-recommends "${want[@]}" \
      >/dev/null || bench_die "apt-get install ${want[*]} failed"
  else
    bench_log "missing: ${want[*]} (run as root on Debian to install them)"
    return 1
  fi
}

# A scratch directory on a real disk (not tmpfs: the file workloads
# write there), and the servers started, both removed on exit.
_bench_pids=()
bench_scratch=
bench_cleanup ()
{
  local pid
  for pid in "${_bench_pids[@]}"; do kill "$pid" 2>/dev/null || :; done
  for pid in "${_bench_pids[@]}"; do wait "$pid" 2>/dev/null || :; done
  _bench_pids=()
  if [ -n "$bench_scratch" ] && [ -d "$bench_scratch" ]; then
    rm -rf "$bench_scratch"
  fi
}

bench_make_scratch ()
{
  local base=${BENCH_TMPDIR:-/var/tmp} fstype
  bench_scratch=$(mktemp -d "$base/nbdcp-bench.XXXXXX") ||
    bench_die "cannot make a scratch directory in $base"
  fstype=$(df -PT "$bench_scratch" 2>/dev/null | awk 'NR == 2 {print $2}')
  [ -n "$fstype" ] || fstype=$(stat -f -c %T "$bench_scratch" 2>/dev/null || echo unknown)
  case "$fstype" in
    tmpfs|ramfs) bench_log "warning: $bench_scratch is on $fstype, not a real disk" ;;
  esac
  bench_scratch_fstype=$fstype
}

# stop_server PID: stop one server started here and forget it.
stop_server ()
{
  local pid=$1 p keep=()
  kill "$pid" 2>/dev/null || :
  wait "$pid" 2>/dev/null || :
  for p in "${_bench_pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  _bench_pids=("${keep[@]}")
}

stop_all_servers ()
{
  local pid
  for pid in "${_bench_pids[@]}"; do kill "$pid" 2>/dev/null || :; done
  for pid in "${_bench_pids[@]}"; do wait "$pid" 2>/dev/null || :; done
  _bench_pids=()
}

wait_for_socket ()
{
  local sock=$1 pid=$2 i
  for i in $(seq 1 300); do
    [ -S "$sock" ] && return 0
    kill -0 "$pid" 2>/dev/null || bench_die "server for $sock exited"
    sleep 0.1
  done
  bench_die "server for $sock did not start"
}

uri_of () { echo "nbd+unix:///?socket=$1"; }

# start_nbdkit SOCK NBDKIT-ARGS... : a persistent nbdkit in the
# foreground of a background job; sets server_pid.
start_nbdkit ()
{
  local sock=$1; shift
  rm -f "$sock"
  "$NBDKIT" -f --exit-with-parent -U "$sock" "$@" &
  server_pid=$!
  _bench_pids+=("$server_pid")
  wait_for_socket "$sock" "$server_pid"
}

# start_nbdkit_tcp PORT NBDKIT-ARGS... : the same on 127.0.0.1:PORT;
# nbdkit writes its pidfile once it listens.
start_nbdkit_tcp ()
{
  local port=$1 pidfile=$bench_scratch/nbdkit-$1.pid i; shift
  rm -f "$pidfile"
  "$NBDKIT" -f --exit-with-parent -i 127.0.0.1 -p "$port" -P "$pidfile" "$@" &
  server_pid=$!
  _bench_pids+=("$server_pid")
  for i in $(seq 1 300); do
    [ -s "$pidfile" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || bench_die "server on port $port exited"
    sleep 0.1
  done
  bench_die "server on port $port did not start"
}

# start_qemu_nbd SOCK QEMU-NBD-ARGS... : persistent (-t), up to 8
# clients (so every tool can open several connections); sets server_pid.
start_qemu_nbd ()
{
  local sock=$1; shift
  rm -f "$sock"
  "$QEMU_NBD" -t --shared=8 -k "$sock" "$@" &
  server_pid=$!
  _bench_pids+=("$server_pid")
  wait_for_socket "$sock" "$server_pid"
}

# tool_cmd TOOL SRC DST [SIZE]: the copier's command line as a string,
# to be run by sh (inside nbdkit --run, by hyperfine, or by sh -c).
# SRC/DST are pasted as given, so '"$uri"' stays for nbdkit to expand.
# DST 'null:' is the discarding destination; for qemu-img it becomes
# the null-co driver of SIZE bytes.  Fairness: nbdcp always flushes
# the destination at the end, so nbdcopy gets --flush and qemu-img
# writes a file destination with -t writeback (its default for convert
# is cache=unsafe, which never calls fdatasync); qemu-img flushes an
# NBD destination by default.
tool_cmd ()
{
  local tool=$1 src=$2 dst=$3 size=${4:-} flush=
  case "$tool" in
    nbdcp)
      echo "$NBDCP_RUN${BENCH_NBDCP_OPTS:+ $BENCH_NBDCP_OPTS} $src $dst" ;;
    nbdcopy)
      [ "$dst" = null: ] || flush=" --flush"
      echo "$NBDCOPY$flush${BENCH_NBDCOPY_OPTS:+ $BENCH_NBDCOPY_OPTS} $src $dst" ;;
    qemu-img)
      local q="$QEMU_IMG convert -m 16 -W${BENCH_QEMU_IMG_OPTS:+ $BENCH_QEMU_IMG_OPTS}"
      case "$dst" in
        null:)
          [ -n "$size" ] || bench_die "tool_cmd: null: needs a size"
          echo "$q -n -f raw $src --target-image-opts driver=null-co,size=$size" ;;
        *nbd*:*|*'$uri'*|*'${uri}'*)
          echo "$q -n -f raw -O raw $src $dst" ;;
        *)
          # A file: qemu-img creates it (raw, sparse).
          echo "$q -t writeback -f raw -O raw $src $dst" ;;
      esac ;;
    *) bench_die "unknown tool $tool" ;;
  esac
}

tool_available ()
{
  case "$1" in
    nbdcp) [ -x "$NBDCP_RUN" ] ;;
    nbdcopy) command -v "$NBDCOPY" >/dev/null 2>&1 ;;
    qemu-img) command -v "$QEMU_IMG" >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}

# parse_size 8G -> bytes
parse_size ()
{
  local s=$1 n u
  n=${s%[KkMmGgTt]} u=${s#"$n"}
  case "$u" in
    ''|[Bb]) echo "$n" ;;
    [Kk]) echo $((n * 1024)) ;;
    [Mm]) echo $((n * 1024 * 1024)) ;;
    [Gg]) echo $((n * 1024 * 1024 * 1024)) ;;
    [Tt]) echo $((n * 1024 * 1024 * 1024 * 1024)) ;;
  esac
}
