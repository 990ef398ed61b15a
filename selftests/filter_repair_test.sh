#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnicctl filter sync repairs whatever another process did to libvnic's
# table, as TAP.  Each case runs in its own network namespace holding N
# macvlans on a veth lower (restart_nics.sh) and policy A of issue 14
# (restart_policy.py): it syncs A, tampers with the table with nft(8) as
# any root process could, checks that `vnicctl filter diff A` says so
# (exit 1), syncs A again as a new process, and compares the table (nft -j,
# normalized by nft_norm.jq) with the table a clean sync of A makes in a
# fresh namespace with the same NICs; `filter diff` then exits 0.
#
#   selftests/filter_repair_test.sh [CASE...]   (root; VNICCTL= overrides)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

N=20

norm() { nft_json netdev vnic | jq -S -f "$here/nft_norm.jq"; }

setup_case() {
	"$here/restart_nics.sh" $N >/dev/null &&
	python3 "$here/restart_policy.py" $N A >"$TMP/A.json" &&
	python3 "$here/restart_policy.py" $N B >"$TMP/B.json"
}

# clean POLICY: the normalized table a clean sync of POLICY makes in a
# fresh namespace with the same NICs (the same ifindexes), into $TMP/clean.
clean() {
	unshare -n bash -c '"$1/restart_nics.sh" "$2" >/dev/null &&
		"$3" filter sync "$4" >/dev/null &&
		nft_json netdev vnic' _ "$here" $N "$VNICCTL" "$1" |
		jq -S -f "$here/nft_norm.jq" >"$TMP/clean" ||
		fail "clean sync of $1 in a fresh namespace"
}

# same_as_clean POLICY: the table here is what a clean sync makes.
same_as_clean() {
	clean "$1" || return
	norm >"$TMP/now" || return
	diff -u "$TMP/clean" "$TMP/now" >"$TMP/delta" && return
	head -60 "$TMP/delta" >&2
	fail "the table differs from a clean sync of $(basename "$1")"
}

# repaired TAMPER...: sync A, tamper (an nft command line each, or a shell
# function), then diff 1, sync, diff 0 and the clean table.
repaired() {
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc filter diff "$TMP/A.json" || return
	for t in "$@"; do
		eval "$t" >"$TMP/tamper" 2>&1 ||
			{ cat "$TMP/tamper" >&2; fail "tampering: $t"; return; }
	done
	run 1 vc filter diff "$TMP/A.json" || return
	cp "$TMP/out" "$TMP/diff-before"
	run 0 vc filter sync "$TMP/A.json" || return
	cp "$TMP/out" "$TMP/sync"
	grep -q 'repaired' "$TMP/sync" ||
		fail "sync does not say what it repaired: $(cat "$TMP/sync")" || return
	run 0 vc filter diff "$TMP/A.json" || return
	same_as_clean "$TMP/A.json"
}

# The handle of the first rule of CHAIN.
first_rule() {
	nft -j -a list chain netdev vnic "$1" |
		jq -r '[.nftables[] | .rule? // empty | .handle][0]'
}

# CHAIN hooked to every device it has but DEV: nft 1.0.6 cannot remove a
# device from a chain, so the chain is made again without it, with its
# rules (a firewall script that rebuilds it does the same).  The commands
# name the chain, not the table: nft would update the table's flags (it
# has libvnic's owner flag) and be refused.
unhook() {
	local chain=$1 dev=$2 body
	body=$(nft list chain netdev vnic "$chain" | sed -n '3,/^\t}/p' | sed '$d')
	{
		echo "delete chain netdev vnic $chain"
		echo "$body" | head -1 | sed -e "s/\b$dev, //; s/, $dev\b//" \
			-e "s/^\t*/add chain netdev vnic $chain { /" -e 's/$/ }/'
		echo "$body" | tail -n +2 | sed "s/^\t*/add rule netdev vnic $chain /"
	} >"$TMP/unhook.nft"
	nft -f "$TMP/unhook.nft" || { cat "$TMP/unhook.nft" >&2; return 1; }
	! nft list chain netdev vnic "$chain" | grep "\b$dev\b" >/dev/null ||
		fail "$dev is still hooked"
}

