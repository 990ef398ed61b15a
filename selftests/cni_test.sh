#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-cni, run exactly as a container runtime runs a CNI plugin: the verb
# and the attachment in CNI_* variables, the configuration on stdin, the
# result or an error object on stdout.  IPAM is Debian's stock host-local
# with a private dataDir; a "container" is a network namespace held by a
# sleeping process.  Each case runs in a namespace of its own (cli_lib.sh),
# which plays the host.  Frames are real: UDP from the container end to the
# host end's address counts in the host's Udp NoPorts when delivered, and in
# the attachment's drop counter (vnicctl filter show) when the filter drops
# it.
. "$(dirname "$0")/cli_lib.sh"

CNI=${VNIC_CNI:-$here/../build/vnic-cni}
STOCK=/usr/lib/cni
LONG=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
HOLDERS=()

jqo() { jq -e "$1" "$TMP/out" >/dev/null || fail "jq '$1' on: $(cat "$TMP/out")"; }

# container VAR: a namespace held by a sleeping child (killed when the case
# ends), its path in VAR.
container() {
	local ready=$TMP/ready.$RANDOM
	unshare -n sh -c "touch $ready; exec sleep 600" >/dev/null 2>&1 &
	HOLDERS+=($!)
	while [ ! -e "$ready" ]; do sleep 0.01; done
	# unshare has run once the file exists: the child is in its namespace.
	printf -v "$1" '/proc/%s/ns/net' "$!"
}

# conf [JSON-TO-MERGE]: the network configuration, on stdout.
conf() {
	jq -c ". * ${1:-{\}} * ${CONF_EXTRA:-{\}} |
	       if .filterBackend == \"bpf\" then del(.table) else . end" <<EOC
{"cniVersion": "1.1.0", "name": "net1", "type": "vnic-cni", "table": "vnic",
 "dataDir": "$TMP/state",
 "ipam": {"type": "host-local", "dataDir": "$TMP/ipam",
	  "ranges": [[{"subnet": "10.9.0.0/24", "gateway": "10.9.0.1"}]],
	  "routes": [{"dst": "0.0.0.0/0"}]}}
EOC
}

# cni VERB CID IFNAME NETNS CONF: one call; stdout in $TMP/out, rc returned;
# CNI_ARGS from CNI_ARGS_T.
cni() {
	CNI_COMMAND=$1 CNI_CONTAINERID=$2 CNI_IFNAME=$3 CNI_NETNS=$4 \
		CNI_PATH=${CNI_PATH_T:-$STOCK} CNI_ARGS=${CNI_ARGS_T:-} \
		"$CNI" <<<"$5" >"$TMP/out" 2>"$TMP/err"
}

# add CID NETNS [CONF]: ADD that must succeed; its result in $TMP/res.CID.
add() {
	cni ADD "$1" eth0 "$2" "${3:-$(conf)}" ||
		fail "ADD $1: $(cat "$TMP/out" "$TMP/err")" || return
	cp "$TMP/out" "$TMP/res.$1"
}

# The result as prevResult of a configuration (for CHECK).
with_prev() {
	jq -c --slurpfile r "$TMP/res.$1" '. + {prevResult: ($r[0] | del(.cniVersion))}' <<<"$2"
}

host_end() { jq -r '.interfaces[0].name' "$TMP/res.$1"; }
cont_ip() { jq -r '.ips[0].address | sub("/.*"; "")' "$TMP/res.$1"; }
in_ns() { nsenter --net="$1" "${@:2}"; }
noports() { awk '/^Udp: [0-9]/ { print $3 }' /proc/net/snmp; }
ns_noports() { in_ns "$1" awk '/^Udp: [0-9]/ { print $3 }' /proc/net/snmp; }
leases() { ls "$TMP/ipam/net1" 2>/dev/null | grep -c '^10\.' ; }
states() { ls "$TMP/state/net1" 2>/dev/null | grep -vc '\.tmp$'; }
# The filter backend vnicctl reads: the one the case's configuration names.
vcf() { vc ${VC_BACKEND:+--backend "$VC_BACKEND"} "$@"; }
drops() {
	vcf -j filter show >"$TMP/show" || return
	jq -r --arg g "$1" '.[] | select(.guest == $g) | .packets' "$TMP/show"
}
# A failed show prints what failed: "" would pass for "no guest left".
guests() {
	local o
	o=$(vcf -j filter show 2>&1) || { echo "(filter show failed: $o)"; return 1; }
	jq -r '[.[].guest] | sort | join(" ")' <<<"$o"
}
links() { ip -o link show | awk -F': ' '{ print $2 }' | sed 's/@.*//' | sort | tr '\n' ' '; }

gt() { [ "$($1 "${@:3}")" -gt "$2" ]; }

# One UDP datagram from the container to the host end's address.
send_udp() {
	in_ns "$1" bash -c 'echo x >/dev/udp/10.9.0.1/9' 2>/dev/null
}

setup_case() {
	trap 'kill "${HOLDERS[@]}" 2>/dev/null; rm -rf "$TMP"' EXIT
	ip link set lo up
}

# ADD: the host end named and tagged by libvnic, the container end in the
# container under CNI_IFNAME (which the host also has) with host-local's
# address, the filter
# installed; a legit datagram is delivered, one from an address the
# container gave itself is dropped and counted, as is one from a MAC it
# gave itself.
case_add_filters_real_frames() {
	local ns h before cbefore mac dropped
	# The host has an eth0 too: the container end's name is checked in
	# the container's namespace only.
	ip link add eth0 type veth peer name eth0p || return
	container ns && add c1 "$ns" || return
	jq -e '.cniVersion == "1.1.0" and (.interfaces | length) == 2 and
	       .interfaces[1].name == "eth0" and .interfaces[1].sandbox != null and
	       .ips[0].interface == 1 and .ips[0].gateway == "10.9.0.1" and
	       (.ips[0].address | startswith("10.9.0."))' "$TMP/res.c1" >/dev/null ||
		fail "result: $(cat "$TMP/res.c1")" || return
	h=$(host_end c1)
	ip -j -d link show "$h" >"$TMP/out" || return
	jqo '.[0].ifalias == "vnic:net1:c1.eth0:0" and .[0].linkinfo.info_kind == "veth"' || return
	# The host end: the gateway as a /32, a host route to the container.
	ip -j addr show "$h" >"$TMP/out" || return
	jqo '.[0].addr_info | any(.local == "10.9.0.1" and .prefixlen == 32)' || return
	ip -j route show dev "$h" >"$TMP/out" || return
	jq -e --arg ip "$(cont_ip c1)" 'any(.dst == $ip)' "$TMP/out" >/dev/null ||
		fail "host route: $(cat "$TMP/out")" || return
	in_ns "$ns" ip -j addr show eth0 >"$TMP/out" || return
	jq -e --arg ip "$(cont_ip c1)" '.[0].addr_info | any(.local == $ip)' "$TMP/out" >/dev/null ||
		fail "container address: $(cat "$TMP/out")" || return
	mac=$(jq -r '.interfaces[1].mac' "$TMP/res.c1")
	in_ns "$ns" ip -j link show eth0 | jq -e --arg m "$mac" '.[0].address == $m' >/dev/null ||
		fail "container MAC is not the result's $mac" || return
	expect_eq "$(guests)" "c1.eth0" "filter guests" || return
	before=$(noports)
	send_udp "$ns"
	until_ok gt noports "$before" || fail "legit datagram not delivered" || return
	expect_eq "$(noports)" "$((before + 1))" "datagrams delivered" || return
	expect_eq "$(drops c1.eth0)" 0 "drops before spoofing" || return
	# To the container: delivered, through no egress hook (the routed host
	# end needs no no-promisc: cni.rst, "What each mode protects").
	no_egress_hook "$h" || return
	cbefore=$(ns_noports "$ns")
	echo x >"/dev/udp/$(cont_ip c1)/9" || return
	until_ok gt ns_noports "$cbefore" "$ns" ||
		fail "datagram to the container not delivered" || return
	# The neighbour is resolved now: the next datagrams go out at once.
	in_ns "$ns" ip addr add 10.9.0.77/24 dev eth0 &&
	in_ns "$ns" ip route replace 10.9.0.1 dev eth0 src 10.9.0.77 || return
	send_udp "$ns"
	until_ok gt drops 0 c1.eth0 || fail "spoofed datagram not counted" || return
	expect_eq "$(noports)" "$((before + 1))" "spoofed datagram dropped" || return
	dropped=$(drops c1.eth0)
	in_ns "$ns" ip route del 10.9.0.1 dev eth0 &&
	in_ns "$ns" ip link set eth0 address 02:00:00:00:00:99 || return
	send_udp "$ns"
	until_ok gt drops "$dropped" c1.eth0 || fail "MAC-spoofed datagram not counted" || return
	expect_eq "$(noports)" "$((before + 1))" "MAC-spoofed datagram dropped"
}

# cont_mac NETNS: the MAC of eth0 in the container.
cont_mac() { in_ns "$1" ip -j link show eth0 | jq -r '.[0].address'; }

# The MAC a runtime asks for (CONVENTIONS: the "mac" capability, which
# libcni passes as runtimeConfig.mac, podman --mac-address; "args": {"cni":
# {"mac"}}; CNI_ARGS MAC=) is the container end's, the result's and the
# filter's: a datagram from it is delivered, one from another MAC the
# container gives itself is dropped and counted.  runtimeConfig wins over
# args, args over CNI_ARGS (with IgnoreUnknown=1: a runtime passes
# CNI_ARGS to every plugin, and host-local refuses keys it does not know).
# vnic-cni ignored all three: the container got a random MAC.  DEL
# ignores the MAC, a bad one too.  cnitool's case passes one as libcni
# does.
case_mac_asked_by_the_runtime() {
	local ns1 ns2 ns3 ns4 before c
	c=$(conf '{"capabilities": {"mac": true}, "runtimeConfig": {"mac": "02:11:22:33:44:55"}}')
	container ns1 && add c1 "$ns1" "$c" || return
	expect_eq "$(cont_mac "$ns1")" 02:11:22:33:44:55 "c1's MAC" || return
	expect_eq "$(jq -r '.interfaces[1].mac' "$TMP/res.c1")" 02:11:22:33:44:55 \
		"c1's MAC in the result" || return
	before=$(noports)
	send_udp "$ns1"
	until_ok gt noports "$before" || fail "datagram from the asked MAC not delivered" || return
	expect_eq "$(drops c1.eth0)" 0 "drops from the asked MAC" || return
	in_ns "$ns1" ip link set eth0 address 02:11:22:33:44:66 || return
	send_udp "$ns1"
	until_ok gt drops 0 c1.eth0 || fail "datagram from another MAC not counted" || return
	expect_eq "$(noports)" "$((before + 1))" "datagram from another MAC dropped" || return
	container ns2 && add c2 "$ns2" "$(conf '{"args": {"cni": {"mac": "02:AA:BB:CC:DD:EE"}}}')" || return
	expect_eq "$(cont_mac "$ns2")" 02:aa:bb:cc:dd:ee "c2's MAC (args)" || return
	expect_eq "$(jq -r '.interfaces[1].mac' "$TMP/res.c2")" 02:aa:bb:cc:dd:ee \
		"c2's MAC in the result" || return
	container ns3 && CNI_ARGS_T='IgnoreUnknown=1;MAC=02:00:00:00:c3:01' add c3 "$ns3" || return
	expect_eq "$(cont_mac "$ns3")" 02:00:00:00:c3:01 "c3's MAC (CNI_ARGS)" || return
	container ns4 && CNI_ARGS_T='IgnoreUnknown=1;MAC=02:00:00:00:c4:01' add c4 "$ns4" \
		"$(conf '{"runtimeConfig": {"mac": "02:00:00:00:c4:02"}, "args": {"cni": {"mac": "02:00:00:00:c4:03"}}}')" || return
	expect_eq "$(cont_mac "$ns4")" 02:00:00:00:c4:02 "c4's MAC (runtimeConfig first)" || return
	cni CHECK c2 eth0 "$ns2" "$(with_prev c2 "$(conf)")" || fail "CHECK c2: $(cat "$TMP/out")" || return
	cni DEL c1 eth0 "$ns1" "$(conf '{"runtimeConfig": {"mac": "bad"}}')" ||
		fail "DEL with a bad MAC: $(cat "$TMP/out")" || return
	expect_eq "$(guests)" "c2.eth0 c3.eth0 c4.eth0" "guests after DEL c1"
}

