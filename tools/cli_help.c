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
"  features                                   kernel features the library probed\n"
"  help [guest|add|gc]                        this text, or a command's\n"
"  version                                    print the version\n"
"\n"
"Options:\n"
"  -j, --json           JSON output\n"
"  -p, --pretty         indented JSON output (implies -j)\n"
"  -n, --netns NETNS    work in a network namespace: a path, or a name in /run/netns\n"
"  -o, --owner OWNER    owner tag of the NICs (default: vnic)\n"
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
"Deletes, in one request, every NIC tagged with the owner (-o) whose guest is\n"
"not kept, and prints how many.  --dry-run lists the guests it would collect.\n", f);
}
