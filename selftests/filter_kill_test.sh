#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# kill -9 during a filter commit, as TAP.  In a namespace of its own, 1000
# macvlans kv0..kv999 on a veth; policy A installs guests g0..g999 (one
# NIC each), policy B changes g0..g499's addresses, drops g500..g999 and
# puts g1000..g1499 on their NICs.  Snapshots of the table for "no table",
# A and B are taken once; then, KILLS times, `vnicctl filter sync` towards
# the other state is SIGKILLed at a random instant (spread over how long a
# sync takes here), and the table must be exactly the state before or the
# target, after which the next sync must reach the target.  Every fifth
# round starts from no table at all (the table is made by the killed sync's
# batch).  Every NIC is hooked by name (egress shards of 255 devices).
# Hooks by prefix are not covered here: nft 1.0.6 (libnftnl 1.2) cannot
# list a table that holds a prefix chain (it loops), and nft is the
# independent checker.  The instants are drawn from 0 to 1.5 times the
# duration of the last whole sync (with its check): most land before the
# commit, some after; how many of each is logged.
#
# What is compared (normalise): the table as nft_json (cli_lib.sh) lists
# it, without handles, without the generation the state element records
# (history, like handles), without the table's flags (owner belongs to the
# process that holds the table; nft 1.0.6 cannot print persist),
# counters zeroed; sets, maps, counters and chains sorted (their listing
# order is the order they were made in) and each set's elements sorted
# (hash order); rules in their order within each chain.  Set sizes are
# compared: these tables never need to grow (see Documentation/filters.rst).
#
#   selftests/filter_kill_test.sh [CASE...]    KILLS=N (default 5 per case;
#   the full figure: KILLS=100)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

KILLS=${KILLS:-5}
NICS=1000

setup_case() {
	ip link set lo up &&
	ip link add lower0 type veth peer name lower0p &&
	ip link set lower0 up && ip link set lower0p up &&
	local i
	for i in $(seq 0 $((NICS - 1))); do
		printf 'link add link lower0 name kv%d address %s type macvlan mode bridge\n' \
			"$i" "$(mac_of "$i")"
	done | ip -batch -
}

# The table, normalised (see the head of this file); empty when absent.
normalise() {
	nft list tables netdev | grep -x 'table netdev vnic' >/dev/null || return 0
	nft_json netdev vnic | jq -cS '
	  def norm: walk(if type == "object" then
			   del(.handle) |
			   (if (.comment? | type) == "string"
			    then .comment |= sub(" g=[0-9]+"; " g=G") else . end) |
			   (if has("packets") and has("bytes")
			    then .packets = 0 | .bytes = 0 else . end) |
			   (if (.elem | type) == "array" then .elem |= sort else . end)
			 else . end);
	  [.nftables[] | select(has("metainfo") | not)
	   | if has("table") then .table |= del(.flags) else . end] as $all |
	  {objects: ([$all[] | select(has("rule") | not)] | norm | sort),
	   rules: ([$all[] | select(has("rule")) | .rule] | norm |
		   group_by(.chain))}'
}

# NIC i's MAC, as setup_case gives it.
mac_of() { printf '02:00:00:00:%02x:%02x' $(($1 / 256)) $(($1 % 256)); }

# The two policies.
write_policies() {
	jq -n --argjson n "$NICS" '
	  def hex: [(. / 16 | floor), (. % 16)] | map("0123456789abcdef"[.:. + 1]) | add;
	  def nic(i; net): {ifname: "kv\(i)", kind: "macvlan",
			     mac: "02:00:00:00:\(i / 256 | floor | hex):\(i % 256 | hex)",
			     ipv4: ["10.\(net).\(i / 256 | floor).\(i % 256)"]};
	  {guests: [range($n) | {name: "g\(.)", nics: [nic(.; 1)]}]}' \
		>"$TMP/A.json" &&
	jq -n --argjson n "$NICS" '
	  def hex: [(. / 16 | floor), (. % 16)] | map("0123456789abcdef"[.:. + 1]) | add;
	  def nic(i; net): {ifname: "kv\(i)", kind: "macvlan",
			     mac: "02:00:00:00:\(i / 256 | floor | hex):\(i % 256 | hex)",
			     ipv4: ["10.\(net).\(i / 256 | floor).\(i % 256)"]};
	  {guests: ([range($n / 2) | {name: "g\(.)", nics: [nic(.; 2)]}] +
		    [range($n / 2; $n) | {name: "g\(. + 500)", nics: [nic(.; 3)]}])}' \
		>"$TMP/B.json"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# sync_to S: the table is the snapshot of S after a sync to S.
sync_to() {
	local args=("${@:2}")
	run 0 vc "${args[@]}" filter sync "$TMP/$1.json" || return
	normalise >"$TMP/now" || return
	cmp -s "$TMP/now" "$TMP/snap.$1" ||
		fail "sync to $1 did not give the same table as before"
}

# The kill rounds, with vnicctl options $@ (--hook-prefix kv or none).
kill_rounds() {
	local t0 dur i from to pid delay old=0 new=0
	write_policies || return
	normalise >"$TMP/snap.none" || return
	[ ! -s "$TMP/snap.none" ] || fail "a table before the test" || return
	t0=$(now_ms)
	run 0 vc "$@" filter sync "$TMP/A.json" || return
	dur=$(($(now_ms) - t0))
	normalise >"$TMP/snap.A" || return
	run 0 vc "$@" filter sync "$TMP/B.json" || return
	normalise >"$TMP/snap.B" || return
	jq -e '.objects | length > 1000' "$TMP/snap.A" >/dev/null &&
	! cmp -s "$TMP/snap.A" "$TMP/snap.B" ||
		fail "snapshots A and B are not two full, different tables" || return
	log "a sync from nothing takes ${dur} ms here; $KILLS kills"
	from=B
	for i in $(seq "$KILLS"); do
		to=$([ "$from" = A ] && echo B || echo A)
		if [ $((i % 5)) = 0 ]; then
			nft delete table netdev vnic || return
			from=none
		fi
		delay=$((RANDOM % (dur + dur / 2 + 1)))
		"$VNICCTL" "$@" filter sync "$TMP/$to.json" >/dev/null 2>&1 &
		pid=$!
		sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		normalise >"$TMP/now" || return
		if cmp -s "$TMP/now" "$TMP/snap.$from"; then
			old=$((old + 1))
		elif cmp -s "$TMP/now" "$TMP/snap.$to"; then
			new=$((new + 1))
		else
			diff <(jq . "$TMP/now") <(jq . "$TMP/snap.$to") | head -20 >&2
			fail "round $i ($from -> $to, killed after ${delay} ms):" \
			     "the table is neither the old nor the new one" || return
		fi
		# The next round's instants spread over this sync's duration:
		# it follows the machine's load.
		t0=$(now_ms)
		sync_to "$to" "$@" || { log "round $i ($from -> $to)"; return 1; }
		dur=$(($(now_ms) - t0))
		from=$to
	done
	log "$KILLS kills: $old left the old table, $new the new one"
}

case_by_name() { kill_rounds; }

CASES=(by_name)

tap_main ip jq nft unshare -- "$@"
