/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Real-packet cases for the filter policy (policy.h), independent of the
 * backend that enforces it: the nft selftest runs them today, a tc eBPF
 * selftest must run the very same table later.  Nothing here knows about
 * nftables; a test program builds the policy with pkt_policy_build(),
 * installs it with its backend, and judges pkt_case_run()'s outcome with
 * pkt_expect().
 *
 * Topology (pkt_topo_setup(), in the caller's fresh namespace "test"):
 *
 *   veth     guest ns: geth0 (MAC = PKT_NIC_MAC)  <->  test ns: vh0 (the NIC)
 *            vh0 and fa0 are ports of br0; fa0 <-> fa0p in the far ns.
 *            The guest sends with AF_PACKET on geth0; the far side counts
 *            with AF_PACKET on fa0p.  (AF_PACKET on vh0 itself would see
 *            frames before its ingress hook: ptype_all taps run first.)
 *   tap      tp0 (the NIC) and fa0 are ports of br0, fa0 <-> fa0p in the
 *            far ns.  The guest writes frames into tp0's queue fd and reads
 *            what is sent to it from that fd.
 *   macvtap  mvt0 (the NIC, MAC = PKT_NIC_MAC, bridge mode) on lower0,
 *            lower0 <-> lower0p.  The guest writes virtio_net_hdr + frame
 *            into mvt0's queue fd; the frame leaves through mvt0's egress,
 *            then lower0, and is counted with AF_PACKET on lower0p (past
 *            every hook).  Inbound frames are sent from lower0p.  The
 *            macvlan driver delivers only frames for mvt0's MAC (and
 *            broadcast/multicast) to mvt0, so unicast for another MAC never
 *            reaches the guest, filter or not (see pkt_case.device_drops).
 *
 * Every kind also gets oth0 <-> oth0p, a second guest's NIC (a veth in the
 * test namespace), so a frame of our guest that carries the *other* guest's
 * MAC or address must be dropped: the filter must key on the NIC, not only
 * on the address.
 *
 * A "dropped" verdict is only reported when a legitimate control frame sent
 * right after the case's frame on the same path did arrive: a broken setup
 * that drops everything cannot pass a drop case.
 *
 * Helpers are prefixed pkt_ (see util.h for why).
 */
#ifndef VNIC_SELFTESTS_PKT_H
#define VNIC_SELFTESTS_PKT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>
#include <vnic/vnic.h>

#include "util.h"

/* Our guest (the NIC under test). */
#define PKT_GUEST	"vm1"
#define PKT_NIC_MAC	"02:00:00:00:00:10"
#define PKT_NIC_IP4	"192.0.2.10"
#define PKT_NIC_IP4B	"192.0.2.11"
#define PKT_NIC_IP6	"2001:db8::10"
#define PKT_NIC_LL6	"fe80::ff:fe00:10"	/* EUI-64 of PKT_NIC_MAC */
/* The second guest, on oth0. */
#define PKT_GUEST2	"vm2"
#define PKT_OTHER_NIC	"oth0"
#define PKT_OTHER_MAC	"02:00:00:00:00:20"
#define PKT_OTHER_IP4	"192.0.2.20"
#define PKT_OTHER_IP6	"2001:db8::20"
#define PKT_OTHER_LL6	"fe80::ff:fe00:20"
/* The far side. */
#define PKT_FAR_MAC	"02:00:00:00:00:f0"
#define PKT_FAR_IP4	"192.0.2.1"
#define PKT_FAR_IP6	"2001:db8::1"
#define PKT_FAR_LL6	"fe80::1"
/* Nobody's. */
#define PKT_SPOOF_MAC	"02:00:00:00:00:66"
#define PKT_STRANGER_MAC "02:00:00:00:00:77"
#define PKT_BCAST_MAC	"ff:ff:ff:ff:ff:ff"

