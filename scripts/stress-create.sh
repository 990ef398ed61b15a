#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Concurrent creators in one busy namespace, as an operator would run them:
# REPS times, CREATORS `vnicctl guest add gN --kind KIND --lower L --nics NICS`
# start at once in a namespace that already holds BACKGROUND macvtaps on L,
# next to an outside process (ip(8)) that adds and deletes macvtaps of the
# same name range all the while.  After each repetition every guest must
# have its NICS NICs, all names distinct, and `vnicctl gc` must leave none.
# Prints each failure and a summary; exits 1 if any repetition failed.
#
#   scripts/stress-create.sh [REPS] [CREATORS] [NICS]
#   env: VNICCTL (default build/vnicctl), KIND (macvtap), BACKGROUND (100),
#        CHURN (1: run the outside process, 0: not), NAMING (auto),
#        VERBOSE (set: a line per repetition)
#
# Runs in a private network namespace of its own (unshare -n, root).
set -u

REPS=${1:-200}
CREATORS=${2:-8}
NICS=${3:-50}
KIND=${KIND:-macvtap}
BACKGROUND=${BACKGROUND:-100}
CHURN=${CHURN:-1}
NAMING=${NAMING:-auto}
VNICCTL=$(readlink -f "${VNICCTL:-build/vnicctl}")

if [ -z "${STRESS_IN_NETNS:-}" ]; then
	[ -x "$VNICCTL" ] || { echo "no $VNICCTL: run make first" >&2; exit 2; }
	STRESS_IN_NETNS=1 VNICCTL="$VNICCTL" exec unshare -n "$0" "$@"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ip link set lo up
ip link add stl0 type veth peer name stl0p || exit 1
ip link set stl0 up
ip link set stl0p up
i=0
while [ $i -lt "$BACKGROUND" ]; do
	echo "link add link stl0 name ${KIND}$i group 78 type macvtap"
	i=$((i + 1))
done | ip -batch - || exit 1

churn() {
	range=$((BACKGROUND + CREATORS * NICS + 40))
	while [ ! -e "$tmp/stop" ]; do
		for j in 1 2 3 4 5 6 7 8; do
			ip link add link stl0 name "${KIND}$(shuf -i 0-$range -n 1)" \
				group 77 type macvtap 2>/dev/null
		done
		ip link del group 77 2>/dev/null
	done
}

fails=0
start=$(date +%s)
rep=1
while [ $rep -le "$REPS" ]; do
	rm -f "$tmp/stop"
	[ "$CHURN" = 1 ] && { churn & churn_pid=$!; }
	k=0
	while [ $k -lt "$CREATORS" ]; do
		"$VNICCTL" -o stress guest add "g$k" --kind "$KIND" --lower stl0 \
			--nics "$NICS" --naming "$NAMING" \
			>"$tmp/out$k" 2>"$tmp/err$k" &
		eval "pid$k=\$!"
		k=$((k + 1))
	done
	k=0
	bad=0
	while [ $k -lt "$CREATORS" ]; do
		eval "wait \$pid$k" || {
			bad=1
			echo "rep $rep: g$k failed: $(cat "$tmp/err$k")"
		}
		k=$((k + 1))
	done
	touch "$tmp/stop"
	[ "$CHURN" = 1 ] && wait "$churn_pid"
	ip link del group 77 2>/dev/null
	# Every guest has its NICs, under names no one else has.
	n=$(ip -o link show | grep -c "alias vnic:stress:" || true)
	u=$(ip -d -o link show | sed -n 's/^[0-9]*: \([^@:]*\).*alias vnic:stress:.*/\1/p' |
		sort -u | wc -l)
	if [ "$bad" = 0 ] && { [ "$n" != $((CREATORS * NICS)) ] || [ "$u" != "$n" ]; }; then
		bad=1
		echo "rep $rep: $n tagged NICs, $u distinct names, want $((CREATORS * NICS))"
	fi
	"$VNICCTL" -o stress gc >/dev/null 2>"$tmp/gc" ||
		{ bad=1; echo "rep $rep: gc failed: $(cat "$tmp/gc")"; }
	left=$(ip -o link show | grep -c "alias vnic:stress:" || true)
	[ "$left" = 0 ] || { bad=1; echo "rep $rep: $left NICs left after gc"; }
	[ -n "${VERBOSE:-}" ] && echo "rep $rep: $n tagged NICs, $u distinct names, $left left"
	fails=$((fails + bad))
	rep=$((rep + 1))
done
end=$(date +%s)
ip link del group 78
echo "$fails failures in $REPS reps of $CREATORS concurrent creators x $NICS $KIND" \
     "(background $BACKGROUND, outside churn $CHURN), $((end - start)) s"
[ "$fails" = 0 ]
