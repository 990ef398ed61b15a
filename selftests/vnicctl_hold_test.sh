#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vnicctl filter hold, as TAP.  Each case runs in its own network namespace
# (unshare -n) holding two guests, each a veth whose guest end sits in a
# namespace of its own (a `sleep` made by unshare -n, entered with nsenter):
#
#   vm1: vm1h0 192.0.2.1/24     <->  vm1p0 192.0.2.10 (+ 192.0.2.99)
#   vm2: vm2h0 198.51.100.1/24  <->  vm2p0 198.51.100.20 (+ 198.51.100.99)
#
# The policy gives each guest clean traffic and its first address; the
# second (.99) is the spoof.  Real frames: a UDP datagram sent from the
# guest's namespace from a given source address must reach a socket on the
# host end's address (legit) or not (spoofed; then the guest's drop counter
# must have risen).  A spoof is only judged after the legit datagram of the
# same guest arrived.  What hold did is read with nft -j, polled for up to
# POLL_S seconds (how long a change took is logged).  One bound on time is
# asserted, the one hold promises: a changed policy file is applied within
# CHANGE_S (1) second, which a hold that polled the file, rather than being
# woken by inotify, would not meet; hold's own work for it is milliseconds.
#
#   selftests/vnicctl_hold_test.sh [CASE...]   (root; VERBOSE=1 shows the
#   measured delays)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

POLL_S=${POLL_S:-5}
CHANGE_S=1
GPID=()		# the guests' namespaces (index 1, 2)
HOLD=		# the running hold's pid
HOST=(- 192.0.2.1 198.51.100.1)
LEGIT=(- 192.0.2.10 198.51.100.20)
SPOOF=(- 192.0.2.99 198.51.100.99)