# CHAIN made again at HOOK and priority PRIO, with its devices and rules:
# a base chain's hook cannot be updated, so another process that wants it
# elsewhere deletes and remakes it (as unhook() does).
move_chain() {
	local chain=$1 hook=$2 prio=$3 body
	body=$(nft list chain netdev vnic "$chain" | sed -n '3,/^\t}/p' | sed '$d')
	{
		echo "delete chain netdev vnic $chain"
		echo "$body" | head -1 | sed -e "s/hook [a-z]*/hook $hook/" \
			-e "s/priority [-a-z0-9+ ]*;/priority $prio;/" \
			-e "s/^\t*/add chain netdev vnic $chain { /" -e 's/$/ }/'
		echo "$body" | tail -n +2 | sed "s/^\t*/add rule netdev vnic $chain /"
	} >"$TMP/move.nft"
	nft -f "$TMP/move.nft" || { cat "$TMP/move.nft" >&2; return 1; }
	nft -j list chain netdev vnic "$chain" |
		jq -e --arg h "$hook" '.nftables[] | .chain? // empty | select(.hook == $h)' \
		>/dev/null || fail "$chain is not at $hook"
}

# ------------------------------------------------------------------ cases

case_flushed_ip4s() { repaired 'nft flush set netdev vnic ip4s'; }
case_flushed_macs() { repaired 'nft flush set netdev vnic macs'; }
case_flushed_sets() {
	repaired 'nft flush set netdev vnic ip4s' 'nft flush set netdev vnic ip6s' \
		'nft flush set netdev vnic macs' 'nft flush map netdev vnic custom'
}
case_flushed_guests() { repaired 'nft flush set netdev vnic guests'; }
case_element_deleted() {
	repaired "nft delete element netdev vnic ip4s '{ nv3 . 10.0.3.1 }'"
}
case_element_added() {
	repaired "nft add element netdev vnic ip4s '{ nv3 . 192.0.2.99 }'"
}
# The egress chain of the switches every guest of A has.
sw_eg() {
	nft -j list chains netdev | jq -r '[.nftables[] | .chain? // empty |
		select(.table == "vnic" and (.name | startswith("sw_eg_")))][0].name'
}
case_rule_deleted() {
	repaired 'c=$(sw_eg) && nft delete rule netdev vnic $c handle $(first_rule $c)'
}
case_rule_added() { repaired 'nft insert rule netdev vnic eg0 accept'; }
case_chain_deleted() { repaired 'nft delete chain netdev vnic eg0'; }
case_counter_deleted() {
	repaired "nft delete element netdev vnic drops '{ nv3 }'" \
		'nft delete counter netdev vnic c_g3'
}
case_device_unhooked() { repaired 'unhook eg0 nv3'; }
# A base chain's policy set to drop: every frame of its NICs is lost.
case_chain_policy_drop() {
	repaired "nft add chain netdev vnic eg0 '{ policy drop; }'" || return
	grep -q 'policy of chain eg0' "$TMP/diff-before" ||
		fail "filter diff does not name the policy: $(cat "$TMP/diff-before")"
}
# A base chain remade at the other hook (or priority): the hook it had is
# unfiltered.  Sync once restored its rules where it now was.
case_chain_moved() {
	# filter show, which has no policy to compare with, sees it too.
	run 0 vc filter sync "$TMP/A.json" && move_chain eg0 ingress 10 || return
	run 1 vc filter show || return
	grep -q 'chain eg0 (hooked elsewhere)' "$TMP/err" ||
		fail "filter show does not name the chain: $(cat "$TMP/err")" || return
	repaired 'move_chain eg0 ingress 10' || return
	grep -q 'chain eg0 (hooked elsewhere)' "$TMP/diff-before" ||
		fail "filter diff does not name the chain: $(cat "$TMP/diff-before")"
}
case_chain_reprioritised() {
	repaired 'move_chain eg0 egress -5' || return
	grep -q 'chain eg0 (hooked elsewhere)' "$TMP/diff-before" ||
		fail "filter diff does not name the chain: $(cat "$TMP/diff-before")"
}
case_state_deleted() {
	repaired "nft delete element netdev vnic guests '{ 0x0 }'"
}
case_state_forged() {
	repaired "nft delete element netdev vnic guests '{ 0x0 }'" \
		"nft add element netdev vnic guests '{ 0x0 comment \"libvnic-state 0123456789abcdef n=0,0,0,0,0,0,0\" }'"
}

