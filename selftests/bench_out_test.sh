#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench's output, as TAP: a tiny run of each kind of scenario with
# --out, and what it leaves behind: a JSON document that parses, a
# Markdown summary holding the table, an SVG that is well-formed XML; and
# --json lines that each parse, with no progress line when stderr is not a
# terminal.  Sizes are the smallest that run every writer: the figures are
# not what is tested.  Every check ends its case when it fails.
#
#   selftests/bench_out_test.sh [CASE...]     (root; BENCH= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

BENCH=${BENCH:-$here/../build/vnic-bench}

bench() { "$BENCH" "$@"; }

# check_out SCENARIO ROWS...: DIR $TMP/o holds SCENARIO's three files, and
# each named row in the JSON and in the Markdown table.
check_out() {
	local scn=$1 f=$TMP/o/$1 r
	shift
	jq -e '.scenario and (.rows | length > 0) and .host.kernel and
	       .host.versions.libvnic and (.noisy_rows | type == "number")' \
		"$f.json" >/dev/null || fail "$scn.json: not the document" || return 1
	python3 -m json.tool "$f.json" >/dev/null || fail "$scn.json: python3 json" || return 1
	grep -q '^| method ' "$f.md" || fail "$scn.md: no table head" || return 1
	grep -q '^## Environment' "$f.md" || fail "$scn.md: no environment" || return 1
	grep -q '^spread: ' "$f.md" || fail "$scn.md: no spread line" || return 1
	for r in "$@"; do
		grep -q "^| $r " "$f.md" || fail "$scn.md: no row $r" || return 1
		jq -e --arg m "$r" '[.rows[] | select(.method == $m)] | length == 1' \
			"$f.json" >/dev/null || fail "$scn.json: no row $r" || return 1
	done
	python3 -c 'import sys, xml.etree.ElementTree as E
t = E.parse(sys.argv[1]).getroot()
assert t.tag == "{http://www.w3.org/2000/svg}svg", t.tag' "$f.svg" ||
		fail "$scn.svg: not well-formed SVG" || return 1
}

case_guest_out() {
	run 0 bench guest --nics 2 --runs 2 --settle 0 \
		--methods floor,libvnic-explicit --out "$TMP/o" || return 1
	grep -q '^method .* x_best .* x_libvnic' "$TMP/out" ||
		fail "no table head on stdout" || return 1
	grep -q '^versions: libvnic: ' "$TMP/out" || fail "no versions line" || return 1
	grep -q '^spread: ' "$TMP/out" || fail "no spread line" || return 1
	check_out guest floor libvnic-explicit
}

case_filters_out() {
	run 0 bench filters --guests 2 --runs 2 --settle 0 \
		--methods libvnic,kernel-hook-floor --out "$TMP/o" || return 1
	check_out filters libvnic kernel-hook-floor
	jq -e '.rows[] | select(.method == "nft-f") | .skipped' \
		"$TMP/o/filters.json" >/dev/null || fail "nft-f not said skipped" || return 1
}

# pkt: every row ran (or, nft by prefix and tcx, skipped on an old kernel) with a
# positive figure, and the program's verdicts are the policy's.
case_pkt_out() {
	run 0 bench pkt --count 2 --runs 1 --out "$TMP/o" || return 1
	check_out pkt test-run-empty test-run-legit test-run-spoofed-mac \
		test-run-spoofed-ipv4 veth-none veth-tc-empty veth-nft veth-nft-prefix \
		veth-bpf veth-bpf-tcx ||
		return 1
	jq -e '[.rows[] | select(.skipped | not)] | length >= 8 and
	       all(.ns_per_packet > 0 and .frames_per_s > 0 and .runs == 1)' \
		"$TMP/o/pkt.json" >/dev/null || fail "pkt: a row without figures" || return 1
	jq -e '[.rows[] | select(.method | startswith("test-run")) | .verdict] ==
	       ["pass", "pass", "drop", "drop"]' \
		"$TMP/o/pkt.json" >/dev/null || fail "pkt: verdicts" || return 1
}

# Every line of --json is an object; stderr holds no progress line.
case_json_lines() {
	run 0 bench guest --nics 2 --runs 1 --settle 0 --methods floor \
		--json || return 1
	jq -e -s 'length == 1 and .[0].method == "floor" and
		  (.[0].versions | has("nft"))' "$TMP/out" >/dev/null ||
		fail "--json lines" || return 1
	! grep -q $'\r' "$TMP/err" || fail "a progress line on a pipe" || return 1
}

