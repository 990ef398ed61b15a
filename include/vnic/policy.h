/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvnic filter policy: what "clean traffic" means for each guest NIC,
 * independent of the backend that enforces it (nftables today, tc eBPF
 * later).  See Documentation/filters.rst for the exact semantics.
 *
 *	struct vnic_policy *p;
 *	const char *v4[] = { "192.0.2.10" };
 *	VNIC_OPTS(vnic_nic_policy, nic, .ifname = "mvt3",
 *		  .kind = VNIC_KIND_MACVTAP, .mac = "02:00:00:00:00:03",
 *		  .ipv4 = v4, .n_ipv4 = 1);
 *	vnic_policy_new(ctx, &p);
 *	vnic_policy_add_guest(p, "vm42", NULL);		// clean traffic
 *	vnic_policy_add_nic(p, "vm42", &nic);
 *
 * Everything is checked when added; the error is in the context.
 * Thread safety: as the context (context.h).
 */
#ifndef VNIC_POLICY_H
#define VNIC_POLICY_H

#include <stdint.h>
#include <vnic/common.h>
#include <vnic/context.h>
#include <vnic/guest.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vnic_policy;

/* Per-NIC switches.  "From the guest" unless said otherwise. */
enum vnic_switch {
	VNIC_SW_MAC_SPOOF	= 1u << 0,	/* source MAC must be the NIC's */
	VNIC_SW_IP_SPOOF	= 1u << 1,	/* IPv4 source must be the NIC's
						 * (DHCP 0.0.0.0:68->67 passes) */
	VNIC_SW_IP6_SPOOF	= 1u << 2,	/* IPv6 source must be the NIC's or
						 * its link-local (DAD from :: passes) */
	VNIC_SW_ARP_SPOOF	= 1u << 3,	/* ARP sender MAC/IP must be the NIC's */
	VNIC_SW_DHCP_SERVER	= 1u << 4,	/* no DHCP server replies (UDP sport 67) */
	VNIC_SW_RA_GUARD	= 1u << 5,	/* no router advertisements or redirects */
	VNIC_SW_L2_ALLOW	= 1u << 6,	/* only IPv4, ARP, IPv6 ethertypes */
	VNIC_SW_NO_PROMISC	= 1u << 7,	/* to the guest: unicast for another
						 * MAC is dropped */
	VNIC_SW_ND_SPOOF	= 1u << 8,	/* IPv6 neighbour advertisements:
						 * the target must be one of the
						 * NIC's IPv6 addresses, a link-
						 * layer address option the NIC's
						 * MAC (Documentation/filters.rst) */
	VNIC_SW_DHCP6_SERVER	= 1u << 9,	/* no DHCPv6 server replies (UDP
						 * sport 547) */
	VNIC_SW_CLEAN		= 0x3ff,	/* all of the above: the default */
};

struct vnic_guest_policy {
	size_t sz;
	/* Switches for NICs that do not set their own; 0 with
	 * switches_set = 0 means VNIC_SW_CLEAN. */
	uint32_t switches;
	int switches_set;
};

/* How traffic of the guest reaches the host: decides the hook. */
struct vnic_nic_policy {
	size_t sz;
	const char *ifname;		/* the host-side device */
	enum vnic_kind kind;		/* macvtap, macvlan, veth (host end),
					 * tap: the device's, as it picks the
					 * hooks; checked only where the
					 * context's link table is exact, else
					 * taken as given (filters.rst) */
	const char *mac;		/* the guest's MAC on this NIC */
	const char *const *ipv4;	/* its IPv4 addresses, "192.0.2.10";
					 * each at most once (-EEXIST); not
					 * 0.0.0.0, 255.255.255.255,
					 * multicast or 127/8 (-EINVAL) */
	unsigned int n_ipv4;
	const char *const *ipv6;	/* its IPv6 addresses (link-local
					 * added); not ::, ::1, multicast or
					 * IPv4-mapped (-EINVAL) */
	unsigned int n_ipv6;
	uint32_t switches;		/* with switches_set: override the guest's */
	int switches_set;
};

