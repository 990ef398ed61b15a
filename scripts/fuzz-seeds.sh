#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Write fuzz/corpus/ from the running kernel's replies.  Run by
# `make fuzz-seeds` as root inside `unshare -n`: it makes NICs and a filter
# table in that private namespace only.
#
#   scripts/fuzz-seeds.sh BUILD_DIR
set -eu
O=$1
seeds=$O/fuzz-run/seeds
vc() { "$O/vnicctl" "$@"; }
mac_of() { ip -j link show "$1" | jq -r '.[0].address'; }
C=fuzz/corpus
mkdir -p $C/link $C/extack $C/nft $C/policy

ip link set lo up
ip link add lower0 type veth peer name lower0p
ip link set lower0 up
ip link set lower0p up

# nft: no table yet (the ENOENT path)
$seeds nft $C/nft/no-table

vc guest add vm1 --kind macvtap --lower lower0 --nics 2 --name vm1m%d \
	--naming explicit >/dev/null
vc guest add vm2 --kind veth --name vm2h0 --peer-name vm2p0 >/dev/null
ip link set vm2h0 alias "an alias that is not a tag"
$seeds link $C/link
$seeds extack $C/extack

# The policy of selftests/vnicctl_filter_test.sh, and a smaller one.
jq -n --arg m0 "$(mac_of vm1m0)" --arg m1 "$(mac_of vm1m1)" \
      --arg m2 "$(mac_of vm2p0)" '
{guests: [
  {name: "vm1",
   nics: [{ifname: "vm1m0", kind: "macvtap", mac: $m0,
	   ipv4: ["192.0.2.10"], ipv6: ["2001:db8::10"]},
	  {ifname: "vm1m1", kind: "macvtap", mac: $m1, ipv4: ["192.0.2.11"]}],
   rules: [{proto: "tcp", dport: 22, action: "accept"},
	   {proto: "udp", dport: "1000-2000", daddr: "198.51.100.0/24",
	    action: "drop"}]},
  {name: "vm2", switches: ["mac-spoof", "ip-spoof", "arp-spoof"],
   nics: [{ifname: "vm2h0", kind: "veth", mac: $m2, ipv4: ["192.0.2.20"],
	   switches: ["no-promisc"]}]}]}' >$C/policy/two-guests.json
jq -n --arg m2 "$(mac_of vm2p0)" '
{guests: [{name: "vm2", nics: [{ifname: "vm2h0", kind: "veth", mac: $m2,
	   ipv6: ["2001:db8::20/128"]}]}]}' >$C/policy/one-nic.json
printf '{"guests": []}\n' >$C/policy/empty.json

vc filter apply $C/policy/two-guests.json >/dev/null
$seeds nft $C/nft/two-guests
vc filter remove vm1 >/dev/null
$seeds nft $C/nft/one-guest
du -sh $C/*
