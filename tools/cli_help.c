// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl: help texts.  vnicctl(8) is the long form.
 */
#include <stdio.h>

#include "cli.h"

void usage_main(FILE *f)
{
	fputs(
"Usage: vnicctl [OPTIONS] COMMAND\n"
"\n"
"Commands:\n"
"  guest add NAME --kind KIND [NIC OPTIONS]   create a guest's NICs, all or nothing\n"
"  guest list                                 guests of this owner\n"
"  guest show NAME                            one guest's NICs\n"
"  guest del NAME...                          delete guests' NICs\n"
"  gc [--keep NAME]... [--dry-run]            delete the NICs of every guest not kept\n"
"  filter apply FILE                          install the guests of a policy file, one commit\n"
"  filter sync FILE                           make the installed filters equal the file\n"
"  filter show [GUEST]                        installed guests and their drop counters\n"
"  filter remove GUEST...                     remove guests' filters, one commit\n"
"  filter diff FILE                           what filter sync FILE would change\n"
"  filter render FILE                         print a policy file as nft(8) text\n"
"  filter hold FILE                           sync FILE, keep the table owned, follow FILE\n"
"  features                                   kernel features the library probed\n"
"  help [guest|add|gc|filter]                 this text, or a command's\n"
"  version                                    print the version\n"
"\n"
"Options:\n"
"  -j, --json           JSON output\n"
"  -p, --pretty         indented JSON output (implies -j)\n"
"  -n, --netns NETNS    work in a network namespace: a path, or a name in /run/netns\n"
"  -o, --owner OWNER    owner tag of the NICs (default: vnic)\n"
"      --no-owner       filter commands: do not claim the nftables table\n"
"      --hook-prefix P  filter commands: hook every NIC named P* by one chain\n"
"                       per prefix (Linux 6.17; repeatable, up to 16)\n"
"      --backend B      filter commands: nft (default) or bpf (tc eBPF)\n"
"  -s, --stats          print netlink call counts to stderr\n"
"  -h, --help           this text\n"
"  -V, --version        print the version\n"
"\n"
"Exit status: 0 done, 1 failed, 2 bad usage (nothing was done).\n"
"See vnicctl(8).\n", f);
}

void usage_guest(FILE *f)
{
	fputs(
"Usage: vnicctl [OPTIONS] guest add NAME --kind KIND [NIC OPTIONS]\n"
"       vnicctl [OPTIONS] guest { list | ls }\n"
"       vnicctl [OPTIONS] guest show NAME\n"
"       vnicctl [OPTIONS] guest { del | delete } NAME...\n"
"\n"
"Guests are found by the alias tag vnic:OWNER:GUEST:INDEX of their NICs, in\n"
"the namespace of -n (default: the current one).  'vnicctl help add' lists the\n"
"NIC options.\n", f);
}

void usage_guest_add(FILE *f)
{
	fputs(
"Usage: vnicctl [OPTIONS] guest add NAME --kind KIND [NIC OPTIONS]\n"
"\n"
"Creates --nics identical NICs (index 0..N-1) in one request: all or nothing.\n"
"\n"
"  --kind macvtap|macvlan|veth|tap|tun   required\n"
"  --nics N                  how many NICs (default 1, at most 65535)\n"
"  --name NAME|TEMPLATE      exact name, or template with %d (default: KIND%d)\n"
"  --naming auto|kernel|cache|explicit   how %d is resolved (default auto);\n"
"                            with explicit, vnicctl puts the NIC index for %d\n"
"  --mtu N                   MTU (default: the kernel's)\n"
"  --mac MAC                 MAC address, only with --nics 1 (default: random)\n"
"  --up                      bring the NICs up\n"
"  --nic-netns NETNS         create the NICs in this namespace\n"
"  --append                  add the NICs to an existing guest\n"
"macvtap, macvlan:\n"
"  --lower DEV               lower device (required)\n"
"  --mode private|vepa|bridge|passthru   (default bridge)\n"
"veth:\n"
"  --peer-name NAME|TEMPLATE peer name (required); vnicctl puts the NIC index for %d\n"
"  --peer-netns NETNS        create the peer in this namespace\n"
"  --peer-up                 bring the peer up\n"
"tap, tun (always persistent: they outlive vnicctl; --persist is implied):\n"
"  --queues N  --vnet-hdr  --multi-queue  --no-pi  --persist\n"
"  --user USER  --group GROUP   owner of the device\n", f);
}

