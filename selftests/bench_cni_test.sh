#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench cni (issue 12 part 3), as TAP: at tiny sizes, the rows of
# vnic-cni (veth with its filter, by name and with hookPrefix), of the stock
# ptp plugin and of host-local alone ran at 0 and at --existing NICs (and
# 82 attachments of vnic-cni veth and of ptp into one container), the GC
# row ran and removed what it should have, the five verdicts are there.  The figures are not what is
# tested.
#
#   selftests/bench_cni_test.sh [CASE...]     (root; BENCH= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

. "$here/bench_lib.sh"

case_cni_rows() {
	local rc
	"$BENCH" cni --runs 2 --existing 4 --count 3 --json \
		--methods vnic-cni-veth,vnic-cni-veth-prefix,stock-ptp,ipam-host-local,vnic-cni-gc \
		>"$TMP/out" 2>"$TMP/err"
	rc=$?
	# 1: a missed target, reported (tiny sizes judge nothing).
	[ $rc -le 1 ] || { fail "vnic-bench cni exited $rc: $(cat "$TMP/err")"; return; }
	jqo '[.[] | select((.method // "") | test("^(vnic-cni-veth|vnic-cni-veth-prefix|stock-ptp|ipam-host-local)-(add|del)$"))] |
	     length == 16 and all(.runs == 2 and .median_ms > 0) and
	     (map(.existing) | sort == [0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4])' || return
	# host-local alone makes no interface: no row of 82.
	jqo 'all(.method? != "ipam-host-local-82-add")' || return
	jqo 'any(.method? == "vnic-cni-veth-82-add" and .runs == 1 and .existing == 0)' || return
	# ptp too: each of the 82 attachments a network of its own (one
	# network's second attachment would route the same gateway again).
	jqo '[.[] | select(.method? == "stock-ptp-82-add")] | length == 2 and
	     all(.runs == 1 and .median_ms > 0 and (has("error") | not))' || return
	jqo 'any(.method? == "vnic-cni-gc-3-stale" and .runs == 1 and .median_ms > 0)' || return
	jqo 'any(.method? == "vnic-cni-macvlan-add" and .runs == 0)' || return
	jqo '[.[] | select(.verdict?)] | length == 5 and
	     all((.value | type) == "number" and (.meets_target | type) == "boolean")' || return
	# The floor's verdict restates the ptp target: both met or both not.
	jqo '[.[] | select((.verdict // "") | test("^vnic-cni-veth-add / "))] |
	     length == 2 and .[0].meets_target == .[1].meets_target'
}

# Without stock-ptp the floor's target (0.5 x ptp / host-local) is no
# figure: that verdict is not measured, not missed.
case_floor_verdict_without_ptp() {
	local rc
	"$BENCH" cni --runs 1 --existing 1 --count 1 \
		--methods vnic-cni-veth,ipam-host-local >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc -le 1 ] || { fail "vnic-bench cni exited $rc: $(cat "$TMP/err")"; return; }
	grep -q '^verdict: vnic-cni-veth-add / ipam-host-local-add .*: target NOT MEASURED$' \
		"$TMP/out" || fail "floor verdict: $(grep 'ipam-host-local-add at' "$TMP/out")"
}

# A row that failed after a good run shows no figures, only why, and no
# verdict is taken from it: vnic-cni's second ADD fails (a wrapper as
# VNIC_CNI), so vnic-cni-veth-add at 0 has one good run of three.
case_failed_row_unjudged() {
	local rc
	echo 0 >"$TMP/count"
	cat >"$TMP/vnic-cni" <<-EOF
	#!/bin/sh
	if [ "\$CNI_COMMAND" = ADD ]; then
		n=\$((\$(cat "$TMP/count") + 1))
		echo \$n >"$TMP/count"
		[ \$n != 2 ] || { echo '{"code":999,"msg":"failure injected by the test"}'; exit 1; }
	fi
	exec "$here/../build/vnic-cni" "\$@"
	EOF
	chmod +x "$TMP/vnic-cni" || return
	VNIC_CNI=$TMP/vnic-cni "$BENCH" cni --runs 3 --existing 0 --count 1 \
		--methods vnic-cni-veth >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc -le 1 ] || { fail "vnic-bench cni exited $rc: $(cat "$TMP/err")"; return; }
	grep -q '^vnic-cni-veth-add  *0  FAILED: .*failure injected' "$TMP/out" ||
		fail "the failed row: $(cat "$TMP/out")" || return
	grep -q '^verdict: vnic-cni-veth-add at --existing / at 0 .*: target NOT MEASURED$' \
		"$TMP/out" || fail "judged from a failed row: $(grep '^verdict' "$TMP/out")"
}

# Rows said to be next to --existing NICs are, or fail: with the fill's
# ip -batch failing (an ip first in PATH), they were measured next to none
# and judged against the rows at 0.
case_failed_fill() {
	local rc
	mkdir "$TMP/bin" || return
	cat >"$TMP/bin/ip" <<-EOF
	#!/bin/sh
	[ "\$1" != -batch ] || { echo "ip: failure injected by the test" >&2; exit 1; }
	exec "$(command -v ip)" "\$@"
	EOF
	chmod +x "$TMP/bin/ip" || return
	PATH=$TMP/bin:$PATH "$BENCH" cni --runs 1 --existing 4 --count 1 \
		--methods vnic-cni-veth >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc -le 1 ] || { fail "vnic-bench cni exited $rc: $(cat "$TMP/err")"; return; }
	grep -q '^vnic-cni-veth-add  *0  *1 ' "$TMP/out" ||
		fail "no row at 0: $(cat "$TMP/out")" || return
	grep -q '^vnic-cni-veth-add  *4  FAILED: making the 4 existing NICs' "$TMP/out" ||
		fail "the rows at 4: $(cat "$TMP/out")" || return
	grep -q '^verdict: vnic-cni-veth-add at --existing / at 0 .*: target NOT MEASURED$' \
		"$TMP/out" || fail "judged: $(grep '^verdict' "$TMP/out")"
}

CASES=(cni_rows floor_verdict_without_ptp failed_row_unjudged failed_fill)

setup_case() {
	[ -x "$BENCH" ] || { log "no $BENCH (make build/vnic-bench)"; return 1; }
	[ -x "$here/../build/vnic-cni" ] || { log "no build/vnic-cni (make all)"; return 1; }
}

[ -x /usr/lib/cni/ptp ] || [ -x /opt/cni/bin/ptp ] ||
	skip_all "no stock CNI plugins (containernetworking-plugins)"
tap_main jq -- "$@"