/* Names in the test namespace. */
#define PKT_BRIDGE	"br0"
#define PKT_FAR_PORT	"fa0"		/* bridge port; its peer is PKT_FAR_IF */
#define PKT_FAR_IF	"fa0p"		/* in the far namespace */
#define PKT_GUEST_IF	"geth0"		/* veth: the guest's end */

enum pkt_dir {
	PKT_OUT,	/* from the guest */
	PKT_IN,		/* to the guest */
};

enum pkt_verdict {
	PKT_PASS,
	PKT_DROP,
};

/*
 * One frame, declaratively.  NULL/0 fields take the direction's default:
 * out: NIC MAC -> far MAC, NIC IPv4/IPv6 -> far IPv4/IPv6;
 * in:  far MAC -> NIC MAC, far addresses -> NIC addresses.
 * UDP/TCP ports default to 40000 -> 9.
 */
struct pkt_frame {
	const char *src_mac, *dst_mac;
	uint16_t vlan;			/* 802.1Q VID; 0: untagged */
	uint16_t ethertype;		/* ETH_P_IP, ETH_P_IPV6, ETH_P_ARP; any
					 * other: the marker right after it */
	const char *saddr, *daddr;	/* IP source/dest; ARP sender/target IP */
	uint8_t proto;			/* IPPROTO_UDP/TCP/ICMP/ICMPV6 */
	uint16_t sport, dport;
	uint8_t icmp_type;		/* ICMP/ICMPv6 type */
	bool hbh;			/* IPv6: hop-by-hop router alert first */
	uint8_t dstopts;		/* IPv6: then this many destination
					 * options headers (8 bytes, PadN) */
	bool ah;			/* IPv6: then an AH header (16 bytes) */
	uint16_t arp_op;		/* 1 request (default), 2 reply */
	const char *arp_sha;		/* ARP sender MAC; NULL: Ethernet source */
	const char *nd_target;		/* NS/NA target; NULL: see pkt_build() */
	uint8_t nd_opt;			/* NS/NA: first option's type (0: none);
					 * 1, 2 (link-layer address) carry
					 * nd_opt_mac, others 6 zero bytes */
	const char *nd_opt_mac;		/* NULL: the NIC's MAC */
	uint16_t frag;			/* IPv4: flags and fragment offset
					 * (0x2000 more fragments, the offset
					 * in 8-byte units below) */
	uint16_t frag6;			/* IPv6: a fragment header last before
					 * the transport header, with this
					 * offset field (offset in 8-byte
					 * units << 3, 1 more fragments); 0:
					 * none */
	uint16_t len_over;		/* the IPv4 total length or IPv6
					 * payload length claims this many
					 * bytes more than the frame has */
};

struct pkt_case {
	const char *name;
	const char *what;		/* one line, for logs */
	enum pkt_dir dir;
	uint32_t sw_off;		/* switches turned off (else clean) */
	bool rules;			/* the guest carries pkt_rules[] */
	enum pkt_verdict expect;	/* under the policy */
	/* (1u << kind) set: the device itself never delivers this frame, so
	 * it is "dropped" with no filter too (macvtap: unicast for a MAC
	 * that is not its own). */
	uint32_t device_drops;
	struct pkt_frame f;
};

/*
 * The case list, as an X-macro so that each backend's test program makes
 * one test per case (each in its own namespaces):
 *	#define MY_TEST(id) TEST_F(pkt, id) { run(_metadata, self, PKT_CASE_##id); }
 *	PKT_CASES(MY_TEST)
 */
