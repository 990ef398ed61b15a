#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnicctl filter end to end, as TAP.  Each case runs in its own network
# namespace (unshare -n) holding a veth pair lower0/lower0p as the lower
# device and three guest NICs made by 'vnicctl guest add': vm1's macvtaps
# vm1m0 and vm1m1 on lower0, and vm2's veth vm2h0 (peer vm2p0, the guest's
# side).  A policy file for both guests is written from their MACs; the
# cases check what vnicctl filter did with nft -j and jq.  The host's
# namespace is never touched.
#
#   selftests/vnicctl_filter_test.sh [CASE...]   (root; VNICCTL= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

# jqo FILTER [JQ-ARGS...]: the filter must hold on $TMP/out.
jqo() {
	local filter=$1
	shift
	jq -e "$@" "$filter" "$TMP/out" >/dev/null ||
		fail "output: $filter: $(head -c 600 "$TMP/out")"
}

mac_of() { ip -j link show "$1" | jq -r '.[0].address'; }

# The ruleset as JSON; every string in it, one a line.
ruleset_json() { nft_json; }
ruleset_strings() { ruleset_json | jq -r '.. | strings'; }

# has_string S: the ruleset holds the string S somewhere (a set element,
# a concatenation, a name).  Not grep -q: its early exit would fail jq with
# SIGPIPE, and the pipeline with it (pipefail).
has_string() { ruleset_strings | grep -xF -- "$1" >/dev/null; }

# has_mac M: the macs set holds MAC M (a raw 48-bit field: nft prints it
# as a number).
has_mac() {
	local hex=${1//:/}
	ruleset_json | jq -e --argjson v "$((16#$hex))" \
	  '[.nftables[] | .set? // empty | select(.name == "macs") |
	    .elem[]?.concat[1]] | index($v) != null' >/dev/null
}

# The ruleset, comparable across namespaces and processes, as JSON: no
# handles, no table flags (owner, persist: a matter of the process that
# made the table; nft 1.0.6 cannot even name persist), counters zeroed;
# tables, sets, maps, counters and chains sorted (their listing order is
# the order they were made in), rules in their order within each chain.
# The state element's generation (g=) is masked: apply records the one its
# commit made, a rendered text loaded by nft -f none.
ruleset_norm() {
	nft_json | jq -S '
	  def norm: walk(if type == "object" then
			   del(.handle) |
			   (if has("packets") and has("bytes")
			    then .packets = 0 | .bytes = 0 else . end)
			 elif type == "string" then sub(" g=[0-9]+ "; " g=G ")
			 else . end);
	  [.nftables[] | select(has("metainfo") | not)
	   | if has("table") then .table |= del(.flags) else . end] as $all |
	  {objects: ([$all[] | select(has("rule") | not)] | norm | sort),
	   rules: ([$all[] | select(has("rule")) | .rule] | norm |
		   group_by(.family, .table, .chain))}'
}

setup_ns() {
	ip link set lo up &&
	ip link add lower0 type veth peer name lower0p &&
	ip link set lower0 up && ip link set lower0p up
}

# The guests' NICs, as the runtime would make them.
make_nics() {
	vc guest add vm1 --kind macvtap --lower lower0 --nics 2 \
		--name vm1m%d --naming explicit >/dev/null &&
	vc guest add vm2 --kind veth --name vm2h0 --peer-name vm2p0 >/dev/null
}

# write_policy FILE: vm1 (2 macvtaps, clean traffic, 2 rules) and vm2 (a
# veth, 3 switches), with the NICs' real MACs (vm2's is its peer's: that
# is the guest's side).
write_policy() {
	jq -n --arg m0 "$(mac_of vm1m0)" --arg m1 "$(mac_of vm1m1)" \
	      --arg m2 "$(mac_of vm2p0)" '
	{guests: [
	  {name: "vm1",
	   nics: [{ifname: "vm1m0", kind: "macvtap", mac: $m0,
		   ipv4: ["192.0.2.10"], ipv6: ["2001:db8::10"]},
		  {ifname: "vm1m1", kind: "macvtap", mac: $m1,
		   ipv4: ["192.0.2.11"]}],
	   rules: [{proto: "tcp", dport: 22, action: "accept"},
		   {proto: "udp", dport: "1000-2000",
		    daddr: "198.51.100.0/24", action: "drop"}]},
	  {name: "vm2", switches: ["mac-spoof", "ip-spoof", "arp-spoof"],
	   nics: [{ifname: "vm2h0", kind: "veth", mac: $m2,
		   ipv4: ["192.0.2.20"]}]}]}' >"$1"
}