enum vnic_rule_action {
	VNIC_RULE_DROP = 0,
	VNIC_RULE_ACCEPT,
};

/* A small typed rule on traffic from the guest, evaluated in order after
 * the switches. */
struct vnic_rule {
	size_t sz;
	uint8_t l4proto;		/* IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP,
					 * IPPROTO_ICMPV6, or 0 for any */
	uint16_t dport_min, dport_max;	/* 0, 0: any (TCP/UDP only) */
	const char *daddr;		/* IPv4 or IPv6 CIDR; NULL: any */
	enum vnic_rule_action action;
};

/* An empty policy; errors go to ctx.  ctx may be NULL: the policy is then
 * for checking only (it cannot be applied without a context's nft handle
 * anyway), and vnic_policy_errmsg() says why a call failed.  Returns 0 with
 * *out set, -EINVAL (NULL out) or -ENOMEM. */
int vnic_policy_new(struct vnic_ctx *ctx, struct vnic_policy **out);
/* Free p (NULL: nothing). */
void vnic_policy_free(struct vnic_policy *p);

/* A guest (name as in guest.h); opts may be NULL.  Returns 0, -EEXIST if
 * present, -EINVAL (an invalid name or switches), -E2BIG (common.h) or
 * -ENOMEM; nothing is added on failure. */
int vnic_policy_add_guest(struct vnic_policy *p, const char *guest,
			  const struct vnic_guest_policy *opts);
/* A NIC of a guest added before.  Returns 0, or with nothing added: -EEXIST
 * if another NIC of any guest in the policy has the same ifname (or an
 * address is given twice), -ENOENT (no such guest), -EINVAL (an invalid
 * name, MAC, address or switch; an address no host sends from, see
 * above), -E2BIG (over 64 addresses per family, or
 * common.h), -EOPNOTSUPP (a kind that cannot be filtered), -ENOMEM. */
int vnic_policy_add_nic(struct vnic_policy *p, const char *guest,
			const struct vnic_nic_policy *nic);
/* Every created NIC of an allocator guest, with its name, kind and MAC, and
 * no addresses (switches that need addresses then drop all but DHCP/DAD).
 * Macvtap and macvlan NICs only: the device's MAC is the guest's there,
 * where a veth's guest sends from the peer and a tap's from the virtual
 * machine's NIC (add those with vnic_policy_add_nic()).  Returns 0, or as
 * vnic_policy_add_nic() (-EINVAL also for a NIC of g not created,
 * -EOPNOTSUPP also for a veth or tap); nothing is added on failure. */
int vnic_policy_add_nics_of(struct vnic_policy *p, const char *guest,
			    const struct vnic_guest *g);
/* Append a rule to a guest added before.  Returns 0, -ENOENT (no such
 * guest), -EINVAL (a NULL rule, an invalid protocol, port range, CIDR or
 * action), -E2BIG (over 64 rules, or common.h) or -ENOMEM. */
int vnic_policy_add_rule(struct vnic_policy *p, const char *guest,
			 const struct vnic_rule *rule);

/* Cross-guest checks done before any commit: every guest has a NIC.
 * Returns 0 or -EINVAL (with the guest named in the context's error). */
int vnic_policy_check(const struct vnic_policy *p);

/* Why the last call on p failed: vnic_ctx_errmsg() of its context, or of
 * its own error record when made without one.  Never NULL ("" for NULL p). */
const char *vnic_policy_errmsg(const struct vnic_policy *p);

/* Guests in p, 0 for NULL; the name of the i-th (in the order added), NULL
 * out of range, valid as long as p. */
unsigned int vnic_policy_guest_count(const struct vnic_policy *p);
const char *vnic_policy_guest_name(const struct vnic_policy *p, unsigned int i);

/* "mac-spoof" -> VNIC_SW_MAC_SPOOF ("clean" -> VNIC_SW_CLEAN), 0 if
 * unknown; and back (one bit; NULL if not exactly one known bit).
 * Thread-safe. */
uint32_t vnic_switch_from_name(const char *name);
const char *vnic_switch_name(uint32_t sw);

#ifdef __cplusplus
}
#endif

#endif /* VNIC_POLICY_H */