#define PKT_CASES(X)							\
	X(legit_ipv4) X(legit_ipv4_second_addr) X(legit_arp_request)	\
	X(legit_arp_reply) X(legit_ipv6) X(legit_ipv6_linklocal)	\
	X(legit_ipv6_ns) X(dhcp_discover) X(ipv6_dad) X(mld_report_unspec) \
	X(arp_probe) X(legit_udp6_port_like_ra) X(legit_tcp_sport67)	\
	X(legit_udp4_sport547)						\
	X(mac_spoof) X(mac_spoof_other_guest) X(l2_ethertype_88b5)	\
	X(l2_vlan_tagged) X(ip_spoof) X(ip_spoof_other_guest)		\
	X(ip_unspec_not_dhcp) X(ip_unspec_sport68_wrong_dport)		\
	X(ip6_spoof) X(ip6_spoof_other_guest) X(ip6_linklocal_spoof)	\
	X(ip6_other_guest_linklocal) X(ip6_unspec_udp) X(ip6_unspec_na)	\
	X(arp_spoof_sha) X(arp_spoof_spa) X(arp_spoof_spa_other_guest)	\
	X(arp_spoof_eth_and_sha) X(dhcp_server) X(dhcp6_server)		\
	X(ra) X(redirect)						\
	X(legit_na) X(legit_na_sll) X(nd_spoof_target)			\
	X(nd_spoof_target_other_guest) X(nd_spoof_tll) X(nd_spoof_sll)	\
	X(nd_spoof_option_first) X(nd_spoof_off) X(dhcp6_server_off)	\
	X(dhcp6_server_with_dhcp_server_off)				\
	X(mac_spoof_off) X(ip_spoof_off) X(ip6_spoof_off) X(arp_spoof_off) \
	X(l2_allow_off) X(dhcp_server_off) X(ra_guard_off)		\
	X(rule_tcp22_dropped) X(rule_tcp23_passes) X(rule_tcp22_outside_cidr) \
	X(rule_udp22_passes) X(rule_udp6_range_dropped)			\
	X(rule_udp6_above_range) X(rule_udp6_below_range)		\
	X(rule_icmp_dropped) X(rule_order_accept_first)			\
	X(rule_order_then_drop) X(rule_no_spoof_bypass)			\
	X(rule_inbound_untouched)					\
	X(in_unicast_nic) X(in_broadcast) X(in_multicast)		\
	X(in_other_unicast) X(in_other_guest_unicast) X(no_promisc_off)	\
	X(ext_legit_udp6) X(ext_ip6_spoof) X(ext_ra) X(ext_ra_six_headers) \
	X(ext_dhcp6_server) X(ext_nd_spoof_target)			\
	X(dhcp_discover_len_over) X(ipv6_dad_len_over) X(ipv6_dad_behind_ah) \
	X(dhcp_server_first_fragment) X(dhcp_discover_later_fragment)	\
	X(dhcp_server_later_fragment) X(dad_later_fragment6)		\
	X(ra_later_fragment6) X(dad_first_fragment6) X(ra_first_fragment6)	\
	X(vlan_ip_spoof) X(vlan_arp_spoof)

enum pkt_case_id {
#define PKT_CASE_ENUM(id) PKT_CASE_##id,
	PKT_CASES(PKT_CASE_ENUM)
#undef PKT_CASE_ENUM
	PKT_CASE__MAX
};

extern const struct pkt_case pkt_cases[PKT_CASE__MAX];

/* The custom rules of a case with .rules (in this order). */
extern const struct vnic_rule pkt_rules[];
extern const unsigned int pkt_n_rules;

/* What case c should do on a NIC of kind with the policy installed
 * (filtered) or with no filter at all. */
enum pkt_verdict pkt_expect(const struct pkt_case *c, enum vnic_kind kind,
			    bool filtered);

/* The frame of f (direction dir) with marker (PKT_MARKER_LEN bytes) in its
 * payload, padded to the Ethernet minimum; its length, or 0 if a field
 * does not parse. */
#define PKT_MARKER_LEN 16
size_t pkt_build(unsigned char *buf, size_t cap, const struct pkt_frame *f,
		 enum pkt_dir dir, const char *marker);