# What of the ruleset belongs to the NICs named by the regex $1: set
# elements that mention one of them, rules of chains whose name matches,
# without handles.
ruleset_part() {
	ruleset_json | jq -S --arg re "$1" '
	  def del_handles: walk(if type == "object" then del(.handle) else . end);
	  [.nftables[] |
	   (select(.set?) | .set | {set: .name,
	      elem: [(.elem // [])[] | select([.. | strings] | any(test($re)))]}),
	   (select(.rule?) | .rule | select(.chain | test($re)) | del_handles)]'
}

# ------------------------------------------------------------------ cases

# apply: both guests in one commit; the table "vnic" holds the NICs' MACs.
case_apply() {
	write_policy "$TMP/p.json" || return
	run 0 vc -j filter apply "$TMP/p.json" || return
	jqo '.added == 2 and .changed == 0 and .removed == 0 and
	     .unchanged == 0 and .writes == true and .batches >= 1 and
	     .messages > 0' || return
	ruleset_json >"$TMP/rs.json"
	jq -e '[.nftables[] | .table? // empty | select(.name == "vnic")] |
	       length == 1' "$TMP/rs.json" >/dev/null ||
		fail "no table vnic: $(head -c 400 "$TMP/rs.json")" || return
	local m
	for m in "$(mac_of vm1m0)" "$(mac_of vm1m1)" "$(mac_of vm2p0)"; do
		has_mac "$m" || fail "MAC $m not in the ruleset" || return
	done
	has_string 192.0.2.10 || fail "vm1's IPv4 not in the ruleset" || return
	# Applying vm2 alone replaces it and leaves vm1.
	jq '.guests |= map(select(.name == "vm2"))' "$TMP/p.json" >"$TMP/vm2.json"
	run 0 vc filter apply "$TMP/vm2.json" || return
	grep -Eq '^0 added, [01] changed, 0 removed' "$TMP/out" ||
		fail "apply vm2: $(cat "$TMP/out")" || return
	has_mac "$(mac_of vm1m0)" || fail "vm1 gone after applying vm2"
}

# show: both guests with their drop counters; one guest; an unknown one.
case_show() {
	write_policy "$TMP/p.json" || return
	run 0 vc filter apply "$TMP/p.json" || return
	run 0 vc -j filter show || return
	jqo '[.[].guest] == ["vm1", "vm2"] and
	     all(.[]; (.packets | type) == "number" and
		      (.bytes | type) == "number")' || return
	run 0 vc filter show || return
	grep -Eq '^GUEST +DROP-PACKETS +DROP-BYTES$' "$TMP/out" &&
	grep -Eq '^vm1 +[0-9]+ +[0-9]+$' "$TMP/out" &&
	grep -Eq '^vm2 +[0-9]+ +[0-9]+$' "$TMP/out" ||
		fail "show: $(cat "$TMP/out")" || return
	run 0 vc -j filter show vm2 || return
	jqo '.guest == "vm2" and (.packets | type) == "number"' || return
	run 1 vc filter show nosuch || return
	grep -q '^vnicctl: ' "$TMP/err" || fail "no message for nosuch"
}

# show on a table another process damaged (vm1's IPv4 addresses flushed
# from ip4s: its filter no longer what was installed) says so on stderr
# and exits 1, with a guest operand too, whose counter is still printed;
# after a sync, exit 0 and nothing on stderr.
case_show_damaged() {
	local args
	write_policy "$TMP/p.json" || return
	run 0 vc filter apply "$TMP/p.json" || return
	nft flush set netdev vnic ip4s || return
	while IFS='|' read -r args; do
		# shellcheck disable=SC2086
		run 1 vc $args || return
		grep -q '^vnicctl: filter show: the table is damaged: set ip4s, 3 elements to restore; .*filter sync POLICY. repairs it$' \
			"$TMP/err" || fail "'$args': $(cat "$TMP/err")" || return
	done <<-EOF
	filter show
	filter show vm1
	-j filter show vm1
	EOF
	jqo '.guest == "vm1" and (.packets | type) == "number"' || return
	run 0 vc filter sync "$TMP/p.json" || return
	for args in "filter show" "filter show vm1"; do
		# shellcheck disable=SC2086
		run 0 vc $args || return
		[ ! -s "$TMP/err" ] || fail "'$args' after the sync: $(cat "$TMP/err")" ||
			return
	done
}

# A guest name or a file name that begins with '-': after "--" it is an
# operand, for every filter command; before it, an unknown option.
case_dash_name() {
	write_policy "$TMP/p.json" || return
	jq '.guests[0].name = "-vm1"' "$TMP/p.json" >"$TMP/-p.json" || return
	cd "$TMP" || return
	run 2 vc filter apply -p.json || return
	run 0 vc filter apply -- -p.json || return
	run 0 vc -j filter show -- -vm1 || return
	jqo '.guest == "-vm1"' || return
	run 0 vc filter diff -- -p.json || return
	run 0 vc filter render -- -p.json || return
	run 0 vc filter remove -- -vm1 || return
	run 0 vc -j filter show || return
	jqo '[.[].guest] == ["vm2"]' || return
	run 0 vc filter sync -- -p.json || return
	run 2 vc filter show -- -vm1 extra || return
}

# The counter counts what a guest's filter dropped: vm2 (arp-spoof) sends
# ARP from an address it does not own.
case_counter() {
	write_policy "$TMP/p.json" || return
	run 0 vc filter apply "$TMP/p.json" || return
	ip link set vm2h0 up && ip link set vm2p0 up &&
	ip addr add 10.9.9.9/24 dev vm2p0 || return
	# An ARP request for 10.9.9.1 with sender 10.9.9.9 (not 192.0.2.20).
	echo x 2>/dev/null >/dev/udp/10.9.9.1/9
	sleep 1.2
	run 0 vc -j filter show || return
	jqo '(.[] | select(.guest == "vm2") | .packets) >= 1 and
	     (.[] | select(.guest == "vm1") | .packets) == 0'
}

# remove: one guest goes, the other stays; an unknown guest changes nothing.
case_remove() {
	write_policy "$TMP/p.json" || return
	run 0 vc filter apply "$TMP/p.json" || return
	run 0 vc -j filter remove vm1 || return
	jqo '.removed == 1 and .added == 0 and .writes == true' || return
	run 0 vc -j filter show || return
	jqo '[.[].guest] == ["vm2"]' || return
	! has_mac "$(mac_of vm1m0)" || fail "vm1's MAC still installed" || return
	has_mac "$(mac_of vm2p0)" || fail "vm2's MAC gone" || return
	nft list ruleset >"$TMP/before"
	run 1 vc filter remove vm2 nosuch || return
	grep -q '^vnicctl: ' "$TMP/err" || fail "no message" || return
	nft list ruleset | cmp -s - "$TMP/before" ||
		fail "a failed remove changed the ruleset" || return
	run 0 vc filter remove vm2 || return
	run 0 vc -j filter show || return
	jqo 'length == 0'
}

# sync of the installed state: one read, nothing written, not even the
# claim (vnicctl's sync claims with its commit): the generation stays the
# same, as with --no-owner.
case_sync_same() {
	local genid
	write_policy "$TMP/p.json" || return
	run 0 vc -j filter sync "$TMP/p.json" || return
	jqo '.added == 2 and .writes == true' || return
	genid=$(jq .genid "$TMP/out")
	nft list ruleset >"$TMP/before"
	run 0 vc -j filter sync "$TMP/p.json" || return
	jqo '.writes == false and .messages == 0 and .batches == 0 and
	     .unchanged == 2 and .added == 0 and .changed == 0 and
	     .removed == 0' || return
	jqo '.genid == $g' --argjson g "$genid" || return
	nft list ruleset | cmp -s - "$TMP/before" ||
		fail "an unchanged sync changed the ruleset" || return
	run 0 vc --no-owner -j filter sync "$TMP/p.json" || return
	genid=$(jq .genid "$TMP/out")
	run 0 vc --no-owner -j filter sync "$TMP/p.json" || return
	jqo '.writes == false' || return
	expect_eq "$(jq .genid "$TMP/out")" "$genid" "generation (--no-owner)" || return
	nft list ruleset | cmp -s - "$TMP/before" ||
		fail "an unchanged sync changed the ruleset" || return
	run 0 vc filter sync "$TMP/p.json" || return
	grep -q 'nothing written' "$TMP/out" || fail "sync: $(cat "$TMP/out")"
}

# sync of a changed file: only the changed guest is written; guests not in
# the file are removed, new ones added.
case_sync_changed() {
	write_policy "$TMP/p.json" || return
	run 0 vc filter apply "$TMP/p.json" || return
	ruleset_part 'vm1' >"$TMP/vm1.before"
	ruleset_part 'vm2' >"$TMP/vm2.before"
	jq '(.guests[] | select(.name == "vm2") | .nics[0].ipv4) += ["192.0.2.21"]' \
		"$TMP/p.json" >"$TMP/p2.json"
	run 0 vc -j filter sync "$TMP/p2.json" || return
	jqo '.changed == 1 and .unchanged == 1 and .added == 0 and
	     .removed == 0 and .writes == true' || return
	has_string 192.0.2.21 || fail "vm2's new address not installed" || return
	ruleset_part 'vm1' | cmp -s - "$TMP/vm1.before" ||
		fail "vm1's part changed: $(ruleset_part vm1 | diff - "$TMP/vm1.before")" || return
	ruleset_part 'vm2' | cmp -s - "$TMP/vm2.before" &&
		fail "vm2's part did not change" && return 1
	# vm1 out, vm3 (a second veth) in.
	vc guest add vm3 --kind veth --name vm3h0 --peer-name vm3p0 >/dev/null || return
	jq --arg m "$(mac_of vm3p0)" '.guests |= (map(select(.name != "vm1")) +
	    [{name: "vm3", nics: [{ifname: "vm3h0", kind: "veth", mac: $m}]}])' \
		"$TMP/p2.json" >"$TMP/p3.json"
	run 0 vc -j filter sync "$TMP/p3.json" || return
	jqo '.added == 1 and .removed == 1 and .unchanged == 1 and
	     .changed == 0' || return
	run 0 vc -j filter show || return
	jqo '[.[].guest] == ["vm2", "vm3"]' || return
	! has_mac "$(mac_of vm1m0)" || fail "vm1 still installed"
}

# Bad policy files: exit 2, the message names the JSON path and says what
# is wrong (vnicctl checks the JSON's shape, the library's policy model every
# value, so most messages are the library's), nothing is installed (no
# table at all on an empty ruleset; the ruleset unchanged next to installed
# guests, for apply and for sync).
case_bad_json() {
	local pass mod path msg want cmd n=0
	write_policy "$TMP/p.json" || return
	for pass in empty installed; do
		if [ "$pass" = installed ]; then
			run 0 vc filter apply "$TMP/p.json" || return
		fi
		nft list ruleset >"$TMP/before"
		while IFS='|' read -r mod path msg; do
			n=$((n + 1))
			if [ "${mod:0:1}" = '!' ]; then
				printf '%s' "${mod:1}" >"$TMP/bad.json"
			else
				jq "$mod" "$TMP/p.json" >"$TMP/bad.json" || return
			fi
			# "FILE: PATH: ..."; a syntax error "FILE:LINE:COLUMN: ...".
			want="bad.json: $path"
			[ "${path:0:1}" = : ] && want="bad.json$path"
			for cmd in apply sync; do
				run 2 vc filter "$cmd" "$TMP/bad.json" || {
					log "case $n: $mod"; return 1; }
				grep -qF -- "$want" "$TMP/err" &&
				grep -qF -- "$msg" "$TMP/err" ||
					fail "$cmd $mod: message lacks '$want' or '$msg': $(cat "$TMP/err")" ||
					return
				[ "$(wc -l <"$TMP/err")" = 1 ] ||
					fail "$cmd $mod: more than one line: $(cat "$TMP/err")" || return
				[ ! -s "$TMP/out" ] || fail "$cmd $mod: stdout not empty" || return
				nft list ruleset | cmp -s - "$TMP/before" ||
					fail "$cmd $mod ($pass): the ruleset changed" || return
			done
		done <<-'EOF'
		.guests[0].nics[1].mac = "02:00:00:00:00:zz"|guests[0].nics[1]: |NIC vm1m1: mac '02:00:00:00:00:zz' is not a MAC address like
		.guests[1].nics[0].mac = "ff:ff:ff:ff:ff:ff"|guests[1].nics[0]: |NIC vm2h0: mac 'ff:ff:ff:ff:ff:ff' is a multicast or broadcast MAC
		.guests[1].nics[0].mac = "00:00:00:00:00:00"|guests[1].nics[0]: |is the all-zeroes MAC address
		.guests[1].nics[0].colour = "blue"|guests[1].nics[0].colour: |unknown key (known: ifname,
		.guests[0].nics[1].ipv4 = "192.0.2.11"|guests[0].nics[1].ipv4: |expected an array of IPv4 addresses, got a string
		.guests[0].nics[1].ipv4 = [11]|guests[0].nics[1].ipv4[0]: |expected an address string, got an integer
		.guests[0].nics[0].ipv6[0] = "2001:db8::zz"|guests[0].nics[0]: |NIC vm1m0: ipv6[0] '2001:db8::zz' is not an IPv6 address
		.guests[0].nics[0].ipv4[0] = "192.0.2.10/24"|guests[0].nics[0]: |NIC vm1m0: ipv4[0] '192.0.2.10/24' is not an IPv4 address
		.guests[0].nics[0].ipv6 += ["2001:db8::0010"]|guests[0].nics[0]: |ipv6[1] '2001:db8::0010' is ipv6[0] again
		.guests[0].nics[0].ipv4 += ["0.0.0.0"]|guests[0].nics[0]: |NIC vm1m0: ipv4[1] '0.0.0.0' is the unspecified address
		.guests[1].nics[0].ipv4 = ["127.0.0.1"]|guests[1].nics[0]: |NIC vm2h0: ipv4[0] '127.0.0.1' is a loopback address
		.guests[0].nics[1].ipv4 += ["255.255.255.255"]|guests[0].nics[1]: |NIC vm1m1: ipv4[1] '255.255.255.255' is the limited broadcast address
		.guests[0].nics[0].ipv6 += ["ff02::1"]|guests[0].nics[0]: |NIC vm1m0: ipv6[1] 'ff02::1' is a multicast address
		.guests[0].nics[0].ipv6 = ["::"]|guests[0].nics[0]: |NIC vm1m0: ipv6[0] '::' is the unspecified address
		.guests[0].nics[0].ipv6 = ["::ffff:192.0.2.10"]|guests[0].nics[0]: |NIC vm1m0: ipv6[0] '::ffff:192.0.2.10' is an IPv4-mapped address
		.guests[0].nics[0].ipv4 = reduce range(65) as $i ([]; . + ["10.0.0.\($i)"])|guests[0].nics[0]: |65 ipv4 and 1 ipv6 addresses: at most 64 per family
		.guests[1].switches[1] = "bogus"|guests[1].switches[1]: |unknown switch 'bogus' (known: mac-spoof,
		.guests[1].switches[1] = "mac-spoof"|guests[1].switches[1]: |switch 'mac-spoof' repeats one listed before
		.guests[0].rules[1].dport = "2000-1000"|guests[0].rules[1]: |rules[1]: dport range 2000-1000 ends before it starts
		.guests[0].rules[0].dport = 0|guests[0].rules[0].dport: |0 is not a port in 1..65535
		.guests[0].rules[0].dport = "22x"|guests[0].rules[0].dport: |'22x' is not a port or a range
		.guests[0].rules[0].proto = "icmp"|guests[0].rules[0]: |rules[0]: a dport needs protocol tcp or udp
		.guests[0].rules[1].daddr = "198.51.100.0/33"|guests[0].rules[1]: |rules[1]: daddr '198.51.100.0/33' is not an address or CIDR
		.guests[0].rules[1].daddr = "198.51.100.0/+3"|guests[0].rules[1]: |daddr '198.51.100.0/+3' is not an address or CIDR
		.guests[0].rules[0].action = "reject"|guests[0].rules[0].action: |unknown action 'reject' (accept, drop)
		.guests[0].rules[0] = {proto: "icmp", daddr: "2001:db8::/32", action: "drop"}|guests[0].rules[0]: |the ICMP version and the daddr's address family differ
		.guests[1].nics[0].ifname = "vm1m0"|guests[1].nics[0]: |NIC vm1m0 is claimed by guest vm1 already
		.guests[1].name = "vm1"|guests[1].name: |guest vm1: already in the policy
		.guests[1].name = "no/slash"|guests[1].name: |guest no/slash: a guest name is 1 to 64 of [A-Za-z0-9_.-]
		.guests[1].nics = []|validate: |guest vm2: has no NIC (a guest needs at least one)
		del(.guests[0].nics[0].kind)|guests[0].nics[0].kind: |missing
		.guests[0].nics[0].kind = "tun"|guests[0].nics[0]: |NIC vm1m0: kind tun cannot be filtered (macvtap, macvlan, veth, tap)
		.guests[0].nics[0].kind = "bogus"|guests[0].nics[0].kind: |unknown kind 'bogus' (kinds: macvtap,
		.guests[0].nics[0].ifname = "0123456789abcdef"|guests[0].nics[0]: |NIC ifname '0123456789abcdef': longer than 15 characters
		.guests[0].nics[0].ifname = "vm%d"|guests[0].nics[0]: |NIC ifname 'vm%d': a NIC needs an exact name, not a template
		.guests[0].name = 42|guests[0].name: |expected the guest's name, got an integer
		.guests = {}|guests: |expected an array of guest objects, got an object
		.extra = 1|extra: |unknown key (known: guests)
		[.]|top level: |expected an object
		!{"guests": [{"name": "vm1",}]}|:1:|
		EOF
	done
}

# render: nft(8) text that, loaded with nft -f in a fresh namespace holding
# the same device names, gives the ruleset apply made.
case_render() {
	write_policy "$TMP/p.json" || return
	run 0 vc filter render "$TMP/p.json" || return
	cp "$TMP/out" "$TMP/render.nft"
	grep -q '^table ' "$TMP/render.nft" ||
		fail "render: $(head -5 "$TMP/render.nft")" || return
	run 0 vc filter apply "$TMP/p.json" || return
	ruleset_norm >"$TMP/applied.json" || return
	grep -q '"vm1m0"' "$TMP/applied.json" ||
		fail "no ruleset to compare: $(head -c 300 "$TMP/applied.json")" || return
	unshare -n "$0" __sub load_render "$TMP" || return
	diff -u "$TMP/applied.json" "$TMP/loaded.json" >&2 ||
		fail "nft -f of the rendered text differs from what apply made"
}

# In a fresh namespace: the same device names, then nft -f of the text.
sub_load_render() {
	TMP=$1
	setup_ns && make_nics || return
	nft -f "$TMP/render.nft" || fail "nft -f rejected the rendered text" || return
	ruleset_norm >"$TMP/loaded.json"
}

# Reading commands leave no trace: show and render in a namespace without
# the table do not create it.
case_readonly() {
	write_policy "$TMP/p.json" || return
	run 0 vc -j filter show || return
	jqo 'length == 0' || return
	expect_eq "$(nft list ruleset | wc -c)" 0 "ruleset after show" || return
	run 0 vc filter render "$TMP/p.json" || return
	expect_eq "$(nft list ruleset | wc -c)" 0 "ruleset after render" || return
	# No table differs from the policy (1), and diff makes none.
	run 1 vc filter diff "$TMP/p.json" || return
	expect_eq "$(nft list ruleset | wc -c)" 0 "ruleset after diff"
}

# A runtime that links libvnic and holds the table: vm2's filters applied
# with a claiming handle (MAC in argv[1]); prints "ready", keeps the handle
# until its stdin ends.
holder_src() {
	cat <<'EOF'
#include <stdio.h>
#include <vnic/vnic.h>

int main(int argc, char **argv)
{
	VNIC_OPTS(vnic_nic_policy, nic, .ifname = "vm2h0", .kind = VNIC_KIND_VETH);
	struct vnic_filter_result res = { .sz = sizeof(res) };
	struct vnic_policy *p;
	struct vnic_ctx *ctx;
	struct vnic_filter *n;

	if (argc != 2 || vnic_ctx_new(NULL, &ctx))
		return 2;
	nic.mac = argv[1];
	if (vnic_policy_new(ctx, &p) || vnic_policy_add_guest(p, "vm2", NULL) ||
	    vnic_policy_add_nic(p, "vm2", &nic) || vnic_filter_open(ctx, NULL, &n) ||
	    vnic_filter_apply(n, p, &res)) {
		fprintf(stderr, "holder: %s\n", vnic_ctx_errmsg(ctx));
		return 1;
	}
	if (!(vnic_filter_features(n) & VNIC_FILTER_FEAT_OWNER))
		return 3;
	printf("ready\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	/* Everything freed: a sanitized build checks for leaks at exit. */
	vnic_filter_close(n);
	vnic_policy_free(p);
	vnic_ctx_free(ctx);
	return 0;
}
EOF
}

# Next to a running program that owns the table, show, diff and render work
# (they read without claiming) and change nothing; apply fails with EPERM.
case_owned_show() {
	local lib san= hpid ready= rc=0
	lib=$(dirname "$VNICCTL")/libvnic.a
	# A sanitized build's archive needs the sanitizers' runtimes.  Not
	# grep -q: its early exit would fail nm (pipefail).
	nm "$lib" 2>/dev/null | grep __asan_init >/dev/null &&
		san="-fsanitize=address,undefined"
	holder_src >"$TMP/holder.c"
	# shellcheck disable=SC2046,SC2086
	run 0 cc $san -I"$here/../include" -o "$TMP/holder" "$TMP/holder.c" "$lib" \
		$(pkg-config --libs libnftnl libmnl libbpf) -lpthread || return
	write_policy "$TMP/p.json" || return
	mkfifo "$TMP/hin" || return
	"$TMP/holder" "$(mac_of vm2p0)" <"$TMP/hin" >"$TMP/hout" 2>&1 &
	hpid=$!
	exec 4>"$TMP/hin"
	for _ in $(seq 50); do
		ready=$(cat "$TMP/hout")
		[ -n "$ready" ] && break
		sleep 0.1
	done
	[ "$ready" = ready ] || { fail "holder: ${ready:-no answer}"; rc=1; }
	[ "$rc" = 0 ] && { nft -j list ruleset | jq -e '[.nftables[] | .table? // empty |
		select(.name == "vnic") | [.flags] | flatten | any(. == "owner")] == [true]' \
		>/dev/null ||
		{ fail "the holder does not own the table"; rc=1; }; }
	[ "$rc" = 0 ] && { ruleset_norm >"$TMP/before" || rc=1; }
	[ "$rc" = 0 ] && { run 0 vc -j filter show || rc=1; }
	[ "$rc" = 0 ] && { jqo '[.[].guest] == ["vm2"]' || rc=1; }
	[ "$rc" = 0 ] && { run 0 vc filter render "$TMP/p.json" || rc=1; }
	[ "$rc" = 0 ] && { grep -q 'table netdev vnic' "$TMP/out" ||
		{ fail "render printed no table"; rc=1; }; }
	# The holder installed vm2 alone, with no address or switch: read
	# from its table, vm1 is to add and vm2 to change.
	[ "$rc" = 0 ] && { run 1 vc filter diff "$TMP/p.json" || rc=1; }
	[ "$rc" = 0 ] && { grep -qx 'guest vm1: add' "$TMP/out" &&
		grep -qx 'guest vm2: change' "$TMP/out" ||
		{ fail "diff next to the holder: $(cat "$TMP/out")"; rc=1; }; }
	[ "$rc" = 0 ] && { run 1 vc filter apply "$TMP/p.json" || rc=1; }
	[ "$rc" = 0 ] && { grep -q '^vnicctl: .*not permitted' "$TMP/err" ||
		{ fail "apply: message: $(cat "$TMP/err")"; rc=1; }; }
	[ "$rc" = 0 ] && { ruleset_norm | cmp -s - "$TMP/before" ||
		{ fail "the owned table changed"; rc=1; }; }
	exec 4>&-
	wait "$hpid" || { fail "holder: exit status $?"; rc=1; }
	return $rc
}

# -n: the filters go to another namespace's table.
case_netns() {
	local pid rc=0 ns
	netns_child pid || rc=1
	ns=/proc/$pid/ns/net
	[ "$rc" = 0 ] && { write_policy "$TMP/p.json" || rc=1; }
	if [ "$rc" = 0 ]; then
		# The same names there; only vm2's veth is needed.
		jq '.guests |= map(select(.name == "vm2"))' "$TMP/p.json" >"$TMP/vm2.json"
		run 0 vc -n "$ns" guest add vm2 --kind veth --name vm2h0 \
			--peer-name vm2p0 || rc=1
	fi
	[ "$rc" = 0 ] && { run 0 vc -n "$ns" filter apply "$TMP/vm2.json" || rc=1; }
	[ "$rc" = 0 ] && { nsenter -t "$pid" -n nft list tables | grep ' vnic$' >/dev/null ||
		{ fail "no table in the namespace"; rc=1; }; }
	[ "$rc" = 0 ] && { expect_eq "$(nft list ruleset | wc -c)" 0 "ruleset here" || rc=1; }
	[ "$rc" = 0 ] && { run 0 vc -j -n "$ns" filter show || rc=1; }
	[ "$rc" = 0 ] && { jqo '[.[].guest] == ["vm2"]' || rc=1; }
	kill "$pid"
	wait "$pid" 2>/dev/null
	return $rc
}

# The table outlives vnicctl (persist where the kernel has it, else
# --no-owner) with no owner left, and the next vnicctl takes it over, with
# or without --no-owner.  (nft 1.0.6 cannot name the persist flag: its JSON
# prints garbage for it, so the owner is read from the text's "# progname".)
case_owner() {
	write_policy "$TMP/p.json" || return
	run 0 vc filter apply "$TMP/p.json" || return
	nft list tables | grep ' vnic$' >/dev/null || fail "the table did not outlive vnicctl" || return
	nft list table netdev vnic | sed -n 1p | grep progname >/dev/null &&
		fail "still owned: $(nft list table netdev vnic | head -1)" && return 1
	run 0 vc -j filter remove vm1 || return
	jqo '.removed == 1' || return
	run 0 vc --no-owner -j filter apply "$TMP/p.json" || return
	jqo '.added == 1 and .unchanged + .changed == 1' || return
	run 0 vc -j filter show || return
	jqo '[.[].guest] == ["vm1", "vm2"]'
}

# A table "vnic" owned by a running process (here nft -i): vnicctl cannot
# change it (exit 1, the kernel's EPERM in the message, nothing changed).
case_held() {
	local npid i args rc=0
	write_policy "$TMP/p.json" || return
	mkfifo "$TMP/fifo" || return
	nft -i <"$TMP/fifo" >/dev/null 2>&1 &
	npid=$!
	exec 3>"$TMP/fifo"
	echo 'add table netdev vnic { flags owner; }' >&3
	for i in $(seq 20); do
		nft list tables | grep ' vnic$' >/dev/null && break
		sleep 0.1
	done
	nft list ruleset >"$TMP/before"
	grep -q progname "$TMP/before" || { fail "nft -i holds no table"; rc=1; }
	for args in "filter apply" "filter sync" "--no-owner filter sync"; do
		[ "$rc" = 0 ] || break
		# shellcheck disable=SC2086
		run 1 vc $args "$TMP/p.json" || { rc=1; break; }
		grep -q '^vnicctl: .*not permitted' "$TMP/err" ||
			{ fail "$args: message: $(cat "$TMP/err")"; rc=1; }
		nft list ruleset | cmp -s - "$TMP/before" ||
			{ fail "$args changed the held table"; rc=1; }
	done
	exec 3>&-
	wait "$npid"
	return $rc
}

# Bad usage exits 2 and does nothing.
case_usage() {
	local args
	while IFS= read -r args; do
		# shellcheck disable=SC2086
		run 2 vc $args || return
		grep -q '^vnicctl: ' "$TMP/err" || fail "'$args': no message" || return
	done <<-EOF
	filter frob
	filter apply
	filter apply a b
	filter apply -x f
	filter sync
	filter render
	filter remove
	filter show a b
	filter apply /nonexistent/policy.json
	EOF
	expect_eq "$(nft list ruleset | wc -c)" 0 "ruleset"
}

# A FILE that cannot be read says why, not that its JSON ends early: a
# directory (a path one level short), a missing file, stdin a directory;
# exit 2, no table.  Read errors are not JSON syntax errors.
case_unreadable_file() {
	local cmd
	for cmd in apply sync diff render hold; do
		run 2 vc filter "$cmd" "$TMP" || return
		expect_eq "$(cat "$TMP/err")" "vnicctl: $TMP: Is a directory" \
			"filter $cmd DIR" || return
		run 2 vc filter "$cmd" "$TMP/nosuch.json" || return
		expect_eq "$(cat "$TMP/err")" \
			"vnicctl: $TMP/nosuch.json: No such file or directory" \
			"filter $cmd missing file" || return
	done
	run 2 vc filter apply - <"$TMP" || return
	expect_eq "$(cat "$TMP/err")" "vnicctl: <stdin>: Is a directory" "stdin" || return
	expect_eq "$(nft list ruleset | wc -c)" 0 "ruleset"
}

# help: the filter text, with the file format and the table's owner.
case_help() {
	run 0 vc help filter || return
	grep -q '"guests"' "$TMP/out" && grep -q -- '--no-owner' "$TMP/out" ||
		fail "help filter: $(cat "$TMP/out")" || return
	run 0 vc filter --help || return
	grep -q '^Usage: vnicctl .*filter apply' "$TMP/out" || fail "filter --help" || return
	grep -q '^ *vnicctl .*filter diff FILE' "$TMP/out" &&
	grep -q '^  diff ' "$TMP/out" || fail "filter --help lacks diff" || return
	run 0 vc --help || return
	grep -q 'filter sync FILE' "$TMP/out" || fail "--help lacks filter" || return
	grep -q 'filter diff FILE' "$TMP/out" || fail "--help lacks filter diff"
}

# Failed commands leave the ruleset as it was, to the byte, and make no
# table: an unknown guest, a missing NIC, a NIC of another guest, a bad
# file; on an empty ruleset and next to installed guests.
case_failures_leave_nothing() {
	local pass args
	write_policy "$TMP/p.json" || return
	jq '.guests[1].nics[0].ifname = "nosuch0"' "$TMP/p.json" >"$TMP/nodev.json"
	jq '{guests: [{name: "vm9", nics: [.guests[1].nics[0]]}]}' \
		"$TMP/p.json" >"$TMP/taken.json"
	echo '{"guests": [' >"$TMP/broken.json"
	for pass in empty installed; do
		if [ "$pass" = installed ]; then
			run 0 vc filter apply "$TMP/p.json" || return
		fi
		nft_json >"$TMP/before"
		while IFS='|' read -r rc args; do
			# shellcheck disable=SC2086
			run "$rc" vc $args || { log "$pass: $args"; return 1; }
			grep -q '^vnicctl: ' "$TMP/err" || fail "$args: no message" || return
			nft_json | cmp -s - "$TMP/before" ||
				fail "$pass: '$args' changed the ruleset:" \
				     "$(nft list ruleset | head -5)" || return
		done <<-EOF
		1|filter remove nosuchguest
		1|--no-owner filter remove nosuchguest
		1|filter remove vm1 nosuchguest
		1|filter apply $TMP/nodev.json
		1|filter sync $TMP/nodev.json
		1|--no-owner filter apply $TMP/nodev.json
		1|--hook-prefix vm filter apply $TMP/nodev.json
		1|--hook-prefix vm filter remove nosuchguest
		2|filter apply $TMP/broken.json
		2|filter sync $TMP/broken.json
		1|filter show nosuchguest
		EOF
		if [ "$pass" = installed ]; then
			# vm2's NIC claimed by a new guest while vm2 stays.
			run 1 vc filter apply "$TMP/taken.json" || return
			grep -Eq 'belongs to (another )?installed guest' "$TMP/err" ||
				fail "taken: $(cat "$TMP/err")" || return
			nft_json | cmp -s - "$TMP/before" ||
				fail "a conflicting apply changed the ruleset" || return
		fi
	done
}

# damage_RECIPE: a table "vnic" made by hand or damaged, and what the
# message must say.  The good table comes from the policy applied.
damage_empty() { nft add table netdev vnic; WANT='no comment "managed by libvnic"'; }
damage_comment_only() {
	nft add table netdev vnic '{ comment "managed by libvnic"; }'
	WANT="none of libvnic's sets"
}
# The layout as render writes it (no guests), with set $1's type changed.
hand_layout() {
	echo '{"guests": []}' >"$TMP/none.json"
	vc filter render "$TMP/none.json" >"$TMP/none.nft" || return
	grep -q 'set ip4s' "$TMP/none.nft" || fail "render: no set ip4s" || return
	nft -f "$TMP/none.nft"
}
damage_wrong_type() {
	echo '{"guests": []}' >"$TMP/none.json"
	vc filter render "$TMP/none.json" |
		sed 's/type iface_index \. ipv4_addr/type iface_index . ipv6_addr/' >"$TMP/none.nft"
	nft -f "$TMP/none.nft" || return
	WANT='set ip4s has key type'
}
damage_missing_set() {
	hand_layout && nft delete set netdev vnic ip6s || return
	WANT='set ip6s is missing'
}
damage_foreign_guest() {
	run 0 vc filter apply "$TMP/p.json" &&
	nft add element netdev vnic guests '{ 4660 }' || return
	WANT='set guests: element 0x1234 has no "NAME DIGEST" comment'
}
# The foreign element beside no guest: only the guests dump's callback
# sees it (no digest disagrees), so its error must leave the dump.
damage_foreign_only() {
	run 0 vc filter apply "$TMP/p.json" &&
	run 0 vc filter remove vm1 vm2 &&
	nft add element netdev vnic guests '{ 4660 }' || return
	WANT='set guests: element 0x1234 has no "NAME DIGEST" comment'
}
damage_forged_guest() {
	run 0 vc filter apply "$TMP/p.json" &&
	nft add element netdev vnic guests '{ 4660 comment "vm7 0000000000000001" }' || return
	WANT='element 0x1234 names guest vm7'
}
damage_missing_chain() {
	run 0 vc filter apply "$TMP/p.json" || return
	local c
	for c in $(nft -j list chains netdev | jq -r '.nftables[].chain? // empty |
			select(.table == "vnic" and .hook == "egress") | .name'); do
		nft flush chain netdev vnic "$c" || return
	done
	nft flush chain netdev vnic sw_eg_37f && nft delete chain netdev vnic sw_eg_37f ||
		return
	WANT='chain sw_eg_37f of set sw_37f is missing'
}
damage_state_garbled() {
	run 0 vc filter apply "$TMP/p.json" &&
	nft delete element netdev vnic guests '{ 0 }' &&
	nft add element netdev vnic guests '{ 0 comment "garbage" }' || return
	WANT='the state element (key 0) has no'
}
damage_state_missing() {
	run 0 vc filter apply "$TMP/p.json" &&
	nft delete element netdev vnic guests '{ 0 }' || return
	WANT='2 guests but no state element'
}
damage_state_digest() {
	run 0 vc filter apply "$TMP/p.json" || return
	local c
	c=$(nft -j list set netdev vnic guests | jq -r '.nftables[].set? // empty |
		.elem[] | select(.elem.val == 0) | .elem.comment') || return
	nft delete element netdev vnic guests '{ 0 }' &&
	nft add element netdev vnic guests "{ 0 comment \"$(echo "$c" |
		sed 's/state [0-9a-f]*/state 00000000000000ff/')\" }" || return
	WANT="the state element's digest 00000000000000ff is not the guests'"
}

# A table named vnic that libvnic did not make (no comment of libvnic's),
# or whose set libvnic cannot make again (another type under its name):
# every filter command refuses it (exit 1) with what is wrong and how to
# start afresh, and changes nothing; after the delete it says, sync works.
# A table of libvnic's that was damaged otherwise: show, apply and remove
# refuse it the same way, diff says it differs, and sync repairs it
# (selftests/filter_repair_test.sh compares the result with a clean sync).
case_damaged_table_refused() {
	local d args WANT
	write_policy "$TMP/p.json" || return
	for d in empty comment_only wrong_type missing_set foreign_guest \
		 foreign_only forged_guest missing_chain state_garbled state_missing \
		 state_digest; do
		nft delete table netdev vnic 2>/dev/null
		WANT=
		"damage_$d" || { fail "damage $d could not be made"; return 1; }
		nft_json >"$TMP/before"
		while IFS= read -r args; do
			case "$d:$args" in
			empty:*|wrong_type:*) ;;
			*:*sync*) continue ;;
			esac
			# shellcheck disable=SC2086
			run 1 vc $args || { log "damage $d"; return 1; }
			grep -qF -- "$WANT" "$TMP/err" &&
			grep -qF 'delete it (nft delete table netdev vnic)' "$TMP/err" ||
				fail "$d: '$args': message: $(cat "$TMP/err")" || return
			# Whole, not cut short by the context's room for it.
			grep -qE '(\(nft delete table netdev vnic\)|apply the policy again): Structure needs cleaning$' "$TMP/err" ||
				fail "$d: '$args': message cut: $(cat "$TMP/err")" || return
			# A set of another type is no sync's to repair.
			case $d in
			wrong_type)
				! grep -qF 'a sync repairs it' "$TMP/err" ||
					fail "$d: '$args' promises a repair: $(cat "$TMP/err")" ||
					return ;;
			esac
			nft_json | cmp -s - "$TMP/before" ||
				fail "$d: '$args' changed the ruleset" || return
		done <<-EOF
		filter show
		filter apply $TMP/p.json
		filter sync $TMP/p.json
		--no-owner filter sync $TMP/p.json
		filter remove vm1
		EOF
		case $d in
		empty|wrong_type)
			nft delete table netdev vnic || return
			run 0 vc filter sync "$TMP/p.json" ||
				{ log "after $d"; return 1; } ;;
		*)
			run 1 vc filter diff "$TMP/p.json" ||
				{ log "diff, $d"; return 1; }
			run 0 vc filter sync "$TMP/p.json" ||
				{ log "repair of $d"; return 1; }
			run 0 vc filter diff "$TMP/p.json" ||
				{ log "diff after the repair of $d"; return 1; }
			run 0 vc filter show || { log "show after $d"; return 1; } ;;
		esac
	done
}

# --backend bpf: the same commands through the tc eBPF backend
# (Documentation/bpf.rst), checked with tc(8).
case_bpf_backend() {
	jq -n --arg m0 "$(mac_of vm1m0)" --arg m2 "$(mac_of vm2p0)" '
	{guests: [
	  {name: "vm1", nics: [{ifname: "vm1m0", kind: "macvtap", mac: $m0,
				ipv4: ["192.0.2.10"]}]},
	  {name: "vm2", nics: [{ifname: "vm2h0", kind: "veth", mac: $m2}]}]}' \
		>"$TMP/b.json" || return
	run 0 vc --backend bpf -j filter sync "$TMP/b.json" || return
	jqo '.added == 2 and .writes == true' || return
	tc filter show dev vm1m0 egress | grep 'vnic direct-action' >/dev/null ||
		{ fail "no vnic filter on vm1m0 egress"; return 1; }
	tc filter show dev vm2h0 ingress | grep 'vnic direct-action' >/dev/null ||
		{ fail "no vnic filter on vm2h0 ingress"; return 1; }
	run 0 vc --backend bpf -j filter sync "$TMP/b.json" || return
	jqo '.writes == false and .unchanged == 2' || return
	run 0 vc --backend bpf -j filter show || return
	jqo '[.[].guest] | sort == ["vm1", "vm2"]' || return
	# diff: 0 when it matches; a deleted filter is 1 and named; the
	# sync says what it repaired; 0 again
	run 0 vc --backend bpf filter diff "$TMP/b.json" || return
	tc filter del dev vm2h0 ingress pref 30318 || return
	# show names the damage without the policy: what the maps recorded
	run 1 vc --backend bpf filter show || return
	grep -q 'damaged: filter vnic on vm2h0 ingress, 1 filter to restore' "$TMP/err" ||
		{ fail "show does not name the damage: $(cat "$TMP/err")"; return 1; }
	run 1 vc --backend bpf filter diff "$TMP/b.json" || return
	grep -q 'repair: filter vnic on vm2h0 ingress, 1 filter to restore' "$TMP/out" ||
		{ fail "diff does not name the filter: $(cat "$TMP/out")"; return 1; }
	run 0 vc --backend bpf filter sync "$TMP/b.json" || return
	grep -q '^repaired: filter vnic on vm2h0 ingress, 1 filter restored' "$TMP/out" ||
		{ fail "sync does not say what it repaired: $(cat "$TMP/out")"; return 1; }
	run 0 vc --backend bpf filter diff "$TMP/b.json" || return
	run 1 vc --backend bpf filter render "$TMP/b.json" || return
	run 2 vc --backend bpf --no-owner filter show || return
	run 2 vc --backend xdp filter show || return
	run 0 vc --backend bpf filter remove vm1 vm2 || return
	if tc qdisc show dev vm2h0 | grep clsact >/dev/null; then
		fail "clsact left on vm2h0"
		return 1
	fi
}

# sendmsg calls of a 'vnicctl -s filter show' with features file $1
# (stats line on stderr).
show_sends() {
	VNICCTL_FEATURES_FILE=$1 run 0 vc -s filter show || return
	sed -n 's/^stats: sendmsg \([0-9]*\) .*/\1/p' "$TMP/err"
}

# The nft features file: the first vnicctl probes and keeps what it found
# with the boot id; the next skips the probe (fewer messages sent) and
# works the same.  A garbled file, another boot's, features the library
# refuses, a file that cannot be written or none (empty variable) only
# mean a probe, never an error.
case_feature_cache() {
	local f=$TMP/feat boot probe cached n
	boot=$(cat /proc/sys/kernel/random/boot_id)
	write_policy "$TMP/p.json" || return
	probe=$(show_sends "$f") || return
	[ -n "$probe" ] || fail "no stats line: $(cat "$TMP/err")" || return
	grep -Eqx "$boot [0-9a-f]+" "$f" || fail "file: $(cat "$f")" || return
	cached=$(show_sends "$f") || return
	[ "$cached" -lt "$probe" ] ||
		fail "with the file: $cached sendmsg, probing: $probe" || return
	run 0 vc filter apply "$TMP/p.json" || return
	has_mac "$(mac_of vm2p0)" || fail "apply on kept features" || return
	# Showing two guests sends more: a new probing count.
	probe=$(show_sends "") || return
	cached=$(show_sends "$f") || return
	[ "$cached" -lt "$probe" ] ||
		fail "with the file: $cached sendmsg, probing: $probe" || return
	for bad in garbage "$boot" "$boot zz" "$boot ffffffff" \
		   "00000000-0000-0000-0000-000000000000 7f"; do
		echo "$bad" >"$f"
		n=$(show_sends "$f") || return
		[ "$n" = "$probe" ] || fail "'$bad': $n sendmsg, not $probe" || return
		grep -Eqx "$boot [0-9a-f]+" "$f" ||
			fail "'$bad' not rewritten: $(cat "$f")" || return
		run 0 vc filter show || return
	done
	n=$(show_sends "$TMP/nodir/feat") || return
	[ "$n" = "$probe" ] && [ ! -e "$TMP/nodir" ] ||
		fail "unwritable file: $n sendmsg" || return
	rm -f "$f" "$TMP/nft-features"
	n=$(show_sends "") || return
	[ "$n" = "$probe" ] || fail "turned off: $n sendmsg" || return
	[ ! -e "$f" ] && [ ! -e "$TMP/nft-features" ] ||
		fail "a file written with VNICCTL_FEATURES_FILE empty"
}

CASES=(apply show show_damaged dash_name counter remove sync_same sync_changed bad_json unreadable_file render
       readonly owned_show netns owner held usage help
       failures_leave_nothing
       damaged_table_refused bpf_backend feature_cache)

# ------------------------------------------------------------------- main

setup_case() { setup_ns && make_nics; }

# A helper run in a namespace of its own: __sub NAME ARGS...
if [ "${1:-}" = __sub ]; then
	shift
	name=$1
	shift
	"sub_$name" "$@"
	exit
fi

tap_main ip jq nft unshare nsenter -- "$@"
