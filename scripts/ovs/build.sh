#!/usr/bin/env bash
# Build and install ethfab's ovs-vswitchd: Open vSwitch 3.1.0 (Debian 12's
# version, whose ovsdb-server, schema and tools it keeps using) with
# scripts/ovs/linux-pmd.patch applied, as /usr/local/lib/ethfab/ovs-vswitchd
# (outside PATH: the system's Open vSwitch, if any, keeps its own). Labs on
# the userspace datapath then use it (scenario ovs.ports: auto or pmd).
#
# The patch adds the "linux-pmd" port type: a veth read by PMD threads that
# wait on all their ports' sockets with epoll and read only those that have
# frames, instead of the main thread reading every port each time one has
# a frame. README's "Capacity" section has what it changes and the figures.
#
# usage: scripts/ovs/build.sh [SRC]
#   SRC  an Open vSwitch git repository (path or URL) that has the tag
#        v3.1.0; default $ETHFAB_OVS_SRC, else
#        https://github.com/openvswitch/ovs.git
# Rebuilds only when the installed binary was built from another patch.
# Takes about 4 minutes on 2 cores; needs root to install.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PATCH=$HERE/linux-pmd.patch
SRC=${1:-${ETHFAB_OVS_SRC:-https://github.com/openvswitch/ovs.git}}
TAG=v3.1.0
DEST=/usr/local/lib/ethfab/ovs-vswitchd
STAMP=$DEST.patch-sha256

sum=$(sha256sum "$PATCH" | cut -d' ' -f1)
if [[ -x $DEST && -f $STAMP && $(cat "$STAMP") == "$sum" ]]; then
  echo "ovs: $DEST is built from this patch"
  exit 0
fi
for p in git gcc make autoreconf libtoolize python3; do
  command -v "$p" >/dev/null || missing+=" $p"
done
if [[ -n ${missing:-} ]]; then
  echo "ovs: missing$missing (apt-get install git build-essential autoconf automake libtool libcap-ng-dev python3)" >&2
  exit 1
fi

work=$(mktemp -d /tmp/ethfab-ovs.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "ovs: cloning $SRC at $TAG"
git clone -q --branch "$TAG" "$SRC" "$work/ovs" 2>/dev/null ||
  git clone -q --branch "$TAG" "file://$SRC" "$work/ovs"
cd "$work/ovs"
git apply "$PATCH"
echo "ovs: configuring"
./boot.sh >/dev/null
./configure --prefix=/usr --localstatedir=/var --sysconfdir=/etc --disable-ssl >/dev/null
echo "ovs: building (about 4 minutes on 2 cores)"
make -j"$(nproc)" >/dev/null
install -D -m 755 vswitchd/ovs-vswitchd "$DEST"
echo "$sum" >"$STAMP"
"$DEST" --version | head -1
echo "ovs: installed $DEST"
