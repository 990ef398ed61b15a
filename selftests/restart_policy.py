#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The policies of issue 14 as vnicctl policy files, on stdout.

  restart_policy.py N A|B [PREFIX]

A: N guests g0..g(N-1), each one macvlan PREFIXi (MAC 02:00:00:..:i) with
an IPv4 and an IPv6 address, a custom rule on every 5th guest.  B: A with
every 10th guest removed, every other one changed (addresses and its rule;
every 6th also its switches) and N/10 added (NICs PREFIXN..).  The NICs are
made by restart_nics.sh.
"""
import json
import sys


def mac(i):
    return "02:00:00:%02x:%02x:%02x" % ((i >> 16) & 255, (i >> 8) & 255, i & 255)


def guest(i, pfx, v=1):
    g = {"name": "g%d" % i,
         "nics": [{"ifname": "%s%d" % (pfx, i), "kind": "macvlan", "mac": mac(i),
                   "ipv4": ["10.%d.%d.%d" % (i // 256, i % 256, v)],
                   "ipv6": ["2001:db8:%x::%x" % (v, i + 1)]}]}
    if i % 5 == 0:
        g["rules"] = [{"proto": "tcp", "dport": 22, "action": "accept"}]
    return g


def main():
    n, which = int(sys.argv[1]), sys.argv[2]
    pfx = sys.argv[3] if len(sys.argv) > 3 else "nv"
    gs = []
    for i in range(n):
        if which == "A":
            gs.append(guest(i, pfx))
        elif i % 10 == 0:
            continue
        elif i % 2 == 0:
            g = guest(i, pfx, 2)
            g["rules"] = [{"proto": "udp", "dport": 53, "action": "drop"}]
            if i % 6 == 0:
                g["switches"] = ["mac-spoof", "ip-spoof"]
            gs.append(g)
        else:
            gs.append(guest(i, pfx))
    if which == "B":
        gs += [guest(i, pfx) for i in range(n, n + n // 10)]
    json.dump({"guests": gs}, sys.stdout)


main()
