#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench's xtables anchors at a tiny size, as TAP: 2 guests x 2 NICs
# in a namespace of their own; each xt row either ran and counted the
# rules it loaded (JSON "rules"), or was skipped because its tools are
# missing or the kernel does not take their tables (the bench's probe) --
# never for another reason, such as --methods not selecting it.
#
#   selftests/bench_xt_test.sh   (root; BENCH= overrides the binary)

set -u -o pipefail

BENCH=${BENCH:-$(cd "$(dirname "$0")/.." && pwd)/build/vnic-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# ROW (a JSON line) is a row skipped by the bench's probe of the tools
# (m_xt.c): not installed, or not working on this kernel.
probe_skip() {
	case $1 in
	*'"skipped":true'*'"reason":"'*' not found in '*) return 0 ;;
	*'"skipped":true'*'"reason":"'*' does not work here: '*) return 0 ;;
	esac
	return 1
}

echo "1..3"
if unshare -n "$BENCH" filters --guests 2 --nics-per-guest 2 --runs 1 \
	--stmt-sample 10 --json \
	--methods libvnic,xt-legacy-restore,xt-nft-restore,xt-nft-per-rule \
	>"$out" 2>/dev/null; then
	echo "ok 1 - filters with the xt rows ran"
else
	echo "not ok 1 - filters with the xt rows ran"
fi
# 4 NICs: 13 rules each without ARP (legacy), 16 with it (nft).
ok=1
for m in xt-legacy-restore:52 xt-nft-restore:64; do
	row=$(grep "\"method\":\"${m%:*}\"" "$out")
	if probe_skip "$row"; then
		echo "# ${m%:*} skipped: $row"
	else
		case $row in
		*'"skipped":true'*) ok=0; echo "# ${m%:*} skipped, not by the probe: $row" ;;
		*"\"rules\":${m#*:},"*) ;;
		*) ok=0; echo "# ${m%:*}: $row" ;;
		esac
	fi
done
[ $ok = 1 ] && echo "ok 2 - restore rows loaded the ruleset's rule count" ||
	echo "not ok 2 - restore rows loaded the ruleset's rule count"
row=$(grep '"method":"xt-nft-per-rule"' "$out")
if [[ $row == *'"extrapolated":true'* ]] || probe_skip "$row"; then
	echo "ok 3 - per-rule row sampled and says EXTRAPOLATED"
else
	echo "not ok 3 - per-rule row sampled and says EXTRAPOLATED"
fi
