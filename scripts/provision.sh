#!/usr/bin/env bash
# Provision a machine for ethfab: packages, kernel modules, a Go toolchain,
# then build ethfab and run `ethfab doctor`. The Vagrant VM, CI (.ci/run)
# and `make quickstart` all run this one script, so CI exercises the VM's
# provisioning on every submission.
#
# Every step checks first and changes only what is missing, so running it
# again is cheap (a few seconds) and safe. Needs root and Debian/Ubuntu
# (apt-get) to install; without apt-get it only checks and builds.
#
# usage: scripts/provision.sh [--vm] [--no-build] [--quiet] [--check]
#   --vm        a full VM: also load the openvswitch and sch_netem modules at
#               every boot, install the kernel's extra modules where the
#               distribution splits them out (Ubuntu), put Go on every
#               login's PATH
#   --no-build  install only; do not build ethfab or run ethfab doctor
#   --quiet     print only what is installed and what is wrong
#   --check     install nothing: list what is missing, exit 1 if anything is
#
# Environment: ETHFAB_GO_DIR (default /usr/local/go) is where Go is looked
# for first and installed when missing or older than go.mod asks.
# ETHFAB_OVS_SRC, if set (an Open vSwitch git repository, path or URL),
# also builds ethfab's ovs-vswitchd from it (scripts/ovs/build.sh, ~5 min):
# its ports are read by PMD threads, not by the main thread on every frame
# (README, "Capacity", has what that changes and what it does not).
set -euo pipefail

VM=0 BUILD=1 QUIET=0 CHECK=0
for a in "$@"; do
  case $a in
    --vm) VM=1 ;;
    --no-build) BUILD=0 ;;
    --quiet) QUIET=1 ;;
    --check) CHECK=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "provision: unknown option $a (see --help)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.."
ROOT=$PWD
GO_DIR=${ETHFAB_GO_DIR:-/usr/local/go}
export DEBIAN_FRONTEND=noninteractive
MISSING=()
TMP=""
trap '[ -z "$TMP" ] || rm -rf "$TMP"' EXIT

say() { [ "$QUIET" = 1 ] || echo "provision: $*"; }
act() { echo "provision: $*"; }           # always shown: a change or a problem
die() { echo "provision: error: $*" >&2; exit 1; }

# --- packages -----------------------------------------------------------------
# netem is the kernel's sch_netem; iproute2's tc drives it. curl and
# ca-certificates fetch Go when it is missing.
# libtcmalloc-minimal4: ovs-vswitchd runs with it (ovs/allocator.go says why).
# graphviz: `ethfab graph --format svg` and each run directory's topology.svg.
# tshark: the dissector's test (dissector/ethfab.lua) and reading captures.
# python3: the Python package (python/) and its tests, and bench/*.py.
# openmpi-bin, libopenmpi-dev, gcc: ethfab mpirun and mpi phases, and
# mpicc for the MPI microbenchmark (bench/mpi), built and installed below.
# metis: gpmetis splits custom fabrics across machines (ethfab plan and up
# --machines). openssh-client: `up --machines` starts workers over ssh;
# openssh-server: its sshd binary, which the ssh test runs privately on
# loopback with keys of its own. slurmctld, slurmd, slurm-client, munge:
# `up --machines --launcher srun`, and the test that runs a private
# two-node Slurm cluster on this machine (services are not started here).
PKGS=(openvswitch-switch libtcmalloc-minimal4 iproute2 ethtool iperf3 tcpdump iputils-ping make git curl ca-certificates graphviz tshark python3
  openmpi-bin libopenmpi-dev gcc metis openssh-client openssh-server slurmctld slurmd slurm-client munge)

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'; }

apt_install() {
  # The packaged Open vSwitch service is not needed (ethfab runs private
  # instances) and must not start on machines shared with other labs:
  # keep maintainer scripts from starting services during the install,
  # unless the machine already has its own policy.
  local policy=/usr/sbin/policy-rc.d ours=0
  if [ "$VM" = 0 ] && [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy && ours=1
  fi
  local rc=0
  # Noninteractive: tshark's package asks whether others may capture.
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } || rc=$?
  [ $ours = 1 ] && rm -f $policy
  return $rc
}

