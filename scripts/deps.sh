#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install, from Debian's archive, what building and testing libvnic needs.
# Idempotent: installs only what is missing.  Needs root (apt-get).
set -eu

PKGS="make gcc libc6-dev pkg-config libmnl-dev libjansson-dev \
linux-source-6.12 xz-utils iproute2 perl jq python3"
# Anchors and independent checkers used by the tests and the bench.
PKGS="$PKGS nftables iptables ebtables arptables containernetworking-plugins"
# Memory checking of vnicctl (selftests/vnicctl_valgrind_test.sh).
PKGS="$PKGS valgrind"
# Which files vnic-cni writes and how (selftests/cni_test.sh).
PKGS="$PKGS strace"
# Later layers (nft and bpf backends).
PKGS="$PKGS libnftnl-dev libbpf-dev clang llvm bpftool"
# libFuzzer (make fuzz).
PKGS="$PKGS libclang-rt-14-dev"
# The ABI baseline: abidw, abidiff (make abicheck).
PKGS="$PKGS abigail-tools"
# make doccheck: docutils for the rst, groff for the man pages.
PKGS="$PKGS python3-docutils groff-base"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing:$missing; run as root to install them" >&2
	exit 1
fi
echo "deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