cleanup() {
	local p
	[ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null && wait "$HOLD" 2>/dev/null
	for p in "${GPID[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}

# A namespace for guest $1 and its veth; IPv6 off everywhere (no autoconf
# chatter in the drop counters).
make_guest() {
	local g=$1 pid
	netns_child pid || { GPID[g]=$pid; return 1; }
	GPID[g]=$pid
	ip link add "vm${g}h0" type veth peer name "vm${g}p0" &&
	ip link set "vm${g}p0" netns "$pid" &&
	ip addr add "${HOST[g]}/24" dev "vm${g}h0" &&
	ip link set "vm${g}h0" up &&
	nsenter -t "$pid" -n sh -c "
		sysctl -qw net.ipv6.conf.all.disable_ipv6=1 &&
		ip link set lo up &&
		ip addr add ${LEGIT[g]}/24 dev vm${g}p0 &&
		ip addr add ${SPOOF[g]}/24 dev vm${g}p0 &&
		ip link set vm${g}p0 up"
}

setup_case() {
	trap cleanup EXIT
	sysctl -qw net.ipv6.conf.all.disable_ipv6=1 &&
	ip link set lo up && make_guest 1 && make_guest 2 || return
	cat >"$TMP/probe.py" <<-'EOF'
	# probe.py PID SRC DST: 0 if a datagram sent in PID's namespace from
	# SRC reaches DST here (a fresh marker, 1 s to arrive), else 1.
	import os, socket, subprocess, sys
	pid, src, dst = sys.argv[1:4]
	r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	r.bind((dst, 0))
	r.settimeout(1.0)
	marker = os.urandom(8).hex()
	send = ("import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
		"s.bind((sys.argv[1], 0)); s.sendto(sys.argv[3].encode(), (sys.argv[2], int(sys.argv[4])))")
	subprocess.run(["nsenter", "-t", pid, "-n", sys.executable, "-c", send, src, dst,
			marker, str(r.getsockname()[1])], check=True)
	try:
	    while True:
	        data, addr = r.recvfrom(256)
	        if data == marker.encode() and addr[0] == src:
	            sys.exit(0)
	except socket.timeout:
	    sys.exit(1)
	EOF
}

mac_g() { nsenter -t "${GPID[$1]}" -n ip -j link show "vm$1p0" | jq -r '.[0].address'; }

# write_policy FILE [VM2-ADDRESS [EXTRA-GUEST-JSON]]: both guests, clean
# traffic, each with its legit address (vm2's may be changed).
write_policy() {
	local out=$1 a2=${2:-${LEGIT[2]}} extra=${3:-null}
	jq -n --arg m1 "$(mac_g 1)" --arg m2 "$(mac_g 2)" --arg a1 "${LEGIT[1]}" \
	      --arg a2 "$a2" --argjson extra "$extra" '
	{guests: ([
	  {name: "vm1", nics: [{ifname: "vm1h0", kind: "veth", mac: $m1, ipv4: [$a1]}]},
	  {name: "vm2", nics: [{ifname: "vm2h0", kind: "veth", mac: $m2, ipv4: [$a2]}]}]
	  + (if $extra then [$extra] else [] end))}' >"$out"
}

# Replace FILE as editors do: a new file renamed over it.
replace_policy() { write_policy "$TMP/new.json" "${@:2}" && mv "$TMP/new.json" "$1"; }

counter() { vc -j filter show "vm$1" | jq '.packets'; }

# delivered G SRC: a datagram from guest G with source SRC arrives.
delivered() { python3 "$TMP/probe.py" "${GPID[$1]}" "$2" "${HOST[$1]}"; }

# legit_ok G [ADDR]: G's datagram from its address arrives.
legit_ok() {
	delivered "$1" "${2:-${LEGIT[$1]}}" ||
		fail "vm$1: legit datagram from ${2:-${LEGIT[$1]}} not delivered"
}

# spoof_dropped G [ADDR]: after a legit one arrived, G's datagram from
# another address does not, and G's drop counter rises.
spoof_dropped() {
	local before after
	before=$(counter "$1") || fail "no counter for vm$1" || return
	! delivered "$1" "${2:-${SPOOF[$1]}}" ||
		fail "vm$1: spoofed datagram from ${2:-${SPOOF[$1]}} delivered" || return
	after=$(counter "$1")
	[ "$after" -gt "$before" ] || fail "vm$1: drop counter $before -> $after"
}

# Every guest's filter works: legit delivered, spoofed dropped.
filters_work() {
	local g
	for g in 1 2; do
		legit_ok "$g" && spoof_dropped "$g" || { log "($*)"; return 1; }
	done
}

# wait_for DESC CMD...: poll CMD every 50 ms for up to POLL_S seconds
# (LIMIT_S when set); logs how long it took.  By the clock, not by a count
# of polls: each poll runs nft and jq, which take longer than the sleep.
wait_for() {
	local desc=$1 limit=${LIMIT_S:-$POLL_S} t0 ms
	shift
	t0=$(date +%s%N)
	while :; do
		if "$@"; then
			log "# $desc after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
			return 0
		fi
		ms=$(( ($(date +%s%N) - t0) / 1000000 ))
		[ "$ms" -ge $((limit * 1000)) ] && break
		sleep 0.05
	done
	fail "$desc: not within ${limit} s"
}

# Not grep -q: its early exit would fail jq with SIGPIPE (pipefail).
ruleset_has() { nft_json | jq -r '.. | strings' | grep -xF -- "$1" >/dev/null; }
lines() { [ "$(wc -l <"$1")" -ge "$2" ]; }
# The text listing: nft 1.0.6's JSON of the table's flags is unreliable
# (cli_lib.sh, nft_json); an owned table's first line names its owner.
owned() {
	local l
	l=$(nft list table netdev vnic) || return
	case ${l%%$'\n'*} in *'# progname '*) return 0 ;; esac
	return 1
}

# start_hold [ARGS...]: hold of $TMP/p.json runs and has synced once.
start_hold() {
	"$VNICCTL" "$@" filter hold "$TMP/p.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	HOLD=$!
	wait_for "first sync" lines "$TMP/hold.out" 1 || return
	kill -0 "$HOLD" || fail "hold exited: $(cat "$TMP/hold.err")"
}

# stop_hold SIGNAL: hold exits 0 on it.
stop_hold() {
	local rc
	kill -"$1" "$HOLD" && wait "$HOLD"
	rc=$?
	HOLD=
	expect_eq "$rc" 0 "hold's exit status on SIG$1 ($(cat "$TMP/hold.err"))"
}

# notify_listen SOCKET OUT: a datagram socket as systemd's NOTIFY_SOCKET
# ("@NAME": abstract), each message received appended to OUT as a line;
# its pid in NOTIFY_PID, killed by cleanup.  Returns once it is bound.
notify_listen() {
	python3 -c '
import os, socket, sys
path, out = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + path[1:] if path[0] == "@" else path)
open(out + ".bound", "w").close()
while True:
	with open(out, "a") as f:
		f.write(s.recv(4096).decode() + "\n")
' "$1" "$2" &
	NOTIFY_PID=$!
	GPID+=("$NOTIFY_PID")
	wait_for "notify socket bound" test -e "$2.bound"
}