# Additions of any kind to libvnic's table are removed: the table is
# libvnic's, and a set or chain of someone else's there would change what
# the policy means (a set with an expression libvnic does not parse, a
# chain that accepts first).  Other tables are left alone.
case_foreign_additions() {
	repaired "nft add set netdev vnic foo '{ type ipv4_addr; size 10; flags dynamic; quota 10 mbytes; }'" \
		'nft add chain netdev vnic mine' \
		"nft add table netdev other" "nft add set netdev other keep '{ type ipv4_addr; }'" || return
	grep -q 'foo' "$TMP/diff-before" ||
		fail "filter diff does not name the foreign set: $(cat "$TMP/diff-before")" || return
	nft list set netdev other keep >/dev/null || fail "another table was touched"
}

# A restart with a changed policy, twice: A, then B and A again, each by a
# new process; each time the table is what a clean sync makes.
case_restart_a_b_a() {
	run 0 vc filter sync "$TMP/A.json" || return
	run 1 vc filter diff "$TMP/B.json" || return
	run 0 vc filter sync "$TMP/B.json" || return
	run 0 vc filter diff "$TMP/B.json" || return
	same_as_clean "$TMP/B.json" || return
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc filter diff "$TMP/A.json" || return
	same_as_clean "$TMP/A.json"
}

# Every guest removed by a sync (a runtime restarted with none left): the
# shards' rules name the mask sets and chains that go in the same batch.
# No guest, counter or guest element is left; A comes back clean.
case_sync_to_no_guests() {
	echo '{"guests": []}' >"$TMP/none.json"
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc filter sync "$TMP/none.json" || return
	run 0 vc filter diff "$TMP/none.json" || return
	expect_eq "$(vc -j filter show | jq length)" 0 "guests shown" || return
	nft_json netdev vnic >"$TMP/now" || return
	expect_eq "$(jq '[.nftables[] | select(has("counter"))] | length' "$TMP/now")" 0 \
		"counters left" || return
	# The guests set keeps one element: the state's.
	expect_eq "$(jq '[.nftables[] | .set? | select(.name == "guests") | .elem? // [] | length] | add' \
		"$TMP/now")" 1 "guests elements left" || return
	run 0 vc filter sync "$TMP/A.json" || return
	same_as_clean "$TMP/A.json"
}

# filter remove leaves the switch masks no NIC uses any more (their sets,
# chains and the base chains' jumps): that is no difference.  diff right
# after it says the table matches and a sync writes nothing; A after that
# is what a clean sync makes.
case_diff_after_remove() {
	echo '{"guests": []}' >"$TMP/none.json"
	run 0 vc filter apply "$TMP/A.json" || return
	run 0 vc filter remove $(jq -r '.guests[].name' "$TMP/A.json") || return
	expect_eq "$(nft_json netdev vnic |
		jq '[.nftables[] | .set? // empty | select(.name | startswith("sw_"))] | length > 0')" \
		true "a mask set left by remove" || return
	run 0 vc filter diff "$TMP/none.json" || return
	run 0 vc -j filter sync "$TMP/none.json" || return
	jq -e '.writes == false' "$TMP/out" >/dev/null ||
		fail "sync after remove wrote: $(cat "$TMP/out")" || return
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc filter diff "$TMP/A.json" || return
	same_as_clean "$TMP/A.json"
}

