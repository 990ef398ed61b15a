#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnicctl's keeper of the last nfnetlink close (tools/linger.c), as TAP:
# apply, sync and remove leave that close (which waits for an RCU grace
# period after a commit that deleted anything) to a grandchild that holds
# only the nfnetlink sockets; VNICCTL_LINGER=0 turns it off.  Each case
# runs in its own network namespace (unshare -n) with two veth guests.
# No timed assertion: what is checked is which process does what (strace
# -f), that no keeper is left, and that the caller's fds are not held.
#
#   selftests/vnicctl_linger_test.sh [CASE...]   (root; VNICCTL= overrides the binary)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

mac_of() { ip -j link show "$1" | jq -r '.[0].address'; }

setup_case() {
	ip link set lo up &&
	vc guest add vm1 --kind veth --name vm1h0 --peer-name vm1p0 >/dev/null &&
	vc guest add vm2 --kind veth --name vm2h0 --peer-name vm2p0 >/dev/null
}

# write_policy FILE ADDR: vm1 and vm2, vm2 with the IPv4 address ADDR (a
# new ADDR makes a changed sync: it deletes vm2's old element).
write_policy() {
	jq -n --arg m1 "$(mac_of vm1p0)" --arg m2 "$(mac_of vm2p0)" \
	      --arg a "$2" '
	{guests: [
	  {name: "vm1", nics: [{ifname: "vm1h0", kind: "veth", mac: $m1,
				ipv4: ["192.0.2.10"]}]},
	  {name: "vm2", switches: ["mac-spoof", "ip-spoof"],
	   nics: [{ifname: "vm2h0", kind: "veth", mac: $m2, ipv4: [$a]}]}]}' >"$1"
}

# The vnicctl processes of this namespace (a keeper keeps its parent's).
keepers() {
	local ns p
	ns=$(readlink /proc/self/ns/net)
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = vnicctl ] &&
		[ "$(readlink "$p/ns/net" 2>/dev/null)" = "$ns" ] &&
			echo "${p#/proc/}"
	done
	return 0
}

# no_keeper_left: within ~2 s, no vnicctl is left in this namespace.
no_keeper_left() {
	local i
	for i in $(seq 40); do
		[ -z "$(keepers)" ] && return 0
		sleep 0.05
	done
	fail "vnicctl processes left: $(keepers)"
}

# traced LOG CMD...: CMD under strace -ff (process creation, dup2, close,
# and the calls in $TRACE_MORE), one file LOG.PID per process; CMD's
# stdout in $TMP/out.
traced() {
	local log=$1
	shift
	rm -f "$log".*
	strace -ff -qq -o "$log" \
		-e trace=clone,clone3,fork,vfork,dup2,dup3,close${TRACE_MORE:+,$TRACE_MORE} \
		"$@" >"$TMP/out" 2>"$TMP/err"
}

# The pids made ("clone(...) = PID") in LOG.*: made LOG [PID].
made() {
	local f
	for f in "$1".${2:-*}; do
		[ -e "$f" ] && sed -nE 's/^(clone|clone3|fork|vfork)\(.*\) += ([0-9]+)$/\2/p' "$f"
	done
	return 0
}

# The keeper: the pid made by a pid made (a grandchild).
keeper_of() {
	local p
	for p in $(made "$1"); do
		made "$1" "$p"
	done
}

# ------------------------------------------------------------------ cases

# A changed sync forks the keeper as a grandchild; the keeper puts
# /dev/null on 0-2 and closes every other fd of the caller (fd 9 here);
# the captured output is the command's; no keeper is left.
case_changed_sync_keeper() {
	local pids keeper out
	write_policy "$TMP/a.json" 192.0.2.20 &&
	write_policy "$TMP/b.json" 192.0.2.21 || return
	run 0 vc filter sync "$TMP/a.json" || return
	traced "$TMP/st" "$VNICCTL" -j filter sync "$TMP/b.json" 9>"$TMP/extra" ||
		fail "sync B: $(cat "$TMP/err")" || return
	jq -e '.changed == 1 and .writes == true' "$TMP/out" >/dev/null ||
		fail "sync B: $(cat "$TMP/out")" || return
	pids=($(made "$TMP/st"))
	keeper=$(keeper_of "$TMP/st")
	[ "${#pids[@]}" = 2 ] && [ -n "$keeper" ] ||
		fail "not a child and a keeper: ${pids[*]}" || return
	grep -Eq "^dup2\([0-9]+, 1\) += 1" "$TMP/st.$keeper" &&
	grep -Eq "^dup2\([0-9]+, 2\) += 2" "$TMP/st.$keeper" ||
		fail "the keeper kept stdout or stderr: $(cat "$TMP/st.$keeper")" || return
	grep -Eq "^close\(9\) += 0" "$TMP/st.$keeper" ||
		fail "the keeper kept the caller's fd 9" || return
	# $(...) returns: the keeper holds no end of its pipe.
	out=$(timeout 10 "$VNICCTL" -j filter sync "$TMP/a.json") ||
		fail "sync A in \$(...): exit $?" || return
	jq -e '.changed == 1' <<<"$out" >/dev/null ||
		fail "sync A in \$(...): $out" || return
	no_keeper_left
}

# Back to back, as a script does: the keeper holds no claim, so the next
# vnicctl does not find the table owned; a removal lingers the same way.
case_back_to_back() {
	local i
	write_policy "$TMP/a.json" 192.0.2.20 &&
	write_policy "$TMP/b.json" 192.0.2.21 || return
	for i in 1 2 3; do
		run 0 vc filter sync "$TMP/a.json" || return
		run 0 vc filter sync "$TMP/b.json" || return
	done
	run 0 vc filter apply "$TMP/a.json" || return
	traced "$TMP/st" "$VNICCTL" filter remove vm1 || fail "remove: $(cat "$TMP/err")" || return
	[ -n "$(keeper_of "$TMP/st")" ] || fail "remove made no keeper" || return
	run 0 vc -j filter show || return
	jq -e '[.[].guest] == ["vm2"]' "$TMP/out" >/dev/null ||
		fail "show: $(cat "$TMP/out")" || return
	no_keeper_left
}