# macvlan: the asked MAC is the macvlan's, and the result's.  A second
# container asked onto the same MAC on that lower device fails (103, the
# kernel's EADDRINUSE) and leaves nothing.
case_macvlan_mac_asked_by_the_runtime() {
	local ns1 ns2 c
	ip link add lower0 type veth peer name lower1 && ip link set lower0 up || return
	c=$(conf '{"mode": "macvlan", "master": "lower0",
		   "runtimeConfig": {"mac": "02:11:22:33:44:55"}}')
	container ns1 && add c1 "$ns1" "$c" || return
	expect_eq "$(cont_mac "$ns1")" 02:11:22:33:44:55 "the macvlan's MAC" || return
	expect_eq "$(jq -r '.interfaces[0].mac' "$TMP/res.c1")" 02:11:22:33:44:55 \
		"the MAC in the result" || return
	container ns2 || return
	cni ADD c2 eth0 "$ns2" "$c" && { fail "a second ADD onto the MAC passed"; return 1; }
	jqo '.code == 103 and (.details | test("in use"))' || return
	in_ns "$ns2" ip link show eth0 >/dev/null 2>&1 && { fail "eth0 left in c2"; return 1; }
	expect_eq "$(leases)" 1 "leases (c1's)" || return
	expect_eq "$(states)" 1 "state files (c1's)"
}

# udp_reaches FROM TO IP: a datagram sent from namespace FROM to IP is
# counted in TO's NoPorts (IPv4 or IPv6); sent again while it is not.
udp_reaches() {
	local before i
	before=$(ns_udp_noports "$2")
	for i in $(seq 30); do
		in_ns "$1" bash -c "echo x >/dev/udp/$3/9" 2>/dev/null
		[ "$(ns_udp_noports "$2")" -gt "$before" ] && return 0
		sleep 0.1
	done
	return 1
}
ns_udp_noports() {
	in_ns "$1" awk '/^Udp: [0-9]/ { n += $3 } /^Udp6NoPorts/ { n += $2 }
			END { print n }' /proc/net/snmp /proc/net/snmp6
}

# The container routes of FAMILY (-4, -6) in NETNS as "dst via gateway"
# lines, sorted; link-local and multicast left out.
cont_routes() {
	in_ns "$2" ip -j "$1" route show dev eth0 |
		jq -r '.[] | select(.dst | test("^f[ef]") | not) |
		       "\(.dst) via \(.gateway // "link")"' | sort | tr '\n' ';'
}

# ptp_routes FAMILY NETNS CONF: stock ptp's ADD of CONF (made 1.0.0, the
# version it speaks) into NETNS; its container routes, as cont_routes.
ptp_routes() {
	CNI_COMMAND=ADD CNI_CONTAINERID=ptp1 CNI_IFNAME=eth0 CNI_NETNS=$2 \
		CNI_PATH=$STOCK "$STOCK/ptp" >"$TMP/out" 2>"$TMP/err" \
		<<<"$(jq -c '.cniVersion = "1.0.0" | .type = "ptp"' <<<"$3")" ||
		{ fail "ptp ADD: $(cat "$TMP/out" "$TMP/err")"; return 1; }
	cont_routes "$1" "$2"
}

# veth: the host end is a router, not a segment.  Two containers of one
# network reach each other through it, both ways: each has its subnet via
# the gateway (the host end answers for the gateway; nothing on the link
# would answer its ARP for a neighbour), and the host forwards.  The stock
# ptp plugin gives a container the same routes.
case_containers_reach_each_other() {
	local ns1 ns2 ns3 want
	container ns1 && container ns2 && container ns3 || return
	add c1 "$ns1" && add c2 "$ns2" || return
	udp_reaches "$ns1" "$ns2" "$(cont_ip c2)" ||
		fail "c1 -> c2 not delivered; c1: $(cont_routes -4 "$ns1")" || return
	udp_reaches "$ns2" "$ns1" "$(cont_ip c1)" || fail "c2 -> c1 not delivered" || return
	expect_eq "$(cont_routes -4 "$ns1")" \
		"10.9.0.0/24 via 10.9.0.1;10.9.0.1 via link;default via 10.9.0.1;" \
		"c1's routes" || return
	want=$(ptp_routes -4 "$ns3" "$(conf)") || return
	expect_eq "$(cont_routes -4 "$ns1")" "$want" \
		"c1's routes against stock ptp's"
}

# IPv6 the same way: the host end holds the IPv6 gateway (a /128, as it
# holds the IPv4 one), which the container resolves there and reaches
# (UDP counted in the host's Udp6NoPorts), and two containers reach each
# other through it.  The stock ptp plugin gives a container the same
# routes.
case_ipv6_via_the_gateway() {
	local ns1 ns2 ns3 c6 want
	c6=$(conf '{"ipam": {"ranges": [[{"subnet": "fd00:9::/64", "gateway": "fd00:9::1"}]],
		     "routes": [{"dst": "::/0"}]}}')
	container ns1 && container ns2 && container ns3 || return
	add c1 "$ns1" "$c6" && add c2 "$ns2" "$c6" || return
	ip -j addr show "$(host_end c1)" >"$TMP/out" || return
	jqo '.[0].addr_info | any(.local == "fd00:9::1" and .prefixlen == 128)' || return
	udp_reaches "$ns1" "/proc/$$/ns/net" fd00:9::1 ||
		fail "c1 -> the gateway not delivered" || return
	udp_reaches "$ns1" "$ns2" "$(cont_ip c2)" ||
		fail "c1 -> c2 not delivered; c1: $(cont_routes -6 "$ns1")" || return
	udp_reaches "$ns2" "$ns1" "$(cont_ip c1)" || fail "c2 -> c1 not delivered" || return
	expect_eq "$(cont_routes -6 "$ns1")" \
		"default via fd00:9::1;fd00:9::/64 via fd00:9::1;fd00:9::1 via link;" \
		"c1's routes" || return
	want=$(ptp_routes -6 "$ns3" "$c6") || return
	expect_eq "$(cont_routes -6 "$ns1")" "$want" "c1's routes against stock ptp's"
}

# nft: the host end is hooked on ingress only, by one base chain (the bpf
# backend's hooks go by NIC kind: a veth's egress filter stays, and finds
# no-promisc off in the NIC's flags).
no_egress_hook() {
	if [ "$VC_BACKEND" = bpf ]; then
		tc filter show dev "$1" ingress | grep -q vnic ||
			fail "no vnic filter on $1 ingress"
		return
	fi
	nft_json netdev vnic >"$TMP/out" || return
	jqo '[.nftables[].chain | select(. != null and .hook == "ingress")] | length == 1' &&
	jqo '[.nftables[].chain | select(. != null and .hook == "egress")] | length == 0'
}

# The same through the bpf backend ("filterBackend": "bpf"): a cls_bpf
# filter on the host end, seen by tc, and the same frames dropped.
case_bpf_backend_real_frames() {
	CONF_EXTRA='{"filterBackend": "bpf"}' VC_BACKEND=bpf \
		case_add_filters_real_frames || return
	tc filter show dev "$(host_end c1)" ingress | grep -q 'vnic' ||
		fail "no vnic cls_bpf filter on $(host_end c1)"
}

# DEL removes NIC, filter, lease and state; a second DEL succeeds and
# changes nothing; so does a DEL once the container is gone.
case_del_twice() {
	local ns base
	base=$(links)
	container ns && add c1 "$ns" || return
	expect_eq "$(leases)" 1 "lease after ADD" || return
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "DEL: $(cat "$TMP/out")" || return
	[ ! -s "$TMP/out" ] || fail "DEL printed $(cat "$TMP/out")" || return
	expect_eq "$(links)" "$base" "links after DEL" || return
	expect_eq "$(guests)" "" "filter guests after DEL" || return
	expect_eq "$(leases)" 0 "leases after DEL" || return
	expect_eq "$(states)" 0 "state files after DEL" || return
	in_ns "$ns" ip link show eth0 >/dev/null 2>&1 && { fail "eth0 still in the container"; return 1; }
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "second DEL: $(cat "$TMP/out")" || return
	cni DEL c1 eth0 "" "$(conf)" || fail "DEL without netns: $(cat "$TMP/out")" || return
	expect_eq "$(links)" "$base" "links after the second DEL"
}

# DEL finds the host end by the name its state file keeps (no dump of
# every link): it goes.  A state file without that name (an older vnic-cni)
# falls back to the dump: it goes too.  A host end renamed behind
# vnic-cni's back is not under the kept name: the dump finds it by its tag
# and DEL removes it; a foreign link that took the name is not ours (no
# tag): DEL leaves it.
case_del_finds_host_end_by_kept_name() {
	local ns1 ns2 ns3 st=$TMP/state/net1 h3
	container ns1 && container ns2 && container ns3 || return
	add c1 "$ns1" && add c2 "$ns2" && add c3 "$ns3" || return
	expect_eq "$(jq -r .host "$st/c1.eth0")" "$(host_end c1)" "host end kept" || return
	cni DEL c1 eth0 "$ns1" "$(conf)" || fail "DEL c1: $(cat "$TMP/out")" || return
	ip link show "$(host_end c1)" >/dev/null 2>&1 && { fail "c1's host end left"; return 1; }
	jq -c 'del(.host)' "$st/c2.eth0" >"$TMP/s" && mv "$TMP/s" "$st/c2.eth0" || return
	cni DEL c2 eth0 "$ns2" "$(conf)" || fail "DEL c2: $(cat "$TMP/out")" || return
	ip link show "$(host_end c2)" >/dev/null 2>&1 && { fail "c2's host end left"; return 1; }
	h3=$(host_end c3)
	ip link set "$h3" name moved3 && ip link add "$h3" type veth peer name foreign3 || return
	cni DEL c3 eth0 "$ns3" "$(conf)" || fail "DEL c3: $(cat "$TMP/out")" || return
	ip link show "$h3" >/dev/null 2>&1 || fail "DEL took the foreign link named $h3" || return
	ip link show moved3 >/dev/null 2>&1 && { fail "the renamed host end was left"; return 1; }
	in_ns "$ns3" ip link show eth0 >/dev/null 2>&1 && { fail "eth0 left in c3"; return 1; }
	expect_eq "$(guests)" "" "filter guests after the DELs"
}

# The nft features kept in dataDir/_nft-features are only a hint: a file
# with bits this libvnic does not know (corrupted, or written by a newer
# one before a downgrade) makes vnic-cni probe and rewrite it, and ADD and
# DEL work.
case_bogus_features_file_probes() {
	local ns f=$TMP/state/_nft-features
	container ns && mkdir -p "$TMP/state" || return
	echo "$(cat /proc/sys/kernel/random/boot_id) ffffffff" >"$f" || return
	add c1 "$ns" || return
	expect_eq "$(guests)" "c1.eth0" "filter guests after ADD" || return
	read -r _ bits <"$f" || return
	[ "$bits" != ffffffff ] && [ "$((16#$bits))" -gt 0 ] ||
		fail "features file not rewritten: $(cat "$f")" || return
	echo "$(cat /proc/sys/kernel/random/boot_id) ffffffff" >"$f" || return
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "DEL: $(cat "$TMP/out")" || return
	expect_eq "$(guests)" "" "filter guests after DEL"
}

# The IPAM plugin's negotiated version is written aside and renamed into
# place (STATUS reads it without the dataDir lock): no call opens the
# cache file itself for writing, which would show a reader half a line.
case_ipam_version_cache_renamed_into_place() {
	local ns
	command -v strace >/dev/null || { echo "no strace"; exit 77; }
	container ns || return
	CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_IFNAME=eth0 CNI_NETNS=$ns \
		CNI_PATH=$STOCK strace -f -e trace=openat,rename,renameat,renameat2 -o "$TMP/trace" \
		"$CNI" <<<"$(conf)" >"$TMP/out" || fail "ADD: $(cat "$TMP/out")" || return
	grep -Eq 'rename[a-z0-9]*\(.*/_ipam-host-local-1\.1\.0\.version\.[A-Za-z0-9]{6}", .*/_ipam-host-local-1\.1\.0\.version"' \
		"$TMP/trace" || fail "not renamed: $(grep _ipam "$TMP/trace")" || return
	grep -E 'openat\(.*_ipam-host-local-1\.1\.0\.version", O_WRONLY' "$TMP/trace" &&
		{ fail "the cache file was written in place"; return 1; }
	expect_eq "$(cut -d' ' -f2 "$TMP/state/_ipam-host-local-1.1.0.version")" 1.0.0 \
		"the version kept"
}

# Networks named like dataDir's own files ("lock", "nft-features", the
# IPAM version cache's name) are networks like any other: each one's ADD
# and DEL work beside net1's, whichever came first.  A network named
# "lock" made its state directory where the lock file is: its calls failed
# ("Not a directory"), or, first in a fresh dataDir, every network's did.
case_network_names_never_collide() {
	local ns i net
	local -a nets=(lock nft-features ipam-host-local-1.1.0.version)
	for i in 0 1 2; do
		net=${nets[$i]}
		rm -rf "$TMP/state"
		container ns || return
		cni ADD "l$i" eth0 "$ns" "$(conf "{\"name\": \"$net\", \"hostPrefix\": \"vl\",
		     \"ipam\": {\"ranges\": [[{\"subnet\": \"10.6.$i.0/24\"}]]}}")" ||
			fail "ADD in $net first: $(cat "$TMP/out")" || return
		container ns && add "c$i" "$ns" || fail "ADD in net1 after $net" || return
		container ns || return
		cni ADD "m$i" eth0 "$ns" "$(conf "{\"name\": \"$net\", \"hostPrefix\": \"vl\",
		     \"ipam\": {\"ranges\": [[{\"subnet\": \"10.6.$i.0/24\"}]]}}")" ||
			fail "ADD in $net after net1: $(cat "$TMP/out")" || return
		expect_eq "$(ls "$TMP/state/$net" | sort | tr '\n' ' ')" "l$i.eth0 m$i.eth0 " \
			"state files of $net" || return
		cni DEL "l$i" eth0 "" "$(conf "{\"name\": \"$net\", \"hostPrefix\": \"vl\",
		     \"ipam\": {\"ranges\": [[{\"subnet\": \"10.6.$i.0/24\"}]]}}")" ||
			fail "DEL in $net: $(cat "$TMP/out")" || return
	done
	expect_eq "$(states)" 1 "net1's state files (the last dataDir)"
}

