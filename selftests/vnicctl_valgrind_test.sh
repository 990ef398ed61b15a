#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Every vnicctl command under valgrind's memcheck, as TAP: each run must
# end with its usual exit status, 0 memory errors and 0 leaks (definite,
# indirect, possible), in success and in failure (usage errors, kernel
# refusals, rollbacks, bad policy files).  The first case checks that the
# wrapper does catch a leak and an invalid read, so a silent valgrind
# cannot pass the others.  Each case in its own network namespace with a
# veth pair lower0/lower0p as the lower device.
#
#   selftests/vnicctl_valgrind_test.sh [CASE...]   (root; VNICCTL= overrides)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

VG_ERR=99	# valgrind's exit status when it found something

# memcheck RC CMD...: CMD under memcheck exits RC (vnicctl's own status),
# and memcheck reports nothing.
memcheck() {
	local want=$1 rc
	shift
	valgrind -q --log-file="$TMP/vg.log" --error-exitcode=$VG_ERR \
		--leak-check=full --show-leak-kinds=definite,indirect,possible \
		--errors-for-leak-kinds=definite,indirect,possible \
		"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	# valgrind 3.19 does not know NS_GET_NSTYPE (the -n check): a note,
	# not an error; anything else in the log is.
	sed -i -e '/unhandled ioctl 0xb703/,+2d' "$TMP/vg.log"
	if [ -s "$TMP/vg.log" ] || [ "$rc" = $VG_ERR ]; then
		log "memcheck: '$*' (exit $rc):"
		sed 's/^/  /' "$TMP/vg.log" >&2
		return 1
	fi
	[ "$rc" = "$want" ] && return 0
	log "'$*' exited $rc under valgrind, wanted $want"
	sed 's/^/  stderr: /' "$TMP/err" >&2
	return 1
}

# vg RC ARGS...: vnicctl ARGS under memcheck.
vg() {
	local want=$1
	shift
	memcheck "$want" "$VNICCTL" "$@"
}

mac_of() { ip -j link show "$1" | jq -r '.[0].address'; }

# A small policy for the NICs make_nics makes, into $1.
write_policy() {
	jq -n --arg m0 "$(mac_of vm1m0)" --arg m1 "$(mac_of vm1m1)" \
	      --arg m2 "$(mac_of vm2p0)" '
	{guests: [
	  {name: "vm1",
	   nics: [{ifname: "vm1m0", kind: "macvtap", mac: $m0,
		   ipv4: ["192.0.2.10"], ipv6: ["2001:db8::10"]},
		  {ifname: "vm1m1", kind: "macvtap", mac: $m1}],
	   rules: [{proto: "tcp", dport: 22, action: "accept"},
		   {proto: "udp", dport: "1000-2000",
		    daddr: "198.51.100.0/24", action: "drop"}]},
	  {name: "vm2", switches: ["mac-spoof", "ip-spoof"],
	   nics: [{ifname: "vm2h0", kind: "veth", mac: $m2,
		   ipv4: ["192.0.2.20"]}]}]}' >"$1"
}

make_nics() {
	{ vc guest add vm1 --kind macvtap --lower lower0 --nics 2 \
		--name vm1m%d --naming explicit &&
	  vc guest add vm2 --kind veth --name vm2h0 --peer-name vm2p0; } >/dev/null
}

# ------------------------------------------------------------------ cases

# The control: the wrapper fails on a leak and on a read past a buffer.
case_wrapper_catches() {
	cat >"$TMP/bad.c" <<-'EOF'
	#include <stdlib.h>
	#include <string.h>
	int main(int argc, char **argv)
	{
		char *p = malloc(8);
		strcpy(p, "leak");
		if (argc > 1)
			return p[8];	/* read past the block */
		p = NULL;		/* the only pointer gone: a definite leak */
		return 0;
	}
	EOF
	cc -O0 -g -o "$TMP/bad" "$TMP/bad.c" || return
	if memcheck 0 "$TMP/bad" 2>/dev/null; then
		fail "a definite leak was not reported"; return 1
	fi
	grep -q 'definitely lost' "$TMP/vg.log" || fail "no leak in the log" || return
	if memcheck 0 "$TMP/bad" x 2>/dev/null; then
		fail "an invalid read was not reported"; return 1
	fi
	grep -q 'Invalid read' "$TMP/vg.log" || fail "no invalid read in the log"
}

# (Each run costs valgrind's start, about half a second of CPU: the cases
# run each code path once, and make with plain vnicctl what they only need.)
case_help_version() {
	vg 0 help && vg 0 help add && vg 0 help filter && vg 0 version || return
	vg 2 && vg 2 frobnicate && vg 2 --bogus
}

case_features() {
	vg 0 features && vg 0 -p features
}