# A guest's custom rule replaced by another (tcp 22 accept -> udp 53 drop,
# which counts into the guest's counter), then back, each by a new
# process: the chain's rules go by handle and the wanted ones come again.
# g0's counter "c_g0" is a name of 4 bytes (no NUL or padding after it in
# the rule's message), g10's "c_g10" is not.
case_custom_rule_replaced() {
	jq '(.guests[] | select(.name == "g0" or .name == "g10") | .rules) =
		[{"proto": "udp", "dport": 53, "action": "drop"}]' \
		"$TMP/A.json" >"$TMP/C.json" || return
	run 0 vc filter sync "$TMP/A.json" || return
	run 1 vc filter diff "$TMP/C.json" || return
	run 0 vc filter sync "$TMP/C.json" || return
	run 0 vc filter diff "$TMP/C.json" || return
	same_as_clean "$TMP/C.json" || return
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc filter diff "$TMP/A.json" || return
	same_as_clean "$TMP/A.json"
}

# A changed sync of a table nobody committed to since libvnic's last
# commit does not read the guests' chains' rules (the generation vouches
# for them) and rewrites the chains of the guests that change.  The vouch
# holds only while nobody commits: a rule of an unchanged guest's chain
# deleted (g5: tcp 22 accept), then a changed policy (g0, g10) synced, and
# g5's rule is back.
case_changed_sync_repairs_unchanged_guest_chain() {
	jq '(.guests[] | select(.name == "g0" or .name == "g10") | .rules) =
		[{"proto": "udp", "dport": 53, "action": "drop"}]' \
		"$TMP/A.json" >"$TMP/C.json" || return
	run 0 vc filter sync "$TMP/A.json" || return
	nft flush chain netdev vnic g_g5 || return
	run 1 vc filter diff "$TMP/C.json" || return
	grep -q 'g_g5' "$TMP/out" ||
		fail "diff does not name g_g5: $(cat "$TMP/out")" || return
	run 0 vc filter sync "$TMP/C.json" || return
	grep -q 'repaired' "$TMP/out" ||
		fail "sync does not say what it repaired: $(cat "$TMP/out")" || return
	run 0 vc filter diff "$TMP/C.json" || return
	same_as_clean "$TMP/C.json" || return
	# Vouched (no commit since C's): A back, g0 and g10 rewritten.
	run 0 vc filter sync "$TMP/A.json" || return
	same_as_clean "$TMP/A.json"
}

# A transaction that flushes a guest's chain and rewrites the state
# element with its own generation passes for libvnic's commit: a changed
# sync trusts it (Documentation/filters.rst says so), but a diff, which
# writes nothing, never vouches and names the damage.
case_diff_reads_rules_of_a_forged_vouch() {
	local st g forged
	jq '(.guests[] | select(.name == "g0" or .name == "g10") | .rules) =
		[{"proto": "udp", "dport": 53, "action": "drop"}]' \
		"$TMP/A.json" >"$TMP/C.json" || return
	run 0 vc filter sync "$TMP/A.json" || return
	st=$(nft -j list set netdev vnic guests | jq -r '.nftables[] | .set? // empty
		| .elem[]? | select(type == "object") | .elem.comment? // empty' |
		grep libvnic-state) || fail "no state element" || return
	g=$(sed 's/.* g=\([0-9]*\) .*/\1/' <<<"$st")
	[[ $g =~ ^[0-9]+$ ]] || fail "no g= in '$st'" || return
	# This one transaction makes generation g + 1.
	forged=${st/ g=$g / g=$((g + 1)) }
	nft -f - <<-NFT || fail "forging the state" || return
	flush chain netdev vnic g_g5
	delete element netdev vnic guests { 0x0 }
	add element netdev vnic guests { 0x0 comment "$forged" }
	NFT
	run 1 vc filter diff "$TMP/C.json" || return
	grep -q 'g_g5' "$TMP/out" ||
		fail "diff does not name g_g5: $(cat "$TMP/out")"
}

