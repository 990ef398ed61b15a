#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnicctl end to end, as TAP.  Each case runs in its own network namespace
# (unshare -n) holding a veth pair lower0/lower0p as the lower device, and
# checks what vnicctl did with ip -j -d link and jq.  The host's namespace is
# never touched.
#
#   selftests/vnicctl_test.sh [CASE...]     (root; VNICCTL= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

# The links of the namespace, with details, as a JSON array.
links() { ip -j -d link show; }

# jqe FILTER [ARGS...]: the filter must hold on the link table.
jqe() {
	local filter=$1
	shift
	links | jq -e "$@" "$filter" >/dev/null ||
		fail "link table: $filter"
}

# Number of links whose alias starts with $1.
tagged() {
	links | jq --arg p "$1" \
		'[.[] | select((.ifalias // "") | startswith($p))] | length'
}

# Number of links of kind $1.
kind_count() {
	links | jq --arg k "$1" \
		'[.[] | select(.linkinfo.info_kind? == $k)] | length'
}

setup_ns() {
	ip link set lo up &&
	ip link add lower0 type veth peer name lower0p &&
	ip link set lower0 up && ip link set lower0p up
}

# add_mvt GUEST N [NIC-OPTS...]: an N-NIC macvtap guest on lower0 ($OWNER).
add_mvt() {
	local g=$1 n=$2
	shift 2
	run 0 vc -o "${OWNER:-vnic}" guest add "$g" --kind macvtap \
		--lower lower0 --nics "$n" "$@"
}

# ------------------------------------------------------------------ cases

# 82 macvtaps in one command: 82 devices, tagged vnic:vnic:vm1:0..81, on
# lower0, up; the command prints one row per NIC.
case_add_82() {
	add_mvt vm1 82 --up || return
	expect_eq "$(kind_count macvtap)" 82 "macvtap devices" || return
	jqe '[.[] | select(.linkinfo.info_kind? == "macvtap") | .ifalias] | sort
	     == ([range(82) | "vnic:vnic:vm1:\(.)"] | sort)' || return
	jqe '[.[] | select(.linkinfo.info_kind? == "macvtap")] |
	     all(.link == "lower0" and (.flags | index("UP")))' || return
	expect_eq "$(grep -c macvtap "$TMP/out")" 82 "rows printed"
}

# -j guest list: the guest with its 82 NICs, matching the kernel's view.
case_list_json() {
	add_mvt vm1 82 || return
	add_mvt vm2 2 || return
	run 0 vc -j guest list || return
	cp "$TMP/out" "$TMP/list.json"
	jq -e 'length == 2 and .[0].guest == "vm1" and .[1].guest == "vm2" and
	       (.[0].nics | length) == 82 and (.[1].nics | length) == 2' \
		"$TMP/list.json" >/dev/null || fail "list: $(cat "$TMP/list.json")" || return
	links >"$TMP/links.json"
	jq -e -n --slurpfile l "$TMP/list.json" --slurpfile k "$TMP/links.json" '
	  ($k[0] | map({key: .ifname, value: .}) | from_entries) as $by |
	  [$l[0][] | .guest as $g | .nics[] |
	   . as $n | $by[$n.name] as $d |
	   $d != null and $n.kind == "macvtap" and $n.ifindex == $d.ifindex and
	   $n.mac == $d.address and
	   $d.ifalias == "vnic:vnic:\($g):\($n.index)"] |
	  length == 84 and all' >/dev/null ||
		fail "list -j does not match ip link" || return
	run 0 vc guest list || return
	grep -Eq '^vm1 +82 +macvtap$' "$TMP/out" || fail "list: $(cat "$TMP/out")"
}

# guest show: JSON and columns for one guest.
case_show() {
	add_mvt vm1 82 || return
	add_mvt other 1 || return
	run 0 vc -j guest show vm1 || return
	jq -e '.guest == "vm1" and (.nics | length) == 82 and
	       ([.nics[].index] == [range(82)]) and
	       all(.nics[]; .kind == "macvtap" and .ifindex > 0 and
		   (.mac | test("^([0-9a-f]{2}:){5}[0-9a-f]{2}$")))' \
		"$TMP/out" >/dev/null || fail "show -j: $(head -c 300 "$TMP/out")" || return
	run 0 vc guest show vm1 || return
	expect_eq "$(wc -l <"$TMP/out")" 83 "header + 82 rows" || return
	grep -q '^INDEX  *NAME  *IFINDEX  *KIND  *MAC$' "$TMP/out" ||
		fail "header: $(head -1 "$TMP/out")" || return
	run 1 vc guest show nosuch || return
	grep -q '^vnicctl: ' "$TMP/err" || fail "no error message"
}