# The host end's name is hostPrefix and a hash of network and attachment:
# the same attachment gets the same name again.  A name taken by another
# link makes ADD fall back to a name the kernel picks (vc%d), and the link
# that had it is left alone.
case_host_end_name_hashed_or_kernel_picked() {
	local ns h
	container ns && add c1 "$ns" || return
	h=$(host_end c1)
	[[ $h =~ ^vc[0-9a-f]{13}$ ]] || fail "host end named '$h'" || return
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "DEL: $(cat "$TMP/out")" || return
	add c1 "$ns" || return
	expect_eq "$(host_end c1)" "$h" "the host end's name the second time" || return
	cni DEL c1 eth0 "$ns" "$(conf)" || return
	ip link add "$h" type veth peer name takenp || return
	add c1 "$ns" || return
	[[ $(host_end c1) =~ ^vc[0-9]+$ ]] || fail "fallback host end named '$(host_end c1)'" || return
	ip link show "$h" >/dev/null || fail "the link that had the name went" || return
	expect_eq "$(guests)" "c1.eth0" "filter guests"
}

# CHECK passes on a fresh attachment; after each fault it names the fault
# with its own code: a host end deleted by hand (100), an address the
# container lost (101), a filter removed behind its back (102), a MAC the
# container end changed (101).
case_check_reports_faults() {
	local ns1 ns2 ns3 ns4
	container ns1 && container ns2 && container ns3 || return
	add c1 "$ns1" && add c2 "$ns2" && add c3 "$ns3" || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" ||
		fail "CHECK of a good attachment: $(cat "$TMP/out")" || return
	cni CHECK c1 eth0 "$ns1" "$(conf)" && { fail "CHECK without prevResult passed"; return 1; }
	jqo '.code == 7' || return
	ip link del "$(host_end c1)" || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" && { fail "CHECK passed without its NIC"; return 1; }
	jqo '.code == 100 and (.msg | length) > 0' || return
	in_ns "$ns2" ip addr flush dev eth0 || return
	cni CHECK c2 eth0 "$ns2" "$(with_prev c2 "$(conf)")" && { fail "CHECK passed without the address"; return 1; }
	jqo '.code == 101 and (.details | test("10\\.9\\.0\\."))' || return
	vc filter remove c3.eth0 >/dev/null || return
	cni CHECK c3 eth0 "$ns3" "$(with_prev c3 "$(conf)")" && { fail "CHECK passed without the filter"; return 1; }
	jqo '.code == 102' || return
	# A container end whose MAC is not prevResult's: the filter drops
	# every frame it sends.  CHECK passed.
	container ns4 && add c4 "$ns4" || return
	in_ns "$ns4" ip link set eth0 address 02:00:00:00:00:99 || return
	cni CHECK c4 eth0 "$ns4" "$(with_prev c4 "$(conf)")" && { fail "CHECK passed with another MAC"; return 1; }
	jqo '.code == 101 and (.details | test("02:00:00:00:00:99"))'
}

# CHECK with the bpf backend: the guest stays in the maps when another
# tool deletes the host end's clsact qdisc (its filters with it), or puts
# a filter of its own in our slot, and the container then sends what it
# likes.  CHECK passed (it looked for the guest only); it now reads back
# the attachment's hooks and names what is gone (102).  Another
# attachment's loss is not this one's: c2's CHECK still passes.
case_check_sees_the_bpf_hooks_go() {
	local ns1 ns2 h
	export CONF_EXTRA='{"filterBackend": "bpf"}' VC_BACKEND=bpf
	container ns1 && container ns2 || return
	add c1 "$ns1" && add c2 "$ns2" || return
	h=$(host_end c1)
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" ||
		fail "CHECK of a good attachment: $(cat "$TMP/out")" || return
	tc qdisc del dev "$h" clsact || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" &&
		{ fail "CHECK passed without the host end's hooks"; return 1; }
	jqo '.code == 102 and (.details | test("clsact on '"$h"'"))' || return
	cni CHECK c2 eth0 "$ns2" "$(with_prev c2 "$(conf)")" ||
		fail "c2's CHECK after c1 lost its hooks: $(cat "$TMP/out")" || return
	# A DEL and ADD make it whole: CHECK passes again.
	cni DEL c1 eth0 "$ns1" "$(conf)" || fail "DEL: $(cat "$TMP/out")" || return
	add c1 "$ns1" || return
	h=$(host_end c1)
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" ||
		fail "CHECK after DEL and ADD: $(cat "$TMP/out")" || return
	# Our filter replaced by another program in the same slot.
	tc filter del dev "$h" ingress pref 30318 || return
	tc filter add dev "$h" ingress pref 30318 u32 match u32 0 0 || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" &&
		{ fail "CHECK passed with another filter in our slot"; return 1; }
	jqo '.code == 102 and (.details | test("on '"$h"' ingress"))' || return
	# The host end renamed by another tool: found by its tag, but the
	# filter is on the name it had (102, not "cannot read the filter").
	ip link set dev "$h" name vcrenamed || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" &&
		{ fail "CHECK passed with the host end renamed"; return 1; }
	jqo '.code == 102 and (.details | test("'"$h"', which no NIC is named now"))'
}

# CHECK of a guest part of whose filter another tool removed: still
# listed, so CHECK passed, while its container could send from any
# address.  Now: c1's address element deleted (102, naming the set), next
# to an element keyed by a NIC of no guest (left by a NIC deleted by hand),
# whose removal a sync would count in the same set and which must not hide
# c1's loss; the rules of the chain every guest jumps to flushed (102 for
# c2 too).  c2's CHECK passes while only c1 lacks something.
case_check_sees_part_of_the_filter_go() {
	local ns1 ns2 h1 chain
	container ns1 && container ns2 || return
	add c1 "$ns1" && add c2 "$ns2" || return
	h1=$(host_end c1)
	ip link add x1 type veth peer name x1p || return
	nft add element netdev vnic ip4s "{ x1 . 10.9.0.99 }" || return
	cni CHECK c2 eth0 "$ns2" "$(with_prev c2 "$(conf)")" ||
		fail "CHECK next to another NIC's element: $(cat "$TMP/out")" || return
	nft delete element netdev vnic ip4s "{ $h1 . $(cont_ip c1) }" || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" &&
		{ fail "CHECK passed without the address element"; return 1; }
	jqo '.code == 102 and (.details | test("set ip4s: 1 missing"))' || return
	cni CHECK c2 eth0 "$ns2" "$(with_prev c2 "$(conf)")" ||
		fail "c2's CHECK after c1 lost its element: $(cat "$TMP/out")" || return
	nft list table netdev vnic >"$TMP/tbl" || return
	chain=$(sed -n 's/^\tchain \(sw_in_[0-9a-f]*\) {$/\1/p' "$TMP/tbl")
	[ -n "$chain" ] || fail "no sw_in_ chain in: $(cat "$TMP/tbl")" || return
	nft flush chain netdev vnic "$chain" || return
	cni CHECK c2 eth0 "$ns2" "$(with_prev c2 "$(conf)")" &&
		{ fail "CHECK passed with the guests' rules flushed"; return 1; }
	jqo '.code == 102 and (.details | test("rules of chain sw_in_"))'
}

# CHECK on a table it cannot read (libvnic's, damaged: its state element
# deleted by hand) reports the read error, code 104 with libvnic's reason,
# not a missing filter (102), which it said before: the guest is there.
case_check_reports_an_unreadable_filter() {
	local ns
	container ns && add c1 "$ns" || return
	nft delete element netdev vnic guests '{ 0 }' || return
	cni CHECK c1 eth0 "$ns" "$(with_prev c1 "$(conf)")" &&
		{ fail "CHECK passed on a damaged table"; return 1; }
	jqo '.code == 104 and .msg == "cannot read the filter" and
	     (.details | test("state element"))'
}

# GC with a valid list that leaves out the second attachment (a 64-digit
# container id, as runtimes make, whose guest name is abbreviated and whose
# lease only the state file can name): its NIC, filter, lease and state go;
# c1 and c3 stay whole, as do an attachment of another network and a veth
# no one tagged.
case_gc_removes_only_the_stale() {
	local ns1 ns2 ns3 ns4 h2 valid c2=$LONG
	container ns1 && container ns2 && container ns3 && container ns4 || return
	add c1 "$ns1" && add "$c2" "$ns2" && add c3 "$ns3" || return
	cni ADD c4 eth0 "$ns4" "$(conf '{"name": "net2", "hostPrefix": "vd", "ipam": {"ranges": [[{"subnet": "10.8.0.0/24"}]]}}')" ||
		fail "ADD net2: $(cat "$TMP/out")" || return
	cp "$TMP/out" "$TMP/res.c4"
	ip link add vcforeign type veth peer name vcforeign1 || return
	h2=$(host_end "$c2")
	valid='{"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"},
	       {"containerID": "c3", "ifname": "eth0"}]}'
	cni GC "" "" "" "$(conf "$valid")" || fail "GC: $(cat "$TMP/out")" || return
	ip link show "$h2" >/dev/null 2>&1 && { fail "GC left $c2's NIC $h2"; return 1; }
	ip link show "$(host_end c1)" >/dev/null && ip link show "$(host_end c3)" >/dev/null &&
	ip link show "$(host_end c4)" >/dev/null && ip link show vcforeign >/dev/null ||
		fail "GC removed a NIC it should have kept" || return
	expect_eq "$(guests)" "c1.eth0 c3.eth0 c4.eth0" "filter guests after GC" || return
	expect_eq "$(leases)" 2 "net1 leases after GC" || return
	expect_eq "$(states)" 2 "net1 state files after GC" || return
	ls "$TMP/ipam/net2" | grep -q '^10\.8\.' || fail "GC released net2's lease" || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" ||
		fail "c1 broken by GC: $(cat "$TMP/out")" || return
	# An empty list: every attachment of net1 goes, net2's stays.
	cni GC "" "" "" "$(conf '{"cni.dev/valid-attachments": []}')" || return
	expect_eq "$(guests)" "c4.eth0" "filter guests after an empty GC" || return
	expect_eq "$(leases)" 0 "net1 leases after an empty GC"
}

# The valid list as runtimes send it.  CNI 1.1.0 as released named it
# "cni.dev/attachments" (libcni sends both names since, containernetworking/
# cni#1101): a runtime written to that text sends only it, and GC took the
# list for missing and removed every attachment, the valid ones too.  A Go
# runtime whose list is a nil slice sends null, which Go plugins read as an
# empty list: GC refused it (code 7) and removed nothing.  A delegated IPAM
# GC gets the list under the name Go plugins read.
case_gc_valid_list_spellings() {
	local ns1 ns2 fconf
	container ns1 && container ns2 || return
	add c1 "$ns1" && add c2 "$ns2" || return
	cni GC "" "" "" "$(conf '{"cni.dev/attachments": [{"containerID": "c1", "ifname": "eth0"}]}')" ||
		fail "GC: $(cat "$TMP/out")" || return
	expect_eq "$(guests)" "c1.eth0" "filter guests after GC with cni.dev/attachments" || return
	in_ns "$ns1" ip link show eth0 >/dev/null 2>&1 ||
		fail "GC with cni.dev/attachments removed the valid c1" || return
	expect_eq "$(leases)" 1 "leases after GC with cni.dev/attachments" || return
	cni GC "" "" "" "$(conf '{"cni.dev/valid-attachments": null}')" ||
		fail "GC with a null list: $(cat "$TMP/out")" || return
	expect_eq "$(guests)" "" "filter guests after GC with a null list" || return
	expect_eq "$(leases)" 0 "leases after GC with a null list" || return
	expect_eq "$(states)" 0 "state files after GC with a null list" || return
	fake_ipam || return
	fconf=$(fake_conf)
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD cq eth0 "$ns1" "$fconf" ||
		fail "ADD with fake-ipam: $(cat "$TMP/out")" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni GC "" "" "" "$(jq -c '. + {"cni.dev/attachments":
		[{"containerID": "cq", "ifname": "eth0"}]}' <<<"$fconf")" ||
		fail "GC with fake-ipam: $(cat "$TMP/out")" || return
	expect_eq "$(cat "$TMP/fake/gc")" '[{"containerID":"cq","ifname":"eth0"}]' \
		"IPAM GC's valid list" || return
	expect_eq "$(guests)" "cq.eth0" "filter guests after the delegated GC"
}