case_bad_out() {
	run nz bench guest --nics 2 --out /proc/version/x || return 1
	grep -q -- '--out' "$TMP/err" || fail "no message naming --out" || return 1
}

# scripts/bench-compare.py: one --out tree against itself passes; the same
# rows in another order, or a row renamed, do not.
case_compare_rows_in_order() {
	local cmp=$here/../scripts/bench-compare.py
	run 0 bench guest --nics 2 --runs 1 --settle 0 --methods floor,libvnic-explicit \
		--out "$TMP/a" || return 1
	cp -r "$TMP/a" "$TMP/b" && cp -r "$TMP/a" "$TMP/c" || return 1
	jq '.rows |= reverse' "$TMP/a/guest.json" >"$TMP/b/guest.json" || return 1
	jq '.rows[0].method += "x"' "$TMP/a/guest.json" >"$TMP/c/guest.json" || return 1
	python3 "$cmp" "$TMP/a" "$TMP/a" >/dev/null || fail "a tree against itself" || return 1
	! python3 "$cmp" "$TMP/a" "$TMP/b" >/dev/null || fail "rows reordered passed" || return 1
	! python3 "$cmp" "$TMP/a" "$TMP/c" >/dev/null || fail "a row renamed passed" || return 1
}

# A row that fails after some good runs shows no figures, only why, and
# nothing is judged against it: nft -f fails from its second timed run on
# (an nft(8) mounted over the real one in a mount namespace of the case's
# own), and libvnic's ratio target to nft-f is NOT MEASURED, not met.
case_failed_row_unjudged() {
	local nft=/usr/sbin/nft
	[ -x "$nft" ] || { log "no $nft"; exit 77; }
	cp "$nft" "$TMP/nft.real" || return 1
	echo 0 >"$TMP/count"
	# The untimed check of nft-f's text runs one nft -f; then run 1.
	cat >"$TMP/nft" <<-EOF
	#!/bin/sh
	if [ "\$1" = -f ]; then
		n=\$((\$(cat "$TMP/count") + 1))
		echo \$n >"$TMP/count"
		[ \$n -le 2 ] || { echo "nft: failure injected by the test" >&2; exit 1; }
	fi
	exec "$TMP/nft.real" "\$@"
	EOF
	chmod +x "$TMP/nft" || return 1
	run 0 unshare -m sh -c 'mount --bind "$1" /usr/sbin/nft && shift &&
		exec "$@"' sh "$TMP/nft" "$BENCH" filters --guests 2 \
		--nics-per-guest 2 --runs 3 --settle 0 --methods libvnic,nft-f ||
		return 1
	grep -q '^nft-f  *FAILED: .*failure injected' "$TMP/out" ||
		fail "nft-f not said FAILED" || return 1
	! grep -q '^nft-f  *[0-9]' "$TMP/out" ||
		fail "the failed nft-f row shows figures" || return 1
	grep -q '^verdict: libvnic .*<= 0.60x nft-f not measured (nft-f FAILED);.* target NOT MEASURED$' \
		"$TMP/out" || fail "libvnic judged against a failed row" || return 1
	run 0 unshare -m sh -c 'echo 0 >"$2/count" &&
		mount --bind "$1" /usr/sbin/nft && shift 2 && exec "$@"' sh \
		"$TMP/nft" "$TMP" "$BENCH" filters --guests 2 --nics-per-guest 2 \
		--runs 3 --settle 0 --methods libvnic,nft-f --json || return 1
	jq -e -s 'any(.method == "nft-f" and .failed and .runs == 0 and
		      .median_ms == null) and
		  any(.method == "libvnic" and .runs == 3 and
		      ."ratio_to_nft-f" == null and .meets_target == false)' \
		"$TMP/out" >/dev/null || fail "JSON: $(cat "$TMP/out")" || return 1
}

CASES=(guest_out filters_out pkt_out json_lines bad_out compare_rows_in_order
       failed_row_unjudged)

setup_case() {
	[ -x "$BENCH" ] || { log "no $BENCH (make build/vnic-bench)"; return 1; }
}

tap_main jq python3 -- "$@"