# Every guest with a rule, then every guest's IPv4 changed: a vouched
# sync would rewrite every guest's chain, so it reads the rules after all
# (nft/diff.c, rules_if_cheaper()) and rewrites none.  Each sync, a new
# process, leaves the clean table; the rule of each chain keeps its handle.
case_every_guest_changed_keeps_its_rules() {
	jq '.guests[].rules = [{"proto": "tcp", "dport": 22, "action": "accept"}]' \
		"$TMP/A.json" >"$TMP/R.json" || return
	jq '.guests[].nics[0].ipv4 |= map(sub("\\.1$"; ".7"))' \
		"$TMP/R.json" >"$TMP/S.json" || return
	run 0 vc filter sync "$TMP/R.json" || return
	nft -j -a list chain netdev vnic g_g3 | jq '[.nftables[] | .rule? // empty | .handle]' >"$TMP/h1" || return
	run 0 vc -j filter sync "$TMP/S.json" || return
	jq -e ".changed == $N" "$TMP/out" >/dev/null ||
		fail "not every guest changed: $(cat "$TMP/out")" || return
	same_as_clean "$TMP/S.json" || return
	nft -j -a list chain netdev vnic g_g3 | jq '[.nftables[] | .rule? // empty | .handle]' >"$TMP/h2" || return
	cmp -s "$TMP/h1" "$TMP/h2" ||
		fail "g_g3's rule was rewritten: handles $(cat "$TMP/h1") then $(cat "$TMP/h2")" || return
	run 0 vc filter sync "$TMP/R.json" || return
	same_as_clean "$TMP/R.json"
}

# sendmsg() calls of a vnicctl -s run, from its stats line.
sends() { sed -n 's/^stats: sendmsg \([0-9]*\) .*/\1/p' "$TMP/err"; }

# Unchanged and untouched: nothing is read back (the generation proves the
# table untouched), nothing written.  After a commit elsewhere in the
# namespace the generation proves nothing: the table is read back, and
# still nothing written.
case_unchanged_writes_nothing() {
	local quiet busy
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	jq -e '.writes == false and .unchanged == 20' "$TMP/out" >/dev/null ||
		fail "second sync: $(cat "$TMP/out")" || return
	quiet=$(sends)
	nft add table inet elsewhere || return
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	jq -e '.writes == false and .unchanged == 20' "$TMP/out" >/dev/null ||
		fail "sync after a commit elsewhere: $(cat "$TMP/out")" || return
	busy=$(sends)
	[ -n "$quiet" ] && [ -n "$busy" ] && [ "$quiet" -lt "$busy" ] ||
		fail "untouched sync sent $quiet messages, one that reads back $busy"
}

# An apply into a new table records the generation its commit made, as a
# sync does: the sync right after it (a new process) proves the table
# untouched and reads nothing back, sending as few messages as the sync
# after a sync.
case_apply_then_sync_reads_nothing() {
	local quiet after_apply
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc -s filter sync "$TMP/A.json" || return
	quiet=$(sends)
	nft delete table netdev vnic || return
	run 0 vc filter apply "$TMP/A.json" || return
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	jq -e '.writes == false and .unchanged == 20' "$TMP/out" >/dev/null ||
		fail "sync after apply: $(cat "$TMP/out")" || return
	after_apply=$(sends)
	[ -n "$quiet" ] && [ "$after_apply" = "$quiet" ] ||
		fail "sync after apply sent $after_apply messages, after a sync $quiet"
}

# recvmsg() calls of a vnicctl -s run (a dump read back takes several).
recvs() { sed -n 's/^stats: sendmsg [0-9]* recvmsg \([0-9]*\) .*/\1/p' "$TMP/err"; }

# unchanged_as_quiet WHAT: the last vnicctl -j -s sync wrote nothing and
# sent and received as little as the sync right after a commit ($quiet,
# $qrecvs).
unchanged_as_quiet() {
	jq -e '.writes == false and .unchanged == 20' "$TMP/out" >/dev/null ||
		fail "$1: $(cat "$TMP/out")" || return
	[ -n "$quiet" ] && [ "$(sends)" = "$quiet" ] && [ "$(recvs)" = "$qrecvs" ] ||
		fail "$1: $(sends) sendmsg and $(recvs) recvmsg, after a commit $quiet and $qrecvs"
}

# Another process's claim of the table (the owner flag: a commit, which
# moves the generation past the one the state element records) records
# the generation it makes when the table is as libvnic's last commit left
# it: the next process's unchanged sync still reads nothing back.  The
# claimer: filter hold (a library open that claims; the generation moves).
# vnicctl's own unchanged sync claims nothing (VNIC_FILTER_CLAIM_AT_COMMIT):
# the generation stays.
# filter hold of A started, synced, stopped: its claim at open.
hold_once() {
	local hold
	"$VNICCTL" filter hold "$TMP/A.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	hold=$!
	until_ok test -s "$TMP/hold.out" ||
		{ kill "$hold"; fail "hold: $(cat "$TMP/hold.err")"; return; }
	kill "$hold"
	wait "$hold" || fail "hold exited $?: $(cat "$TMP/hold.err")"
}