# An IPAM plugin that speaks 1.1 (VERSION lists 1.1.0; FAKE_IPAM_VERSIONS,
# a JSON list, makes it list others; FAKE_IPAM_VERSION_ERROR fails it):
# ADD hands out 10.7.0.N, DEL and GC write down what they got.
fake_ipam() {
	mkdir -p "$TMP/bin" "$TMP/fake" && cat >"$TMP/bin/fake-ipam" <<'EOF'
#!/bin/bash
in=$(cat); d=$(jq -r .ipam.dataDir <<<"$in")
case $CNI_COMMAND in
VERSION) if [ -n "${FAKE_IPAM_VERSION_ERROR:-}" ]; then
		echo '{"cniVersion": "1.1.0", "code": 7, "msg": "broken install"}'; exit 1
	 fi
	 echo "{\"cniVersion\": \"1.1.0\", \"supportedVersions\": ${FAKE_IPAM_VERSIONS:-[\"1.0.0\", \"1.1.0\"]}}" ;;
ADD) case $(jq -r '.ipam.misbehave // empty' <<<"$in") in
     # Killed half-way through its result; an error object without a
     # valid code.
     signal) printf '{"cniVersion": "1.1.0", "ips": [{"addr'; kill -9 $$ ;;
     code0) echo '{"cniVersion": "1.1.0", "code": 0, "msg": "no code"}'; exit 1 ;;
     # A route and an address whose prefix length is no number.
     badroute) echo '{"cniVersion": "1.1.0", "ips": [{"address": "10.7.0.2/24"}],
		      "routes": [{"dst": "10.1.0.0/x"}]}'; exit 0 ;;
     badaddr) echo '{"cniVersion": "1.1.0", "ips": [{"address": "10.7.0.2/"}]}'; exit 0 ;;
     esac
     n=$(ls "$d" | grep -c '^lease'); touch "$d/lease.$CNI_CONTAINERID.$CNI_IFNAME"
     echo "{\"cniVersion\": \"1.1.0\", \"ips\": [{\"address\": \"10.7.0.$((n + 2))/24\"}]}"
     # A whole result, then a failed exit: the exit is what counts.
     if [ "$(jq -r '.ipam.failAfterResult // false' <<<"$in")" = true ]; then
	     sleep 0.2; exit 1
     fi
     # Output after the result, once vnic-cni has it: white space is
     # fine, anything else is not (and must not kill the plugin).
     t=$(jq -r '.ipam.trailer // empty' <<<"$in")
     if [ -n "$t" ]; then sleep 0.05; printf '%b' "$t"; fi ;;
DEL) echo "$CNI_CONTAINERID $CNI_IFNAME" >>"$d/dels" ;;
GC) jq -c '."cni.dev/valid-attachments"' <<<"$in" >>"$d/gc" ;;
STATUS) echo "$CNI_COMMAND" >>"$d/status"
	if [ -n "${FAKE_IPAM_STATUS_ERROR:-}" ]; then
		echo '{"cniVersion": "1.1.0", "code": 50, "msg": "no address left"}'; exit 1
	fi ;;
esac
EOF
	chmod +x "$TMP/bin/fake-ipam"
}

# A config whose IPAM is fake-ipam, with more keys ($1: ", KEY: VALUE...").
fake_conf() {
	conf "{\"ipam\": {\"type\": \"fake-ipam\", \"dataDir\": \"$TMP/fake\"$1}}"
}

# A failed ADD left no link beyond $1, no filter guest, no state file.
nothing_left() {
	expect_eq "$(links)" "$1" "links after the failed ADD" || return
	expect_eq "$(guests)" "" "filter guests after the failed ADD" || return
	expect_eq "$(states)" 0 "state files after the failed ADD"
}

# GC of more stale attachments than run at once: every lease goes through
# host-local's DEL (which knows no GC), every state file and NIC with it.
# With an IPAM plugin that speaks 1.1, GC hands it the valid list in one GC
# call, as the spec asks, and sends no DEL.
case_gc_releases_leases_in_bulk() {
	local ns i fconf
	container ns || return
	for i in $(seq 0 11); do
		cni ADD cp "eth$i" "$ns" "$(conf)" || fail "ADD eth$i: $(cat "$TMP/out")" || return
	done
	expect_eq "$(leases)" 12 "leases after 12 ADDs" || return
	cni GC "" "" "" "$(conf '{"cni.dev/valid-attachments": []}')" ||
		fail "GC: $(cat "$TMP/out")" || return
	expect_eq "$(leases)" 0 "leases after GC" || return
	expect_eq "$(states)" 0 "state files after GC" || return
	expect_eq "$(guests)" "" "filter guests after GC" || return
	fake_ipam || return
	fconf=$(fake_conf)
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD cq eth0 "$ns" "$fconf" ||
		fail "ADD with fake-ipam: $(cat "$TMP/out")" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD cq eth1 "$ns" "$fconf" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni GC "" "" "" "$(jq -c '. + {"cni.dev/valid-attachments":
		[{"containerID": "cq", "ifname": "eth0"}]}' <<<"$fconf")" ||
		fail "GC with fake-ipam: $(cat "$TMP/out")" || return
	expect_eq "$(cat "$TMP/fake/gc")" '[{"containerID":"cq","ifname":"eth0"}]' "IPAM GC's valid list" || return
	[ ! -e "$TMP/fake/dels" ] || fail "GC sent IPAM DELs: $(cat "$TMP/fake/dels")" || return
	expect_eq "$(guests)" "cq.eth0" "filter guests after the delegated GC" || return
	expect_eq "$(states)" 1 "state files after the delegated GC" || return
	in_ns "$ns" ip link show eth0 >/dev/null || fail "GC took the valid cq eth0"
}

# GC releases a stale lease under the attachment's full container id, the
# key host-local stores it by: ids may be longer than the 64 characters
# runtimes make (the spec sets no limit; vnic-cni takes 1,024).  The IPAM
# plugin speaks 1.0.0, so GC sends it one DEL per stale attachment.
case_gc_releases_lease_of_a_long_id() {
	local ns cid
	cid=$(printf 'c%.0s' $(seq 300))
	container ns && fake_ipam || return
	export FAKE_IPAM_VERSIONS='["0.4.0", "1.0.0"]'
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD "$cid" eth0 "$ns" "$(fake_conf)" ||
		fail "ADD: $(cat "$TMP/out")" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni GC "" "" "" \
		"$(fake_conf | jq -c '. + {"cni.dev/valid-attachments": []}')" ||
		fail "GC: $(cat "$TMP/out")" || return
	expect_eq "$(cat "$TMP/fake/dels" 2>/dev/null)" "$cid eth0" "IPAM DEL of GC" || return
	expect_eq "$(states)" 0 "state files after GC"
}

# A state file's temporary copy, left by an ADD killed between writing it
# and renaming it into place, is no attachment: GC must not take it for a
# stale one and release the lease of the valid attachment it names; nor
# must a file of another name.  GC removes the leftover (it holds the
# dataDir lock, so no write is under way) and leaves the stranger alone.
case_gc_ignores_a_leftover_state_copy() {
	local ns
	container ns && fake_ipam || return
	export FAKE_IPAM_VERSIONS='["1.0.0"]'
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD c1 eth0 "$ns" "$(fake_conf)" ||
		fail "ADD: $(cat "$TMP/out")" || return
	cp "$TMP/out" "$TMP/res.c1" &&
	cp "$TMP/state/net1/c1.eth0" "$TMP/state/net1/c1.eth0.tmp" &&
	cp "$TMP/state/net1/c1.eth0" "$TMP/state/net1/stray" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni GC "" "" "" "$(fake_conf | jq -c '. +
		{"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}]}')" ||
		fail "GC: $(cat "$TMP/out")" || return
	[ ! -e "$TMP/fake/dels" ] || fail "GC released a valid lease: $(cat "$TMP/fake/dels")" || return
	expect_eq "$(ls -A "$TMP/state/net1" | tr '\n' ' ')" "c1.eth0 stray " "state files after GC" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni CHECK c1 eth0 "$ns" \
		"$(with_prev c1 "$(fake_conf)")" || fail "CHECK after GC: $(cat "$TMP/out")"
}

# Two attachments whose "CID.IFNAME" would read the same (container a.b
# interface c, container a interface b.c; both names are valid) are two
# guests: each its own tag, state file and filter, and the DEL of one
# leaves the other whole.  One name for both let the second ADD take over
# the first's filter guest (its host end left unfiltered) and state file,
# and a DEL delete the other container's NIC.
case_dotted_names_stay_apart() {
	local ns1 ns2
	container ns1 && container ns2 || return
	cni ADD a.b c "$ns1" "$(conf)" || fail "ADD a.b c: $(cat "$TMP/out")" || return
	cp "$TMP/out" "$TMP/res.ab" &&
	cni ADD a b.c "$ns2" "$(conf)" || fail "ADD a b.c: $(cat "$TMP/out")" || return
	cp "$TMP/out" "$TMP/res.a" &&
	expect_eq "$(ip -d -j link | jq -r '[.[].ifalias // empty] | unique | length')" 2 \
		"distinct tags: $(ip -d -j link | jq -c '[.[].ifalias // empty]')" || return
	expect_eq "$(states)" 2 "state files" || return
	expect_eq "$(guests | wc -w)" 2 "filter guests ($(guests))" || return
	cni DEL a.b c "" "$(conf)" || fail "DEL a.b c: $(cat "$TMP/out")" || return
	in_ns "$ns2" ip link show b.c >/dev/null || fail "DEL of a.b c took a's b.c" || return
	ip link show "$(host_end a)" >/dev/null || fail "DEL of a.b c took a's host end" || return
	cni CHECK a b.c "$ns2" "$(with_prev a "$(conf)")" ||
		fail "CHECK a b.c after the DEL of a.b c: $(cat "$TMP/out")"
}

# ADD reads the IPAM result as soon as it is a whole object and goes on
# while the plugin exits; the plugin's exit status still decides.  One
# that prints a result and then fails makes ADD fail with 105, its lease
# released (DEL) and nothing else left: NIC, filter guest, state file.
case_ipam_result_then_failure_undone() {
	local ns base
	base=$(links)
	container ns && fake_ipam || return
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD cf eth0 "$ns" "$(fake_conf ', "failAfterResult": true')" &&
		{ fail "ADD succeeded: $(cat "$TMP/out")"; return 1; }
	jqo '.code == 105' || return
	expect_eq "$(cat "$TMP/fake/dels" 2>/dev/null)" "cf eth0" "IPAM DELs of the undo" || return
	nothing_left "$base" || return
	in_ns "$ns" ip link show eth0 >/dev/null 2>&1 && { fail "eth0 left in the container"; return 1; }
	return 0
}

# misbehaving_add CID MISBEHAVIOUR JQ: an ADD whose fake-ipam misbehaves
# fails, its error object matching JQ, and leaves nothing behind.
misbehaving_add() {
	local ns base
	base=$(links)
	container ns && fake_ipam || return
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD "$1" eth0 "$ns" "$(fake_conf ", \"misbehave\": \"$2\"")" &&
		{ fail "ADD ($2) succeeded: $(cat "$TMP/out")"; return 1; }
	jqo "$3" || return
	nothing_left "$base"
}

# An IPAM plugin killed by a signal half-way through its result: ADD
# fails with 105 and says so (not "exited with status -1").
case_ipam_killed_by_signal() {
	misbehaving_add ck signal '.code == 105 and (.details | test("killed by signal 9"))'
}

# An IPAM error object whose code is no error code (0): vnic-cni's own
# error (105, the plugin's message kept in details), never an error object
# with code 0, which a runtime cannot tell from success.
case_ipam_error_without_valid_code() {
	misbehaving_add cz code0 '.code == 105 and (.details | test("no code"))'
}

# An IPAM plugin whose VERSION fails is not "incompatible CNI versions"
# (code 1): its own error is passed on, and one that cannot be executed at
# all (not a binary of this machine) is 105 with its exit status.  Nothing
# is left either way.
case_ipam_version_failure() {
	local ns base
	base=$(links)
	container ns && fake_ipam || return
	FAKE_IPAM_VERSION_ERROR=1 CNI_PATH_T=$TMP/bin:$STOCK cni ADD cv eth0 "$ns" "$(fake_conf)" &&
		{ fail "ADD succeeded: $(cat "$TMP/out")"; return 1; }
	jqo '.code == 7 and .msg == "broken install"' || return
	printf '\177ELF, but not really' >"$TMP/bin/junk-ipam" && chmod +x "$TMP/bin/junk-ipam" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD cv eth0 "$ns" "$(conf '{"ipam": {"type": "junk-ipam"}}')" &&
		{ fail "ADD succeeded: $(cat "$TMP/out")"; return 1; }
	jqo '.code == 105 and (.details | test("status 127"))' || return
	nothing_left "$base"
}

