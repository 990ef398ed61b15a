#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench's floor rows, as TAP: the nf_tables batches (and for restart,
# the reads) libvnic sent, kept through the tap and sent again by the
# bench's own socket, are
# taken by the kernel in every run (a batch it refused would fail the row),
# and libvnic's rows carry their ratio to the floor of their layout.  Tiny
# sizes: the figures are not what is tested.
#
#   selftests/bench_floor_test.sh [CASE...]     (root; BENCH= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

. "$here/bench_lib.sh"

PFX_OR_RAN='(.runs == 2) or (.skipped and (.reason | test("prefix")))'

case_filters_floor() {
	bench01 filters --guests 2 --nics-per-guest 2 --runs 2 --settle 0 \
		--methods libvnic,libvnic-prefix,floor,floor-prefix --json || return
	jqo 'any(.method == "floor" and .runs == 2 and
		 (.note | test("1 nf_tables batch")))' || return
	jqo "any(.method == \"floor-prefix\" and ($PFX_OR_RAN))" || return
	jqo 'any(.method == "libvnic" and .target_floor == "floor" and
		 .ratio_to_floor > 0 and .target_ratio_to_floor == 1.15)' || return
	bench01 filters --guests 2 --nics-per-guest 2 --runs 1 --settle 0 \
		--methods libvnic,floor || return
	grep -q '^verdict: libvnic .* [0-9.]*x floor (<= 1.15x)' "$TMP/out" ||
		fail "no floor verdict: $(cat "$TMP/out")"
}

case_filters_add_floor() {
	bench01 filters-add --existing 2 --nics-per-guest 2 --runs 2 \
		--settle 0 --json || return
	jqo 'any(.method == "floor-add-next-to-G" and .runs == 2) and
	     any(.method == "floor-add-next-to-none" and .runs == 2)' || return
	jqo "[.[] | select(.method | startswith(\"floor-prefix-add\"))] |
	     length == 2 and all($PFX_OR_RAN)" || return
	jqo 'any(.method == "libvnic-add-next-to-G" and
		 .target_floor == "floor-add-next-to-G" and .ratio_to_floor > 0)'
}

case_growth_floor() {
	bench01 growth --max-nics 8 --points 2 --runs 1 --settle 0 \
		--methods libvnic,floor --json || return
	jqo 'any(.method == "floor" and (.median_ms_per_point | length == 2
		 and all(. != null)))' || return
	jqo 'any(.method == "libvnic" and (.ratio_to_floor_per_point |
		 length == 2 and all(. > 0)))'
}

# restart: an unchanged sync sends no batch; its floor is the reads the
# sync of a new process sent, kept by the tap and sent again, every run.
case_restart_floor() {
	bench01 restart --guests 2 --nics-per-guest 2 --runs 2 --settle 0 \
		--proc-guests none --methods libvnic,floor-sync-unchanged \
		--json || return
	jqo 'any(.method == "floor-sync-unchanged" and .runs == 2 and
		 (.note | test("[1-9][0-9]* reads")))' || return
	jqo 'any(.method == "libvnic-sync-unchanged" and
		 .target_floor == "floor-sync-unchanged" and .ratio_to_floor > 0 and
		 ."ratio_to_floor-sync-unchanged" > 0)'
}

# The bpf backend's rows: they ran, with the ratio to nft by name, and a
# restart from a new process (veth) wrote nothing.
case_bpf_rows() {
	bench01 filters --guests 2 --nics-per-guest 2 --runs 2 --settle 0 \
		--methods libvnic,libvnic-bpf,libvnic-bpf-remove-all,floor-bpf,floor-bpf-remove-all \
		--json || return
	# the bpf floor rows replayed each run's writes (2 guests x 2 macvlans:
	# a batch of 4 qdiscs, one of 4 filters, 11 map writes; the remove one
	# batch of 4 clsact deletes, our filters going with them, and 11 map
	# writes), and the bpf rows are judged against them
	jqo 'any(.method == "floor-bpf" and .runs == 2 and .writes > 0 and
		 .messages == 19 and .batches == 2)' || return
	jqo 'any(.method == "floor-bpf-remove-all" and .runs == 2 and
		 .messages == 15 and .batches == 1)' || return
	jqo 'any(.method == "libvnic-bpf" and .target_floor == "floor-bpf")' || return
	jqo 'any(.method == "libvnic-bpf-remove-all" and
		 .target_floor == "floor-bpf-remove-all")' || return
	jqo 'any(.method == "libvnic-bpf" and .runs == 2 and .writes > 0 and
		 .ratio_to_libvnic > 0 and .target_ratio_to == "libvnic")' || return
	jqo 'any(.method == "libvnic-bpf-remove-all" and .runs == 2)' || return
	bench01 filters-add --existing 2 --nics-per-guest 2 --runs 2 \
		--settle 0 --json || return
	jqo '[.[] | select(.method | startswith("libvnic-bpf-"))] |
	     length == 4 and all(.runs == 2)' || return
	bench01 restart --guests 2 --nics-per-guest 2 --runs 2 --settle 0 \
		--kind veth --json || return
	jqo 'any(.method == "libvnic-bpf-open+sync-unchanged" and .runs == 2 and
		 .writes == 0)'
}

CASES=(filters_floor filters_add_floor growth_floor restart_floor bpf_rows)

setup_case() {
	[ -x "$BENCH" ] || { log "no $BENCH (make build/vnic-bench)"; return 1; }
}

tap_main jq -- "$@"
