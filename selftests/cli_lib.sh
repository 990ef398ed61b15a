#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What the vnicctl TAP scripts share: sourced by selftests/vnicctl*_test.sh.
# A script defines case_NAME functions, CASES=(...) and setup_case (run in
# the case's fresh namespace), then ends with: tap_main TOOLS... -- "$@"
# (the script's own arguments after the --: case names, or __case NAME when
# it re-runs itself inside a case's namespace).

here=$(cd "$(dirname "$0")" && pwd)
VNICCTL=${VNICCTL:-$here/../build/vnicctl}
TMP=

log() { echo "$*" >&2; }
fail() { log "FAIL: $*"; return 1; }

# run RC CMD...: run CMD, stdout to $TMP/out, stderr to $TMP/err; its exit
# status must be RC ("nz": any but 0).
run() {
	local want=$1 rc
	shift
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$want" = nz ] && [ "$rc" != 0 ]; then
		return 0
	fi
	[ "$rc" = "$want" ] && return 0
	log "'$*' exited $rc, wanted $want"
	sed 's/^/  stdout: /' "$TMP/out" >&2
	sed 's/^/  stderr: /' "$TMP/err" >&2
	return 1
}

# nft_json [FAMILY TABLE]: the ruleset as JSON, as "nft -j list ruleset"
# has it (with FAMILY TABLE: as "nft -j list table FAMILY TABLE" has it, and
# 1 when there is no such table), but listed object by object: nft 1.0.6
# cannot name a table's persist flag, and its JSON of such a table prints
# garbage from uninitialised memory or cuts the whole listing short after
# '"flags": ', depending on what the heap held.  The tables come from the
# text listing (name and family: their flags are not read here), sets,
# maps and counters by kind, the rules chain by chain.
nft_json() {
	local f t c
	if [ $# = 2 ]; then
		# not grep -q: its early exit would fail nft with SIGPIPE (pipefail)
		nft list tables "$1" | grep -xF "table $1 $2" >/dev/null || return 1
	fi
	{
		nft list tables | while read -r _ f t; do
			printf '{"nftables": [{"table": {"family": "%s", "name": "%s"}}]}\n' \
				"$f" "$t"
		done
		nft -j list sets && nft -j list maps && nft -j list counters &&
		nft -j list chains | jq -r '.nftables[] | .chain? // empty |
			"\(.family) \(.table) \(.name)"' |
		while read -r f t c; do
			nft -j list chain "$f" "$t" "$c" || return
		done
	} | jq -cs --arg f "${1-}" --arg t "${2-}" '
		def in_table: ($f == "") or (to_entries[0] | .key as $k | .value |
			.family == $f and (if $k == "table" then .name else .table end) == $t);
		{nftables: [.[].nftables[] | select(has("metainfo") | not) | select(in_table)]}'
}
# for the cases that list a table from a shell of their own (bash -c)
export -f nft_json

vc() { "$VNICCTL" "$@"; }

# until_ok CMD...: wait (up to 3 s) for CMD to succeed: for an event (a
# frame's effect, a process's output), never for a time; what must NOT
# change is asserted after it.
until_ok() {
	local i
	for i in $(seq 30); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# netns_child VAR: a child (a sleep) in a network namespace of its own,
# its pid in VAR; the caller kills it.  Returns once the child is in that
# namespace: before unshare(2) has run, /proc/PID/ns/net is still the
# case's own namespace (right after the fork nearly always), and a loaded
# host can delay the child by more than any sleep.
netns_child() {
	local ready=$TMP/netns-child.$BASHPID.$RANDOM i
	unshare -n sh -c 'touch "$0"; exec sleep 600' "$ready" >/dev/null 2>&1 &
	printf -v "$1" %s "$!"
	for i in $(seq 1000); do
		[ -e "$ready" ] && return 0
		sleep 0.01
	done
	fail "the namespace holder never started"
}

expect_eq() {
	[ "$1" = "$2" ] || fail "$3: got '$1', wanted '$2'"
}

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

# tap_main TOOL... -- [CASE...]: each case in its own network namespace
# (unshare -n re-running this script), TAP on stdout; its output shown as
# comments when it fails (or always with VERBOSE=1).  A case that exits 77
# is skipped.
tap_main() {
	local tools=() n=0 failed=0 c out

	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		tools+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	if [ "${1:-}" = __case ]; then
		TMP=$(mktemp -d)
		trap 'rm -rf "$TMP"' EXIT
		# vnicctl's nft features file: the case's, never the host's
		# /run/vnic (filters-cli.rst).
		export VNICCTL_FEATURES_FILE=$TMP/nft-features
		setup_case || exit 1
		"case_$2"
		exit
	fi
	for c in "${tools[@]}"; do
		command -v "$c" >/dev/null || skip_all "needs $c"
	done
	[ "$(id -u)" = 0 ] || skip_all "needs root"
	[ -x "$VNICCTL" ] || skip_all "no $VNICCTL (make build/vnicctl)"
	unshare -n true 2>/dev/null || skip_all "unshare -n does not work here"
	[ $# -gt 0 ] && CASES=("$@")
	echo "1..${#CASES[@]}"
	for c in "${CASES[@]}"; do
		n=$((n + 1))
		if out=$(unshare -n "$0" __case "$c" 2>&1); then
			echo "ok $n - $c"
			[ "${VERBOSE:-0}" = 0 ] && out=
		elif [ $? = 77 ]; then
			# A case exits 77 to skip; its last line says why.
			echo "ok $n - $c # SKIP ${out##*$'\n'}"
			out=
		else
			echo "not ok $n - $c"
			failed=$((failed + 1))
		fi
		[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# /'
	done
	[ "$failed" = 0 ]
}