# An IPAM result whose route or address has a prefix length that is no
# number is a decode error (6), undone: "10.1.0.0/x" was read as
# 10.1.0.0/0 and installed as the container's default route, "10.7.0.2/"
# as a /0 address.
case_ipam_result_bad_prefix() {
	local ns base m
	base=$(links)
	container ns && fake_ipam || return
	for m in badroute badaddr; do
		CNI_PATH_T=$TMP/bin:$STOCK cni ADD cb eth0 "$ns" "$(fake_conf ", \"misbehave\": \"$m\"")" &&
			{ fail "ADD ($m) succeeded: $(cat "$TMP/out")"; return 1; }
		jqo '.code == 6' || return
	done
	nothing_left "$base" || return
	expect_eq "$(in_ns "$ns" ip -j route | jq length)" 0 "routes in the container"
}

# The plugin's output after its result is read to its end: a newline
# written late is fine (the plugin exits 0, not of SIGPIPE); anything else
# is a decode error, undone like any failed ADD.
case_ipam_output_after_result() {
	local ns base
	base=$(links)
	container ns && fake_ipam || return
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD ct eth0 "$ns" "$(fake_conf ', "trailer": "\\n"')" ||
		fail "ADD with a late newline: $(cat "$TMP/out")" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni DEL ct eth0 "$ns" "$(fake_conf)" || return
	CNI_PATH_T=$TMP/bin:$STOCK cni ADD cu eth0 "$ns" "$(fake_conf ', "trailer": "x"')" &&
		{ fail "ADD with trailing garbage succeeded: $(cat "$TMP/out")"; return 1; }
	jqo '.code == 6' || return
	expect_eq "$(tail -n1 "$TMP/fake/dels" 2>/dev/null)" "cu eth0" "IPAM DEL of the undo" || return
	nothing_left "$base"
}

# A commit by another writer between a DEL's (or GC's) read of the table
# and its removal makes that commit fail with -EAGAIN; the removal is
# retried, as ADD's is, and the call succeeds (it failed with code 104
# "Resource temporarily unavailable").  The race is made by a shim of
# libmnl's send (vnic-cni links libmnl dynamically): before the first
# nf_tables batch that deletes something, it commits a table of its own
# with nft.
case_del_retries_a_raced_removal() {
	local cc=${CC:-cc} ns h
	command -v "$cc" >/dev/null || { echo "no C compiler for the race shim"; exit 77; }
	# ASan's runtime must be the first library: no LD_PRELOAD before it.
	ldd "$CNI" | grep -q libasan && { echo "vnic-cni built with ASan: no shim"; exit 77; }
	cat >"$TMP/race.c" <<'SHIM'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <libmnl/libmnl.h>
static int deletes(const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	int left = (int)len;

	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left))
		switch (nlh->nlmsg_type & 0xff) {
		case NFT_MSG_DELTABLE: case NFT_MSG_DELCHAIN: case NFT_MSG_DELRULE:
		case NFT_MSG_DELSET: case NFT_MSG_DELSETELEM: case NFT_MSG_DELOBJ:
			if (nlh->nlmsg_type >> 8 == NFNL_SUBSYS_NFTABLES)
				return 1;
		}
	return 0;
}
ssize_t mnl_socket_sendto(const struct mnl_socket *nl, const void *buf, size_t len)
{
	ssize_t (*real)(const struct mnl_socket *, const void *, size_t) =
		dlsym(RTLD_NEXT, "mnl_socket_sendto");
	const struct nlmsghdr *nlh = buf;

	if (len >= sizeof(*nlh) && nlh->nlmsg_type == NFNL_MSG_BATCH_BEGIN &&
	    deletes(buf, len) && !getenv("RACE_DONE")) {
		setenv("RACE_DONE", "1", 1);
		if (system("nft add table inet vnic_race"))
			abort();
	}
	return real(nl, buf, len);
}
SHIM
	"$cc" -shared -fPIC -o "$TMP/race.so" "$TMP/race.c" -ldl ||
		fail "cannot build the race shim" || return
	container ns && add c1 "$ns" || return
	h=$(host_end c1)
	LD_PRELOAD=$TMP/race.so cni DEL c1 eth0 "$ns" "$(conf)" ||
		fail "raced DEL: $(cat "$TMP/out" "$TMP/err")" || return
	nft list table inet vnic_race >/dev/null || fail "the shim made no commit" || return
	expect_eq "$(guests)" "" "filter guests after the raced DEL" || return
	ip link show "$h" >/dev/null 2>&1 && { fail "raced DEL left $h"; return 1; }
	expect_eq "$(leases)" 0 "leases after the raced DEL"
}

# nodel_shim: $TMP/nodel.so, a shim of libmnl's send (vnic-cni links libmnl
# dynamically) that fails every RTM_DELLINK with EPERM, as a kernel that
# refuses the deletion would; 77 (SKIP) where it cannot be built.
nodel_shim() {
	local cc=${CC:-cc}
	command -v "$cc" >/dev/null || { echo "no C compiler for the shim"; return 77; }
	ldd "$CNI" | grep -q libasan && { echo "vnic-cni built with ASan: no shim"; return 77; }
	cat >"$TMP/nodel.c" <<'SHIM'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>
#include <linux/rtnetlink.h>
#include <libmnl/libmnl.h>
/* RTM_DELLINK on a NETLINK_ROUTE socket (17 is a batch end on nfnetlink). */
static int dellink(const struct mnl_socket *nl, const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	int left = (int)len, proto = 0;
	socklen_t sl = sizeof(proto);

	if (getsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_PROTOCOL, &proto, &sl) ||
	    proto != NETLINK_ROUTE)
		return 0;
	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left))
		if (nlh->nlmsg_type == RTM_DELLINK)
			return 1;
	return 0;
}
ssize_t mnl_socket_sendto(const struct mnl_socket *nl, const void *buf, size_t len)
{
	ssize_t (*real)(const struct mnl_socket *, const void *, size_t) =
		dlsym(RTLD_NEXT, "mnl_socket_sendto");

	if (dellink(nl, buf, len)) {
		errno = EPERM;
		return -1;
	}
	return real(nl, buf, len);
}
SHIM
	"$cc" -shared -fPIC -o "$TMP/nodel.so" "$TMP/nodel.c" -ldl ||
		fail "cannot build the shim" || return
}

# A DEL whose interface deletion fails (the kernel refuses RTM_DELLINK:
# nodel_shim) fails with code 103, and leaves the interface
# filtered: a datagram from an address the container gave itself is still
# dropped and counted.  DEL removed the filter first, so the host end stayed
# up without it until the runtime's retry.  The retry removes everything.
case_del_failing_nic_deletion_keeps_the_filter() {
	local ns h
	nodel_shim || return
	container ns && add c1 "$ns" || return
	h=$(host_end c1)
	LD_PRELOAD=$TMP/nodel.so cni DEL c1 eth0 "$ns" "$(conf)" &&
		{ fail "DEL passed without deleting the interface"; return 1; }
	jqo '.code == 103' || return
	ip link show "$h" >/dev/null || fail "the shim let $h go" || return
	expect_eq "$(guests)" "c1.eth0" "filter guests while $h stays" || return
	in_ns "$ns" ip addr add 10.9.0.77/24 dev eth0 &&
	in_ns "$ns" ip route replace 10.9.0.1 dev eth0 src 10.9.0.77 || return
	send_udp "$ns"
	until_ok gt drops 0 c1.eth0 || fail "spoofed datagram not dropped" || return
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "DEL retried: $(cat "$TMP/out")" || return
	ip link show "$h" >/dev/null 2>&1 && { fail "the retried DEL left $h"; return 1; }
	expect_eq "$(guests)" "" "filter guests after the retried DEL" || return
	expect_eq "$(leases)" 0 "leases after the retried DEL" || return
	expect_eq "$(states)" 0 "state files after the retried DEL"
}

# The same with the bpf backend: its filter sits on the host end itself.
case_del_failing_nic_deletion_keeps_the_bpf_filter() {
	CONF_EXTRA='{"filterBackend": "bpf"}' VC_BACKEND=bpf \
		case_del_failing_nic_deletion_keeps_the_filter
}

# A GC whose interface deletion fails (nodel_shim) fails with code 103 and
# leaves the stale interface filtered; it removed the filters first, and
# left that interface unfiltered until the next GC.  The next GC removes it.
case_gc_failing_nic_deletion_keeps_the_filter() {
	local ns1 ns2 h2 valid
	nodel_shim || return
	container ns1 && container ns2 && add c1 "$ns1" && add c2 "$ns2" || return
	h2=$(host_end c2)
	valid='{"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}]}'
	LD_PRELOAD=$TMP/nodel.so cni GC "" "" "" "$(conf "$valid")" &&
		{ fail "GC passed without deleting the interface"; return 1; }
	jqo '.code == 103' || return
	ip link show "$h2" >/dev/null || fail "the shim let $h2 go" || return
	expect_eq "$(guests)" "c1.eth0 c2.eth0" "filter guests while $h2 stays" || return
	cni GC "" "" "" "$(conf "$valid")" || fail "GC again: $(cat "$TMP/out")" || return
	ip link show "$h2" >/dev/null 2>&1 && { fail "the second GC left $h2"; return 1; }
	expect_eq "$(guests)" "c1.eth0" "filter guests after the second GC" || return
	expect_eq "$(leases)" 1 "leases after the second GC" || return
	expect_eq "$(states)" 1 "state files after the second GC"
}

# A second ADD of an attachment that exists fails (its interface is
# taken) and leaves the first one's state file, which its DEL and GC read.
case_second_add_keeps_first_state() {
	local ns
	container ns && add c1 "$ns" || return
	cni ADD c1 eth0 "$ns" "$(conf)" && { fail "second ADD succeeded"; return 1; }
	jqo '.code == 103' || return
	expect_eq "$(states)" 1 "state files after the refused ADD" || return
	expect_eq "$(guests)" "c1.eth0" "filter guests after the refused ADD" || return
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "DEL: $(cat "$TMP/out")" || return
	expect_eq "$(states)" 0 "state files after DEL"
}

# A table another process owns (vnicctl filter hold on the same table
# name) cannot take vnic-cni's writes: ADD fails with 104 and says why, and
# leaves nothing (lease, NIC, state).  Once the holder is gone the table
# (persisted, unowned) takes them again, the holder's guest kept.
case_held_table_refused_cleanly() {
	local ns base hold
	ip link add vm1h0 type veth peer name vm1p || return
	base=$(links)
	echo '{"guests": [{"name": "vm1", "nics": [{"ifname": "vm1h0", "kind": "veth",
	       "mac": "02:00:00:00:00:01", "ipv4": ["10.1.0.2"]}]}]}' >"$TMP/p.json"
	"$VNICCTL" filter hold "$TMP/p.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	hold=$!
	until_ok test -s "$TMP/hold.out" || { kill "$hold"; fail "hold: $(cat "$TMP/hold.err")"; return; }
	container ns || { kill "$hold"; return 1; }
	cni ADD c1 eth0 "$ns" "$(conf)" && { kill "$hold"; fail "ADD into a held table passed"; return; }
	kill "$hold"; wait "$hold"
	jqo '.code == 104 and (.details | test("owned by another process"))' || return
	expect_eq "$(links)" "$base" "links after the refused ADD" || return
	expect_eq "$(leases)" 0 "leases after the refused ADD" || return
	expect_eq "$(states)" 0 "state files after the refused ADD" || return
	add c1 "$ns" || return
	expect_eq "$(guests)" "c1.eth0 vm1" "guests once the holder is gone"
}

# hold_table: vnicctl filter hold owns table vnic (guest vm1) until the
# case ends; its pid in HOLD.
hold_table() {
	ip link add vm1h0 type veth peer name vm1p || return
	echo '{"guests": [{"name": "vm1", "nics": [{"ifname": "vm1h0", "kind": "veth",
	       "mac": "02:00:00:00:00:01", "ipv4": ["10.1.0.2"]}]}]}' >"$TMP/p.json"
	"$VNICCTL" filter hold "$TMP/p.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	HOLD=$!
	HOLDERS+=("$HOLD")
	until_ok test -s "$TMP/hold.out" || fail "hold: $(cat "$TMP/hold.err")"
}

# STATUS while another process owns the table: an ADD would be refused
# (held_table_refused_cleanly), so STATUS says the plugin is not available
# (code 50), with the reason, and writes nothing; once the owner is gone,
# STATUS succeeds again.
case_status_sees_a_held_table() {
	hold_table || return
	nft_json >"$TMP/before" || return
	cni STATUS "" "" "" "$(conf)" && { fail "STATUS passed with the table held"; return 1; }
	jqo '.code == 50 and (.details | test("owned by another process"))' || return
	nft_json | cmp -s - "$TMP/before" || fail "STATUS changed the ruleset" || return
	kill "$HOLD" && wait "$HOLD"
	cni STATUS "" "" "" "$(conf)" || fail "STATUS after the holder: $(cat "$TMP/out")"
}

