// SPDX-License-Identifier: LGPL-2.1-or-later OR GPL-2.0-only
/*
 * The tc programs of the eBPF backend: the policy of Documentation/filters.rst
 * checked per packet with the semantics of the nft backend's rules
 * (nft/layout.c), one shared pair of programs for every NIC.
 *
 * vnic_in runs on a NIC's clsact ingress, vnic_eg on its egress.  Each looks
 * the NIC up by ifindex in "nics" (a NIC that is not there passes: the
 * programs may sit on a device before its state is written, or after it is
 * gone), then checks the frame against the switches of that NIC:
 * from the guest where its frames are seen (BW_*), to the guest otherwise.
 * Passing is TC_ACT_UNSPEC, so other filters on the same hook still run.
 *
 * A header that cannot be read makes a check not apply, as an nft payload
 * load that fails breaks its rule: the frame passes that check.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "maps.h"

#define PASS	TC_ACT_UNSPEC

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bpf_nic);
	__uint(max_entries, 4096);
} nics SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct bpf_a4);
	__type(value, __u8);
	__uint(max_entries, 8192);
} ip4s SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct bpf_a6);
	__type(value, __u8);
	__uint(max_entries, 12288);
} ip6s SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, __u32);
	__type(value, struct bpf_drop);
	__uint(max_entries, 4096);
} drops SEC(".maps");

/* Not read by the programs: bound to them at load (BPF_PROG_BIND_MAP) so
 * that a restarted process finds them through the programs' map ids. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct bpf_guest_key);
	__type(value, struct bpf_guest);
	__uint(max_entries, 4096);
} guests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct bpf_state);
	__uint(max_entries, 1);
} state SEC(".maps");

static __always_inline int drop(struct __sk_buff *skb, __u32 ifindex)
{
	struct bpf_drop *d = bpf_map_lookup_elem(&drops, &ifindex);

	if (d) {
		d->packets++;
		d->bytes += skb->len;
	}
	return TC_ACT_SHOT;
}

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] &&
	       a[3] == b[3] && a[4] == b[4] && a[5] == b[5];
}

static __always_inline int own4(const struct bpf_nic *nic, __u32 ifindex, __u32 addr)
{
	struct bpf_a4 k = { .ifindex = ifindex, .gen = nic->gen, .addr = addr };

	if (nic->n_in4 != BPF_IN_MAP)
		return (nic->n_in4 > 0 && nic->in4[0] == addr) ||
		       (nic->n_in4 > 1 && nic->in4[1] == addr);
	return bpf_map_lookup_elem(&ip4s, &k) != NULL;
}

static __always_inline int eq16(const __u8 *a, const __u8 *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1];
}

static __always_inline int own6(const struct bpf_nic *nic, __u32 ifindex, const __u8 *addr)
{
	struct bpf_a6 k = { .ifindex = ifindex, .gen = nic->gen };

	if (nic->n_in6 != BPF_IN_MAP)
		return (nic->n_in6 > 0 && eq16(nic->in6[0], addr)) ||
		       (nic->n_in6 > 1 && eq16(nic->in6[1], addr)) ||
		       (nic->n_in6 > 2 && eq16(nic->in6[2], addr));
	__builtin_memcpy(k.addr, addr, 16);
	return bpf_map_lookup_elem(&ip6s, &k) != NULL;
}

/* How many IPv6 extension headers ip6_l4() walks.  ipv6_find_hdr() has no
 * limit; a legitimate frame carries one or two, so the walk ends long before
 * this.  A chain longer than this is not judged as nft would: from_ip6()
 * drops it when a check that needs the transport header is on (RA guard,
 * nd-spoof, dhcp6-server), the safe direction (see Documentation/bpf.rst). */
#define IP6_EXT_MAX	16

/* The transport header as nf_tables finds it (ipv6_find_hdr()): past
 * hop-by-hop, routing, destination and AH headers; a later fragment has a
 * protocol but no readable transport header (nft's payload loads break).
 * Returns 1 with *proto and *thoff, 0 for a later fragment (proto only), -1
 * when it cannot be read, -2 when the chain is longer than IP6_EXT_MAX.
 * *ah: an AH header was walked, where nft's hooks stop (IP6_FH_F_AUTH) and
 * take AH for the transport protocol.  *frag: a fragment header was walked
 * (nft's DAD exception asks for none: "exthdr frag missing"). */
