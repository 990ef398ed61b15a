// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rule builders: the expressions of every rule the table has, the
 * rules of each from-guest switch, and the rules of base chains, mask
 * chains, to-guest chains and hook prefixes' chains.  A fixed list of rules
 * per chain looks packets up in the sets (schema.c); no rule names a guest.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>

#include "nft/internal.h"

/* --- expressions ------------------------------------------------------ */

struct rb {
	struct nftnl_rule *r;
	int err;
};

static struct nftnl_expr *ex(struct rb *rb, const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);

	if (!e)
		rb->err = -ENOMEM;
	else
		nftnl_rule_add_expr(rb->r, e);
	return e;
}

static void meta(struct rb *rb, uint32_t key, uint32_t dreg)
{
	struct nftnl_expr *e = ex(rb, "meta");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
	}
}

static void payload(struct rb *rb, uint32_t base, uint32_t off, uint32_t len,
		    uint32_t dreg)
{
	struct nftnl_expr *e = ex(rb, "payload");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
	}
}

static void cmp(struct rb *rb, uint32_t sreg, uint32_t op, const void *data,
		uint32_t len)
{
	struct nftnl_expr *e = ex(rb, "cmp");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, sreg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	}
}

static void lookup(struct rb *rb, uint32_t sreg, enum nset s, bool inv)
{
	struct nftnl_expr *e = ex(rb, "lookup");
	char name[16];

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, sreg);
		rb->err = rb->err ?: expr_str(e, NFTNL_EXPR_LOOKUP_SET,
					      set_name(s, name, sizeof(name)));
		if (inv)
			nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
	}
}

static void verdict(struct rb *rb, int v, const char *chain)
{
	struct nftnl_expr *e = ex(rb, "immediate");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)v);
		if (chain)
			rb->err = rb->err ?: expr_str(e, NFTNL_EXPR_IMM_CHAIN, chain);
	}
}

/* Count the drop on the guest's counter, found by the NIC's ifindex. */
static void count_drop(struct rb *rb, uint32_t key)
{
	struct nftnl_expr *e;

	meta(rb, key, NFT_REG32_00);
	e = ex(rb, "objref");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_SET_SREG, NFT_REG32_00);
		rb->err = rb->err ?: expr_str(e, NFTNL_EXPR_OBJREF_SET_NAME,
					      nset_descs[S_CTR].name);
	}
	verdict(rb, NF_DROP, NULL);
}

static void need_switch(struct rb *rb, uint32_t key, enum nset sw)
{
	meta(rb, key, NFT_REG32_00);
	lookup(rb, NFT_REG32_00, sw, false);
}

static void need_proto(struct rb *rb, uint16_t ethertype)
{
	uint16_t be = htons(ethertype);

	meta(rb, NFT_META_PROTOCOL, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &be, sizeof(be));
}

static void need_l4(struct rb *rb, uint8_t proto)
{
	meta(rb, NFT_META_L4PROTO, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &proto, sizeof(proto));
}

/* x & mask op v, on a 2-byte load already in NFT_REG32_01. */
static void mask16(struct rb *rb, uint16_t mask, uint32_t op, uint16_t v)
{
	struct nftnl_expr *e = ex(rb, "bitwise");
	uint16_t m = htons(mask), x = 0, be = htons(v);

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG32_01);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG32_01);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, 2);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &m, 2);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &x, 2);
	}
	cmp(rb, NFT_REG32_01, op, &be, 2);
}

/*
 * Fragments.  A later fragment has no transport header, but nf_tables
 * still gives it a protocol (meta l4proto), and its fast payload path
 * (nft_payload_fast_eval(): loads of 1, 2 or 4 aligned bytes) does not
 * look at the fragment offset as nft_payload_eval() does: it reads an
 * IPv4 fragment's data, and for a later IPv6 fragment, whose transport
 * offset ipv6_find_hdr() leaves at 0, the start of skb->data (the
 * Ethernet header on a macvtap's egress), as the transport header.  So
 * every rule that reads the transport header asks for a first fragment
 * or none.
 *
 * IPv4: "ip frag-off & 0x1fff == 0", in the rule.
 */
static void first_frag4(struct rb *rb)
{
	payload(rb, NFT_PAYLOAD_NETWORK_HEADER, 6, 2, NFT_REG32_01);
	mask16(rb, 0x1fff, NFT_CMP_EQ, 0);
}