# DEL while another process owns the table and keeps the attachment's
# guest in it (its policy names c1.eth0): the kernel refuses vnic-cni's
# removal for as long as it is owned.  DEL removes what it can and
# succeeds: the NIC (nothing is left to filter) and the lease go, the
# guest stays and so does the state file, which a later DEL (or GC) reads
# to remove it once the table is free.  It failed with 104 on every retry.
case_del_next_to_an_owner() {
	local ns h mac ip
	container ns && add c1 "$ns" || return
	h=$(host_end c1) mac=$(jq -r '.interfaces[1].mac' "$TMP/res.c1") ip=$(cont_ip c1)
	ip link add vm1h0 type veth peer name vm1p || return
	echo "{\"guests\": [{\"name\": \"vm1\", \"nics\": [{\"ifname\": \"vm1h0\", \"kind\": \"veth\",
	       \"mac\": \"02:00:00:00:00:01\", \"ipv4\": [\"10.1.0.2\"]}]},
	       {\"name\": \"c1.eth0\", \"nics\": [{\"ifname\": \"$h\", \"kind\": \"veth\",
	       \"mac\": \"$mac\", \"ipv4\": [\"$ip\"]}]}]}" >"$TMP/p.json"
	"$VNICCTL" filter hold "$TMP/p.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	HOLD=$!
	HOLDERS+=("$HOLD")
	until_ok test -s "$TMP/hold.out" || fail "hold: $(cat "$TMP/hold.err")" || return
	expect_eq "$(guests)" "c1.eth0 vm1" "guests under the hold" || return
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "DEL next to an owner: $(cat "$TMP/out")" || return
	[ ! -s "$TMP/out" ] || fail "DEL printed $(cat "$TMP/out")" || return
	grep -q "owned by another process" "$TMP/err" || fail "no word on stderr" || return
	ip link show "$h" >/dev/null 2>&1 && { fail "DEL left $h"; return 1; }
	expect_eq "$(leases)" 0 "leases after DEL" || return
	expect_eq "$(states)" 1 "state files after DEL (the guest is left)" || return
	expect_eq "$(guests)" "c1.eth0 vm1" "guests after DEL (held)" || return
	kill "$HOLD" && wait "$HOLD"
	cni DEL c1 eth0 "$ns" "$(conf)" || fail "DEL once free: $(cat "$TMP/out")" || return
	expect_eq "$(guests)" "vm1" "guests once the table is free" || return
	expect_eq "$(states)" 0 "state files once the table is free"
}

# DEL on a table nft refuses to change: libvnic's, damaged by hand (its
# state element deleted: no guest can be read, every change is refused
# until a sync repairs it or someone deletes it), or one libvnic did not
# make under its name.  No retry of the runtime's could help: DEL failed
# with 104 on each, the interface stayed, and kubelet would not remove the
# pod.  Now DEL deletes the interface and the lease, leaves the filter
# state and the state file (for a later DEL or GC), says why on stderr,
# and succeeds; a second DEL too.  CHECK of another attachment reports
# the damage.  Once the table is deleted, DEL removes the state file.
case_del_on_a_damaged_table() {
	local ns1 ns2 h1 h2
	container ns1 && container ns2 && add c1 "$ns1" && add c2 "$ns2" || return
	h1=$(host_end c1) h2=$(host_end c2)
	nft delete element netdev vnic guests '{ 0 }' || return
	cni DEL c1 eth0 "$ns1" "$(conf)" ||
		fail "DEL on a damaged table: $(cat "$TMP/out")" || return
	[ ! -s "$TMP/out" ] || fail "DEL printed $(cat "$TMP/out")" || return
	grep -q "state element" "$TMP/err" || fail "stderr: $(cat "$TMP/err")" || return
	ip link show "$h1" >/dev/null 2>&1 && { fail "DEL left $h1"; return 1; }
	expect_eq "$(leases)" 1 "leases after DEL (c2's)" || return
	expect_eq "$(states)" 2 "state files after DEL (c1's kept)" || return
	cni DEL c1 eth0 "$ns1" "$(conf)" || fail "second DEL: $(cat "$TMP/out")" || return
	cni CHECK c2 eth0 "$ns2" "$(with_prev c2 "$(conf)")" &&
		{ fail "CHECK passed on a damaged table"; return 1; }
	jqo '.code == 104 and (.details | test("state element"))' || return
	nft delete table netdev vnic && nft add table netdev vnic || return
	cni DEL c2 eth0 "$ns2" "$(conf)" ||
		fail "DEL on a table libvnic did not make: $(cat "$TMP/out")" || return
	grep -q "not made by libvnic" "$TMP/err" || fail "stderr: $(cat "$TMP/err")" || return
	ip link show "$h2" >/dev/null 2>&1 && { fail "DEL left $h2"; return 1; }
	expect_eq "$(leases)" 0 "leases after the DELs" || return
	expect_eq "$(states)" 2 "state files after the DELs" || return
	nft delete table netdev vnic || return
	cni DEL c1 eth0 "$ns1" "$(conf)" && cni DEL c2 eth0 "$ns2" "$(conf)" ||
		fail "DEL once the table is gone: $(cat "$TMP/out")" || return
	[ ! -s "$TMP/err" ] || fail "stderr once the table is gone: $(cat "$TMP/err")" || return
	expect_eq "$(states)" 0 "state files once the table is gone"
}

# GC while another process owns the table and keeps the stale attachment's
# guest in it (its policy names c2.eth0): the kernel refuses the filter's
# removal for as long as it is owned.  GC removes what it can, as the
# spec asks of a GC that meets an error, and reports the error: c2's NIC
# and lease go, its guest stays and so does its state file, for the next
# GC to remove the guest once the table is free; c1 (valid) stays whole.
# GC failed with 104 before it touched anything: every stale NIC and lease
# of the network stayed for as long as the table was owned.
case_gc_next_to_an_owner() {
	local ns1 ns2 h2 mac ip valid
	container ns1 && container ns2 && add c1 "$ns1" && add c2 "$ns2" || return
	h2=$(host_end c2) mac=$(jq -r '.interfaces[1].mac' "$TMP/res.c2") ip=$(cont_ip c2)
	ip link add vm1h0 type veth peer name vm1p || return
	jq -n --arg h "$(host_end c1)" --arg m "$(jq -r '.interfaces[1].mac' "$TMP/res.c1")" \
	      --arg i "$(cont_ip c1)" --arg h2 "$h2" --arg m2 "$mac" --arg i2 "$ip" \
	      '{guests: [{name: "vm1", nics: [{ifname: "vm1h0", kind: "veth",
			  mac: "02:00:00:00:00:01", ipv4: ["10.1.0.2"]}]},
			 {name: "c1.eth0", nics: [{ifname: $h, kind: "veth", mac: $m, ipv4: [$i]}]},
			 {name: "c2.eth0", nics: [{ifname: $h2, kind: "veth", mac: $m2, ipv4: [$i2]}]}]}' \
		>"$TMP/p.json" || return
	"$VNICCTL" filter hold "$TMP/p.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	HOLD=$!
	HOLDERS+=("$HOLD")
	until_ok test -s "$TMP/hold.out" || fail "hold: $(cat "$TMP/hold.err")" || return
	valid='{"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}]}'
	cni GC "" "" "" "$(conf "$valid")" && { fail "GC passed with the guest left"; return 1; }
	jqo '.code == 104 and (.details | test("owned by another process"))' || return
	ip link show "$h2" >/dev/null 2>&1 && { fail "GC left c2's NIC $h2"; return 1; }
	expect_eq "$(leases)" 1 "leases after GC (c1's)" || return
	expect_eq "$(ls "$TMP/state/net1" | tr '\n' ' ')" "c1.eth0 c2.eth0 " \
		"state files after GC (c2's guest is left)" || return
	expect_eq "$(guests)" "c1.eth0 c2.eth0 vm1" "guests after GC (held)" || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" ||
		fail "c1 broken by GC: $(cat "$TMP/out")" || return
	kill "$HOLD" && wait "$HOLD"
	cni GC "" "" "" "$(conf "$valid")" || fail "GC once free: $(cat "$TMP/out")" || return
	expect_eq "$(guests)" "c1.eth0 vm1" "guests once the table is free" || return
	expect_eq "$(states)" 1 "state files once the table is free" || return
	expect_eq "$(leases)" 1 "leases once the table is free"
}

# GC on a table it cannot read (libvnic's, damaged by hand) does the same:
# the stale NIC and lease go, the error (104, libvnic's reason) is
# reported, and every stale state file stays, since which guests are in
# the table is not known.
case_gc_on_an_unreadable_filter() {
	local ns1 ns2 h2
	container ns1 && container ns2 && add c1 "$ns1" && add c2 "$ns2" || return
	h2=$(host_end c2)
	nft delete element netdev vnic guests '{ 0 }' || return
	cni GC "" "" "" "$(conf '{"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}]}')" &&
		{ fail "GC passed on a damaged table"; return 1; }
	jqo '.code == 104 and .msg == "cannot read the filter"' || return
	ip link show "$h2" >/dev/null 2>&1 && { fail "GC left c2's NIC $h2"; return 1; }
	ip link show "$(host_end c1)" >/dev/null || fail "GC took c1's NIC" || return
	expect_eq "$(leases)" 1 "leases after GC (c1's)" || return
	expect_eq "$(states)" 2 "state files after GC"
}

# STATUS on a table whose guests cannot be read (libvnic's, damaged by
# hand): every ADD fails on it (104, "damaged"), so STATUS says the plugin
# is not available (code 50) with libvnic's reason, and writes nothing.
# It succeeded: the damaged table opens, only its reads and changes are
# refused.
case_status_sees_a_damaged_table() {
	local ns
	container ns && add c1 "$ns" || return
	nft delete element netdev vnic guests '{ 0 }' || return
	nft_json >"$TMP/before" || return
	cni STATUS "" "" "" "$(conf)" && { fail "STATUS passed on a damaged table"; return 1; }
	jqo '.code == 50 and (.details | test("state element"))' || return
	nft_json | cmp -s - "$TMP/before" || fail "STATUS changed the ruleset" || return
	container ns && cni ADD c2 eth0 "$ns" "$(conf)" && { fail "ADD passed on a damaged table"; return 1; }
	jqo '.code == 104 and (.details | test("damaged"))'
}

# STATUS: success, silent, while the table is usable; code 50 once a table
# of that name exists that libvnic did not make, or the IPAM plugin is
# missing or (speaking 1.1) says so.
# STATUS says whether an ADD could succeed: with dataDir unusable (under a
# regular file, or the network's directory taken by a file, as an earlier
# vnic-cni's "lock" was for a network of that name) every ADD fails with
# code 5 before it touches anything, and STATUS must say so (code 50, the
# reason in details).  It passed.
case_status_sees_an_unusable_data_dir() {
	local ns c
	container ns && touch "$TMP/file" || return
	for c in "$(conf "{\"dataDir\": \"$TMP/file/d\"}")" \
		 "$(mkdir -p "$TMP/d2" && touch "$TMP/d2/net1" && conf "{\"dataDir\": \"$TMP/d2\"}")"; do
		cni ADD c1 eth0 "$ns" "$c" && { fail "ADD passed with $c"; return 1; }
		jqo '.code == 5' || return
		cni STATUS "" "" "" "$c" && { fail "STATUS passed where ADD fails: $c"; return 1; }
		jqo '.code == 50 and (.details | test("Not a directory"))' || return
	done
	expect_eq "$(guests)" "" "filter guests after the STATUS calls"
}

