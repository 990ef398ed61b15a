#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# restart_nics.sh N [PREFIX]: in the current network namespace (a fresh
# one: the ifindexes are then the same in every namespace made so), lo up,
# a veth pair lower0/lower0p, and N + N/10 macvlans PREFIX0.. on lower0
# with the MACs restart_policy.py gives them, in one ip -batch.
set -e
n=$1 p=${2:-nv} m=$(($1 + $1 / 10))
ip link set lo up
ip link add lower0 type veth peer name lower0p
ip link set lower0 up
ip link set lower0p up
for ((i = 0; i < m; i++)); do
	printf 'link add %s%d link lower0 address 02:00:00:%02x:%02x:%02x type macvlan mode bridge\n' \
		"$p" "$i" $(((i >> 16) & 255)) $(((i >> 8) & 255)) $((i & 255))
done | ip -batch -