/* One test topology (see the top of this file). */
struct pkt_topo {
	enum vnic_kind kind;
	struct vnic_ctx *ctx;		/* allocator context, test namespace */
	struct vnic_guest *g;		/* the NIC's allocator guest */
	char nic[IFNAMSIZ];		/* host-side device of PKT_GUEST */
	struct netns_holder guest_ns;	/* veth */
	struct netns_holder far_ns;	/* veth, tap */
	int guest_fd;			/* tap/macvtap queue fd, else -1 */
	size_t vnet_hdr;		/* bytes before a frame on guest_fd */
	int guest_sock;			/* veth: AF_PACKET on geth0, else -1 */
	int far_sock;			/* AF_PACKET on fa0p / lower0p */
	unsigned int seq;		/* marker counter */
};

/*
 * Build the topology for kind in the current namespace, which the caller
 * has just made (st_netns_new()).  Turns IPv6 off in every namespace (no
 * autoconf chatter; bridging is unaffected) and br_netfilter's calls into
 * ip(6)/arptables.  0 or a negative errno; *why says what failed.
 */
int pkt_topo_setup(struct pkt_topo *t, enum vnic_kind kind, char *why,
		   size_t len);
void pkt_topo_teardown(struct pkt_topo *t);
/* Delete the NIC and create it again, same name and MAC, new ifindex (a
 * guest restarted by its runtime); the guest's fd/socket are new too. */
int pkt_topo_recreate_nic(struct pkt_topo *t, char *why, size_t len);

/*
 * The policy for case c on t: PKT_GUEST with t->nic (kind, PKT_NIC_MAC,
 * both IPv4 and the IPv6 address; switches clean minus c->sw_off, left at
 * the default when nothing is off; pkt_rules[] when c->rules), and
 * PKT_GUEST2 with oth0.  c may be NULL: clean, no rules.  0 or the first
 * error (the context's message says why).
 */
int pkt_policy_build(const struct pkt_topo *t, const struct pkt_case *c,
		     struct vnic_policy **out);
/* The same with t->nic in guest (not PKT_GUEST): another guest taking
 * over the NIC. */
int pkt_policy_build_as(const struct pkt_topo *t, const struct pkt_case *c,
			const char *guest, struct vnic_policy **out);

/* What pkt_case_run() saw. */
struct pkt_outcome {
	bool seen;		/* the case's frame arrived */
	bool control_seen;	/* the control frame sent after it arrived */
	long long ms;		/* time spent */
	char marker[PKT_MARKER_LEN + 1];
};

/*
 * Send case c's frame, then a legitimate control frame on the same path,
 * and watch the receiving side (far for out, guest for in) until both
 * arrived, or the control arrived and a short grace period passed, or the
 * time is up.  0 (the outcome says what arrived) or a negative errno if
 * a frame could not be built or sent.
 */
int pkt_case_run(struct pkt_topo *t, const struct pkt_case *c,
		 struct pkt_outcome *o);
/* The same for any frame. */
int pkt_frame_run(struct pkt_topo *t, const struct pkt_frame *f,
		  enum pkt_dir dir, struct pkt_outcome *o);

/* Run f(arg) with the calling thread in the namespace nsfd; its result. */
int pkt_in_netns(int nsfd, int (*f)(void *arg), void *arg);



/*
 * Bad policy inputs, backend-neutral: each adds, on top of a policy that
 * already holds a valid guest (PKT_GUEST2 on oth0), one wrong thing that
 * must be refused by vnic_policy_add_*(), vnic_policy_check() or, for what
 * only the kernel can know (a NIC that does not exist), by the backend's
 * apply (a NIC that does not exist; a NIC of an installed guest, when the
 * base policy was installed first).  err: the errno expected (negative),
 * 0 for "any error".
 */