packages() {
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    say "no apt-get: not installing packages (want: ${PKGS[*]})"
    return
  fi
  local want=()
  for p in "${PKGS[@]}"; do pkg_installed "$p" || want+=("$p"); done
  if [ ${#want[@]} = 0 ]; then
    say "packages: all present"
    return
  fi
  if [ "$CHECK" = 1 ]; then MISSING+=("packages: ${want[*]}"); return; fi
  act "installing ${want[*]}"
  apt_install "${want[@]}" || die "apt-get install ${want[*]} failed"
}

# --- kernel modules -------------------------------------------------------------
# A full kernel (the VM) has both; a Firecracker or container kernel (CI, the
# development machine) has neither, and ethfab then uses OVS's userspace
# datapath and rate-only shaping. Their absence is reported, not fatal:
# `ethfab doctor` says what follows from it.
modules() {
  local m missing=()
  for m in openvswitch sch_netem; do
    if [ -d /sys/module/$m ]; then continue; fi
    if [ "$CHECK" = 1 ]; then missing+=("$m"); continue; fi
    if ! modprobe -q $m 2>/dev/null && [ "$VM" = 1 ] && command -v apt-get >/dev/null; then
      # Ubuntu ships sch_netem (and on some kernels openvswitch) in
      # linux-modules-extra; Debian's kernel has both already.
      local extra
      extra=linux-modules-extra-$(uname -r)
      if ! pkg_installed "$extra" && apt-cache show "$extra" >/dev/null 2>&1; then
        act "installing $extra for $m"
        apt_install "$extra" || true
      fi
      modprobe -q $m 2>/dev/null || true
    fi
    if [ -d /sys/module/$m ]; then
      act "loaded kernel module $m"
    else
      missing+=("$m")
    fi
  done
  if [ "$VM" = 1 ] && [ "$CHECK" = 0 ]; then
    local conf=/etc/modules-load.d/ethfab.conf
    if [ ! -e $conf ]; then
      printf '# ethfab: kernel datapath for Open vSwitch, netem for delay/loss/jitter\nopenvswitch\nsch_netem\n' >$conf
      act "wrote $conf (modules load at boot)"
    fi
  fi
  if [ ${#missing[@]} = 0 ]; then
    say "kernel modules: openvswitch and sch_netem loaded"
  elif [ "$CHECK" = 1 ] && [ "$VM" = 1 ]; then
    MISSING+=("kernel modules: ${missing[*]}")
  else
    # Expected in CI and on Firecracker VMs: no module directory to load from.
    act "kernel modules not available: ${missing[*]} (going on: userspace datapath / rate-only shaping)"
  fi
}

# --- Go -------------------------------------------------------------------------
# go.mod's go line is the least version that builds ethfab; Debian's golang
# package is far older. Install order: the official tarball, else the same
# toolchain as the module proxy serves it to the go command (golang.org/toolchain),
# checked against the checksum database; the proxy is often the only Go
# host a CI machine may reach.
GO_WANT=$(awk '$1 == "toolchain" { sub(/^go/, "", $2); print $2; exit } $1 == "go" { v = $2 } END { if (v) print v }' go.mod | head -1)
[ -n "$GO_WANT" ] || die "no go version in go.mod"

go_version() { "$1" env GOVERSION 2>/dev/null | sed 's/^go//'; }
version_ok() { [ "$(printf '%s\n%s\n' "$GO_WANT" "$1" | sort -V | head -1)" = "$GO_WANT" ]; }

# find_go prints a go binary new enough for go.mod, preferring $GO_DIR: the
# Makefile target and .ci/run put $GO_DIR/bin first on PATH.
find_go() {
  local v
  if [ -x "$GO_DIR/bin/go" ]; then
    v=$(go_version "$GO_DIR/bin/go") && version_ok "$v" && { echo "$GO_DIR/bin/go"; return 0; }
    return 1 # present but too old: replace it, or PATH order would pick it
  fi
  local g
  g=$(command -v go) || return 1
  v=$(go_version "$g") && version_ok "$v" && { echo "$g"; return 0; }
  return 1
}

go_arch() {
  case $(uname -m) in
    x86_64) echo amd64 ;; aarch64|arm64) echo arm64 ;; armv6l|armv7l) echo armv6l ;;
    i386|i686) echo 386 ;; ppc64le) echo ppc64le ;; s390x) echo s390x ;; riscv64) echo riscv64 ;;
    *) die "no Go download for $(uname -m)" ;;
  esac
}

