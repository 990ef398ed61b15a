#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The fuzz corpus as a regression test, as TAP: each target of fuzz/ built
# without libFuzzer (build/fuzz-run/, by make) runs every committed input
# once, and each hostile nft read-back (fuzz/hostile.py) gets its error:
# refused before libnftnl parses it, with what is wrong.  No kernel reply is
# involved (the nft target replays its input), but each case still runs in
# its own network namespace, as every case of the suite does.
#
#   selftests/fuzz_corpus_test.sh [CASE...]     (root)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

RUNS=$here/../build/fuzz-run
CORPUS=$here/../fuzz/corpus

corpus() {
	run 0 "$RUNS/fuzz_$1" "$CORPUS/$1"/* || return
	grep -q "no crash" "$TMP/out" || fail "fuzz_$1 did not finish"
}

case_corpus_link() { corpus link; }
case_corpus_extack() { corpus extack; }
case_corpus_nft() { corpus nft; }
case_corpus_policy() { corpus policy; }
case_corpus_tag() { corpus tag; }

# replay FILE: the read-back of fuzz/corpus/nft/FILE, what it said on stderr.
replay() {
	FUZZ_VERBOSE=1 run 0 "$RUNS/fuzz_nft" "$CORPUS/nft/$1"
}

# refused FILE WHY: the open failed with EBADMSG and says WHY.
refused() {
	replay "$1" || return
	grep -qF "refused a malformed reply from the kernel: $2: Bad message" "$TMP/err" ||
		fail "$1: $(cat "$TMP/err")"
}

case_real_table_reads_both_guests() {
	replay two-guests || return
	expect_eq "$(grep -c 'counter read' "$TMP/err")" 2 "guests read back"
}
case_elem_type_past_elem_max() {
	refused hostile-elem-type-15 "element: unexpected attribute 15"
}
case_set_concat_of_20_fields() {
	refused hostile-set-concat-20 "concatenation: over 16 attributes"
}
case_table_name_without_nul() {
	refused hostile-table-name-no-nul \
		"table attribute 1: not a string of at most 255 bytes ending with its NUL"
}
case_chain_u32_of_2_bytes() {
	refused hostile-chain-flags-2-bytes "chain attribute 10: 2 bytes, not 4"
}
case_elem_expression_not_counter() {
	refused hostile-elem-expr-immediate \
		"expression 'immediate': only counter is expected"
}
case_ack_error_int_min() {
	refused hostile-ack-int-min "an error code out of range"
}
case_nlmsg_len_2g() {
	refused hostile-nlmsg-len-2g "a message overruns its datagram"
}
# A guest element whose comment lacks its NUL (vm2's, reading "vm9
# 00000001" without it) is not believed: the comment is no comment, so the
# guests set is damaged and listing the guests is refused, saying so; no
# guest is read back from it, neither vm9 nor the vm2 of its key.
case_comment_without_nul_refused() {
	replay hostile-comment-no-nul || return
	grep -q '^open: ok$' "$TMP/err" || fail "open: $(cat "$TMP/err")" || return
	grep -q '^guests: .*set guests: element 0x[0-9a-f]* has no "NAME DIGEST" comment' \
		"$TMP/err" || fail "guests not refused: $(cat "$TMP/err")" || return
	# Said once, whole: the damage, then the ways out, then the errno.
	grep -q '^guests: dump: table netdev vnic: set guests: [^:]*comment: damaged; a sync repairs it (vnic_nft_sync(), vnicctl filter sync), or delete it (nft delete table netdev vnic): Structure needs cleaning$' \
		"$TMP/err" || fail "message: $(cat "$TMP/err")" || return
	! grep -q '^guest ' "$TMP/err" || fail "a guest read from a damaged set: $(cat "$TMP/err")"
}

CASES=(corpus_link corpus_extack corpus_nft corpus_policy corpus_tag
       real_table_reads_both_guests elem_type_past_elem_max
       set_concat_of_20_fields table_name_without_nul chain_u32_of_2_bytes
       elem_expression_not_counter ack_error_int_min nlmsg_len_2g
       comment_without_nul_refused)

setup_case() { :; }

[ -x "$RUNS/fuzz_nft" ] || skip_all "no $RUNS (make tests)"
tap_main -- "$@"