/* IPv6, for an exception that accepts: "exthdr frag missing" (DAD and
 * its MLD report are never fragmented; a fragmented one meets the source
 * check). */
static void no_frag6(struct rb *rb)
{
	struct nftnl_expr *e = ex(rb, "exthdr");
	uint8_t zero = 0;

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_DREG, NFT_REG32_01);
		nftnl_expr_set_u8(e, NFTNL_EXPR_EXTHDR_TYPE, 44);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OFFSET, 0);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_LEN, 1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_FLAGS, NFT_EXTHDR_F_PRESENT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OP, NFT_EXTHDR_OP_IPV6);
	}
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &zero, 1);
}

/* IPv6, before the checks that drop: "frag frag-off != 0 return".  A rule
 * cannot say "no fragment header or offset 0" (the header's load breaks
 * the rule when it is missing), and a first fragment must still be
 * judged; so a later fragment leaves the switch chain here, past the
 * source check, as if no rule after matched. */
static void r_later_frag6(struct rb *rb, uint32_t key)
{
	struct nftnl_expr *e;

	need_proto(rb, ETH_P_IPV6);
	e = ex(rb, "exthdr");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_DREG, NFT_REG32_01);
		nftnl_expr_set_u8(e, NFTNL_EXPR_EXTHDR_TYPE, 44);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OFFSET, 2);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_LEN, 2);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OP, NFT_EXTHDR_OP_IPV6);
	}
	mask16(rb, 0xfff8, NFT_CMP_NEQ, 0);
	verdict(rb, NFT_RETURN, NULL);
}

static void th_u8(struct rb *rb, uint32_t off, uint8_t v)
{
	payload(rb, NFT_PAYLOAD_TRANSPORT_HEADER, off, 1, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &v, 1);
}

static void th_port(struct rb *rb, uint32_t off, uint16_t port)
{
	uint16_t be = htons(port);

	payload(rb, NFT_PAYLOAD_TRANSPORT_HEADER, off, 2, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &be, 2);
}

/* key . field(s) not in set s: the NIC's own addresses are the set. */
static void not_own(struct rb *rb, uint32_t key, enum nset s,
		    const uint32_t (*fields)[3], unsigned int nfields)
{
	uint32_t reg = NFT_REG32_00;
	unsigned int i;

	meta(rb, key, reg);
	reg++;
	for (i = 0; i < nfields; i++) {
		payload(rb, fields[i][0], fields[i][1], fields[i][2], reg);
		reg += (fields[i][2] + 3) / 4;
	}
	lookup(rb, NFT_REG32_00, s, true);
}

/* --- the rules ----------------------------------------------------------- */

typedef void (*rule_fn)(struct rb *rb, uint32_t key);

static void r_l2(struct rb *rb, uint32_t key)
{
	payload(rb, NFT_PAYLOAD_LL_HEADER, 12, 2, NFT_REG32_01);
	lookup(rb, NFT_REG32_01, S_L2OK, true);
	count_drop(rb, key);
}

static void r_mac(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_LL_HEADER, 6, 6 } };

	not_own(rb, key, S_MAC, f, 1);
	count_drop(rb, key);
}

/*
 * A tag still in the frame: skb->protocol is 802.1Q or 802.1ad, so the
 * address checks (meta protocol ip, ip6, arp) never match.  A veth's or
 * tap's receive path strips one tag before the hook, but a macvtap's or
 * macvlan's egress keeps it (and a second tag stays on ingress); the frame
 * is dropped when an address check is on.  With l2-allow on, its rule
 * drops them already (the switch table leaves these out).
 */
static void r_tagged(struct rb *rb, uint32_t key, uint16_t ethertype)
{
	need_proto(rb, ethertype);
	count_drop(rb, key);
}

static void r_tagged_q(struct rb *rb, uint32_t key)
{
	r_tagged(rb, key, ETH_P_8021Q);
}

static void r_tagged_ad(struct rb *rb, uint32_t key)
{
	r_tagged(rb, key, ETH_P_8021AD);
}

/* DHCP discover/request from 0.0.0.0:68 to port 67 skips the IPv4 check. */
static void r_dhcp_client(struct rb *rb, uint32_t key)
{
	uint32_t zero = 0;

	need_proto(rb, ETH_P_IP);
	payload(rb, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &zero, 4);
	first_frag4(rb);
	need_l4(rb, IPPROTO_UDP);
	th_port(rb, 0, 68);
	th_port(rb, 2, 67);
	verdict(rb, NF_ACCEPT, NULL);
}

