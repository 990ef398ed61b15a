#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What the vnic-bench TAP scripts share, on top of cli_lib.sh: sourced by
# selftests/bench_{floor,restart,cni}_test.sh after cli_lib.sh.

BENCH=${BENCH:-$here/../build/vnic-bench}

# vnic-bench ARGS... into $TMP/out and $TMP/err: 0 for exit 0 or 1 (a
# missed target is reported, not a failure: tiny sizes judge nothing),
# else 1 with the bench's stderr logged.
bench01() {
	local rc
	"$BENCH" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc -le 1 ] && return 0
	log "'vnic-bench $*' exited $rc"
	sed 's/^/  stderr: /' "$TMP/err" >&2
	return 1
}

# jqo FILTER [JQ-ARGS...]: FILTER holds over the JSON lines of $TMP/out.
jqo() {
	local filter=$1
	shift
	jq -e -s "$@" "$filter" "$TMP/out" >/dev/null ||
		fail "jq: $filter: $(cat "$TMP/out")"
}