case_sync_after_claim_reads_nothing() {
	local quiet qrecvs gen
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	quiet=$(sends) qrecvs=$(recvs) gen=$(jq .genid "$TMP/out")
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	unchanged_as_quiet "second unchanged sync" || return
	expect_eq "$(jq .genid "$TMP/out")" "$gen" "generation after an unchanged sync" || return
	hold_once || return
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	[ "$(jq .genid "$TMP/out")" -gt "$gen" ] ||
		fail "hold did not claim: generation $(jq .genid "$TMP/out"), before $gen" || return
	unchanged_as_quiet "sync after filter hold" || return
	run 0 vc filter diff "$TMP/A.json"
}

# A claim vouches for the table only as it found it: a commit of anyone's
# after it (elsewhere in the namespace, or to the table) makes the next
# sync read everything back, and a damaged table is repaired.
case_claim_then_foreign_commit_reads_back() {
	local quiet
	run 0 vc filter sync "$TMP/A.json" || return
	run 0 vc -s filter sync "$TMP/A.json" || return
	quiet=$(sends)
	nft add table inet elsewhere || return
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	jq -e '.writes == false and .unchanged == 20' "$TMP/out" >/dev/null ||
		fail "sync after a commit elsewhere: $(cat "$TMP/out")" || return
	[ "$(sends)" -gt "$quiet" ] ||
		fail "sync after a commit elsewhere sent $(sends) messages, after a claim $quiet" || return
	nft flush set netdev vnic ip4s || return
	run 1 vc filter diff "$TMP/A.json" || return
	run 0 vc filter sync "$TMP/A.json" || return
	grep -q 'repaired' "$TMP/out" ||
		fail "sync after a claim and a flush: $(cat "$TMP/out")" || return
	same_as_clean "$TMP/A.json" || return
	# A claim that finds the table after someone else's commit vouches
	# for nothing: the sync after it reads everything back.
	run 0 vc filter sync "$TMP/A.json" || return
	nft add table inet elsewhere2 || return
	hold_once || return
	run 0 vc -j -s filter sync "$TMP/A.json" || return
	[ "$(sends)" -gt "$quiet" ] ||
		fail "sync after a claim of a table behind a foreign commit sent $(sends) messages, after a vouched commit $quiet"
}

# diff: 2 is an error, never "differs": a file that does not load, a NIC
# that does not exist; nothing is written either way.
case_diff_errors_exit_2() {
	run 0 vc filter sync "$TMP/A.json" || return
	nft_json >"$TMP/before"
	echo '{"guests": [' >"$TMP/bad.json"
	run 2 vc filter diff "$TMP/bad.json" || return
	jq '.guests[0].nics[0].ifname = "nosuch0"' "$TMP/A.json" >"$TMP/nonic.json"
	run 2 vc filter diff "$TMP/nonic.json" || return
	grep -q nosuch0 "$TMP/err" || fail "no NIC named: $(cat "$TMP/err")" || return
	nft_json | cmp -s - "$TMP/before" || fail "diff wrote"
}

CASES=(flushed_ip4s flushed_macs flushed_sets flushed_guests element_deleted
       element_added rule_deleted rule_added chain_deleted counter_deleted
       device_unhooked chain_policy_drop chain_moved chain_reprioritised state_deleted state_forged foreign_additions
       restart_a_b_a custom_rule_replaced changed_sync_repairs_unchanged_guest_chain
       every_guest_changed_keeps_its_rules
       diff_reads_rules_of_a_forged_vouch diff_after_remove unchanged_writes_nothing
       apply_then_sync_reads_nothing sync_after_claim_reads_nothing
       claim_then_foreign_commit_reads_back diff_errors_exit_2)

tap_main nft jq python3 -- "$@"