# notify_send SOCKET MESSAGE: a datagram to it, as a process would.
notify_send() {
	python3 -c '
import socket, sys
path, msg = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(msg.encode(), "\0" + path[1:] if path[0] == "@" else path)
' "$1" "$2"
}

# ------------------------------------------------------------------ cases

# While hold runs, other processes' flush and delete leave every filter
# working: the table is owned, a flush skips it, a delete is refused.
case_tamper() {
	write_policy "$TMP/p.json" && start_hold || return
	owned || fail "table not owned while hold runs" || return
	grep -q '^2 added' "$TMP/hold.out" || fail "hold: $(cat "$TMP/hold.out")" || return
	filters_work before || return
	nft flush ruleset 2>"$TMP/nft.err"
	log "# nft flush ruleset: exit $? $(cat "$TMP/nft.err")"
	filters_work after flush ruleset || return
	! nft delete table netdev vnic 2>/dev/null ||
		fail "nft delete table succeeded next to hold" || return
	! nft flush table netdev vnic 2>/dev/null ||
		fail "nft flush table succeeded next to hold" || return
	filters_work after delete table || return
	owned || fail "table no longer owned" || return
	stop_hold TERM
}

# A changed file is applied within CHANGE_S: replaced by rename, then
# written in place.  vm2's allowed address moves to .99 and back; frames
# follow.
case_file_change() {
	write_policy "$TMP/p.json" && start_hold || return
	filters_work before || return
	replace_policy "$TMP/p.json" "${SPOOF[2]}" || return
	LIMIT_S=$CHANGE_S wait_for "renamed file applied" ruleset_has "${SPOOF[2]}" ||
		return
	! ruleset_has "${LEGIT[2]}" || fail "old address still installed" || return
	legit_ok 2 "${SPOOF[2]}" && spoof_dropped 2 "${LEGIT[2]}" || return
	legit_ok 1 && spoof_dropped 1 || return
	write_policy "$TMP/p.json" || return	# in place, back
	LIMIT_S=$CHANGE_S wait_for "file written in place applied" \
		ruleset_has "${LEGIT[2]}" || return
	! ruleset_has "${SPOOF[2]}" || fail "changed address still installed" || return
	filters_work after the change back || return
	grep -c '^0 added, 1 changed, 0 removed, 1 unchanged' "$TMP/hold.out" |
		grep -qx 2 || fail "hold's output: $(cat "$TMP/hold.out")" || return
	# A file of the same directory is not ours: nothing happens.
	write_policy "$TMP/other.json" "${SPOOF[2]}" && sleep 0.3 &&
	expect_eq "$(wc -l <"$TMP/hold.out")" 3 "syncs after another file" || return
	stop_hold INT
}