static void r_ip4(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_NETWORK_HEADER, 12, 4 } };

	need_proto(rb, ETH_P_IP);
	not_own(rb, key, S_IP4, f, 1);
	count_drop(rb, key);
}

/* DAD and its MLD report come from ::, before any address is usable. */
static void r_dad(struct rb *rb, uint32_t key, uint8_t type)
{
	uint8_t zero[16] = { 0 };

	need_proto(rb, ETH_P_IPV6);
	payload(rb, NFT_PAYLOAD_NETWORK_HEADER, 8, 16, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, zero, 16);
	no_frag6(rb);
	need_l4(rb, IPPROTO_ICMPV6);
	th_u8(rb, 0, type);
	verdict(rb, NF_ACCEPT, NULL);
}

static void r_dad_ns(struct rb *rb, uint32_t key)
{
	r_dad(rb, key, 135);
}

static void r_dad_mld(struct rb *rb, uint32_t key)
{
	r_dad(rb, key, 143);
}

static void r_ip6(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_NETWORK_HEADER, 8, 16 } };

	need_proto(rb, ETH_P_IPV6);
	not_own(rb, key, S_IP6, f, 1);
	count_drop(rb, key);
}

/* ARP: the sender MAC is the NIC's, the sender IPv4 one of its addresses
 * or 0.0.0.0 (a probe, RFC 5227): the macs and ip4s sets say both. */
static void r_arp_mac(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_NETWORK_HEADER, 8, 6 } };

	need_proto(rb, ETH_P_ARP);
	not_own(rb, key, S_MAC, f, 1);
	count_drop(rb, key);
}

static void r_arp_ip(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_NETWORK_HEADER, 14, 4 } };
	uint32_t zero = 0;

	need_proto(rb, ETH_P_ARP);
	payload(rb, NFT_PAYLOAD_NETWORK_HEADER, 14, 4, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_NEQ, &zero, 4);
	not_own(rb, key, S_IP4, f, 1);
	count_drop(rb, key);
}

/*
 * nd-spoof: a neighbour advertisement (ICMPv6 136) from the guest.  Its
 * target (offset 8) must be one of the NIC's addresses; its first option
 * (offset 24), if it has one, a link-layer address option of 8 bytes
 * (type 1 or 2, length 1) carrying the NIC's MAC.  A rule cannot walk the
 * options, so one of another kind first is refused: it could hide a
 * foreign link-layer address behind it.  A load past the end of the
 * packet (no option) ends a rule unmatched.
 */
static void need_na(struct rb *rb)
{
	need_proto(rb, ETH_P_IPV6);
	need_l4(rb, IPPROTO_ICMPV6);
	th_u8(rb, 0, 136);
}

static void r_na_target(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_TRANSPORT_HEADER, 8, 16 } };

	need_na(rb);
	not_own(rb, key, S_IP6, f, 1);
	count_drop(rb, key);
}

static void r_na_option(struct rb *rb, uint32_t key)
{
	static const uint8_t sll[2] = { 1, 1 }, tll[2] = { 2, 1 };

	need_na(rb);
	/* Loaded twice, as nft(8) compiles the rendered text. */
	payload(rb, NFT_PAYLOAD_TRANSPORT_HEADER, 24, 2, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_NEQ, sll, 2);
	payload(rb, NFT_PAYLOAD_TRANSPORT_HEADER, 24, 2, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_NEQ, tll, 2);
	count_drop(rb, key);
}

static void r_na_lladdr(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_TRANSPORT_HEADER, 26, 6 } };

	need_na(rb);
	not_own(rb, key, S_MAC, f, 1);
	count_drop(rb, key);
}

static void r_dhcp_server(struct rb *rb, uint32_t key, uint16_t proto, uint16_t port)
{
	need_proto(rb, proto);
	if (proto == ETH_P_IP)
		first_frag4(rb);
	need_l4(rb, IPPROTO_UDP);
	th_port(rb, 0, port);
	count_drop(rb, key);
}

static void r_dhcp4_server(struct rb *rb, uint32_t key)
{
	r_dhcp_server(rb, key, ETH_P_IP, 67);
}