# guest del: one guest's NICs go, the other guest's stay.
case_del() {
	add_mvt vm1 82 || return
	add_mvt vm2 3 || return
	run 0 vc guest del vm1 || return
	expect_eq "$(tagged vnic:vnic:vm1:)" 0 "vm1 NICs left" || return
	expect_eq "$(kind_count macvtap)" 3 "macvtaps left" || return
	run 0 vc -j guest list || return
	jq -e '[.[].guest] == ["vm2"]' "$TMP/out" >/dev/null ||
		fail "list after del: $(cat "$TMP/out")" || return
	run 0 vc guest del vm2 || return
	expect_eq "$(kind_count macvtap)" 0 "macvtaps left" || return
	run 1 vc guest del vm1
}

# A signal that comes while guest add creates its NICs (SIGTERM, as from
# timeout(1) or systemctl; SIGINT, as from ^C) ends vnicctl once the
# creation is over: every NIC it made is tagged (guest list and guest del
# see them), never a batch of untagged ones only gc, which takes every
# guest not kept, could find.  Exit by the signal (128 + its number).
case_signal_during_add() {
	local sig pid rc i
	for sig in TERM INT; do
		# set -m: a background job of a script ignores SIGINT otherwise.
		set -m
		"$VNICCTL" guest add vm1 --kind macvlan --lower lower0 --nics 4000 \
			>/dev/null 2>"$TMP/err" &
		pid=$!
		set +m
		for i in $(seq 2000); do
			[ -n "$(ip -o link show type macvlan 2>/dev/null)" ] && break
		done
		kill -"$sig" "$pid"
		wait "$pid"
		rc=$?
		expect_eq "$rc" $((128 + $(kill -l "$sig"))) "exit status on SIG$sig ($(cat "$TMP/err"))" ||
			return
		expect_eq "$(links | jq '[.[] | select(.linkinfo.info_kind? == "macvlan" and
			((.ifalias // "") | startswith("vnic:vnic:vm1:") | not))] | length')" \
			0 "untagged macvlans after SIG$sig" || return
		log "# SIG$sig: $(kind_count macvlan) macvlans made, all tagged"
		if [ "$(kind_count macvlan)" -gt 0 ]; then
			run 0 vc guest del vm1 || return
		fi
		expect_eq "$(kind_count macvlan)" 0 "macvlans after guest del" || return
	done
}

# A guest name may begin with '-' (1..64 of [A-Za-z0-9_.-]): after "--"
# it is a name, for every command that takes one, as for guest add.
case_dash_name() {
	run 0 vc guest add --kind tap -- -vm1 || return
	run 0 vc -j guest show -- -vm1 || return
	jq -e '.guest == "-vm1" and (.nics | length) == 1' "$TMP/out" >/dev/null ||
		fail "show: $(cat "$TMP/out")" || return
	run 2 vc guest del -vm1 || return	# an option, unknown
	run 0 vc guest del -- -vm1 || return
	expect_eq "$(tagged vnic:vnic:-vm1:)" 0 "-vm1's NICs after del" || return
	run 2 vc guest list -- extra || return
}

# gc: collects the orphan guest, keeps the --keep'd one and other owners'.
case_gc() {
	add_mvt keepme 3 || return
	add_mvt orphan 4 || return
	OWNER=other add_mvt theirs 2 || return
	run 0 vc gc --dry-run --keep keepme || return
	grep -Eq '^orphan +4 +macvtap$' "$TMP/out" && ! grep -q keepme "$TMP/out" ||
		fail "dry run: $(cat "$TMP/out")" || return
	expect_eq "$(kind_count macvtap)" 9 "after dry run" || return
	run 0 vc gc --keep keepme || return
	expect_eq "$(cat "$TMP/out")" "deleted 4 NICs" "gc output" || return
	expect_eq "$(tagged vnic:vnic:orphan:)" 0 "orphan NICs" || return
	expect_eq "$(tagged vnic:vnic:keepme:)" 3 "kept NICs" || return
	expect_eq "$(tagged vnic:other:theirs:)" 2 "other owner's NICs" || return
	run 0 vc -j gc || return
	jq -e '.deleted == 3' "$TMP/out" >/dev/null || fail "gc -j: $(cat "$TMP/out")" || return
	expect_eq "$(kind_count macvtap)" 2 "only the other owner's left"
}

# gc --keep with a name no guest can have: exit 2, the name in the
# message, nothing deleted (a typo must not keep nothing).
case_gc_bad_keep() {
	add_mvt vm1 2 || return
	run 2 vc gc --keep "vm 1" || return
	grep -q "^vnicctl: gc: --keep: 'vm 1' is not a guest name" "$TMP/err" ||
		fail "message: $(cat "$TMP/err")" || return
	run 2 vc gc --keep "" || return
	expect_eq "$(tagged vnic:vnic:vm1:)" 2 "vm1 NICs"
}

# The issue's reproducer: an alias that reads like our tag, written by
# someone else, gets nothing deleted (neither end of a veth); other tools'
# untagged links stay; a NIC of ours whose alias was removed (a creator
# killed before tagging) is collected.
case_gc_forged() {
	ip link add fv0 type veth peer name fv0p &&
	ip link set fv0 alias vnic:vnic:victim:0 &&
	ip link add link lower0 name fm0 type macvlan &&
	ip link set fm0 alias vnic:vnic:victim:1 &&
	ip link add link lower0 name om0 type macvlan || return
	add_mvt vm1 2 --name mv%d --naming explicit || return
	ip link set mv0 alias "" || return
	run 0 vc gc --dry-run || return
	grep -Eq '^vm1 +1 +macvtap$' "$TMP/out" && ! grep -q victim "$TMP/out" ||
		fail "dry run: $(cat "$TMP/out")" || return
	run 0 vc gc || return
	expect_eq "$(cat "$TMP/out")" "deleted 2 NICs" "gc output" || return
	for l in fv0 fv0p fm0 om0 lower0 lower0p; do
		ip link show "$l" >/dev/null 2>&1 || fail "$l deleted" || return
	done
	expect_eq "$(kind_count macvtap)" 0 "macvtaps left"
}

# An unknown lower device: non-zero exit, a message, nothing created.
case_err_lower() {
	run nz vc guest add vm1 --kind macvtap --lower nosuch0 --nics 4 || return
	grep -q '^vnicctl: guest vm1: ..*' "$TMP/err" ||
		fail "message: $(cat "$TMP/err")" || return
	[ ! -s "$TMP/out" ] || fail "stdout not empty" || return
	expect_eq "$(kind_count macvtap)" 0 "macvtaps" || return
	expect_eq "$(tagged vnic:)" 0 "tagged links"
}

# All or nothing: NIC 5's name is taken, so the kernel refuses it and the
# NICs created before it are deleted again; the message names the NIC.
case_err_rollback() {
	ip link add x5 type veth peer name x5p || return
	run 1 vc guest add vm1 --kind macvlan --lower lower0 --nics 10 \
		--name x%d --naming explicit || return
	grep -q '^vnicctl: guest vm1: .*\(x5\|nic 5\)' "$TMP/err" ||
		fail "message: $(cat "$TMP/err")" || return
	grep -qi 'exists' "$TMP/err" || fail "no EEXIST text: $(cat "$TMP/err")" || return
	expect_eq "$(kind_count macvlan)" 0 "macvlans left" || return
	expect_eq "$(tagged vnic:)" 0 "tagged links"
}

# The kernel refuses NIC 0 (an MTU over the lower's): exit 1, the step and
# the NIC in the message, nothing left.  An MTU no device can have is refused
# by the library's checks before anything is sent: exit 2.
case_err_kernel() {
	# Above the tun driver's maximum MTU: the kernel's extack, nothing left.
	run 1 vc guest add vm1 --kind tap --nics 3 --mtu 65535 || return
	grep -q '^vnicctl: guest vm1: .*nic 0.*Invalid argument: mtu greater than device maximum' "$TMP/err" ||
		fail "message: $(cat "$TMP/err")" || return
	expect_eq "$(kind_count tun)" 0 "taps left" || return
	run 2 vc guest add vm1 --kind macvlan --lower lower0 --nics 3 \
		--mtu 70000 || return
	grep -q '^vnicctl: guest add: --mtu: .70000. is not a number in 68..65535' "$TMP/err" ||
		fail "message: $(cat "$TMP/err")" || return
	expect_eq "$(tagged vnic:)" 0 "tagged links"
}

# --append adds NICs with the next indexes; without it a second add fails.
case_append() {
	add_mvt vm1 2 || return
	run 1 vc guest add vm1 --kind macvtap --lower lower0 || return
	grep -q 'already exists' "$TMP/err" || fail "message: $(cat "$TMP/err")" || return
	run 0 vc -j guest add vm1 --append --kind macvlan --lower lower0 --nics 2 ||
		return
	jq -e '[.nics[].index] == [2, 3] and all(.nics[]; .kind == "macvlan")' \
		"$TMP/out" >/dev/null || fail "append: $(cat "$TMP/out")" || return
	jqe '[.[] | .ifalias // empty | select(startswith("vnic:vnic:vm1:"))] | sort
	     == ["vnic:vnic:vm1:0", "vnic:vnic:vm1:1", "vnic:vnic:vm1:2",
		 "vnic:vnic:vm1:3"]'
}

# Bad usage exits 2 and does nothing.
case_usage() {
	local args
	while IFS= read -r args; do
		# shellcheck disable=SC2086
		run 2 vc $args || return
		grep -q '^vnicctl: ' "$TMP/err" || fail "'$args': no message" || return
	done <<-EOF
	frobnicate
	--bogus features
	guest add
	guest add vm1
	guest add vm1 --kind ether --lower lower0
	guest add vm1 --kind macvtap
	guest add vm1 --kind macvtap --lower lower0 --nics 0
	guest add vm1 --kind macvtap --lower lower0 --nics many
	guest add vm1 --kind macvtap --lower lower0 --nics 2 --mac 02:00:00:00:00:01
	guest add vm1 --kind macvtap --lower lower0 --mode sideways
	guest add vm1 --kind tap --lower lower0
	guest add vm1 --kind veth --nics 2 --peer-name p0
	guest add vm1 --kind veth
	guest add vm1 vm2 --kind tap
	guest add bad/name --kind macvtap --lower lower0
	guest add vm1 --kind macvtap --lower lower0 --mac 02:00:00:00:00:zz
	guest add vm1 --kind veth --peer-name 0123456789abcdef
	-o bad:owner guest list
	guest show
	guest frob
	gc vm1
	gc --keep bad/name
	gc --keep vm:1
	gc --keep a23456789012345678901234567890123456789012345678901234567890123456
	EOF
	run 2 vc || return
	expect_eq "$(tagged vnic:)" 0 "tagged links" || return
	expect_eq "$(ip -o link | wc -l)" 3 "links (lo, lower0, lower0p)"
}

# An option that is not unknown is not called unknown: an abbreviation of
# several options names them, a flag given "=ARG" says it takes none;
# exit 2, nothing made.
case_usage_messages() {
	local args want
	while IFS='|' read -r args want; do
		# shellcheck disable=SC2086
		run 2 vc $args || return
		expect_eq "$(head -1 "$TMP/err")" "vnicctl: $want" "'$args'" || return
	done <<-'EOF'
	guest add vm1 --kind veth --peer p0|guest add: option '--peer' is ambiguous: --peer-name, --peer-netns, --peer-up
	guest add vm1 --kind macvtap --lower lower0 --nic 2|guest add: option '--nic' is ambiguous: --nics, --nic-netns
	guest add vm1 --kind tap --up=1|guest add: option '--up' takes no argument
	--n x guest list|option '--n' is ambiguous: --netns, --no-owner
	--json=1 guest list|option '--json' takes no argument
	gc --dry-run=yes|gc: option '--dry-run' takes no argument
	guest add vm1 --kind tap --frob|guest add: unknown option '--frob'
	EOF
	expect_eq "$(tagged vnic:)" 0 "tagged links"
}

# A guest whose NIC 1 was deleted behind its back: show keeps the tag
# indexes (0, 2) and --append takes a fresh one (3), never a used one.
case_gap() {
	run 0 vc guest add vm1 --kind macvlan --lower lower0 --nics 3 \
		--name m%d --naming explicit || return
	ip link del m1 || return
	run 0 vc -j guest show vm1 || return
	jq -e '[.nics[] | "\(.index)=\(.name)"] == ["0=m0", "2=m2"]' "$TMP/out" \
		>/dev/null || fail "show: $(cat "$TMP/out")" || return
	run 0 vc guest add vm1 --append --kind macvlan --lower lower0 || return
	jqe '[.[] | .ifalias // empty] | sort ==
	     ["vnic:vnic:vm1:0", "vnic:vnic:vm1:2", "vnic:vnic:vm1:3"]'
}

# The %d of --name and --peer-name is the index the NIC is tagged with, on
# --append too: after a gap (NIC 1 gone) the next NIC is index 3 and named
# c1h3/c1p3, neither refused for the name of NIC 2 nor named c1h2's
# neighbour c1h1 with index 3.
case_append_template() {
	local args=(--kind veth --name c1h%d --naming explicit --peer-name c1p%d)
	run 0 vc guest add c1 "${args[@]}" --nics 3 || return
	ip link del c1h1 || return
	run 0 vc -j guest add c1 --append "${args[@]}" || return
	jq -e '[.nics[] | "\(.index)=\(.name)>\(.peer)"] == ["3=c1h3>c1p3"]' \
		"$TMP/out" >/dev/null || fail "append: $(cat "$TMP/out")" || return
	run 0 vc -j guest add c1 --append "${args[@]}" --nics 2 || return
	jq -e '[.nics[] | "\(.index)=\(.name)>\(.peer)"] == ["4=c1h4>c1p4", "5=c1h5>c1p5"]' \
		"$TMP/out" >/dev/null || fail "append 2: $(cat "$TMP/out")" || return
	jqe '[.[] | select(.ifname | startswith("c1h")) | "\(.ifname)=\(.ifalias)"] | sort ==
	     ["c1h0=vnic:vnic:c1:0", "c1h2=vnic:vnic:c1:2", "c1h3=vnic:vnic:c1:3",
	      "c1h4=vnic:vnic:c1:4", "c1h5=vnic:vnic:c1:5"]'
}

# veth: peers named from the %d template, the pair tagged; add and show
# print the peers.
case_veth() {
	local pairs='[.nics[] | .name + ">" + .peer] ==
		     ["c1h0>c1p0", "c1h1>c1p1", "c1h2>c1p2"]'
	run 0 vc -j guest add c1 --kind veth --nics 3 --name c1h%d \
		--naming explicit --peer-name c1p%d --up || return
	jq -e "$pairs" "$TMP/out" >/dev/null || fail "add: $(cat "$TMP/out")" || return
	jqe '[.[] | select(.ifname | test("^c1h[0-2]$")) | .ifalias] | sort ==
	     ["vnic:vnic:c1:0", "vnic:vnic:c1:1", "vnic:vnic:c1:2"]' || return
	jqe '[.[] | select(.ifname | test("^c1p[0-2]$"))] | length == 3' || return
	run 0 vc -j guest show c1 || return
	jq -e "$pairs" "$TMP/out" >/dev/null || fail "show: $(cat "$TMP/out")"
}

# veth --peer-up: both ends up.
case_veth_peer_up() {
	run 0 vc guest add c1 --kind veth --nics 2 --peer-name c1p%d --up \
		--peer-up || return
	jqe '[.[] | select(.ifname | test("^c1p[01]$")) | .flags | index("UP")] |
	     length == 2 and all'
}

# tap: persistent by default, so it outlives vnicctl.
case_tap() {
	run 0 vc guest add vm1 --kind tap --nics 2 --name vm1t%d \
		--naming explicit --vnet-hdr || return
	run 0 vc guest add vm2 --kind tun || return
	run 0 vc -j guest show vm2 || return
	jq -e '.nics[0].kind == "tun" and (.nics[0] | has("mac") | not)' \
		"$TMP/out" >/dev/null || fail "tun: $(cat "$TMP/out")" || return
	run 0 vc guest del vm2 || return
	jqe '[.[] | select(.linkinfo.info_kind? == "tun" and
			   .linkinfo.info_data.type == "tap" and
			   .linkinfo.info_data.persist == true) | .ifname] | sort ==
	     ["vm1t0", "vm1t1"]' || return
	run 0 vc guest del vm1 || return
	expect_eq "$(kind_count tun)" 0 "taps left"
}