static __always_inline int ip6_l4(struct __sk_buff *skb, __u8 next, __u32 *thoff,
				  __u8 *proto, __u8 *ah, __u8 *frag)
{
	__u32 off = ETH_HLEN + sizeof(struct ipv6hdr);
	__u8 h[4];
	int i;

#pragma unroll
	for (i = 0; i < IP6_EXT_MAX; i++) {
		if (next != 0 && next != 43 && next != 60 && next != 51 && next != 44) {
			*proto = next;
			*thoff = off;
			return 1;
		}
		if (bpf_skb_load_bytes(skb, off, h, 4))
			return -1;
		if (next == 44) {
			*frag = 1;
			if ((((__u16)h[2] << 8) | h[3]) & 0xfff8) {
				*proto = h[0];
				return 0;
			}
			off += 8;
		} else if (next == 51) {
			*ah = 1;
			off += ((__u32)h[1] + 2) * 4;
		} else {
			off += ((__u32)h[1] + 1) * 8;
		}
		next = h[0];
	}
	if (next != 0 && next != 43 && next != 60 && next != 51 && next != 44) {
		*proto = next;
		*thoff = off;
		return 1;
	}
	return -2;
}

/*
 * Whether nf_tables takes an IPv4 or IPv6 header as valid and so has a
 * transport protocol for the frame (__nft_set_pktinfo_ipv4_validate(),
 * _ipv6_validate()): the right version, and a length that neither
 * overclaims the frame nor (IPv4) stops inside the header.  The exceptions
 * that need the transport header (DHCP discover, DAD) apply only then, as
 * nft's accept rules match only then; a drop check is not relaxed for an
 * invalid header (the safe direction: no stack takes such a packet).
 */
static __always_inline int ip4_valid(const struct __sk_buff *skb, const struct iphdr *ip)
{
	__u32 tot = bpf_ntohs(ip->tot_len);

	return ip->version == 4 && tot >= (__u32)ip->ihl * 4 && tot + ETH_HLEN <= skb->len;
}

static __always_inline int ip6_valid(const struct __sk_buff *skb, const struct ipv6hdr *ip6)
{
	return ip6->version == 6 &&
	       bpf_ntohs(ip6->payload_len) + sizeof(*ip6) + ETH_HLEN <= skb->len;
}

static __always_inline int from_ip4(struct __sk_buff *skb, const struct bpf_nic *nic,
				    __u32 ifindex)
{
	struct iphdr ip;
	__u16 ports[2];
	int l4 = 0;

	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip))) {
		/* cut inside the header: nft still loads the source alone */
		__u32 saddr;

		if ((nic->flags & BF_IP4) &&
		    !bpf_skb_load_bytes(skb, ETH_HLEN + 12, &saddr, 4) &&
		    !own4(nic, ifindex, saddr))
			return drop(skb, ifindex);
		return PASS;
	}
	if (ip.ihl >= 5 && !(ip.frag_off & bpf_htons(0x1fff)) &&
	    ip.protocol == IPPROTO_UDP &&
	    !bpf_skb_load_bytes(skb, ETH_HLEN + ip.ihl * 4, ports, 4))
		l4 = 1;
	if (nic->flags & BF_IP4) {
		if (ip.saddr == 0 && l4 && ip4_valid(skb, &ip) &&
		    ports[0] == bpf_htons(68) && ports[1] == bpf_htons(67))
			return PASS;		/* DHCP discover/request */
		if (!own4(nic, ifindex, ip.saddr))
			return drop(skb, ifindex);
	}
	if ((nic->flags & BF_DHCP4) && l4 && ports[0] == bpf_htons(67))
		return drop(skb, ifindex);
	return PASS;
}

static __always_inline int is_zero16(const __u8 *a)
{
	const __u64 *q = (const __u64 *)a;

	return (q[0] | q[1]) == 0;
}

