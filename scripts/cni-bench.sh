#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-cni against the stock CNI plugins, until vnic-bench has a cni
# scenario: wall time of each plugin exec as a runtime makes it (its own
# process, config on stdin), IPAM by host-local for all.  Run as root in a
# private namespace:  unshare -n scripts/cni-bench.sh [build/vnic-cni]
#   per attachment: ADD and DEL, one container namespace each, RUNS of them
#   82 attachments into one namespace (eth0..eth81), at 0 and at 4,000
#   existing NICs (2,000 veth pairs made by ip -batch, untimed)
#   GC of 1,000 stale attachments in one call (valid list empty)
# Prints medians in ms.  Timing is the script's job: nothing here asserts.
set -u
CNI=$(realpath "${1:-build/vnic-cni}")
STOCK=/usr/lib/cni
RUNS=${RUNS:-21}
T=$(mktemp -d)
HOLDERS=()
trap 'kill "${HOLDERS[@]}" 2>/dev/null; rm -rf "$T"' EXIT

ip link set lo up
ip link add lower0 type veth peer name lower1 && ip link set lower0 up && ip link set lower1 up

container() {
	local ready=$T/ready.$RANDOM$RANDOM
	unshare -n sh -c "touch $ready; exec sleep 3600" >/dev/null 2>&1 &
	HOLDERS+=($!)
	while [ ! -e "$ready" ]; do sleep 0.005; done
	printf -v "$1" '/proc/%s/ns/net' "$!"
}

# conf TYPE NET EXTRA-JSON
conf() {
	jq -c ". * $3" <<EOC
{"cniVersion": "1.0.0", "name": "$2", "type": "$1", "dataDir": "$T/state",
 "ipam": {"type": "host-local", "dataDir": "$T/ipam",
	  "ranges": [[{"subnet": "10.$((RANDOM % 200 + 20)).0.0/16"}]]}}
EOC
}

# call PLUGIN VERB CID IFNAME NETNS CONF -> elapsed us on stdout
call() {
	local t0 t1
	t0=${EPOCHREALTIME/./}
	CNI_COMMAND=$2 CNI_CONTAINERID=$3 CNI_IFNAME=$4 CNI_NETNS=$5 CNI_PATH=$STOCK \
		"$1" <<<"$6" >"$T/out" 2>&1 || { echo "FAILED: $1 $2: $(cat "$T/out")" >&2; return 1; }
	t1=${EPOCHREALTIME/./}
	echo $((t1 - t0))
}

median() { sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] / 1e3 }'; }

# per_attach NAME PLUGIN CONF: RUNS ADDs then RUNS DELs, one namespace each
per_attach() {
	local name=$1 plugin=$2 c=$3 i ns add=() del=() nss=() id=${1//[^a-z]/}
	for i in $(seq "$RUNS"); do
		container ns
		nss+=("$ns")
		add+=("$(call "$plugin" ADD "b$id$i" eth0 "$ns" "$c")")
	done
	for i in $(seq "$RUNS"); do
		del+=("$(call "$plugin" DEL "b$id$i" eth0 "${nss[$((i - 1))]}" "$c")")
	done
	printf '%-28s ADD %8s ms   DEL %8s ms\n' "$name" \
		"$(printf '%s\n' "${add[@]}" | median)" "$(printf '%s\n' "${del[@]}" | median)"
}

# many NAME PLUGIN CONF: 82 ADDs into one namespace, total
many() {
	local name=$1 plugin=$2 c=$3 i ns t0 t1 id=${1//[^a-z]/}
	container ns
	t0=${EPOCHREALTIME/./}
	for i in $(seq 0 81); do
		call "$plugin" ADD "m$id" "eth$i" "$ns" "$c" >/dev/null 2>"$T/err" || {
			printf '%-28s 82 ADDs   refused: attachment %d: %s\n' "$name" "$i" \
				"$(jq -r .msg "$T/out" 2>/dev/null | head -c 80)"
			break
		}
	done
	t1=${EPOCHREALTIME/./}
	[ "$i" = 81 ] || { for i in $(seq 0 81); do call "$plugin" DEL "m$id" "eth$i" "$ns" "$c" >/dev/null 2>&1; done; return; }
	printf '%-28s 82 ADDs %8.1f ms\n' "$name" "$(echo "($t1 - $t0) / 1000" | bc -l)"
	for i in $(seq 0 81); do
		call "$plugin" DEL "m$id" "eth$i" "$ns" "$c" >/dev/null
	done
}

VETH=$(conf vnic-cni cniv '{}')
VMAC=$(conf vnic-cni cnim '{"mode": "macvlan", "master": "lower0"}')
PTP=$(conf ptp ptp '{}')
MACV=$(conf macvlan macv '{"master": "lower0"}')

scenario() {
	echo "== $1 existing NICs in the host namespace"
	per_attach "vnic-cni veth+filter" "$CNI" "$VETH"
	per_attach "vnic-cni macvlan" "$CNI" "$VMAC"
	per_attach "stock ptp" "$STOCK/ptp" "$PTP"
	per_attach "stock macvlan" "$STOCK/macvlan" "$MACV"
	many "vnic-cni veth+filter" "$CNI" "$VETH"
	many "vnic-cni macvlan" "$CNI" "$VMAC"
	many "stock ptp" "$STOCK/ptp" "$PTP"
	many "stock macvlan" "$STOCK/macvlan" "$MACV"
}

scenario 0
for i in $(seq 0 1999); do echo "link add fill$i type veth peer name fillp$i"; done >"$T/batch"
ip -batch "$T/batch"
scenario "$(ip -o link | wc -l)"

# GC: 1,000 stale attachments (interfaces e0..e999 of one container), one
# call.  With IPAM each lease is one host-local DEL exec; without ("ipam":
# {}) the NICs and filters alone.
echo "== GC of 1,000 stale attachments"
for mode in l2 ipam; do
	if [ $mode = l2 ]; then c=$(conf vnic-cni gc$mode '{"ipam": {}, "cniVersion": "1.1.0"}')
	else c=$(conf vnic-cni gc$mode '{"cniVersion": "1.1.0"}'); fi
	container ns
	for i in $(seq 0 999); do
		call "$CNI" ADD "g$i" "e$i" "$ns" "$c" >/dev/null
	done
	gcc=$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$c")
	t=$(call "$CNI" GC "" "" "" "$gcc")
	left=$(ip -o link | grep -c 'vc[0-9]')
	printf 'GC %-5s 1,000 stale       %8.1f ms  (host ends left: %s)\n' $mode \
		"$(echo "$t / 1000" | bc -l)" "$left"
done