# FILE a symbolic link, laid out as a Kubernetes ConfigMap mount: FILE ->
# ..data/FILE, ..data -> ..v1.  An edit of the target where it lives (an
# editor's rename there) is applied, and so is an update that swaps
# ..data by rename (FILE's own entry never changes); after the swap the
# new target is watched.  Without the target's watch neither was seen.
case_symlink_file() {
	local cm=$TMP/cm
	mkdir -p "$cm/..v1" "$cm/..v2" && write_policy "$cm/..v1/p.json" &&
	ln -s ..v1 "$cm/..data" && ln -s ..data/p.json "$cm/p.json" || return
	"$VNICCTL" filter hold "$cm/p.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	HOLD=$!
	wait_for "first sync" lines "$TMP/hold.out" 1 || return
	replace_policy "$cm/..v1/p.json" "${SPOOF[2]}" || return
	wait_for "target replaced, applied" ruleset_has "${SPOOF[2]}" || return
	write_policy "$cm/..v2/p.json" && ln -s ..v2 "$cm/..data_tmp" &&
	mv -T "$cm/..data_tmp" "$cm/..data" && rm -r "$cm/..v1" || return
	wait_for "..data swap applied" ruleset_has "${LEGIT[2]}" || return
	! ruleset_has "${SPOOF[2]}" || fail "old address still installed" || return
	replace_policy "$cm/..v2/p.json" "${SPOOF[2]}" || return
	wait_for "new target replaced, applied" ruleset_has "${SPOOF[2]}" || return
	legit_ok 2 "${SPOOF[2]}" && spoof_dropped 2 "${LEGIT[2]}" || return
	kill -0 "$HOLD" || fail "hold exited: $(cat "$TMP/hold.err")" || return
	stop_hold TERM
}

# SIGHUP re-syncs: a file naming a NIC that does not exist yet is refused
# (the rules stay); once the NIC exists, SIGHUP applies it.
case_sighup() {
	local m3
	write_policy "$TMP/p.json" && start_hold || return
	ip link add vm3h0x type veth peer name vm3p0 || return
	m3=$(ip -j link show vm3p0 | jq -r '.[0].address')
	nft_json >"$TMP/before"
	replace_policy "$TMP/p.json" "${LEGIT[2]}" "$(jq -nc --arg m "$m3" \
		'{name: "vm3", nics: [{ifname: "vm3h0", kind: "veth", mac: $m}]}')" || return
	wait_for "refusal reported" grep -q 'not applied; the rules synced before stay' \
		"$TMP/hold.err" || return
	grep -q 'vm3h0' "$TMP/hold.err" || fail "refusal: $(cat "$TMP/hold.err")" || return
	nft_json | cmp -s - "$TMP/before" ||
		fail "a refused sync changed the ruleset" || return
	kill -0 "$HOLD" || fail "hold exited" || return
	filters_work after the refusal || return
	ip link set vm3h0x name vm3h0 || return
	kill -HUP "$HOLD" || return
	wait_for "SIGHUP applied" ruleset_has vm3h0 || return
	grep -q '^1 added, 0 changed, 0 removed, 2 unchanged' "$TMP/hold.out" ||
		fail "hold's output: $(cat "$TMP/hold.out")" || return
	# SIGHUP with nothing changed writes nothing.
	kill -HUP "$HOLD" && wait_for "SIGHUP again" lines "$TMP/hold.out" 3 || return
	tail -1 "$TMP/hold.out" | grep -q 'nothing written' ||
		fail "unchanged re-sync: $(tail -1 "$TMP/hold.out")" || return
	filters_work after SIGHUP && stop_hold TERM
}

# hup_pending PID: SIGHUP waits, blocked, in PID's shared pending set.
hup_pending() {
	grep -q '^ShdPnd:.*[13579bdf]$' "/proc/$1/status" 2>/dev/null
}

