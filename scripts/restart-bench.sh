#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The restart figures of issue 14, measured as a user would until vnic-bench
# has a restart scenario: N macvlans on a veth lower in a private namespace
# (selftests/restart_nics.sh), policies A and B (selftests/restart_policy.py),
# each `vnicctl filter sync` a new process, timed from outside; the median
# of RUNS namespaces per row.  Also: sendmsg/recvmsg/ioctl calls of the sync
# of B after A (vnicctl -s), and the anchor, nft -f of B's rendering into an
# empty table.
#
#   scripts/restart-bench.sh [N...]     (root; RUNS=3 HOOKS="name prefix")
set -eu -o pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
V=${VNICCTL:-$here/build/vnicctl}
RUNS=${RUNS:-3}
HOOKS=${HOOKS:-"name prefix"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One namespace: prints "emptyA BafterA emptyB unchanged flushed nftf sendmsg recvmsg ioctls" (ms, counts).
one() {
	local n=$1 hooks=$2
	unshare -n bash -s "$here" "$V" "$n" "$hooks" "$tmp" <<'EOS'
set -eu
here=$1 V=$2 n=$3 hooks=$4 tmp=$5
"$here/selftests/restart_nics.sh" "$n" >/dev/null
opt=
[ "$hooks" = prefix ] && opt="--hook-prefix nv"
ms() { local s e; s=$(date +%s%N); "$@" >"$tmp/out.$$" 2>"$tmp/err.$$"; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
a=$(ms $V $opt filter sync "$tmp/A$n.json")
b=$(ms $V $opt -s filter sync "$tmp/B$n.json")
st=$(sed -n 's/^stats: sendmsg \([0-9]*\) recvmsg \([0-9]*\) requests [0-9]* ioctls \([0-9]*\).*/\1 \2 \3/p' "$tmp/err.$$")
u=$(ms $V $opt filter sync "$tmp/B$n.json")
nft flush set netdev vnic ip4s
f=$(ms $V $opt filter sync "$tmp/B$n.json")
nft delete table netdev vnic
eb=$(ms $V $opt filter sync "$tmp/B$n.json")
nft delete table netdev vnic
$V $opt filter render "$tmp/B$n.json" >"$tmp/B$n.nft"
x=$(ms nft -f "$tmp/B$n.nft")
[ "$hooks" = prefix ] && x=-
echo "$a $b $eb $u $f $x $st"
EOS
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "| N guests | hooks | sync A, empty table | sync B after A | sync B, empty table | sync B unchanged | sync B after ip4s flushed | nft -f B, empty | sendmsg/recvmsg/ioctl, B after A |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in "${@:-500 1000 2000}"; do
	python3 "$here/selftests/restart_policy.py" "$n" A >"$tmp/A$n.json"
	python3 "$here/selftests/restart_policy.py" "$n" B >"$tmp/B$n.json"
	for h in $HOOKS; do
		: >"$tmp/rows"
		for ((r = 0; r < RUNS; r++)); do one "$n" "$h" >>"$tmp/rows"; done
		cols=()
		for c in 1 2 3 4 5 6; do
			cols+=("$(cut -d' ' -f$c "$tmp/rows" | median)")
		done
		calls=$(head -1 "$tmp/rows" | cut -d' ' -f7-9 | tr ' ' /)
		echo "| $n | $h | ${cols[0]} ms | ${cols[1]} ms | ${cols[2]} ms | ${cols[3]} ms | ${cols[4]} ms | ${cols[5]} ms | $calls |"
	done
done