# The exit status is the command's: a remove of an unknown guest fails (1),
# with a keeper as without; a bad policy file is a usage error (2).
case_exit_status() {
	local mode rc
	write_policy "$TMP/a.json" 192.0.2.20 || return
	run 0 vc filter sync "$TMP/a.json" || return
	echo '{"guests": 1}' >"$TMP/bad.json"
	for mode in 1 0; do
		VNICCTL_LINGER=$mode "$VNICCTL" filter remove vm1 nosuch \
			>"$TMP/out" 2>"$TMP/err"
		rc=$?
		expect_eq "$rc" 1 "remove nosuch, VNICCTL_LINGER=$mode" || return
		grep -q '^vnicctl: ' "$TMP/err" || fail "no message" || return
		VNICCTL_LINGER=$mode "$VNICCTL" filter sync "$TMP/bad.json" \
			>"$TMP/out" 2>"$TMP/err"
		rc=$?
		expect_eq "$rc" 2 "sync bad.json, VNICCTL_LINGER=$mode" || return
	done
	no_keeper_left
}

# VNICCTL_LINGER=0: no child, the nfnetlink close is vnicctl's own (as
# before); reading commands fork nothing either way.
case_linger_off() {
	write_policy "$TMP/a.json" 192.0.2.20 &&
	write_policy "$TMP/b.json" 192.0.2.21 || return
	run 0 vc filter sync "$TMP/a.json" || return
	VNICCTL_LINGER=0 traced "$TMP/st" "$VNICCTL" filter sync "$TMP/b.json" ||
		fail "sync B: $(cat "$TMP/err")" || return
	grep -q '^1 added\|changed' "$TMP/out" || fail "sync B: $(cat "$TMP/out")" || return
	[ -z "$(made "$TMP/st")" ] ||
		fail "VNICCTL_LINGER=0 forked: $(made "$TMP/st")" || return
	traced "$TMP/st" "$VNICCTL" filter show || return
	[ -z "$(made "$TMP/st")" ] || fail "show forked" || return
	traced "$TMP/st" "$VNICCTL" filter diff "$TMP/a.json"
	[ -z "$(made "$TMP/st")" ] || fail "diff forked" || return
	no_keeper_left
}

# The keeper's grace period starts at the handle's close, not at vnicctl's
# exit: it reads the byte the close writes on its own pipe, waits a grace
# period (membarrier GLOBAL), and only then reads its end of file.  (Where
# membarrier is refused, e.g. nohz_full, the call fails and the order is
# the same.)
case_keeper_grace_at_close() {
	local keeper
	write_policy "$TMP/a.json" 192.0.2.20 &&
	write_policy "$TMP/b.json" 192.0.2.21 || return
	run 0 vc filter sync "$TMP/a.json" || return
	TRACE_MORE=read,membarrier traced "$TMP/st" "$VNICCTL" filter sync "$TMP/b.json" ||
		fail "sync B: $(cat "$TMP/err")" || return
	keeper=$(keeper_of "$TMP/st")
	[ -n "$keeper" ] || fail "no keeper" || return
	grep -E '^(read\([0-9]+, "\\0", 1\) += 1|membarrier\(|read\([0-9]+, "", 1\) += 0)' \
		"$TMP/st.$keeper" | sed -E 's/^(read|membarrier).* = ([0-9-]+).*$/\1 \2/' \
		>"$TMP/order"
	[ "$(tr '\n' ' ' <"$TMP/order")" = "read 1 membarrier 0 read 0 " ] ||
	[ "$(tr '\n' ' ' <"$TMP/order")" = "read 1 membarrier -1 read 0 " ] ||
		fail "keeper: byte, grace period, end of file expected: $(cat "$TMP/order")" || return
	no_keeper_left
}

# A keeper that is not there (its fork failed: a pids limit; or it was
# killed) costs only its grace period: the close still succeeds.  The
# handle's close writes its keeper a byte; with no reader left, that write
# must not raise SIGPIPE (vnicctl would die with status 141 after its
# output).  The shim fails fork() in a child of a fork only: the child
# between is made, the keeper is not.
case_keeper_fork_fails() {
	local cc=${CC:-cc}
	command -v "$cc" >/dev/null || { echo "no C compiler for the fork shim"; exit 77; }
	cat >"$TMP/failfork.c" <<'SHIM'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>
static int in_child;
pid_t fork(void)
{
	pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	pid_t p;

	if (in_child) {
		errno = EAGAIN;
		return -1;
	}
	p = real();
	if (p == 0)
		in_child = 1;
	return p;
}
SHIM
	"$cc" -shared -fPIC -o "$TMP/failfork.so" "$TMP/failfork.c" -ldl ||
		fail "cannot build the fork shim" || return
	write_policy "$TMP/a.json" 192.0.2.20 || return
	LD_PRELOAD=$TMP/failfork.so "$VNICCTL" filter sync "$TMP/a.json" \
		>"$TMP/out" 2>"$TMP/err"
	local rc=$?
	[ "$rc" = 0 ] || fail "sync with no keeper: exit $rc: $(cat "$TMP/err")" || return
	nft list table netdev vnic >/dev/null || fail "no table" || return
	no_keeper_left
}

CASES=(changed_sync_keeper back_to_back exit_status linger_off keeper_grace_at_close
       keeper_fork_fails)

tap_main ip jq nft unshare strace timeout -- "$@"
