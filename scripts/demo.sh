#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job: an 82-NIC macvtap guest made by libvnic, next to the tools
# runtimes use today, in a throwaway network namespace.  Run as root.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
make -s -j"$(nproc)" all bench
exec unshare -n build/vnic-bench guest --nics 82 --kind macvtap --runs 5 "$@"
