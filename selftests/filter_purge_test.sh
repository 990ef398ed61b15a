#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Guests a process did not install itself (every guest after a restart)
# removed or replaced by a new vnicctl process, as TAP.  Each case runs in
# its own network namespace holding N macvlans on a veth lower
# (restart_nics.sh) and policy A of issue 14 (restart_policy.py) synced by
# one process; another process then removes or replaces some of its guests,
# and the table (nft -j, normalized by nft_norm.jq) must be the one a clean
# sync of what should remain makes in a fresh namespace with the same NICs.
# Such a process reads the table back once per change, whatever the number
# of guests: the messages it sends (strace -c) do not grow with it.
#
#   selftests/filter_purge_test.sh [CASE...]   (root; VNICCTL= overrides)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

N=300

norm() { nft_json netdev vnic | jq -S -f "$here/nft_norm.jq"; }

setup_case() {
	"$here/restart_nics.sh" $N >/dev/null &&
	python3 "$here/restart_policy.py" $N A >"$TMP/A.json"
}

# same_as_clean POLICY...: the table here is what syncs of each POLICY in
# turn make in a fresh namespace with the same NICs (the same ifindexes).
same_as_clean() {
	unshare -n bash -c 'h=$1 n=$2 v=$3; shift 3
		"$h/restart_nics.sh" "$n" >/dev/null || exit
		for p; do "$v" filter sync "$p" >/dev/null || exit; done
		nft_json netdev vnic' _ "$here" $N "$VNICCTL" "$@" |
		jq -S -f "$here/nft_norm.jq" >"$TMP/clean" ||
		fail "clean sync of $* in a fresh namespace" || return
	norm >"$TMP/now" || return
	diff -u "$TMP/clean" "$TMP/now" >"$TMP/delta" && return
	head -60 "$TMP/delta" >&2
	fail "the table differs from a clean sync of $*"
}

# names FROM TO: guest names gFROM..gTO.
names() { seq "$1" "$2" | sed 's/^/g/'; }

# Guests FROM..TO of policy A, into FILE.
slice() {
	jq --argjson a "$1" --argjson b "$2" \
		'.guests |= map(select((.name[1:] | tonumber) as $i |
				       $i >= $a and $i <= $b))' "$TMP/A.json" >"$3"
}

# sends CMD...: the messages CMD sends to the kernel (sendmsg and sendto
# calls, strace -c -f), on stdout; its exit status must be 0.
sends() {
	strace -f -c -U name,calls -e trace=sendmsg,sendto -o "$TMP/strace" "$@" \
		>"$TMP/out" 2>"$TMP/err" || { fail "$*: $(cat "$TMP/err")"; return; }
	awk '$1 == "total" { print $2 }' "$TMP/strace"
}

# 200 of 300 guests removed by a process that did not install them: the
# other 100 are exactly what a clean sync of them makes.  (The last 200 go:
# 300 NICs fill two shards of the egress chain, and the first 100 stay in
# the first, as a clean sync of them puts them.)
case_remove_200_of_300() {
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc filter remove $(names 100 299) || return
	run 0 vc -j filter list || return
	expect_eq "$(jq -r '[.[] | .name // .guest] | length' "$TMP/out")" 100 \
		"guests listed after the remove" || return
	slice 0 99 "$TMP/rest.json"
	same_as_clean "$TMP/rest.json"
}

# Every guest removed: no element keyed by a NIC, no guest but the state
# element, no counter, no chain of a guest; the shared layout stays.  (A
# sync to no guest, the natural oracle, fails on main with EBUSY.)
case_remove_all() {
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc filter remove $(names 0 $((N - 1))) || return
	nft_json netdev vnic >"$TMP/now" || return
	jq -e '[.nftables[] | (.set? // .map? // empty)
		| select(.name != "l2_allowed" and .name != "guests")
		| .elem // [] | length] | add == 0' "$TMP/now" >/dev/null ||
		fail "elements left in the NIC-keyed sets" || return
	jq -e '[.nftables[] | (.set? // empty) | select(.name == "guests")
		| .elem[]] | length == 1' "$TMP/now" >/dev/null ||
		fail "guests left in the guests set" || return
	jq -e '[.nftables[] | .counter? // empty] | length == 0' "$TMP/now" >/dev/null ||
		fail "counters left" || return
	jq -e '[.nftables[] | .chain? // empty | .name
		| select(test("^(in|eg)[0-9]+$|^sw_(in|eg)_[0-9a-f]+$") | not)]
		| length == 0' "$TMP/now" >/dev/null ||
		fail "chains of guests left: $(jq -c '[.nftables[] | .chain? // empty | .name]' "$TMP/now")"
}

# Apply replacing 200 guests a process did not install (their addresses
# changed): the table is what a clean sync of the whole new policy makes.
case_apply_replaces_200() {
	run 0 vc filter sync "$TMP/A.json" || return
	jq '.guests |= map(if (.name[1:] | tonumber) < 200
			   then .nics[0].ipv4 = [.nics[0].ipv4[0] | sub("[0-9]+$"; "9")]
			   else . end)' "$TMP/A.json" >"$TMP/A2.json"
	jq '.guests |= .[:200]' "$TMP/A2.json" >"$TMP/changed.json"
	run 0 vc -j filter apply "$TMP/changed.json" || return
	jq -e '.changed == 200' "$TMP/out" >/dev/null ||
		fail "apply: $(cat "$TMP/out")" || return
	same_as_clean "$TMP/A2.json"
}

# A guest that is not installed, named with ones that are: nothing changes.
case_remove_unknown_changes_nothing() {
	run 0 vc filter sync "$TMP/A.json" || return
	norm >"$TMP/before" || return
	run nz vc filter remove g1 g2 nosuch || return
	grep -q nosuch "$TMP/err" || fail "no guest named: $(cat "$TMP/err")" || return
	norm | cmp -s - "$TMP/before" || fail "a failed remove changed the table"
}

# A new process removing 20 of 30 guests and one removing 200 of 300 send
# the same number of messages: the table is read once per change.
case_messages_do_not_grow() {
	local small big
	slice 0 29 "$TMP/30.json"
	run 0 vc filter sync "$TMP/30.json" || return
	small=$(sends "$VNICCTL" filter remove $(names 0 19)) || return
	run 0 vc filter sync "$TMP/A.json" || return
	big=$(sends "$VNICCTL" filter remove $(names 0 199)) || return
	log "messages sent: $small removing 20 of 30 guests, $big removing 200 of 300"
	[ "${small:-0}" -gt 0 ] || fail "strace counted no messages" || return
	expect_eq "$big" "$small" "messages removing 200 of 300 (20 of 30: $small)"
}

CASES=(remove_200_of_300 remove_all apply_replaces_200
       remove_unknown_changes_nothing messages_do_not_grow)

tap_main nft jq python3 strace -- "$@"