/*
 * nd-spoof, as the nft backend's three rules (nft/rules.c): a neighbour
 * advertisement's target is one of the NIC's addresses; its first option,
 * if it has one, is a link-layer address option of 8 bytes (type 1 or 2,
 * length 1), and the address there is the NIC's MAC.  A rule cannot walk
 * the options, so one of another kind first is refused.  A load past the
 * end of the packet makes a check not apply.
 */
static __always_inline int na_ok(struct __sk_buff *skb, const struct bpf_nic *nic,
				 __u32 ifindex, __u32 thoff)
{
	__u8 target[16] __attribute__((aligned(8)));
	__u8 opt[2], mac[6];

	if (bpf_skb_load_bytes(skb, thoff + 8, target, 16))
		return 1;
	if (!own6(nic, ifindex, target))
		return 0;
	if (bpf_skb_load_bytes(skb, thoff + 24, opt, 2))
		return 1;
	if ((opt[0] != 1 && opt[0] != 2) || opt[1] != 1)
		return 0;
	if (bpf_skb_load_bytes(skb, thoff + 26, mac, 6))
		return 1;
	return mac_eq(mac, nic->mac);
}

static __always_inline int from_ip6(struct __sk_buff *skb, const struct bpf_nic *nic,
				    __u32 ifindex)
{
	struct ipv6hdr ip6 __attribute__((aligned(8)));
	__u32 thoff = 0;
	__u8 proto = 0, type = 0, ah = 0, frag = 0;
	__u16 sport = 0;
	int l4;

	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6))) {
		/* cut inside the header: nft still loads the source alone */
		__u8 saddr[16] __attribute__((aligned(8)));

		if ((nic->flags & BF_IP6) &&
		    !bpf_skb_load_bytes(skb, ETH_HLEN + 8, saddr, 16) &&
		    !own6(nic, ifindex, saddr))
			return drop(skb, ifindex);
		return PASS;
	}
	l4 = ip6_l4(skb, ip6.nexthdr, &thoff, &proto, &ah, &frag);
	if (l4 == 1 && proto == IPPROTO_ICMPV6 &&
	    bpf_skb_load_bytes(skb, thoff, &type, 1))
		l4 = 0;
	if (l4 == 1 && proto == IPPROTO_UDP &&
	    bpf_skb_load_bytes(skb, thoff, &sport, 2))
		l4 = 0;
	if (nic->flags & BF_IP6) {
		if (l4 == 1 && proto == IPPROTO_ICMPV6 && (type == 135 || type == 143) &&
		    is_zero16((const __u8 *)&ip6.saddr) && !ah && !frag &&
		    ip6_valid(skb, &ip6))
			return PASS;		/* DAD and its MLD report */
		if (!own6(nic, ifindex, (const __u8 *)&ip6.saddr))
			return drop(skb, ifindex);
	}
	if (l4 == -2 && (nic->flags & (BF_RA | BF_ND | BF_DHCP6)))
		return drop(skb, ifindex);	/* fail closed: see IP6_EXT_MAX */
	if (l4 != 1)
		return PASS;
	if ((nic->flags & BF_DHCP6) && proto == IPPROTO_UDP && sport == bpf_htons(547))
		return drop(skb, ifindex);
	if (proto != IPPROTO_ICMPV6)
		return PASS;
	if ((nic->flags & BF_RA) && (type == 134 || type == 137))
		return drop(skb, ifindex);
	if ((nic->flags & BF_ND) && type == 136 && !na_ok(skb, nic, ifindex, thoff))
		return drop(skb, ifindex);
	return PASS;
}

/* ARP: the sender MAC is the NIC's, the sender IPv4 one of its addresses or
 * 0.0.0.0 (a probe, RFC 5227).  Each field is loaded alone, as nft's rules
 * do: a frame cut after the sender MAC is still judged on it. */
static __always_inline int from_arp(struct __sk_buff *skb, const struct bpf_nic *nic,
				    __u32 ifindex)
{
	__u8 sha[8] __attribute__((aligned(4)));
	__u32 spa;

	if (!(nic->flags & BF_ARP) || bpf_skb_load_bytes(skb, ETH_HLEN + 8, sha, 6))
		return PASS;
	if (!mac_eq(sha, nic->mac))
		return drop(skb, ifindex);
	if (bpf_skb_load_bytes(skb, ETH_HLEN + 14, &spa, 4))
		return PASS;
	if (spa && !own4(nic, ifindex, spa))
		return drop(skb, ifindex);
	return PASS;
}