# A SIGHUP (systemctl reload) that comes while hold still loads FILE at
# start is a re-sync after the first sync, never the end of hold: systemd
# counts a death by SIGHUP as a clean exit and would not restart it.  The
# load is held open by FILE being a FIFO: a `sleep` holding its write end
# shows that hold has opened it (and waits in the read), the policy goes
# in only after the signal, and a regular file is renamed over the FIFO
# first, for the re-syncs that follow.
case_sighup_at_start() {
	local w rc
	mkfifo "$TMP/p.json" && write_policy "$TMP/new.json" || return
	"$VNICCTL" filter hold "$TMP/p.json" >"$TMP/hold.out" 2>"$TMP/hold.err" &
	HOLD=$!
	sleep 600 >"$TMP/p.json" &
	w=$!
	GPID+=("$w")	# killed by cleanup
	wait_for "hold reading FILE" \
		eval '[ "$(readlink /proc/$w/fd/1)" = "$TMP/p.json" ]' || return
	exec 3>"$TMP/p.json" || return
	kill -HUP "$HOLD" || return
	wait_for "SIGHUP pending or hold gone" \
		eval 'hup_pending $HOLD || ! kill -0 $HOLD 2>/dev/null' || return
	if ! kill -0 "$HOLD" 2>/dev/null; then
		wait "$HOLD"
		rc=$?
		HOLD=
		fail "hold ended by the SIGHUP at start (exit status $rc)"
		return
	fi
	cp "$TMP/new.json" "$TMP/p2.json" && mv "$TMP/p2.json" "$TMP/p.json" &&
	cat "$TMP/new.json" >&3 && exec 3>&- && kill "$w" || return
	wait_for "first sync and the SIGHUP's" lines "$TMP/hold.out" 2 || return
	grep -q '^2 added' "$TMP/hold.out" || fail "hold: $(cat "$TMP/hold.out")" || return
	owned || fail "table not owned" || return
	filters_work after the SIGHUP at start && stop_hold TERM
}

# SIGTERM and SIGINT: exit 0, the rules stay (persisted, no longer owned),
# the next vnicctl can take the table over.
case_sigterm() {
	local sig
	write_policy "$TMP/p.json" || return
	for sig in TERM INT; do
		start_hold && owned || fail "not owned" || return
		nft_json netdev vnic | jq -S . \
			>"$TMP/held"
		stop_hold "$sig" || return
		! owned || fail "still owned after SIG$sig" || return
		nft_json netdev vnic | jq -S . |
			cmp -s - "$TMP/held" || fail "SIG$sig changed the table" || return
		filters_work after SIG$sig || return
	done
	run 0 vc filter sync "$TMP/p.json" || return
	grep -q 'nothing written' "$TMP/out" || fail "sync after hold: $(cat "$TMP/out")"
}

# A file that becomes invalid (JSON syntax, a bad value): the error on
# stderr, hold keeps running, the ruleset stays byte-identical and the
# filters work; a valid file afterwards is applied.
case_invalid_file() {
	write_policy "$TMP/p.json" && start_hold || return
	nft_json >"$TMP/before"
	printf '{"guests": [' >"$TMP/new.json" && mv "$TMP/new.json" "$TMP/p.json" || return
	wait_for "bad JSON reported" grep -q 'p.json:1:' "$TMP/hold.err" || return
	write_policy "$TMP/new.json" && jq '.guests[1].nics[0].mac = "ff:ff:ff:ff:ff:ff"' \
		"$TMP/new.json" >"$TMP/p.json" || return
	wait_for "bad MAC reported" grep -q "guests\[1\].nics\[0\]: .*mac 'ff:ff:ff:ff:ff:ff'" \
		"$TMP/hold.err" || return
	expect_eq "$(grep -c 'not applied; the rules synced before stay' "$TMP/hold.err")" 2 \
		"refusals reported" || return
	kill -0 "$HOLD" || fail "hold exited" || return
	nft_json | cmp -s - "$TMP/before" ||
		fail "an invalid file changed the ruleset" || return
	filters_work after invalid files || return
	replace_policy "$TMP/p.json" "${SPOOF[2]}" || return
	wait_for "valid file applied" ruleset_has "${SPOOF[2]}" || return
	legit_ok 2 "${SPOOF[2]}" && stop_hold TERM
}

