#!/bin/bash
# Sets everything up and shows nbdcp at work: installs what is missing
# (as root), builds, starts two nbdkit servers on Unix sockets (an 8 GiB
# sparse source with random data, an empty 8 GiB in-memory destination),
# copies one onto the other with a progress bar, and verifies the copy
# with qemu-img compare.
set -eu
cd "$(dirname "$0")/.."
. scripts/install-deps.sh

install_deps
build_nbdcp

dir=$(mktemp -d /tmp/nbdcp-demo.XXXXXX)
pids=()
cleanup ()
{
  kill "${pids[@]}" 2>/dev/null || :
  wait 2>/dev/null || :
  rm -rf "$dir"
}
trap cleanup EXIT

nbdkit -f --exit-with-parent -U "$dir/src.sock" -r \
  sparse-random size=8G seed=2026 &
pids+=($!)
nbdkit -f --exit-with-parent -U "$dir/dst.sock" memory size=8G &
pids+=($!)
for s in src dst; do
  for _ in $(seq 100); do [ -S "$dir/$s.sock" ] && break; sleep 0.1; done
done

src="nbd+unix:///?socket=$dir/src.sock"
dst="nbd+unix:///?socket=$dir/dst.sock"
echo "Copying 8 GiB (10% random data, 90% holes):"
echo "  nbdcp -p $src $dst"
build/default/copy/nbdcp -p "$src" "$dst"
echo "Verifying with qemu-img compare:"
qemu-img compare -f raw -F raw "$src" "$dst"
echo "Demo OK."
