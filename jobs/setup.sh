#!/bin/bash
# Install what is missing (Debian 12, as root), then configure and build ptdp.
#   jobs/setup.sh [BUILD_DIR]        (default BUILD_DIR: <repo>/build)
# Environment: CONFIGURE_FLAGS (extra ./configure options), PTDP_NO_APT=1 (skip apt-get).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
pkgs="build-essential autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin libopenblas-dev
      libhdf5-openmpi-dev hdf5-tools python3 python3-numpy python3-h5py python3-matplotlib python3-torch nodejs npm"
# Slurm (controller, node daemon, clients) and munge: the job scripts in jobs/slurm and their test
# on a localhost Slurm; without recommends (else about 30 more packages); nothing starts on install
slurm_pkgs="slurm-wlm munge"
if [ "${PTDP_NO_APT:-0}" != 1 ]; then
  missing=""
  for p in $pkgs; do
    # npm/node may come from elsewhere than Debian: only ask apt when the command is absent
    case $p in nodejs) command -v node >/dev/null && continue ;; npm) command -v npm >/dev/null && continue ;; esac
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  slurm_missing=""
  for p in $slurm_pkgs; do dpkg -s "$p" >/dev/null 2>&1 || slurm_missing="$slurm_missing $p"; done
  if [ -z "$missing" ] && [ -n "$slurm_missing" ] && [ "$(id -u)" != 0 ]; then
    echo "setup: not installing$slurm_missing (not root): the Slurm test will SKIP" >&2
  elif [ -n "$missing$slurm_missing" ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "setup: missing Debian packages:$missing$slurm_missing" >&2
      echo "setup: run as root (or: sudo apt-get install$missing$slurm_missing), or set PTDP_NO_APT=1" >&2
      exit 1
    fi
    echo "setup: installing$missing$slurm_missing"
    apt-get update -q
    [ -z "$missing" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
    [ -z "$slurm_missing" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $slurm_missing
  fi
fi
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" ${CONFIGURE_FLAGS:-}
make -j"$(nproc)"
echo "setup: built in $build"
