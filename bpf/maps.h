/* SPDX-License-Identifier: LGPL-2.1-or-later OR GPL-2.0-only */
/*
 * The layout of the tc eBPF backend's maps, shared by the programs
 * (vnic.bpf.c) and the control plane (bpf/): changing a struct here is a
 * new layout (BPF_LAYOUT), which a restarted process refuses to adopt.
 */
#ifndef VNIC_BPF_MAPS_H
#define VNIC_BPF_MAPS_H

#include <linux/types.h>

#define BPF_LAYOUT	4	/* 4: state.mode */
#define BPF_MAGIC	0x6c6962766e696331ULL	/* "libvnic1" */

/* Program flags of a NIC: the policy's switches as the programs test them
 * (the control plane translates: bpf_flags_of(), bpf/model.c). */
enum {
	BF_MAC		= 1u << 0,
	BF_IP4		= 1u << 1,
	BF_IP6		= 1u << 2,
	BF_ARP		= 1u << 3,
	BF_DHCP4	= 1u << 4,
	BF_DHCP6	= 1u << 5,
	BF_RA		= 1u << 6,
	BF_L2		= 1u << 7,
	BF_PROMISC	= 1u << 8,
	BF_ND		= 1u << 9,
};

/* Where the guest's own frames are seen on this NIC. */
enum {
	BW_FROM_INGRESS	= 1,	/* veth host end, tap */
	BW_FROM_EGRESS	= 2,	/* macvtap, macvlan */
};

#define BPF_GUEST_LEN	72	/* a guest name (64) and its NUL, padded */

/* A NIC's first addresses live in its nics value, checked with no second
 * lookup; a NIC with more has all of them in ip4s/ip6s instead. */
#define BPF_IN4		2
#define BPF_IN6		3
#define BPF_IN_MAP	0xff	/* n_in4/n_in6: the addresses are in the map */

/* nics: ifindex -> this.  Replaced whole (no-prealloc hash: a reader sees
 * the old value or the new one), which is the instant a NIC's new policy
 * takes effect: addresses are keyed by gen, written before it. */
struct bpf_nic {		/* offsets: in4 32, in6 40 */
	__u8 mac[6];
	__u16 flags;		/* BF_* */
	__u32 gen;		/* of its addresses in ip4s/ip6s */
	__u32 where;		/* BW_* */
	__u32 kind;		/* enum vnic_kind, for read-back */
	__u32 idx;		/* its place among the guest's NICs */
	__u8 n_in4, n_in6;	/* inline addresses, or BPF_IN_MAP */
	__u8 pad[6];		/* in6 8-byte aligned */
	__u32 in4[BPF_IN4];	/* network order */
	__u8 in6[BPF_IN6][16];
	char ifname[16];
	char guest[BPF_GUEST_LEN];
};

struct bpf_a4 {
	__u32 ifindex;
	__u32 gen;
	__u32 addr;		/* network order */
};

struct bpf_a6 {
	__u32 ifindex;
	__u32 gen;
	__u8 addr[16];
};

/* drops: ifindex -> per-CPU counts. */
struct bpf_drop {
	__u64 packets;
	__u64 bytes;
};

/* guests: name (zero-padded) -> this. */
struct bpf_guest_key {
	char name[BPF_GUEST_LEN];
};

struct bpf_guest {
	__u64 digest;
	__u32 nics;
	__u32 pad;
};

/* state[0]: whose maps these are.  magic and netns_cookie stay first in
 * every layout: a handle tells an older or newer set of its namespace by
 * them (bpf/load.c), whatever the size of the rest. */
struct bpf_state {
	__u64 magic;		/* BPF_MAGIC */
	__u64 netns_cookie;	/* SO_NETNS_COOKIE of the namespace served */
	__u64 digest;		/* XOR of the guests' digests */
	__u32 layout;		/* BPF_LAYOUT */
	__u32 guests;
	__u32 next_gen;
	__u32 obj_hash;		/* FNV-1a of the embedded object that loaded
				 * the programs: another build's are not
				 * adopted (bpf/load.c) */
	__u32 mode;		/* BPF_MODE_*: how the filters are attached */
	__u32 pad;
};

/* state.mode: a handle in the other mode is refused (it would attach a
 * second copy beside the first, and its remove could not see them). */
#define BPF_MODE_CLS	0	/* clsact + cls_bpf */
#define BPF_MODE_TCX	1	/* tcx links */

#endif /* VNIC_BPF_MAPS_H */
