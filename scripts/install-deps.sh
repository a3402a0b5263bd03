#!/bin/bash
# Installs what nbdcp needs to build and test, on Debian 12, when run as
# root; otherwise says what to install.  Sourced by demo.sh and check.sh.

nbdcp_packages=(
  build-essential autoconf automake pkg-config
  libnbd-dev liburing-dev libgnutls28-dev
  nbdkit qemu-utils libnbd-bin
  valgrind perl man-db python3 util-linux coreutils gnutls-bin time strace
  bc iproute2 lcov
  openssh-server openssh-client netcat-openbsd
)

install_deps ()
{
  local missing=() p
  for p in "${nbdcp_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "nbdcp: please install: ${missing[*]}" >&2
    echo "       (sudo apt-get install -y ${missing[*]})" >&2
    return 1
  fi
  echo "Installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null &&
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# Configure (if needed) and build in build/default, out of tree, the
# way scripts/check.sh does.  The program is build/default/copy/nbdcp.
build_nbdcp ()
{
  local top=$PWD
  mkdir -p m4
  [ -f Makefile ] && make distclean >/dev/null 2>&1
  if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
    autoreconf -fi >/dev/null 2>&1 || return 1
  fi
  mkdir -p build/default
  (
    cd build/default &&
      { [ -f Makefile ] || "$top/configure" --enable-werror >configure.log 2>&1; } &&
      make -j"$(nproc)" >make.log 2>&1
  )
}
