#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench restart's rows of new vnicctl processes (issue 14 part 5), as
# TAP: at two tiny sizes, every row ran (hooks by name and by prefix), the
# syncs carry their sendmsg/recvmsg/dump counts, the changed rows their
# ratio to the full apply of the same size, the larger size its factor per
# doubling; --proc-guests none leaves them out and a bad size is refused.
# The figures are not what is tested.
#
#   selftests/bench_restart_test.sh [CASE...]     (root; BENCH= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

. "$here/bench_lib.sh"

case_proc_rows() {
	bench01 restart --guests 2 --runs 1 --settle 0 --proc-guests 4,8 \
		--json || return
	jqo '[.[] | select(.method | test("^(vnicctl|anchor)-"))] |
	     length == 28 and all(.runs == 1 and .existing > 0)' || return
	jqo '[.[] | select(.method | startswith("vnicctl-"))] |
	     all(.sendmsg > 0 and .recvmsg > 0 and (.link_dumps | type) == "number")' || return
	jqo '[.[] | select(.method | test("^vnicctl-(name|prefix)-sync-[0-9]+pct-[48]$"))] |
	     length == 12 and all(.target_ratio == 1.2 and
	     (.target_ratio_to | test("full-apply")) and
	     .ratio_to_full_apply > 0)' || return
	jqo 'any(.method == "vnicctl-prefix-sync-100pct-8" and .x_per_doubling > 0) and
	     any(.method == "vnicctl-prefix-sync-100pct-4" and .x_per_doubling == null)' || return
	# The in-process rows keep their names and keys.
	jqo 'any(.method == "libvnic-sync-unchanged" and .runs == 1 and
		 (.genid_delta | type) == "number")'
}

case_proc_none_and_bad() {
	bench01 restart --guests 2 --runs 1 --settle 0 --proc-guests none \
		--json || return
	# The in-process rows ran; none of the new processes' did.
	jqo 'any(.method == "libvnic-sync-unchanged" and .runs == 1) and
	     all(.method | test("^(vnicctl|anchor)-") | not)' || return
	"$BENCH" restart --proc-guests 4,0 >"$TMP/out" 2>"$TMP/err"
	[ $? = 2 ] || fail "--proc-guests 4,0 not refused with exit 2" || return
	grep -q -- '--proc-guests: want 1..20000' "$TMP/err" ||
		fail "no message for --proc-guests 4,0: $(cat "$TMP/err")"
}

# The rows' vnicctl keep the nft features as vnicctl does in production,
# in a file of the run's own (the first sync writes it), never in the
# host's /run/vnic: under a private /run, nothing is made there.
case_proc_features_file_not_in_run() {
	env -u VNICCTL_FEATURES_FILE unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs none /run &&
		"$0" restart --guests 2 --runs 1 --settle 0 --proc-guests 4 \
		--json >"$1/out" 2>"$1/err" ; rc=$?; ls -A /run/vnic >"$1/run" 2>/dev/null; exit $rc' \
		"$BENCH" "$TMP"
	[ $? -le 1 ] || { sed 's/^/  stderr: /' "$TMP/err" >&2; fail "vnic-bench failed"; return; }
	jqo '[.[] | select(.method | startswith("vnicctl-"))] | length == 12 and all(.runs == 1)' || return
	[ ! -s "$TMP/run" ] || fail "the bench wrote /run/vnic: $(cat "$TMP/run")"
}

CASES=(proc_rows proc_none_and_bad proc_features_file_not_in_run)

setup_case() {
	[ -x "$BENCH" ] || { log "no $BENCH (make build/vnic-bench)"; return 1; }
}

tap_main jq -- "$@"