# -n: work in another namespace (a child held by a sleeping process).
case_netns() {
	local pid rc=0
	netns_child pid || rc=1
	[ "$rc" = 0 ] && { run 0 vc -n "/proc/$pid/ns/net" guest add c1 \
		--kind veth --nics 2 --peer-name c1p%d || rc=1; }
	[ "$rc" = 0 ] && { nsenter -t "$pid" -n ip -j link | jq -e \
		'[.[] | select(.ifname | test("^c1p[01]$"))] | length == 2' \
		>/dev/null || { fail "peers not in the namespace"; rc=1; }; }
	[ "$rc" = 0 ] && { expect_eq "$(tagged vnic:)" 0 "tagged here" || rc=1; }
	[ "$rc" = 0 ] && { run 0 vc -j -n "/proc/$pid/ns/net" guest list || rc=1; }
	[ "$rc" = 0 ] && { jq -e '.[0].guest == "c1"' "$TMP/out" >/dev/null ||
		{ fail "list -n: $(cat "$TMP/out")"; rc=1; }; }
	kill "$pid"
	wait "$pid" 2>/dev/null
	return $rc
}

# features: a JSON object of booleans; this kernel has them all.
case_features() {
	run 0 vc -j features || return
	jq -e 'type == "object" and all(.[]; type == "boolean") and
	       .macvtap and .veth and .macvlan' "$TMP/out" >/dev/null ||
		fail "features: $(cat "$TMP/out")" || return
	run 0 vc features || return
	grep -Eq '^macvtap +yes$' "$TMP/out" || fail "features: $(cat "$TMP/out")"
}

