#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnic-bench's xtables anchors at a tiny size, as TAP: 2 guests x 2 NICs
# in a namespace of their own; each xt row either ran and counted the
# rules it loaded (JSON "rules"), or was skipped with a reason.
#
#   selftests/bench_xt_test.sh   (root; BENCH= overrides the binary)

set -u -o pipefail

BENCH=${BENCH:-$(cd "$(dirname "$0")/.." && pwd)/build/vnic-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

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
	case $row in
	*'"skipped":true'*) echo "# ${m%:*} skipped: $row" ;;
	*"\"rules\":${m#*:},"*) ;;
	*) ok=0; echo "# ${m%:*}: $row" ;;
	esac
done
[ $ok = 1 ] && echo "ok 2 - restore rows loaded the ruleset's rule count" ||
	echo "not ok 2 - restore rows loaded the ruleset's rule count"
if grep -q '"method":"xt-nft-per-rule".*"extrapolated":true' "$out" ||
   grep -q '"method":"xt-nft-per-rule".*"skipped":true' "$out"; then
	echo "ok 3 - per-rule row sampled and says EXTRAPOLATED"
else
	echo "not ok 3 - per-rule row sampled and says EXTRAPOLATED"
fi