case_status() {
	cni STATUS "" "" "" "$(conf)" || fail "STATUS: $(cat "$TMP/out")" || return
	[ ! -s "$TMP/out" ] || fail "STATUS printed $(cat "$TMP/out")" || return
	nft add table netdev vnic || return
	cni STATUS "" "" "" "$(conf)" && { fail "STATUS passed with a foreign table"; return 1; }
	jqo '.code == 50 and .cniVersion == "1.1.0" and (.details | length) > 0' || return
	nft delete table netdev vnic || return
	cni STATUS "" "" "" "$(conf '{"ipam": {"type": "nosuch"}}')" && { fail "STATUS passed without IPAM plugin"; return 1; }
	jqo '.code == 50' || return
	# An IPAM plugin that speaks 1.1 is asked, and its error passed on;
	# one that speaks 1.0.0 knows no STATUS and is not asked.
	# Without IPAM no plugin is searched: CNI_PATH may be unset (it was
	# code 4, "CNI_PATH is required"); with IPAM it is required.
	CNI_COMMAND=STATUS "$CNI" <<<"$(conf | jq -c 'del(.ipam)')" >"$TMP/out" ||
		fail "STATUS without IPAM and CNI_PATH: $(cat "$TMP/out")" || return
	CNI_COMMAND=STATUS "$CNI" <<<"$(conf)" >"$TMP/out" &&
		{ fail "STATUS with IPAM passed without CNI_PATH"; return 1; }
	jqo '.code == 4' || return
	fake_ipam && mkdir -p "$TMP/fake" || return
	CNI_PATH_T=$TMP/bin cni STATUS "" "" "" "$(fake_conf)" ||
		fail "STATUS with fake-ipam: $(cat "$TMP/out")" || return
	expect_eq "$(cat "$TMP/fake/status" 2>/dev/null)" STATUS "IPAM STATUS calls" || return
	FAKE_IPAM_STATUS_ERROR=1 CNI_PATH_T=$TMP/bin cni STATUS "" "" "" "$(fake_conf)" &&
		{ fail "STATUS passed with the IPAM plugin's failing"; return 1; }
	jqo '.code == 50 and .msg == "no address left"' || return
	rm -f "$TMP/fake/status" "$TMP/state/_ipam-"*
	FAKE_IPAM_VERSIONS='["1.0.0"]' CNI_PATH_T=$TMP/bin cni STATUS "" "" "" "$(fake_conf)" ||
		fail "STATUS with a 1.0.0 fake-ipam: $(cat "$TMP/out")" || return
	[ ! -e "$TMP/fake/status" ] || fail "a 1.0.0 IPAM plugin was asked its STATUS"
}

# Bad configurations and environments: each gets a CNI error object with
# the spec's code on stdout, a nonzero exit, and leaves nothing: no link,
# no filter, no lease, no state file.
case_bad_input_leaves_nothing() {
	local ns base c i
	container ns || return
	base=$(links)
	local -a bad=(
		'6|{"cniVersion": "1.1.0", "name":'
		'6|["not", "an", "object"]'
		'7|{"name": "net1", "type": "vnic-cni"}'
		'1|'"$(conf '{"cniVersion": "9.9.9"}')"
		'7|'"$(conf '{"name": "-bad"}')"
		'7|'"$(conf '{"name": "_lock"}')"
		'7|'"$(conf '{"name": ".."}')"
		'7|'"$(conf '{"name": "a-network-name-that-is-far-too-long-for-an-owner"}')"
		'7|'"$(conf '{"mode": "bridge"}')"
		'7|'"$(conf '{"mode": "macvlan"}')"
		'7|'"$(conf '{"mode": "macvlan", "master": "lo", "filter": true}')"
		'7|'"$(conf '{"filterBackend": "bpf", "hookPrefix": true}')"
		'7|'"$(conf '{"filterBackend": "bpf"}' | jq -c '.table = "vnic"')"
		'7|'"$(conf '{"filterBackend": "iptables"}')"
		'7|'"$(conf '{"table": "a b"}')"
		'7|'"$(conf '{"mode": "macvlan", "master": "lo/x"}')"
		'7|'"$(conf '{"mtu": 12}')"
		'7|'"$(conf '{"ipam": {"type": "nosuch"}}')"
		'7|'"$(conf '{"ipam": {"type": "../bin/sh"}}')"
		'7|'"$(conf '{"dataDir": "relative"}')"
		'7|'"$(conf '{"hostPrefix": "far-too-long-prefix"}')"
		'7|'"$(conf '{"runtimeConfig": {"mac": "02:11:22:33:44"}}')"
		'7|'"$(conf '{"runtimeConfig": {"mac": "02:11:22:33:44:5g"}}')"
		'7|'"$(conf '{"runtimeConfig": {"mac": "01:00:5e:00:00:01"}}')"
		'7|'"$(conf '{"runtimeConfig": {"mac": "ff:ff:ff:ff:ff:ff"}}')"
		'7|'"$(conf '{"runtimeConfig": {"mac": "00:00:00:00:00:00"}}')"
		'7|'"$(conf '{"runtimeConfig": {"mac": 42}}')"
		'7|'"$(conf '{"args": {"cni": {"mac": "nonsense"}}}')"
		'7|'"$(conf '{"mode": "macvlan", "master": "lo", "macvlanMode": "passthru",
			     "runtimeConfig": {"mac": "02:11:22:33:44:55"}}')"
	)
	for i in "${!bad[@]}"; do
		c=${bad[$i]#*|}
		cni ADD c1 eth0 "$ns" "$c" && { fail "bad config $i accepted"; return 1; }
		jqo ".code == ${bad[$i]%%|*} and (.msg | length) > 0" || { log "config $i: $c"; return 1; }
	done
	# The environment: no CNI_IFNAME, an invalid one, no netns, a path
	# that is no namespace, an unknown verb.
	CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_NETNS=$ns CNI_PATH=$STOCK "$CNI" <<<"$(conf)" >"$TMP/out" &&
		{ fail "ADD without CNI_IFNAME passed"; return 1; }
	jqo '.code == 4' || return
	cni ADD c1 "eth/0" "$ns" "$(conf)" && { fail "ifname eth/0 accepted"; return 1; }
	jqo '.code == 4' || return
	# A template: the kernel would pick another name.
	cni ADD c1 "eth%d" "$ns" "$(conf)" && { fail "ifname eth%d accepted"; return 1; }
	jqo '.code == 4 and (.details | test("%"))' || return
	cni ADD "-c1" eth0 "$ns" "$(conf)" && { fail "container id -c1 accepted"; return 1; }
	jqo '.code == 4' || return
	cni ADD c1 eth0 "" "$(conf)" && { fail "ADD without CNI_NETNS passed"; return 1; }
	jqo '.code == 4' || return
	cni ADD c1 eth0 /nonexistent "$(conf)" && { fail "ADD into a missing netns passed"; return 1; }
	jqo '.code == 3' || return
	cni ADD c1 eth0 /etc/hostname "$(conf)" && { fail "ADD into a file passed"; return 1; }
	jqo '.code == 4' || return
	cni FROB c1 eth0 "$ns" "$(conf)" && { fail "verb FROB accepted"; return 1; }
	jqo '.code == 4' || return
	CNI_ARGS_T='IgnoreUnknown=1;MAC=03:00:00:00:00:01' cni ADD c1 eth0 "$ns" "$(conf)" &&
		{ fail "CNI_ARGS MAC=03:00:00:00:00:01 accepted"; return 1; }
	jqo '.code == 4 and (.details | test("multicast"))' || return
	# A configuration over 1 MiB: I/O error 5, saying why.
	head -c 1100000 /dev/zero | tr '\0' ' ' | CNI_COMMAND=ADD CNI_CONTAINERID=c1 \
		CNI_IFNAME=eth0 CNI_NETNS=$ns CNI_PATH=$STOCK "$CNI" >"$TMP/out" &&
		{ fail "a 1.1 MB configuration was read"; return 1; }
	jqo '.code == 5 and (.details | test("too large"))' || return
	# At the bound: 1 MiB exactly is read (and "{}" refused as a
	# configuration), a byte more is too large.
	{ printf '{}'; head -c $((1048576 - 2)) /dev/zero | tr '\0' ' '; } |
		CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_IFNAME=eth0 CNI_NETNS=$ns \
		CNI_PATH=$STOCK "$CNI" >"$TMP/out" && { fail "{} accepted"; return 1; }
	jqo '.code != 5' || return
	{ printf '{}'; head -c $((1048576 - 1)) /dev/zero | tr '\0' ' '; } |
		CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_IFNAME=eth0 CNI_NETNS=$ns \
		CNI_PATH=$STOCK "$CNI" >"$TMP/out" && { fail "1 MiB + 1 read"; return 1; }
	jqo '.code == 5 and (.details | test("too large"))' || return
	# All of these were refused before the dataDir was touched.
	[ ! -e "$TMP/state" ] || fail "a refused call made $(ls -A "$TMP/state")" || return
	# A failure after IPAM ran: the interface name is taken in the
	# container, so the NIC cannot be made; the lease goes back and the
	# interface that was there stays.
	in_ns "$ns" ip link add eth0 type veth peer name eth0p || return
	cni ADD c1 eth0 "$ns" "$(conf)" && { fail "ADD over a taken ifname passed"; return 1; }
	jqo '.code == 103' || return
	in_ns "$ns" ip link show eth0 >/dev/null || fail "the container's eth0 was deleted" || return
	expect_eq "$(links)" "$base" "links" || return
	expect_eq "$(leases)" 0 "leases" || return
	expect_eq "$(states)" 0 "state files" || return
	expect_eq "$(vc -j filter show)" "[]" "filter guests" || return
	# Addresses IPAM may return that no container can send from (stock
	# static IPAM hands out what it is given): the filter refuses each
	# with libvnic's message naming it (allowed, 0.0.0.0 would let every
	# protocol from it pass), before any address is set, and the ADD
	# leaves nothing (eth0 is taken in the container by now: eth1).
	local a
	for a in 0.0.0.0/24 224.0.0.5/4 127.0.0.2/8 ::/64 ::1/128 ff02::1/64; do
		cni ADD c1 eth1 "$ns" "$(conf "{\"ipam\": {\"type\": \"static\",
			\"addresses\": [{\"address\": \"10.9.0.5/24\"},
					{\"address\": \"$a\"}]}}")" &&
			{ fail "IPAM address $a accepted"; return 1; }
		jq -e --arg a "'${a%/*}' is " '.code == 104 and (.details | contains($a))' \
			"$TMP/out" >/dev/null || fail "IPAM address $a: $(cat "$TMP/out")" || return
		in_ns "$ns" ip link show eth1 >/dev/null 2>&1 &&
			{ fail "eth1 left in the container after $a"; return 1; }
		expect_eq "$(links)" "$base" "links after $a" || return
		expect_eq "$(states)" 0 "state files after $a" || return
		expect_eq "$(vc -j filter show)" "[]" "filter guests after $a" || return
	done
}

# A verb newer than the configuration's version is refused with code 1,
# as the spec and libcni's skel do, and changes nothing: a GC sent with a
# 1.0.0 configuration (which has no valid list) must not remove the
# network's attachments; CHECK came with 0.4.0, GC and STATUS with 1.1.0.
case_verbs_need_their_spec_version() {
	local ns h
	container ns && add c1 "$ns" || return
	h=$(host_end c1)
	cni GC "" "" "" "$(conf '{"cniVersion": "1.0.0"}')" &&
		{ fail "GC at 1.0.0 passed"; return 1; }
	jqo '.code == 1 and .cniVersion == "1.0.0" and (.details | test("GC"))' || return
	cni STATUS "" "" "" "$(conf '{"cniVersion": "1.0.0"}')" &&
		{ fail "STATUS at 1.0.0 passed"; return 1; }
	jqo '.code == 1' || return
	cni CHECK c1 eth0 "$ns" "$(with_prev c1 "$(conf '{"cniVersion": "0.3.1"}')")" &&
		{ fail "CHECK at 0.3.1 passed"; return 1; }
	jqo '.code == 1' || return
	ip link show "$h" >/dev/null || fail "GC at 1.0.0 removed $h" || return
	expect_eq "$(guests)" "c1.eth0" "filter guests" || return
	expect_eq "$(leases)" 1 "leases" || return
	cni CHECK c1 eth0 "$ns" "$(with_prev c1 "$(conf '{"cniVersion": "0.4.0"}')")" ||
		fail "CHECK at 0.4.0: $(cat "$TMP/out")"
}

# macvlan: made in the container's namespace on the lower device, the
# address configured there, tagged; DEL removes it and the lease; GC finds
# a stale one through its state file while its namespace lives.
case_macvlan() {
	local ns1 ns2 mconf base
	ip link add lower0 type veth peer name lower1 && ip link set lower0 up || return
	base=$(links)
	mconf=$(conf '{"mode": "macvlan", "master": "lower0"}')
	container ns1 && container ns2 || return
	add c1 "$ns1" "$mconf" && add c2 "$ns2" "$mconf" || return
	jq -e '(.interfaces | length) == 1 and .interfaces[0].name == "eth0" and
	       .ips[0].interface == 0' "$TMP/res.c1" >/dev/null ||
		fail "result: $(cat "$TMP/res.c1")" || return
	in_ns "$ns1" ip -j -d addr show eth0 >"$TMP/out" || return
	jqo '.[0].linkinfo.info_kind == "macvlan" and .[0].ifalias == "vnic:net1:c1.eth0:0" and
	     (.[0].addr_info | any(.family == "inet"))' || return
	expect_eq "$(links)" "$base" "host links (the macvlan is not on the host)" || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$mconf")" ||
		fail "CHECK: $(cat "$TMP/out")" || return
	# The container's own eth0 with the same address is not the macvlan.
	in_ns "$ns1" ip -j addr show eth0 | jq -r '.[0].addr_info[0] | "\(.local)/\(.prefixlen)"' >"$TMP/a" &&
	in_ns "$ns1" ip link set eth0 name eth9 && in_ns "$ns1" ip link add eth0 type veth peer name eth0p &&
	in_ns "$ns1" ip addr add "$(cat "$TMP/a")" dev eth0 || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$mconf")" &&
		{ fail "CHECK passed on a foreign eth0"; return 1; }
	jqo '.code == 100' || return
	in_ns "$ns1" ip link del eth0 && in_ns "$ns1" ip link set eth9 name eth0 || return
	cni DEL c1 eth0 "$ns1" "$mconf" || fail "DEL: $(cat "$TMP/out")" || return
	in_ns "$ns1" ip link show eth0 >/dev/null 2>&1 && { fail "macvlan left after DEL"; return 1; }
	expect_eq "$(leases)" 1 "leases after DEL" || return
	cni GC "" "" "" "$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$mconf")" ||
		fail "GC: $(cat "$TMP/out")" || return
	in_ns "$ns2" ip link show eth0 >/dev/null 2>&1 && { fail "GC left c2's macvlan"; return 1; }
	expect_eq "$(leases)" 0 "leases after GC" || return
	# CNI_NETNS is the empty file a runtime that crashed between its
	# unmount and its unlink leaves (the namespace is gone for DEL; here
	# c3's still lives, unreachable): DEL succeeds and frees the lease;
	# it failed with code 5 on every retry.
	add c3 "$ns2" "$mconf" && touch "$TMP/gone-ns" || return
	cni DEL c3 eth0 "$TMP/gone-ns" "$mconf" || fail "DEL: $(cat "$TMP/out")" || return
	expect_eq "$(leases)" 0 "leases after DEL with a gone namespace"
}

