#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Each layer's files call one another one way only: within lib/,
# allocator/, policy/, nft/, bpf/ and (once built) bench/, no two files
# import each other and no chain of imports comes back to where it started.  An import is a symbol
# one object leaves undefined and another of the same directory defines
# (nm, on the objects under the build directory $1 of today's sources).
set -eu
O=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for dir in lib allocator policy nft bpf bench; do
	# vnic-bench is built by make bench or make check, not by make lib.
	[ "$dir" != bench ] || [ -d "$O/bench" ] || continue
	objs=
	for c in "$dir"/*.c; do
		o="$O/${c%.c}.o"
		[ -f "$o" ] || { echo "importcheck: $o missing: build first" >&2; exit 2; }
		objs="$objs $o"
		b=$(basename "$c" .c)
		nm --defined-only "$o" | awk '$2 ~ /^[TDBRV]$/ { print $3 }' | sort -u > "$tmp/$b.def"
		nm --undefined-only "$o" | awk '{ print $NF }' | sort -u > "$tmp/$b.und"
	done
	: > "$tmp/edges"
	for a in $objs; do
		ba=$(basename "$a" .o)
		for b in $objs; do
			bb=$(basename "$b" .o)
			[ "$ba" != "$bb" ] || continue
			use=$(comm -12 "$tmp/$ba.und" "$tmp/$bb.def" | head -3 | tr '\n' ' ')
			[ -n "$use" ] || continue
			echo "$ba $bb" >> "$tmp/edges"
			echo "$ba $bb $use" >> "$tmp/uses"
		done
	done
	# Pairs first: the plainest message.
	while read -r a b; do
		if [ "$a" \< "$b" ] && grep -qx "$b $a" "$tmp/edges"; then
			echo "$dir/$a.c and $dir/$b.c import each other:" \
			     "$(grep "^$a $b " "$tmp/uses" | cut -d' ' -f3-);" \
			     "$(grep "^$b $a " "$tmp/uses" | cut -d' ' -f3-)" >&2
			status=1
		fi
	done < "$tmp/edges"
	# Longer circles: tsort names the files of a loop.
	if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/loop"; then
		echo "$dir/: files import each other in a circle:" \
		     "$(grep -v 'input contains a loop' "$tmp/loop" | sed 's/^tsort: //' | tr '\n' ' ')" >&2
		status=1
	fi
	rm -f "$tmp"/*.def "$tmp"/*.und "$tmp/uses"
done
[ $status -ne 0 ] || echo "imports: each layer's files call one another one way only"
exit $status
