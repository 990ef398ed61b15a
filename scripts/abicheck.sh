#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The ABI check (make abicheck; Documentation/abi.rst).  Usage:
#   scripts/abicheck.sh [BUILD_DIR]          check
#   scripts/abicheck.sh --update [BUILD_DIR] rewrite the baseline abi/libvnic.abi
#
# 1. The version script (lib/libvnic.map), the symbols build/libvnic.so
#    exports and the functions the headers declare agree: every function of
#    include/vnic/*.h is exported under a public node, every exported symbol
#    is in the map under the node it was exported with, and the symbols of
#    LIBVNIC_PRIVATE are exactly those lib/testing.h declares, none of them
#    public.  The static archive exports the same names; vnicctl (tools/)
#    names no private symbol, and vnic-bench (bench/, never installed,
#    built from the same tree) only the batch taps of its floor rows (nft
#    and bpf) and, for its pkt scenario, vnic_bpf_open/sync/close and
#    vnic_bpf_test_run.
# 2. libabigail: the library's ABI (public types only, private node left
#    out) compared with the committed baseline; any difference fails, so an
#    ABI change is made only by updating the baseline on purpose.
set -eu
cd "$(dirname "$0")/.."

update=0
if [ "${1:-}" = --update ]; then
	update=1
	shift
fi
O=${1:-build}
SO=$O/libvnic.so
BASE=abi/libvnic.abi
SUPPR=abi/private.suppr
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

bad() {
	echo "abicheck: $*" >&2
	fail=1
}

# "NODE SYMBOL" of every symbol the version script lists.
awk '/^[A-Za-z_][A-Za-z0-9_.]* *\{/ { node = $1 }
     /^[ \t]+[a-z_][a-z0-9_]*;/ { s = $1; sub(";", "", s); print node, s }' \
	lib/libvnic.map | sort > "$tmp/map"
# "NODE SYMBOL" of every function the library exports.
nm -D --defined-only "$SO" | awk '$3 ~ /@@/ { split($3, a, "@@"); print a[2], a[1] }' |
	sort > "$tmp/so"
# Functions a header declares, by the compiler (-aux-info), not by a regex.
decls() {
	echo "#include \"$1\"" > "$tmp/h.c"
	"$CC" -std=gnu11 -Iinclude -I. -fsyntax-only -aux-info "$tmp/aux" "$tmp/h.c"
	grep -E "^/\* (\./)?$2" "$tmp/aux" |
		sed -n 's/^[^*]*\*[^*]*\*\/ extern [^(]*[ *]\([a-z_][a-z0-9_]*\) (.*/\1/p' | sort -u
}
decls vnic/vnic.h include/vnic/ > "$tmp/public"
decls lib/testing.h lib/testing.h > "$tmp/testing"

if ! diff -u "$tmp/map" "$tmp/so" > "$tmp/d"; then
	bad "version script (-) and $SO's exports (+) differ:"
	cat "$tmp/d" >&2
fi
grep -v '^LIBVNIC_PRIVATE ' "$tmp/map" | cut -d' ' -f2 | sort > "$tmp/mappub"
if ! diff -u "$tmp/mappub" "$tmp/public" > "$tmp/d"; then
	bad "public nodes of the version script (-) and functions of include/vnic/*.h (+) differ:"
	cat "$tmp/d" >&2
fi
grep '^LIBVNIC_PRIVATE ' "$tmp/map" | cut -d' ' -f2 | sort > "$tmp/private"
if ! diff -u "$tmp/private" "$tmp/testing" > "$tmp/d"; then
	bad "LIBVNIC_PRIVATE (-) and lib/testing.h (+) differ:"
	cat "$tmp/d" >&2
fi
for s in $(comm -12 "$tmp/private" "$tmp/public"); do
	bad "private symbol $s is declared in a public header"
done
nm -g --defined-only "$O/libvnic.a" | awk 'NF == 3 { print $3 }' | sort > "$tmp/ar"
cut -d' ' -f2 "$tmp/map" | sort > "$tmp/all"
if ! diff -u "$tmp/all" "$tmp/ar" > "$tmp/d"; then
	bad "version script (-) and $O/libvnic.a's globals (+) differ:"
	cat "$tmp/d" >&2
fi
# The programs link the static library, which holds every symbol: their
# sources are what must not name a private one.
for s in $(cat "$tmp/private") lib/testing.h; do
	case $s in vnic_filter_set_batch_tap|lib/testing.h|vnic_bpf_open|vnic_bpf_close|\
		vnic_bpf_sync|vnic_bpf_test_run|vnic_filter_set_bpf_tap) where=tools ;;
	*) where="tools bench" ;; esac
	for f in $(grep -rlF -e "$s" $where || true); do
		bad "$f uses $s, a test hook of LIBVNIC_PRIVATE"
	done
done

if [ $update = 1 ]; then
	abidw --headers-dir include/vnic --suppressions "$SUPPR" --drop-private-types \
		--type-id-style hash \
		--no-corpus-path --no-comp-dir-path "$SO" > "$BASE"
	echo "abicheck: wrote $BASE; review its diff and commit it with the change"
	exit $fail
fi
# abidiff exits with a bit field: 4 an ABI change, 8 an incompatible one;
# either fails here (an addition too must update the baseline).
ret=0
abidiff --headers-dir2 include/vnic --suppressions "$SUPPR" --drop-private-types \
	"$BASE" "$SO" > "$tmp/abidiff" || ret=$?
if [ $ret != 0 ]; then
	bad "abidiff $BASE $SO: exit $ret"
	cat "$tmp/abidiff" >&2
	echo "abicheck: a deliberate ABI change: make abi-update and commit abi/libvnic.abi" >&2
fi
[ $fail = 0 ] && echo "abicheck: version script, exports, headers and abi/libvnic.abi agree"
exit $fail