# Chaining: a prevResult's interfaces and addresses are kept and ours
# appended, indexes pointing at ours.  VERSION names 1.1.0.
case_chained_prev_result_and_version() {
	local ns prev
	container ns || return
	prev='{"prevResult": {"cniVersion": "1.1.0", "interfaces": [{"name": "lo0"}],
	       "ips": [{"address": "192.0.2.1/32", "interface": 0}]}}'
	add c1 "$ns" "$(conf "$prev")" || return
	jq -e '(.interfaces | map(.name)) == ["lo0", "'"$(host_end c1 2>/dev/null)"'", "eth0"] or
	       ((.interfaces | length) == 3 and .interfaces[0].name == "lo0" and .interfaces[2].name == "eth0")' \
		"$TMP/res.c1" >/dev/null || fail "interfaces: $(cat "$TMP/res.c1")" || return
	jq -e '(.ips | length) == 2 and .ips[0].address == "192.0.2.1/32" and .ips[1].interface == 2' \
		"$TMP/res.c1" >/dev/null || fail "ips: $(cat "$TMP/res.c1")" || return
	echo '{"cniVersion": "1.0.0"}' | CNI_COMMAND=VERSION "$CNI" >"$TMP/out" || return
	jqo '.cniVersion == "1.0.0" and (.supportedVersions | index("1.1.0")) != null'
	# A 0.4.0 runtime gets a 0.4.0-shaped result.
	cni DEL c1 eth0 "$ns" "$(conf)" || return
	add c1 "$ns" "$(conf '{"cniVersion": "0.4.0"}')" || return
	jq -e '.cniVersion == "0.4.0" and .ips[0].version == "4"' "$TMP/res.c1" >/dev/null ||
		fail "0.4.0 result: $(cat "$TMP/res.c1")"
}

# Through cnitool (libcni, spec 1.1) where it is installed: add (with a
# MAC through the "mac" capability), check, status, del.  Otherwise SKIP
# (exit 77, cli_lib.sh).
case_cnitool() {
	local tool ns bin
	tool=$(command -v cnitool || ls "${GOPATH:-$HOME/go}/bin/cnitool" 2>/dev/null) ||
		{ echo "cnitool not installed (go install github.com/containernetworking/cni/cnitool@v1.3.0)"; return 77; }
	container ns || return
	mkdir -p "$TMP/netconf" "$TMP/bin" && ln -s "$(realpath "$CNI")" "$TMP/bin/vnic-cni" || return
	conf '{"capabilities": {"mac": true}}' |
		jq '{cniVersion, name, plugins: [del(.cniVersion, .name)]}' >"$TMP/netconf/10-net1.conflist"
	bin="$TMP/bin:$STOCK"
	export NETCONFPATH=$TMP/netconf CNI_PATH=$bin CNI_CACHE_DIR=$TMP/cache
	# The "mac" capability: libcni passes CAP_ARGS's MAC as runtimeConfig.
	CAP_ARGS='{"mac": "02:11:22:33:44:55"}' run 0 "$tool" add net1 "$ns" || return
	jqo '.interfaces[1].name == "eth0" and (.ips | length) == 1 and
	     .interfaces[1].mac == "02:11:22:33:44:55"' || return
	expect_eq "$(cont_mac "$ns")" 02:11:22:33:44:55 "the container's MAC" || return
	run 0 "$tool" check net1 "$ns" || return
	run 0 "$tool" status net1 "$ns" || return
	run 0 "$tool" del net1 "$ns" || return
	expect_eq "$(guests)" "" "filter guests after cnitool del" || return
	expect_eq "$(leases)" 0 "leases after cnitool del"
}

# A filter another tool removed.  The table is not claimed between calls
# (cni.rst), so a node's `nft flush ruleset` (systemctl restart nftables)
# or `nft delete table` removes every attachment's filter, and nothing put
# them back: each container could spoof until it was made again.  The
# state files now record what a filter needs, and the next ADD, DEL or GC
# of the network applies the missing ones again.

# sent_from NS CID SRC: one datagram from the container (SRC: its own
# address, or 10.9.0.77, which it gave itself) to the host end; 0 if it was
# delivered (the host's Udp NoPorts grew), 1 if it was dropped and counted.
sent_from() {
	local before=$(noports) dropped=$(drops "$2.eth0")
	in_ns "$1" ip route replace 10.9.0.1 dev eth0 src "$3" || return 2
	send_udp "$1"
	until_ok gt noports "$before" && return 0
	[ -n "$dropped" ] && gt drops "$dropped" "$2.eth0" && return 1
	fail "datagram from $3 of $2 neither delivered nor counted"; return 2
}

# The legit datagram delivered, the spoofed one delivered (want 0) or
# dropped and counted (want 1), for attachment CID in NS.
spoof_is() {
	local ret
	sent_from "$2" "$3" "$(cont_ip "$3")"; ret=$?
	[ $ret = 0 ] || fail "$3's legit datagram: $ret" || return
	sent_from "$2" "$3" 10.9.0.77; ret=$?
	expect_eq "$ret" "$1" "$3's spoofed datagram (0 delivered, 1 dropped)"
}

# restore_by TRIGGER: c1 and c2 (and c3, for DEL and GC) ADDed, their
# filters removed, spoofed frames delivered; then TRIGGER (add: another
# container's ADD; del: c3's DEL; gc: a GC that keeps c1 and c2): c1's and
# c2's spoofed frames dropped again, legit ones delivered.  CHECK and
# STATUS in between wrote nothing (the ruleset byte for byte).
restore_by() {
	local ns1 ns2 ns3 before valid
	container ns1 && container ns2 && container ns3 || return
	add c1 "$ns1" && add c2 "$ns2" || return
	[ "$1" = add ] || add c3 "$ns3" || return
	in_ns "$ns1" ip addr add 10.9.0.77/32 dev eth0 &&
	in_ns "$ns2" ip addr add 10.9.0.77/32 dev eth0 || return
	spoof_is 1 "$ns1" c1 && spoof_is 1 "$ns2" c2 || return
	jq -e '.mac and .switches and (.ips | length) == 1 and .host' \
		"$TMP/state/net1/c1.eth0" >/dev/null ||
		fail "state file: $(cat "$TMP/state/net1/c1.eth0")" || return
	if [ "$1" = gc ]; then
		nft delete table netdev vnic || return
	else
		nft flush ruleset || return
	fi
	spoof_is 0 "$ns1" c1 && spoof_is 0 "$ns2" c2 || return
	before=$(nft list ruleset)
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" &&
		{ fail "CHECK passed without the filter"; return 1; }
	jqo '.code == 102' || return
	cni STATUS "" "" "" "$(conf)" || fail "STATUS: $(cat "$TMP/out")" || return
	expect_eq "$(nft list ruleset)" "$before" "ruleset after CHECK and STATUS" || return
	case $1 in
	add)	add c3 "$ns3" || return ;;
	del)	cni DEL c3 eth0 "$ns3" "$(conf)" ||
			fail "DEL: $(cat "$TMP/out" "$TMP/err")" || return ;;
	gc)	valid='{"cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"},
		       {"containerID": "c2", "ifname": "eth0"}]}'
		cni GC "" "" "" "$(conf "$valid")" ||
			fail "GC: $(cat "$TMP/out" "$TMP/err")" || return ;;
	esac
	grep -q "filter of 2 attachment(s) of network net1 was missing" "$TMP/err" ||
		fail "$1 said nothing of the restore: $(cat "$TMP/err")" || return
	if [ "$1" = add ]; then
		expect_eq "$(guests)" "c1.eth0 c2.eth0 c3.eth0" "filter guests" || return
	else
		expect_eq "$(guests)" "c1.eth0 c2.eth0" "filter guests" || return
	fi
	spoof_is 1 "$ns1" c1 && spoof_is 1 "$ns2" c2 || return
	cni CHECK c1 eth0 "$ns1" "$(with_prev c1 "$(conf)")" ||
		fail "CHECK after the restore: $(cat "$TMP/out")"
}

case_filters_restored_by_add() { restore_by add; }
case_filters_restored_by_del() { restore_by del; }
case_filters_restored_by_gc() { restore_by gc; }

# What cannot be restored is left out, and fails nothing: a state file of
# an earlier vnic-cni (no filter record; said once on stderr), an
# attachment whose host end is gone, and one whose host end's name another
# link took since (never filtered: its frames are not the container's).
case_filters_restored_only_where_possible() {
	local ns1 ns2 ns3 ns4 h3
	container ns1 && container ns2 && container ns3 && container ns4 || return
	add c1 "$ns1" && add c2 "$ns2" && add c3 "$ns3" || return
	jq -c 'del(.mac, .ips, .switches)' "$TMP/state/net1/c1.eth0" >"$TMP/old" &&
		mv "$TMP/old" "$TMP/state/net1/c1.eth0" || return
	h3=$(host_end c3)
	nft flush ruleset && ip link del "$h3" && ip link add "$h3" type veth peer name vcforeign1 || return
	add c4 "$ns4" || return
	expect_eq "$(grep -c 'cannot be restored' "$TMP/err")" 1 "old-format notes" || return
	grep -q "1 attachment(s) of network net1 is missing and cannot be restored" "$TMP/err" ||
		fail "stderr: $(cat "$TMP/err")" || return
	expect_eq "$(guests)" "c2.eth0 c4.eth0" "filter guests" || return
	# The old file still serves DEL and GC as before.
	cni DEL c1 eth0 "$ns1" "$(conf)" || fail "DEL c1: $(cat "$TMP/out")" || return
	ip link show "$(host_end c1)" >/dev/null 2>&1 && { fail "DEL left c1's NIC"; return 1; }
	[ ! -e "$TMP/state/net1/c1.eth0" ] || fail "DEL left c1's state file"
}

CASES=(add_filters_real_frames bpf_backend_real_frames containers_reach_each_other
       ipv6_via_the_gateway del_twice del_finds_host_end_by_kept_name
       bogus_features_file_probes
       host_end_name_hashed_or_kernel_picked network_names_never_collide
       ipam_version_cache_renamed_into_place
       check_reports_faults check_reports_an_unreadable_filter
       check_sees_the_bpf_hooks_go check_sees_part_of_the_filter_go
       gc_removes_only_the_stale gc_valid_list_spellings
       gc_releases_leases_in_bulk
       gc_releases_lease_of_a_long_id gc_ignores_a_leftover_state_copy
       dotted_names_stay_apart
       ipam_result_then_failure_undone ipam_output_after_result
       ipam_killed_by_signal ipam_error_without_valid_code
       ipam_version_failure ipam_result_bad_prefix
       del_retries_a_raced_removal del_failing_nic_deletion_keeps_the_filter
       del_failing_nic_deletion_keeps_the_bpf_filter
       gc_failing_nic_deletion_keeps_the_filter second_add_keeps_first_state
       held_table_refused_cleanly del_next_to_an_owner del_on_a_damaged_table
       gc_next_to_an_owner
       gc_on_an_unreadable_filter status status_sees_an_unusable_data_dir
       status_sees_a_held_table status_sees_a_damaged_table
       bad_input_leaves_nothing
       verbs_need_their_spec_version macvlan
       mac_asked_by_the_runtime macvlan_mac_asked_by_the_runtime
       chained_prev_result_and_version cnitool
       filters_restored_by_add filters_restored_by_del filters_restored_by_gc
       filters_restored_only_where_possible)

[ -x "$CNI" ] || skip_all "no $CNI (make)"
[ -x "$STOCK/host-local" ] || skip_all "no $STOCK/host-local (apt install containernetworking-plugins)"
tap_main jq ip nft nsenter unshare -- "$@"
