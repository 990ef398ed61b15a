#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench growth, as TAP: a tiny run (40 NICs, 2 points, 1 run) with
# --out, whose JSON document parses and holds a curve per measured method,
# whose SVG is well-formed XML with a line per method, and whose --json
# lines parse.  The figures are not what is tested.  "all --quick" takes
# over a minute (82-NIC guests of four kinds): not run here.
#
#   selftests/bench_growth_test.sh [CASE...]  (root; BENCH= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

BENCH=${BENCH:-$here/../build/vnic-bench}

bench() { "$BENCH" "$@"; }

case_growth_out() {
	local f=$TMP/o/growth
	run 0 bench growth --max-nics 40 --points 2 --runs 1 --settle 0 \
		--out "$TMP/o" || return 1
	grep -q '^curve: ' "$TMP/out" || fail "no curve table" || return 1
	jq -e '.scenario == "growth" and (.rows | length == 8) and
	       (.params.points // .points | length == 2) and .host.kernel' \
		"$f.json" >/dev/null || fail "growth.json: not the document" || return 1
	# any(): [... | length == 2] | length >= 1 held for a curve of any
	# length (an array of one false is one long).
	jq -e 'any(.rows[] | select(.method == "libvnic-prefix" or .method == "libvnic")
	        | select(.skipped | not); .median_ms_per_point | length == 2)' \
		"$f.json" >/dev/null ||
		fail "growth.json: no libvnic curve" || return 1
	jq -e '.rows[] | select(.method == "libvnic-bpf") |
	       .median_ms_per_point | length == 2 and all(. > 0)' "$f.json" \
		>/dev/null || fail "growth.json: no libvnic-bpf curve" || return 1
	python3 -m json.tool "$f.json" >/dev/null || fail "growth.json: python3 json" || return 1
	python3 -c 'import sys, xml.etree.ElementTree as E
t = E.parse(sys.argv[1]).getroot()
assert t.tag == "{http://www.w3.org/2000/svg}svg", t.tag' "$f.svg" ||
		fail "growth.svg: not well-formed SVG" || return 1
	grep -q '^| libvnic ' "$f.md" || fail "growth.md: no libvnic row" || return 1
}

case_growth_json() {
	run 0 bench growth --max-nics 8 --points 2 --runs 1 --settle 0 \
		--methods libvnic --json || return 1
	jq -e -s 'length == 8 and ([.[] | select(.method == "libvnic")
		  | .median_ms_per_point | length] == [2])' "$TMP/out" >/dev/null ||
		fail "--json lines" || return 1
}

case_bad_points() {
	run nz bench growth --points 1 || return 1
	grep -q -- '--points' "$TMP/err" || fail "no message naming --points" || return 1
}

CASES=(growth_out growth_json bad_points)

setup_case() {
	[ -x "$BENCH" ] || { log "no $BENCH (make build/vnic-bench)"; return 1; }
}

tap_main jq python3 -- "$@"