#define PKT_BADS(X)							\
	X(mac_short, -EINVAL) X(mac_bad_hex, -EINVAL)			\
	X(mac_multicast, -EINVAL) X(mac_broadcast, -EINVAL)		\
	X(mac_zero, -EINVAL) X(mac_missing, -EINVAL)			\
	X(mac_sign, -EINVAL) X(mac_trailing, -EINVAL)			\
	X(ipv4_bad_octet, -EINVAL) X(ipv4_short, -EINVAL)		\
	X(ipv4_with_prefix, -EINVAL) X(ipv4_is_ipv6, -EINVAL)		\
	X(ipv4_null_entry, -EINVAL) X(ipv4_count_no_array, -EINVAL)	\
	X(ipv4_too_many, -E2BIG)					\
	X(ipv6_bad, -EINVAL) X(ipv6_is_ipv4, -EINVAL)			\
	X(ipv6_with_prefix, -EINVAL)					\
	X(ipv4_unspecified, -EINVAL) X(ipv4_broadcast, -EINVAL)		\
	X(ipv4_multicast, -EINVAL) X(ipv4_loopback, -EINVAL)		\
	X(ipv6_unspecified, -EINVAL) X(ipv6_loopback, -EINVAL)		\
	X(ipv6_multicast, -EINVAL) X(ipv6_v4mapped, -EINVAL)		\
	X(cidr4_len_33, -EINVAL) X(cidr6_len_129, -EINVAL)		\
	X(cidr_empty_len, -EINVAL) X(cidr_garbage, -EINVAL)		\
	X(cidr_negative_len, -EINVAL)					\
	X(ports_reversed, -EINVAL) X(ports_without_l4, -EINVAL)		\
	X(ports_with_icmp, -EINVAL) X(rule_bad_proto, -EINVAL)		\
	X(rule_bad_action, -EINVAL) X(rule_icmp_v6_cidr, -EINVAL)	\
	X(rule_unknown_guest, -ENOENT) X(rules_too_many, -E2BIG)	\
	X(nic_unknown_guest, -ENOENT) X(nic_does_not_exist, 0)		\
	X(nic_name_too_long, -EINVAL) X(nic_name_empty, -EINVAL)	\
	X(nic_name_null, -EINVAL) X(nic_name_template, -EINVAL)		\
	X(nic_name_slash, -EINVAL)					\
	X(nic_duplicate_in_guest, -EEXIST) X(nic_two_guests, -EEXIST)	\
	X(nic_kind_tun, -EOPNOTSUPP) X(nic_kind_zero, 0)		\
	X(nic_kind_out_of_range, 0)					\
	X(switches_unknown_bit, -EINVAL)				\
	X(guest_switches_unknown_bit, -EINVAL)				\
	X(nic_opts_too_big, -E2BIG) X(guest_opts_too_big, -E2BIG)	\
	X(rule_opts_too_big, -E2BIG)					\
	X(guest_name_too_long, -EINVAL) X(guest_name_bad_char, -EINVAL)	\
	X(guest_name_empty, -EINVAL) X(guest_name_null, -EINVAL)	\
	X(guest_duplicate, -EEXIST) X(guest_empty, -EINVAL)		\
	X(nic_claimed_by_installed_guest, -EEXIST)

enum pkt_bad_id {
#define PKT_BAD_ENUM(id, err) PKT_BAD_##id,
	PKT_BADS(PKT_BAD_ENUM)
#undef PKT_BAD_ENUM
	PKT_BAD__MAX
};

struct pkt_bad {
	const char *name;
	int err;
};
extern const struct pkt_bad pkt_bads[PKT_BAD__MAX];

/* Whether bad input id goes into an empty policy (applied next to the
 * installed base policy) rather than on top of the base policy. */
bool pkt_bad_fresh(enum pkt_bad_id id);
/* A policy holding PKT_GUEST2 on oth0 (valid, nothing else). */
int pkt_policy_base(const struct pkt_topo *t, struct vnic_policy **out);
/* Add bad input id to p (nic: an existing device of kind t->kind); the
 * first error of the vnic_policy_add_*() calls, 0 if all were accepted. */
int pkt_bad_add(const struct pkt_topo *t, struct vnic_policy *p,
		enum pkt_bad_id id);
#endif /* VNIC_SELFTESTS_PKT_H */