fetch() { curl -fsSL --retry 2 --connect-timeout 10 "$@"; }

# go_from_dl unpacks the official tarball into $1/go.
go_from_dl() {
  local arch f tmp=$1 sum
  arch=$(go_arch) || return 1
  f="go$GO_WANT.linux-$arch.tar.gz"
  sum=$(fetch "https://dl.google.com/go/$f.sha256" 2>/dev/null) || return 1
  act "downloading $f from dl.google.com"
  fetch -o "$tmp/$f" "https://dl.google.com/go/$f" || return 1
  echo "$sum  $tmp/$f" | sha256sum -c --quiet - || die "$f: sha256 mismatch"
  tar -C "$tmp" -xzf "$tmp/$f"
}

# go_from_proxy unpacks golang.org/toolchain from the module proxy into
# $1/go, verifying the zip's h1: hash (the go command's dirhash: sha256 of
# the sorted "sha256  name" lines of every file) against the checksum
# database, reached through the proxy.
go_from_proxy() {
  local tmp=$1 proxy mod line want got
  proxy=${GOPROXY:-https://proxy.golang.org}
  proxy=${proxy%%,*}; proxy=${proxy%%|*}
  case $proxy in http*) ;; *) proxy=https://proxy.golang.org ;; esac
  rm -rf "$tmp/go" "$tmp/z"
  mod="golang.org/toolchain@v0.0.1-go$GO_WANT.linux-$(go_arch)"
  line=$(fetch "$proxy/sumdb/sum.golang.org/lookup/$mod" 2>/dev/null || fetch "https://sum.golang.org/lookup/$mod" 2>/dev/null) || return 1
  want=$(echo "$line" | awk -v m="${mod%@*}" -v v="${mod#*@}" '$1 == m && $2 == v { print $3; exit }')
  [ -n "$want" ] || return 1
  command -v unzip >/dev/null || apt_install unzip || die "unzip is needed to unpack Go from the module proxy"
  act "downloading $mod from $proxy"
  fetch -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/${mod#*@}.zip" || return 1
  mkdir "$tmp/z" && unzip -q "$tmp/go.zip" -d "$tmp/z"
  got="h1:$(cd "$tmp/z" && find . -type f | sed 's|^\./||' | LC_ALL=C sort |
    xargs -d '\n' sha256sum | sha256sum | cut -c1-64 | perl -ne 'chomp; print pack("H*", $_)' | base64)"
  [ "$got" = "$want" ] || die "$mod: checksum $got, the checksum database says $want"
  mv "$tmp/z/$mod" "$tmp/go"
  # Module zips drop file modes; the tools must be executable.
  chmod -R a+x "$tmp/go/bin" "$tmp/go/pkg/tool"
}