# Bad starts exit with a message and leave no table: usage (2), a bad file
# (2), a file naming a missing device (1).
case_bad_start() {
	local rc args
	write_policy "$TMP/p.json" || return
	jq '.guests[0].nics[0].ifname = "nosuch0"' "$TMP/p.json" >"$TMP/nodev.json"
	printf '{"guests": [' >"$TMP/broken.json"
	while IFS='|' read -r rc args; do
		# shellcheck disable=SC2086
		run "$rc" timeout 10 "$VNICCTL" $args || { log "$args"; return 1; }
		grep -q '^vnicctl: ' "$TMP/err" || fail "$args: no message" || return
		expect_eq "$(nft list ruleset | wc -c)" 0 "ruleset after '$args'" || return
	done <<-EOF
	2|filter hold
	2|filter hold -
	2|filter hold $TMP/p.json $TMP/p.json
	2|--no-owner filter hold $TMP/p.json
	2|filter hold --bogus $TMP/p.json
	2|filter hold $TMP/nosuch.json
	2|filter hold $TMP/broken.json
	1|filter hold $TMP/nodev.json
	EOF
}

# Each sync prints what it did as filter sync does, the repairs included:
# a table damaged while no hold owned it (ip4s flushed by nft) is repaired
# by the first sync, which says so on a second line.
case_repaired() {
	write_policy "$TMP/p.json" || return
	run 0 vc filter sync "$TMP/p.json" || return
	nft flush set netdev vnic ip4s || return
	start_hold || return
	wait_for "second line" lines "$TMP/hold.out" 2 || return
	grep -qx 'repaired: set ip4s, 2 elements restored' "$TMP/hold.out" ||
		fail "hold's output: $(cat "$TMP/hold.out")" || return
	filters_work after the repair && stop_hold TERM
}

# Run by systemd (NOTIFY_SOCKET, the unit's Type=notify), hold says
# READY=1 once the first sync is in, and only then: `systemctl start`
# then fails with a first sync that fails, and units ordered after the
# unit start with the filters in place.  A path and an abstract socket;
# a start that fails (a missing device) sends nothing.
case_notify_ready() {
	local sock rc
	write_policy "$TMP/p.json" || return
	jq '.guests[0].nics[0].ifname = "nosuch0"' "$TMP/p.json" >"$TMP/nodev.json"
	for sock in "$TMP/notify" "@vnicctl-hold-test-$$"; do
		rm -f "$TMP/notified" "$TMP/notified.bound"
		notify_listen "$sock" "$TMP/notified" || return
		NOTIFY_SOCKET=$sock "$VNICCTL" filter hold "$TMP/nodev.json" \
			>"$TMP/hold.out" 2>"$TMP/hold.err"
		rc=$?
		expect_eq "$rc" 1 "hold of a missing device ($(cat "$TMP/hold.err"))" || return
		# Whatever hold sent is queued before this marker.
		notify_send "$sock" MARK &&
		wait_for "marker" grep -qx MARK "$TMP/notified" || return
		expect_eq "$(cat "$TMP/notified")" MARK "messages of a failed start" ||
			return
		NOTIFY_SOCKET=$sock "$VNICCTL" filter hold "$TMP/p.json" \
			>"$TMP/hold.out" 2>"$TMP/hold.err" &
		HOLD=$!
		wait_for "READY=1 on $sock" grep -qx 'READY=1' "$TMP/notified" || return
		# The first sync's result is flushed before the notification.
		grep -q '^2 added' "$TMP/hold.out" ||
			fail "READY=1 before the first sync: $(cat "$TMP/hold.out")" || return
		owned || fail "table not owned at READY=1" || return
		stop_hold TERM || return
		kill "$NOTIFY_PID" && wait "$NOTIFY_PID" 2>/dev/null
		run 0 vc filter remove vm1 vm2 || return
	done
}

CASES=(tamper file_change symlink_file sighup sighup_at_start sigterm invalid_file bad_start
       repaired notify_ready)

tap_main ip jq nft unshare nsenter python3 timeout -- "$@"