static void r_dhcp6_server(struct rb *rb, uint32_t key)
{
	r_dhcp_server(rb, key, ETH_P_IPV6, 547);
}

static void r_ra(struct rb *rb, uint32_t key, uint8_t type)
{
	need_proto(rb, ETH_P_IPV6);
	need_l4(rb, IPPROTO_ICMPV6);
	th_u8(rb, 0, type);
	count_drop(rb, key);
}

static void r_ra_adv(struct rb *rb, uint32_t key)
{
	r_ra(rb, key, 134);
}

static void r_ra_redirect(struct rb *rb, uint32_t key)
{
	r_ra(rb, key, 137);
}

/* "@K vmap @custom": the guest's chain, if its NIC has an element. */
static void r_custom(struct rb *rb, uint32_t key)
{
	struct nftnl_expr *e;

	meta(rb, key, NFT_REG32_00);
	e = ex(rb, "lookup");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, NFT_REG32_00);
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_DREG, NFT_REG_VERDICT);
		rb->err = rb->err ?: expr_str(e, NFTNL_EXPR_LOOKUP_SET,
					      nset_descs[S_CUSTOM].name);
	}
}

/* To the guest: unicast for another MAC. */
static void r_promisc(struct rb *rb, uint32_t key)
{
	static const uint32_t f[][3] = { { NFT_PAYLOAD_LL_HEADER, 0, 6 } };
	uint8_t group = 0x01, zero = 0;
	struct nftnl_expr *e;

	need_switch(rb, key, S_PROMISC);
	payload(rb, NFT_PAYLOAD_LL_HEADER, 0, 1, NFT_REG32_01);
	e = ex(rb, "bitwise");
	if (e) {
		uint8_t x = 0;

		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG32_01);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG32_01);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, 1);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &group, 1);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &x, 1);
	}
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &zero, 1);
	not_own(rb, key, S_MAC, f, 1);
	count_drop(rb, key);
}


/* The rules of each from-guest switch, in the order a mask chain has them
 * (a rule of several switches: when any of them is on, and none of
 * unless). */
static const struct {
	uint32_t sw, unless;
	rule_fn fn;
} switch_rules[] = {
	{ VNIC_SW_L2_ALLOW, 0, r_l2 },
	{ VNIC_SW_MAC_SPOOF, 0, r_mac },
	{ SW_ADDR, VNIC_SW_L2_ALLOW, r_tagged_q },
	{ SW_ADDR, VNIC_SW_L2_ALLOW, r_tagged_ad },
	{ VNIC_SW_IP_SPOOF, 0, r_dhcp_client },
	{ VNIC_SW_IP_SPOOF, 0, r_ip4 },
	{ VNIC_SW_IP6_SPOOF, 0, r_dad_ns },
	{ VNIC_SW_IP6_SPOOF, 0, r_dad_mld },
	{ VNIC_SW_IP6_SPOOF, 0, r_ip6 },
	{ VNIC_SW_ARP_SPOOF, 0, r_arp_mac },
	{ VNIC_SW_ARP_SPOOF, 0, r_arp_ip },
	{ VNIC_SW_ND_SPOOF | VNIC_SW_DHCP6_SERVER | VNIC_SW_RA_GUARD, 0, r_later_frag6 },
	{ VNIC_SW_ND_SPOOF, 0, r_na_target },
	{ VNIC_SW_ND_SPOOF, 0, r_na_option },
	{ VNIC_SW_ND_SPOOF, 0, r_na_lladdr },
	{ VNIC_SW_DHCP_SERVER, 0, r_dhcp4_server },
	{ VNIC_SW_DHCP6_SERVER, 0, r_dhcp6_server },
	{ VNIC_SW_RA_GUARD, 0, r_ra_adv },
	{ VNIC_SW_RA_GUARD, 0, r_ra_redirect },
};

/* A rule of chain to fill with expressions (rb.err on allocation failure). */
static struct rb rule_begin(const struct vnic_nft *n, const char *chain)
{
	struct rb rb = { .r = nftnl_rule_alloc() };

	if (!rb.r) {
		rb.err = -ENOMEM;
		return rb;
	}
	rb.err = rule_id(rb.r, n->table, chain);
	return rb;
}