# help and version: exit 0, on stdout.
case_help() {
	run 0 vc --help || return
	grep -q '^Usage: vnicctl' "$TMP/out" || fail "--help: $(cat "$TMP/out")" || return
	run 0 vc help add || return
	grep -q -- '--peer-name' "$TMP/out" || fail "help add" || return
	run 0 vc guest add --help || return
	grep -q -- '--lower' "$TMP/out" || fail "guest add --help" || return
	run 0 vc --version || return
	grep -Eq '^vnicctl \(libvnic\) [0-9]+\.[0-9]+' "$TMP/out" ||
		fail "--version: $(cat "$TMP/out")"
}

# Output that cannot be written (a full disk) is exit status 1 with a
# message, never 0 with the answer cut: for a reading command and for one
# that made a change (which stays, the man page says); 2 for filter diff.
case_stdout_full() {
	local c
	for c in "guest add vm1 --kind tap" "-j features" "features" "--version" \
		 "help" "guest list" "-j guest list"; do
		# shellcheck disable=SC2086
		vc $c >/dev/full 2>"$TMP/err"
		expect_eq "$?" 1 "exit status of '$c' >/dev/full" || return
		grep -q '^vnicctl: writing standard output: No space left on device' "$TMP/err" ||
			fail "'$c': $(cat "$TMP/err")" || return
	done
	expect_eq "$(tagged vnic:vnic:vm1:)" 1 "vm1's NIC (the change stays)" || return
	# filter diff: 1 means "differs", so its error status, 2.
	echo '{"guests": []}' >"$TMP/empty.json"
	vc filter diff "$TMP/empty.json" >/dev/full 2>"$TMP/err"
	expect_eq "$?" 2 "exit status of 'filter diff' >/dev/full ($(cat "$TMP/err"))"
}

CASES=(stdout_full add_82 list_json show del gc gc_bad_keep gc_forged err_lower err_rollback err_kernel usage usage_messages
       append gap append_template veth veth_peer_up tap netns features help
       signal_during_add dash_name)

# ------------------------------------------------------------------- main

setup_case() { setup_ns; }

tap_main ip jq unshare nsenter -- "$@"