/* IPv4 without options whose header and ports are in the linear data: the
 * checks of from_ip4() on direct loads, no helper call (the common frame). */
static __always_inline int from_ip4_fast(struct __sk_buff *skb, const struct bpf_nic *nic,
					 __u32 ifindex, struct iphdr *ip)
{
	__u16 *ports = (__u16 *)(ip + 1);
	int l4 = !(ip->frag_off & bpf_htons(0x1fff)) && ip->protocol == IPPROTO_UDP;

	if (nic->flags & BF_IP4) {
		if (ip->saddr == 0 && l4 && ip4_valid(skb, ip) &&
		    ports[0] == bpf_htons(68) && ports[1] == bpf_htons(67))
			return PASS;		/* DHCP discover/request */
		if (!own4(nic, ifindex, ip->saddr))
			return drop(skb, ifindex);
	}
	if ((nic->flags & BF_DHCP4) && l4 && ports[0] == bpf_htons(67))
		return drop(skb, ifindex);
	return PASS;
}

static __always_inline int from_guest(struct __sk_buff *skb, const struct bpf_nic *nic,
				      __u32 ifindex)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data, copy;
	__u32 proto = skb->protocol;

	if ((void *)(eth + 1) > end) {
		if (bpf_skb_load_bytes(skb, 0, &copy, sizeof(copy)))
			return PASS;
		eth = &copy;
	}
	if ((nic->flags & BF_L2) &&
	    (skb->vlan_present || (eth->h_proto != bpf_htons(ETH_P_IP) &&
				   eth->h_proto != bpf_htons(ETH_P_ARP) &&
				   eth->h_proto != bpf_htons(ETH_P_IPV6))))
		return drop(skb, ifindex);
	if ((nic->flags & BF_MAC) && !mac_eq(eth->h_source, nic->mac))
		return drop(skb, ifindex);
	/* A tag still in the frame (a macvtap's or macvlan's egress, the
	 * second tag on ingress) hides the packet from the address checks:
	 * dropped when one is on, as the nft backend's rules do. */
	if ((nic->flags & (BF_IP4 | BF_IP6 | BF_ARP | BF_ND)) &&
	    (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)))
		return drop(skb, ifindex);
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + ETH_HLEN;

		if ((void *)(ip + 1) + 4 <= end && ip->ihl == 5)
			return from_ip4_fast(skb, nic, ifindex, ip);
		return from_ip4(skb, nic, ifindex);
	}
	if (proto == bpf_htons(ETH_P_IPV6))
		return from_ip6(skb, nic, ifindex);
	if (proto == bpf_htons(ETH_P_ARP))
		return from_arp(skb, nic, ifindex);
	return PASS;
}

/* no-promisc: unicast for another MAC does not reach the guest. */
static __always_inline int to_guest(struct __sk_buff *skb, const struct bpf_nic *nic,
				    __u32 ifindex)
{
	__u8 dst[6];

	if (!(nic->flags & BF_PROMISC) || bpf_skb_load_bytes(skb, 0, dst, 6))
		return PASS;
	if (!(dst[0] & 1) && !mac_eq(dst, nic->mac))
		return drop(skb, ifindex);
	return PASS;
}

SEC("tc")
int vnic_in(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;
	struct bpf_nic *nic = bpf_map_lookup_elem(&nics, &ifindex);

	if (!nic || nic->where != BW_FROM_INGRESS)
		return PASS;
	return from_guest(skb, nic, ifindex);
}

SEC("tc")
int vnic_eg(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;
	struct bpf_nic *nic = bpf_map_lookup_elem(&nics, &ifindex);

	if (!nic)
		return PASS;
	if (nic->where == BW_FROM_EGRESS)
		return from_guest(skb, nic, ifindex);
	return to_guest(skb, nic, ifindex);
}

/* Passes everything: the floor a benchmark compares the policy with. */
SEC("tc")
int vnic_nop(struct __sk_buff *skb)
{
	return PASS;
}

char LICENSE[] SEC("license") = "GPL";
