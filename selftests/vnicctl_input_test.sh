#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnicctl's numeric options, as TAP: every bad value (zero where it means
# nothing, out of range, negative, overflowing, signs, blanks, other bases,
# trailing junk) exits 2 with a message naming the option and its range,
# and leaves the namespace's links as they were.  Values the kernel would
# refuse get a message that says which limit.  Each case in its own network
# namespace with a veth pair lower0/lower0p (MTU 1500) as the lower device.
#
#   selftests/vnicctl_input_test.sh [CASE...]   (root; VNICCTL= overrides)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

# What must not change: names, kinds, MTUs, aliases (not the operstate,
# which the kernel's link watch may still be settling).
link_state() {
	ip -j -d link show |
		jq -c '[.[] | {ifname, mtu, ifalias, k: .linkinfo.info_kind?}] | sort_by(.ifname)'
}

# bad OPTION RANGE ARGS...: each remaining line of stdin is a value for
# OPTION; "vnicctl ARGS OPTION VALUE" must exit 2, name the option and
# RANGE, and change no link.
bad() {
	local opt=$1 range=$2 before v n=0
	shift 2
	before=$(link_state)
	while IFS= read -r v; do
		run 2 vc "$@" "$opt" "$v" </dev/null || return
		grep -q -- "$opt: '$v' is not a number in $range" "$TMP/err" ||
			{ fail "$opt '$v': unclear message: $(cat "$TMP/err")"; return 1; }
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || fail "no value tried for $opt" || return
	log "$opt: $n bad values refused"
	expect_eq "$(link_state)" "$before" "links after bad $opt values"
}

# The values every numeric option refuses.
junk() {
	printf '%s\n' -1 ' 5' '5 ' +5 0x10 1e3 2.5 12abc '' 99999999999999999999999 4294967296 -0
}

MVT=(guest add vm1 --kind macvtap --lower lower0)

# ------------------------------------------------------------------ cases

# --nics: 1..65535.
case_nics() {
	{ junk; echo 0; echo 65536; } | bad --nics 1..65535 "${MVT[@]}"
}

# --mtu: 68..65535, 0 included (omit --mtu for the kernel's default).
case_mtu() {
	{ junk; printf '%s\n' 0 67 65536; } | bad --mtu 68..65535 "${MVT[@]}"
}

# --queues: 1..256.
case_queues() {
	{ junk; echo 0; echo 257; } | bad --queues 1..256 guest add vm1 --kind tap
}

# --user / --group numbers: 0..4294967294 ((uid_t)-1 means "none").
case_user_group() {
	printf '%s\n' 4294967295 12abc 0x10 99999999999999999999999 |
		bad --user 0..4294967294 guest add vm1 --kind tap || return
	printf '%s\n' 4294967295 12abc 0x10 |
		bad --group 0..4294967294 guest add vm1 --kind tap || return
	# Not a number, and no such name: also a usage error.
	run 2 vc guest add vm1 --kind tap --user -1 || return
	grep -q "unknown user '-1'" "$TMP/err" || fail "--user -1: $(cat "$TMP/err")"
}

# Decimal, whatever the leading zeros: 010 is ten NICs, not eight.
case_decimal_leading_zero() {
	run 0 vc guest add vm1 --kind macvlan --lower lower0 --nics 010 --mtu 01500 || return
	expect_eq "$(ip -j link | jq '[.[] | select(.ifalias? // "" | startswith("vnic:vnic:vm1:"))] | length')" \
		10 "NICs made" || return
	expect_eq "$(ip -j link | jq '[.[] | select(.ifalias? // "" | startswith("vnic:vnic:vm1:")) | .mtu] | unique')" \
		"$(jq -nc '[1500]' | jq .)" "their MTU"
}

# The edges of each range are taken (the control of the cases above).
case_range_edges() {
	run 0 vc guest add vm1 --kind tap --mtu 68 --queues 256 --multi-queue || return
	expect_eq "$(ip -j link show tap0 | jq '.[0].mtu')" 68 "tap0 MTU" || return
	run 0 vc guest add vm2 --kind veth --peer-name p0 --mtu 65535 || return
	expect_eq "$(ip -j link show p0 | jq '.[0].mtu')" 65535 "peer MTU"
}

# An MTU above the lower device's: the kernel answers a bare EINVAL; the
# library refuses first, naming the limit, and nothing is made.
case_mtu_above_lower() {
	local before
	before=$(link_state)
	run 2 vc "${MVT[@]}" --nics 3 --mtu 1501 || return
	grep -q "MTU 1501 above the 1500 of lower device 'lower0'" "$TMP/err" ||
		fail "message: $(cat "$TMP/err")" || return
	expect_eq "$(link_state)" "$before" "links"
}

# An MTU in range that the kind's kernel driver refuses (a tap's maximum
# is below 65535): the kernel's own message, exit 1, nothing left.
case_mtu_kernel_refuses() {
	local before
	before=$(link_state)
	run 1 vc guest add vm1 --kind tap --nics 2 --mtu 65535 || return
	grep -q "mtu greater than device maximum" "$TMP/err" ||
		fail "message: $(cat "$TMP/err")" || return
	expect_eq "$(link_state)" "$before" "links"
}

CASES=(nics mtu queues user_group decimal_leading_zero range_edges
       mtu_above_lower mtu_kernel_refuses)

setup_case() {
	ip link set lo up &&
	ip link add lower0 type veth peer name lower0p &&
	ip link set lower0 up && ip link set lower0p up
}

tap_main ip jq -- "$@"