# add (each kind), list, show, append, del, in text and JSON, with -s.
case_guest() {
	vg 0 guest add vm1 --kind macvtap --lower lower0 --nics 3 --up \
		--mtu 1400 --mode bridge || return
	vg 0 -j guest add vm2 --kind veth --nics 3 --peer-name p%d --peer-up || return
	vg 0 guest add vm3 --kind tap --nics 2 --queues 2 --multi-queue \
		--vnet-hdr --user 0 --group 0 || return
	vg 0 -s guest add vm4 --kind macvlan --lower lower0 --naming kernel || return
	vg 0 guest add vm5 --kind tun --name tn%d --naming cache || return
	vg 0 guest add vm1 --append --kind macvtap --lower lower0 || return
	vg 0 -j guest list && vg 0 guest list || return
	grep -q vm5 "$TMP/out" || fail "guest list: $(cat "$TMP/out")" || return
	vg 0 guest show vm1 && vg 0 -p guest show vm3 || return
	vg 0 guest del vm1 vm2 && vg 0 guest delete vm3 || return
	vg 0 -n /proc/self/ns/net guest list || return
	expect_eq "$(ip -j link | jq '[.[] | select(.ifalias? // "" | startswith("vnic:"))] | length')" \
		2 "NICs left (vm4, vm5)"
}

# Failures: usage errors, the library's refusals, the kernel's, rollbacks.
case_guest_errors() {
	vg 2 guest add vm1 --kind macvtap --lower lower0 --mtu 0 || return
	vg 2 guest add vm1 --kind ether || return
	vg 2 guest add vm1 --kind macvtap --lower lower0 --mtu 1501 || return
	vg 1 guest add vm1 --kind macvtap --lower nosuch0 ||
		vg 2 guest add vm1 --kind macvtap --lower nosuch0 || return
	# The kernel refuses NIC 1 of 2 (a tap's MTU maximum): rollback.
	vg 1 guest add vm1 --kind tap --nics 2 --mtu 65535 || return
	ip link add taken0 type veth peer name taken0p || return
	vg 1 guest add vm1 --kind macvlan --lower lower0 --name taken0 --naming explicit || return
	vc guest add vm1 --kind macvlan --lower lower0 >/dev/null || return
	vg 1 guest add vm1 --kind macvlan --lower lower0 || return
	vg 2 -o 'bad:owner' guest list || return
	vg 1 guest show nosuch || vg 2 guest show nosuch || return
	vg 1 -n /nonexistent guest list
}

case_gc() {
	{ vc guest add vm1 --kind macvlan --lower lower0 --nics 2 &&
	  vc guest add vm2 --kind veth --peer-name q%d &&
	  vc -o other guest add vm3 --kind tap; } >/dev/null || return
	vg 0 -j gc --dry-run || return
	vg 0 gc --keep vm1 || return
	vg 0 gc || return
	vg 2 gc vm1 || return
	expect_eq "$(ip -j link | jq '[.[] | select(.ifalias? // "" | startswith("vnic:"))] | length')" \
		1 "NICs left (other's vm3)"
}

# Every filter command, its JSON output, and its failures.
case_filter() {
	make_nics || return
	write_policy "$TMP/p.json" || return
	vg 0 filter render "$TMP/p.json" || return
	grep -q 'table netdev vnic' "$TMP/out" || fail "render: $(head -3 "$TMP/out")" || return
	vg 0 filter apply "$TMP/p.json" || return
	vg 0 filter show && vg 0 -j filter show vm1 || return
	vg 0 -j filter sync "$TMP/p.json" || return
	jq '.guests[0].nics[0].ipv4 += ["192.0.2.99"]' "$TMP/p.json" >"$TMP/p2.json" &&
	vg 0 filter sync - <"$TMP/p2.json" || return
	vg 0 filter remove vm2 && vg 0 -j filter del vm1 || return
	vg 0 --no-owner filter apply "$TMP/p.json" || return
	vg 0 --hook-prefix vm1m filter show || vg 1 --hook-prefix vm1m filter show || return
	# Bad input: files, JSON, names.
	echo '{"guests": [{"name": "vm1", "nics": [{"ifname": "x", "kind": "macvtap", "mac": "02:00:00:00:00:zz"}]}]}' \
		>"$TMP/bad.json" || return
	vg 2 filter apply "$TMP/bad.json" || return
	echo '{"guests": [' >"$TMP/trunc.json" || return
	vg 2 filter sync "$TMP/trunc.json" || return
	vg 2 filter render "$TMP/nosuch.json" || vg 1 filter render "$TMP/nosuch.json" || return
	vg 2 filter apply || return
	vg 1 filter remove nosuchguest || vg 0 filter remove nosuchguest
}

CASES=(wrapper_catches help_version features guest guest_errors gc filter)

setup_case() {
	ip link set lo up &&
	ip link add lower0 type veth peer name lower0p &&
	ip link set lower0 up && ip link set lower0p up
}

tap_main valgrind ip jq nft cc -- "$@"