golang() {
  local g
  if g=$(find_go); then
    say "go: $g ($(go_version "$g"), go.mod wants $GO_WANT)"
    return
  fi
  if [ "$CHECK" = 1 ]; then MISSING+=("go >= $GO_WANT (in $GO_DIR or PATH)"); return; fi
  command -v curl >/dev/null || die "curl is needed to download Go $GO_WANT"
  local tmp
  tmp=$(mktemp -d)
  TMP=$tmp
  go_from_dl "$tmp" || { act "dl.google.com not reachable; trying the Go module proxy"; go_from_proxy "$tmp"; } ||
    die "Go $GO_WANT is not installed and neither dl.google.com nor the Go module proxy is reachable; install it into $GO_DIR"
  if [ -e "$GO_DIR" ]; then
    local old
    old="$GO_DIR.old-$(go_version "$GO_DIR/bin/go" || echo unknown)"
    rm -rf "$old" && mv "$GO_DIR" "$old" && act "moved the older Go in $GO_DIR to $old"
  fi
  mkdir -p "$(dirname "$GO_DIR")"
  mv "$tmp/go" "$GO_DIR"
  act "installed Go $(go_version "$GO_DIR/bin/go") in $GO_DIR"
}

go_path() {
  # Login shells (vagrant ssh, then sudo -i) find Go without further setup.
  local f=/etc/profile.d/ethfab-go.sh
  if [ "$VM" = 1 ] && [ "$CHECK" = 0 ] && [ ! -e $f ]; then
    # shellcheck disable=SC2016 # $PATH is for the login shell to expand
    printf 'case ":$PATH:" in *":%s/bin:"*) ;; *) PATH="%s/bin:$PATH" ;; esac\n' "$GO_DIR" "$GO_DIR" >$f
    act "wrote $f"
  fi
}

# --- build and check --------------------------------------------------------------
build() {
  export PATH="$GO_DIR/bin:$PATH"
  # The synced folder belongs to another user (vagrant); without this git
  # refuses to describe it and the version says "dev".
  if command -v git >/dev/null && [ -d .git ] && ! git rev-parse --git-dir >/dev/null 2>&1; then
    git config --global --add safe.directory "$ROOT"
  fi
  say "building ethfab"
  if [ "$QUIET" = 1 ]; then make -s build >/dev/null; else make build; fi
  # The MPI microbenchmark, where scenarios' mpi phases find it (PATH).
  if command -v mpicc >/dev/null; then
    make -s mpibench >/dev/null && install -m 755 bin/ethfab-mpibench /usr/local/bin/ethfab-mpibench
    say "installed /usr/local/bin/ethfab-mpibench"
  else
    say "no mpicc: not building the MPI microbenchmark (bench/mpi)"
  fi
  if [ "$VM" = 1 ]; then
    # On PATH for every shell, also a non-interactive ssh one: a lab
    # across VMs starts its workers as `ethfab worker` over ssh.
    ln -sfn "$ROOT/bin/ethfab" /usr/local/bin/ethfab
    say "linked /usr/local/bin/ethfab to $ROOT/bin/ethfab"
  fi
  local out rc=0
  out=$(bin/ethfab doctor 2>&1) || rc=$?
  if [ $rc != 0 ]; then
    echo "$out"
    die "ethfab doctor says ethfab cannot run here"
  fi
  if [ "$QUIET" = 1 ]; then
    echo "$out" | sed -n 's/^\(datapath\|shaping\) */provision: \1: /p'
  else
    echo "$out"
  fi
}

if [ "$CHECK" = 0 ] && [ "$(id -u)" != 0 ]; then
  die "run as root (installs packages, loads kernel modules; ethfab itself needs root)"
fi
packages
modules
golang
go_path
if [ "$CHECK" = 1 ]; then
  if [ ${#MISSING[@]} = 0 ]; then say "nothing missing"; exit 0; fi
  for m in "${MISSING[@]}"; do echo "missing: $m"; done
  exit 1
fi
if [ -n "${ETHFAB_OVS_SRC:-}" ]; then
  if ! command -v autoreconf >/dev/null || ! command -v libtoolize >/dev/null || [ ! -e /usr/include/cap-ng.h ]; then
    apt-get install -y -q autoconf automake libtool libcap-ng-dev >/dev/null
  fi
  say "building ethfab's ovs-vswitchd from $ETHFAB_OVS_SRC"
  scripts/ovs/build.sh "$ETHFAB_OVS_SRC"
fi
[ "$BUILD" = 1 ] && build
say "done"