/* Into b, appended or put first in its chain; freed either way. */
static int rule_end(struct nbatch *b, struct rb *rb, bool prepend)
{
	if (!rb->err && rb->r)
		rb->err = rule_tag(rb->r);
	if (rb->err) {
		if (rb->r)
			nftnl_rule_free(rb->r);
		return rb->err;
	}
	return PUT(b, NFT_MSG_NEWRULE, NLM_F_CREATE | (prepend ? 0 : NLM_F_APPEND),
		   rb->r, rule);
}

static int add_rule(struct vnic_nft *n, struct nbatch *b, const char *chain,
		    rule_fn fn, uint32_t key)
{
	struct rb rb = rule_begin(n, chain);

	if (!rb.err)
		fn(&rb, key);
	return rule_end(b, &rb, false);
}

/* "iif @sw_7f jump sw_in_7f": appended, or put first (prepend), which
 * keeps it before the custom rule of a chain that exists. */
int rule_mask(struct vnic_nft *n, struct nbatch *b, const char *chain,
	      enum nchain c, uint32_t mask, bool prepend)
{
	struct rb rb = rule_begin(n, chain);
	char to[16];

	swchain_name(c, mask, to, sizeof(to));
	if (!rb.err) {
		meta(&rb, c == C_IN ? NFT_META_IIF : NFT_META_OIF, NFT_REG32_00);
		lookup(&rb, NFT_REG32_00, S_MASK(mask), false);
		verdict(&rb, NFT_JUMP, to);
	}
	return rule_end(b, &rb, prepend);
}

/* A base chain's rules: one per switch mask in use (a NIC is in one mask's
 * set; its chain returns unless it drops or accepts), then the custom
 * rules' map. */
int rules_base_chain(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		     const char *name)
{
	uint32_t key = c == C_IN ? NFT_META_IIF : NFT_META_OIF;
	uint32_t mask;
	int err = 0;

	for (mask = 1; mask <= SW_FROM && !err; mask++)
		if (swmask_ready(n, mask))
			err = rule_mask(n, b, name, c, mask, false);
	return err ? err : add_rule(n, b, name, r_custom, key);
}

int rule_to_guest(struct vnic_nft *n, struct nbatch *b, const char *chain)
{
	return add_rule(n, b, chain, r_promisc, NFT_META_OIF);
}

/* The rules of the switches of mask, in the chain name of kind c. */
int rules_switch(struct vnic_nft *n, struct nbatch *b, const char *name,
		 enum nchain c, uint32_t mask)
{
	uint32_t key = c == C_IN ? NFT_META_IIF : NFT_META_OIF;
	unsigned int i;
	int err = 0;

	for (i = 0; !err && i < ARRAY_SIZE(switch_rules); i++)
		if ((switch_rules[i].sw & mask) && !(switch_rules[i].unless & mask))
			err = add_rule(n, b, name, switch_rules[i].fn, key);
	return err;
}

/* "meta iifkind KIND goto CHAIN" (oifkind on egress). */
static int guard_rule(struct vnic_nft *n, struct nbatch *b, const char *chain,
		      uint32_t key, const char *kind, const char *to)
{
	struct rb rb = rule_begin(n, chain);

	if (!rb.err) {
		meta(&rb, key, NFT_REG_1);
		cmp(&rb, NFT_REG_1, NFT_CMP_EQ, kind, (uint32_t)strlen(kind) + 1);
		verdict(&rb, NFT_GOTO, to);
	}
	return rule_end(b, &rb, false);
}

/*
 * A prefix's base chain.  Ingress sees from-guest traffic of veth host ends
 * and taps (kind "tun"); egress sees to-guest traffic of those and from-guest
 * traffic of macvtaps and macvlans.  Devices of other kinds, and NICs in no
 * guest (no element matches), pass.
 */
int rule_pfx_guard(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		     const char *chain)
{
	static const char *const in_kinds[] = { "veth", "tun" };
	static const char *const eg_kinds[] = { "macvtap", "macvlan" };
	uint32_t key = c == C_IN ? NFT_META_IIFKIND : NFT_META_OIFKIND;
	unsigned int i;
	int err = 0;

	for (i = 0; i < ARRAY_SIZE(in_kinds) && !err; i++)
		err = guard_rule(n, b, chain, key, in_kinds[i],
				 c == C_IN ? PFX_FROM_IN : PFX_TO);
	for (i = 0; c == C_EG && i < ARRAY_SIZE(eg_kinds) && !err; i++)
		err = guard_rule(n, b, chain, key, eg_kinds[i], PFX_FROM_EG);
	return err;
}