void usage_gc(FILE *f)
{
	fputs(
"Usage: vnicctl [OPTIONS] gc [--keep GUEST]... [--dry-run]\n"
"\n"
"Deletes, in one request, every NIC of the owner (-o) whose guest is not kept,\n"
"and every one its creator never tagged, and prints how many.  A NIC is the\n"
"owner's only where two marks agree (alias tag and link group; or, untagged,\n"
"link group and MAC): an alias alone is never enough.  Do not run it while a\n"
"creator of the same owner runs in the namespace.  --dry-run lists the guests\n"
"it would collect.\n", f);
}

void usage_filter(FILE *f)
{
	fputs(
"Usage: vnicctl [OPTIONS] filter apply FILE\n"
"       vnicctl [OPTIONS] filter sync FILE\n"
"       vnicctl [OPTIONS] filter { show | list } [GUEST]\n"
"       vnicctl [OPTIONS] filter { remove | del } GUEST...\n"
"       vnicctl [OPTIONS] filter diff FILE\n"
"       vnicctl [OPTIONS] filter render FILE\n"
"       vnicctl [OPTIONS] filter hold FILE\n"
"\n"
"The guests' anti-spoofing filters, in libvnic's nftables table \"vnic\"\n"
"(netdev family) of the namespace of -n.  FILE is a JSON policy file, - for\n"
"standard input (not for hold):\n"
"\n"
"  {\"guests\": [{\"name\": \"vm1\",\n"
"               \"switches\": [\"mac-spoof\", \"ip-spoof\", ...],   (default: all)\n"
"               \"nics\": [{\"ifname\": \"mvt0\", \"kind\": \"macvtap\",\n"
"                         \"mac\": \"02:00:00:00:00:01\",\n"
"                         \"ipv4\": [\"192.0.2.10\"], \"ipv6\": [\"2001:db8::10\"],\n"
"                         \"switches\": [...]}],                 (optional)\n"
"               \"rules\": [{\"proto\": \"tcp\", \"dport\": 22,\n"
"                          \"daddr\": \"198.51.100.0/24\", \"action\": \"accept\"}]}]}\n"
"\n"
"  switches: mac-spoof ip-spoof ip6-spoof arp-spoof nd-spoof dhcp-server\n"
"            dhcp6-server ra-guard l2-allow no-promisc, or clean for all;\n"
"            [] for none\n"
"  kind: macvtap macvlan veth tap     proto: tcp udp icmp icmpv6 any\n"
"  dport: 1..65535 or \"MIN-MAX\"      action: accept drop\n"
"  Required: name, nics (at least one), ifname, kind, mac (the guest's), action.\n"
"\n"
"  apply    install or replace the file's guests in one commit; others stay\n"
"  sync     make the installed guests equal the file: guests not in it are\n"
"           removed, only the difference is written (nothing if unchanged)\n"
"  show     installed guests and the packets and bytes their filters dropped\n"
"  remove   remove guests in one commit\n"
"  diff     what sync would change, without writing: exit 0 the table\n"
"           matches, 1 it differs, 2 an error\n"
"  render   the nft(8) text apply would install on an empty table\n"
"  hold     sync FILE and keep running with the table owned (no other\n"
"           process can flush or delete it); re-sync when FILE is written or\n"
"           replaced and on SIGHUP; a FILE that fails keeps the rules synced\n"
"           before; SIGTERM/SIGINT exit 0 and leave the rules (persisted)\n"
"\n"
"apply, sync and remove print what the commit did.  An error in FILE names its\n"
"JSON path, e.g. guests[0].nics[1].mac, and exits 2 with nothing installed.\n"
"\n"
"The table is owned by the process that holds it (NFT_TABLE_F_OWNER): other\n"
"processes cannot flush or delete it.  apply, sync and remove exit right away\n"
"and claim nothing (as --no-owner); hold keeps it owned while it runs.  With\n"
"VNICCTL_LINGER=0 apply, sync and remove claim it with their commit, and on\n"
"kernels with NFT_TABLE_F_PERSIST (Linux 6.9) it stays after them, unowned\n"
"until the next claim.  Older kernels would delete an owned table with\n"
"vnicctl, so there hold, and apply, sync and remove with VNICCTL_LINGER=0,\n"
"refuse to write unless --no-owner is given (the table is then unprotected).\n", f);
}
