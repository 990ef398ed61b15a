#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench smoke test, as TAP: the guests scenario and the cni-macvlan
# anchor on tiny sizes, their JSON parsed and checked with jq, --out's
# files (JSON, and the SVGs as XML through python3), and the
# stated skip reasons when a tool is missing (hidden by a bind mount of
# /dev/null in a private mount namespace).  The bench makes its own network
# namespace inside the case's; the host's is never touched.
#
#   selftests/bench_guests_test.sh [CASE...]    (root; BENCH= overrides)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

BENCH=${BENCH:-$here/../build/vnic-bench}
CNI=/usr/lib/cni/macvlan
ALL_GUESTS="floor libvnic-kernel libvnic-cache libvnic-explicit ip-link-add ip-batch ioctl-probe cni-macvlan"

bench() { "$BENCH" "$@"; }

# jqo FILTER [JQ-ARGS...]: the filter must hold on the JSON lines of $TMP/out.
jqo() {
	local filter=$1
	shift
	jq -e -s "$@" "$filter" "$TMP/out" >/dev/null ||
		fail "bench JSON: $filter"
}

# No holder of a target namespace may outlive the bench.
no_holders() {
	! pgrep -f -- "--settle $1" >/dev/null || fail "processes left: --settle $1"
}

case_guests_json() {
	run 0 bench guests --count 2 --nics 3 --runs 1 --json --kind macvlan \
		--settle 7 || return
	jqo 'length == 8 and all(.scenario == "guests" and .guests == 2 and
	     .nics_per_guest == 3 and .n == 6 and .kind == "macvlan")' || return
	jqo '[.[].method] == ($m | split(" "))' --arg m "$ALL_GUESTS" || return
	jqo 'all(.failed | not)' || return
	# Every row that ran: one run, a positive total, both guests timed.
	jqo '[.[] | select(.skipped | not)] | length >= 7 and
	     all(.runs == 1 and .median_ms > 0 and .first_guest_ms > 0 and
		 .last_guest_ms > 0 and (.guest_median_ms | length) == 2 and
		 (.samples_ms | length) == 1)' || return
	jqo 'all(select(.method == "floor") | .ratio_to_floor == 1)' || return
	if [ -x "$CNI" ]; then
		jqo 'any(.method == "cni-macvlan" and .runs == 1)' || return
	fi
	no_holders 7
}

# The shared table: common columns first, then the scenario's own.
case_guests_table() {
	run 0 bench guests --count 2 --nics 2 --runs 1 \
		--methods floor,libvnic-cache || return
	grep -q '^versions: libvnic' "$TMP/out" || fail "no versions line" ||
		return
	grep -q '^method  *n  *median_ms  *min_ms  *max_ms  *x_best  *x_libvnic  *x_floor  *first_ms  *last_ms  *growth' \
		"$TMP/out" || fail "no table head" || return
	grep -q '^libvnic-cache  *1  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *1\.00 ' \
		"$TMP/out" || fail "no libvnic-cache row" || return
	grep -q '^floor  *1 ' "$TMP/out" || fail "no floor row" || return
	grep -q '^spread: ' "$TMP/out" || fail "no spread line"
}

# --out: the document parses, and the growth curve is well-formed XML.
case_guests_out() {
	run 0 bench guests --count 2 --nics 2 --runs 1 --out "$TMP/res" \
		--methods floor,libvnic-cache,libvnic-explicit || return
	jq -e '.format == "vnic-bench/1" and .scenario == "guests" and
	       .params.guests == 2 and (.rows | length) == 3 and
	       all(.rows[]; (.guest_median_ms | length) == 2)' \
		"$TMP/res/guests.json" >/dev/null || fail "guests.json" || return
	python3 -c 'import sys, xml.etree.ElementTree as E
for p in sys.argv[1:]:
    E.parse(p)' "$TMP/res/guests.svg" "$TMP/res/guests-curve.svg" ||
		fail "SVG not well-formed" || return
	grep -q 'libvnic-explicit' "$TMP/res/guests-curve.svg" ||
		fail "no libvnic-explicit series in the curve" || return
	grep -q '^| floor ' "$TMP/res/guests.md" || fail "guests.md"
}

# Not macvlan: the CNI row is there, skipped, with the reason.
case_cni_kind() {
	run 0 bench guest --nics 2 --runs 1 --json \
		--methods floor,cni-macvlan || return
	jqo 'any(.method == "cni-macvlan" and .skipped and
		 (.reason | test("macvlan only")))'
}

case_cni_guest() {
	[ -x "$CNI" ] || { log "no $CNI: nothing to run"; return 0; }
	run 0 bench guest --nics 3 --kind macvlan --runs 2 --json \
		--methods floor,cni-macvlan --settle 8 || return
	jqo 'any(.method == "cni-macvlan" and .runs == 2 and .median_ms > 0)' ||
		return
	no_holders 8
}

# Without ip(8) and the plugin, their rows say why instead of vanishing.
hidden() {
	local f

	for f in /usr/sbin/ip /sbin/ip /usr/bin/ip /bin/ip "$CNI" \
		 /opt/cni/bin/macvlan; do
		[ -e "$f" ] && mount --bind /dev/null "$f"
	done
	"$BENCH" "$@"
}

case_skip_missing() {
	run 0 unshare -m bash -c "$(declare -f hidden); BENCH=$BENCH CNI=$CNI \
		hidden guests --count 1 --nics 2 --runs 1 --json --kind macvlan \
		--methods floor,ip-link-add,ip-batch,cni-macvlan" || return
	jqo 'length == 4' || return
	jqo 'all(select(.method | startswith("ip-")) |
		 .skipped and (.reason | test("ip\\(8\\) not found")))' || return
	jqo 'any(.method == "cni-macvlan" and .skipped and
		 (.reason | test("plugin not found")))' || return
	jqo 'any(.method == "floor" and .runs == 1)'
}

case_usage() {
	run 2 bench guests --kind tap || return
	grep -q "not 'tap'" "$TMP/err" || fail "tap: $(cat "$TMP/err")" ||
		return
	run 2 bench guest --nics 2 --count 3 || return
	grep -q -- '--count is not an option of guest' "$TMP/err" ||
		fail "--count: $(cat "$TMP/err")" || return
	run 2 bench guests --methods floor,nope || return
	grep -q "unknown method 'nope'" "$TMP/err" || fail "--methods"
}

CASES=(guests_json guests_table guests_out cni_kind cni_guest skip_missing usage)

setup_case() { [ -x "$BENCH" ] || fail "no $BENCH (make build/vnic-bench)"; }

tap_main jq unshare pgrep python3 -- "$@"
