// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table every guest shares: sets keyed by the NIC's ifindex, and a
 * fixed list of rules per base chain that look packets up in them.  Adding
 * a guest adds set elements (and devices to the base chains), never rules,
 * so its cost does not grow with the number of guests, and a packet costs a
 * few hash lookups whatever the number of guests.
 *
 *   in  ingress of veth host ends and taps        from the guest, key iif
 *   eg  egress of macvtaps and macvlans           from the guest, key oif
 *   to  egress of veth host ends and taps         to the guest,   key oif
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft/internal.h"

#define CONCAT(a, b)	((a) << 6 | (b))

/* Sizes per NIC: an element each in the NIC-keyed sets, room for two IPv4
 * addresses and, in ip6s, for one global, the link-local and one more. */
const struct nset_desc nset_descs[S__MAX] = {
	[S_PROMISC] = { "no_promisc", DT_IFINDEX, 4, 0, 0, "iface_index", 1 },
	[S_MAC] = { "macs", CONCAT(DT_IFINDEX, DT_INTEGER), 12, 0, 0,
		    "typeof iif . @ll,48,48", 1 },
	[S_IP4] = { "ip4s", CONCAT(DT_IFINDEX, DT_IPADDR), 8, 0, 0,
		    "iface_index . ipv4_addr", 2 },
	[S_IP6] = { "ip6s", CONCAT(DT_IFINDEX, DT_IP6ADDR), 20, 0, 0,
		    "iface_index . ipv6_addr", 3 },
	[S_CTR] = { "drops", DT_IFINDEX, 4, NFT_SET_OBJECT, 0,
		    "iface_index : counter", 1 },
	[S_CUSTOM] = { "custom", DT_IFINDEX, 4, NFT_SET_MAP, NFT_DATA_VERDICT,
		       "iface_index : verdict", 1 },
	[S_GUESTS] = { "guests", DT_MARK, 4, 0, 0, "mark", 1 },
	[S_L2OK] = { "l2_allowed", DT_INTEGER, 2, NFT_SET_CONSTANT, 0,
		     "typeof @ll,96,16", 0 },
};

/* Each set of the NICs of a switch mask, "sw_7f". */
static const struct nset_desc mask_desc = {
	NULL, DT_IFINDEX, 4, 0, 0, "iface_index", 1,
};

static const struct nset_desc *desc_of(enum nset s)
{
	return s < S__MAX ? &nset_descs[s] : &mask_desc;
}

const char *set_name(enum nset s, char *buf, size_t len)
{
	if (s < S__MAX)
		return nset_descs[s].name;
	snprintf(buf, len, "sw_%02x", (unsigned int)s - S__MAX);
	return buf;
}

const char *const nchain_names[C__MAX] = { "in", "eg" };

static const uint8_t typeof_macs[] = {
	0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x03, 0x40, 0x00, 0x04, 0x0d, 0x00,
	0x00, 0x00, 0x01, 0x38, 0x00, 0x0e, 0x00, 0x04, 0x09, 0x00, 0x00, 0x00,
	0x01, 0x06, 0x00, 0x04, 0x04, 0x00, 0x00, 0x00, 0x01, 0x26, 0x00, 0x04,
	0x07, 0x00, 0x00, 0x00, 0x01, 0x1e, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x01, 0x00, 0x00, 0x00,
	0x03, 0x04, 0x30, 0x00, 0x00, 0x00, 0x04, 0x04, 0x30, 0x00, 0x00, 0x00,
};

static const uint8_t typeof_l2[] = {
	0x00, 0x04, 0x02, 0x00, 0x00, 0x00, 0x03, 0x26, 0x00, 0x04, 0x07, 0x00,
	0x00, 0x00, 0x01, 0x1e, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04,
	0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x01, 0x00, 0x00, 0x00, 0x03, 0x04,
	0x60, 0x00, 0x00, 0x00, 0x04, 0x04, 0x10, 0x00, 0x00, 0x00,
};

static const uint32_t chain_hooks[C__MAX] = {
	NF_NETDEV_INGRESS, NF_NETDEV_EGRESS,
};

uint32_t layout_egress_hook(void)
{
	return NF_NETDEV_EGRESS;
}

enum nchain layout_from_chain(enum vnic_kind kind)
{
	return kind == VNIC_KIND_MACVTAP || kind == VNIC_KIND_MACVLAN ? C_EG : C_IN;
}


/* nft(8)'s comment userdata: TLV type 0 (NFTNL_UDATA_*_COMMENT), the string
 * with its NUL; 0 if it does not fit. */
size_t udata_comment(const char *s, uint8_t *out, size_t max)
{
	size_t len = strlen(s) + 1;

	if (len + 2 > max || len > 255)
		return 0;
	out[0] = 0;
	out[1] = (uint8_t)len;
	memcpy(out + 2, s, len);
	return len + 2;
}

static int put_obj(struct nbatch *b, uint16_t type, uint16_t flags,
		   void *obj, void (*build)(struct nlmsghdr *, const void *),
		   void (*freeobj)(void *))
{
	struct nlmsghdr *nlh = nbatch_msg(b, type, flags);

	if (!nlh) {
		freeobj(obj);
		return -ENOMEM;
	}
	build(nlh, obj);
	nbatch_end(b, nlh);
	freeobj(obj);
	return 0;
}

#define PUT(b, type, flags, obj, kind)						\
	put_obj(b, type, flags, obj,						\
		(void (*)(struct nlmsghdr *, const void *))nftnl_##kind##_nlmsg_build_payload, \
		(void (*)(void *))nftnl_##kind##_free)

/* create: a new table (NLM_F_EXCL: one made meanwhile by someone else is
 * not taken over); else a claim of the existing one. */
int layout_table(struct vnic_nft *n, struct nbatch *b, bool create)
{
	struct nftnl_table *t = nftnl_table_alloc();
	uint32_t flags = 0;
	uint8_t ud[260];
	size_t udlen;

	if (!t)
		return -ENOMEM;
	if (!(n->flags & VNIC_NFT_NO_OWNER) && (n->features & VNIC_NFT_FEAT_OWNER))
		flags |= NFT_TABLE_F_OWNER;
	if (!(n->flags & VNIC_NFT_NO_PERSIST) && (n->features & VNIC_NFT_FEAT_PERSIST))
		flags |= NFT_TABLE_F_PERSIST;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, n->table);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_NETDEV);
	nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, flags);
	udlen = udata_comment("managed by libvnic", ud, sizeof(ud));
	if (udlen)
		nftnl_table_set_data(t, NFTNL_TABLE_USERDATA, ud, (uint32_t)udlen);
	return PUT(b, NFT_MSG_NEWTABLE, NLM_F_CREATE | (create ? NLM_F_EXCL : 0),
		   t, table);
}

/* A guest has at least one NIC: the guests set has room for the state
 * element besides. */
uint32_t layout_set_size(const struct vnic_nft *n, enum nset s)
{
	uint64_t size = (uint64_t)n->capacity * desc_of(s)->per_nic;

	if (!size || !(n->features & VNIC_NFT_FEAT_SET_SIZE))
		return 0;
	size += s == S_GUESTS;
	return size > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)size;
}

/*
 * A set with a size gets the kernel's fixed-size hash (nft_hash), whose
 * buckets are made once: filling it costs no rehash, where the resizable
 * one (nft_rhash) doubles its table over and over in a large first batch.
 * The size is also the most elements the set takes; change_end() raises it
 * before a batch would pass it.
 */
int layout_set(struct vnic_nft *n, struct nbatch *b, enum nset s, uint32_t size)
{
	const struct nset_desc *d = desc_of(s);
	struct nftnl_set *set = nftnl_set_alloc();
	char name[16];

	if (!set)
		return -ENOMEM;
	nftnl_set_set_str(set, NFTNL_SET_TABLE, n->table);
	nftnl_set_set_str(set, NFTNL_SET_NAME, set_name(s, name, sizeof(name)));
	nftnl_set_set_u32(set, NFTNL_SET_FAMILY, NFPROTO_NETDEV);
	nftnl_set_set_u32(set, NFTNL_SET_KEY_TYPE, d->key_type);
	nftnl_set_set_u32(set, NFTNL_SET_KEY_LEN, d->key_len);
	nftnl_set_set_u32(set, NFTNL_SET_FLAGS, d->flags);
	nftnl_set_set_u32(set, NFTNL_SET_ID, (uint32_t)s + 1);
	if (size)
		nftnl_set_set_u32(set, NFTNL_SET_DESC_SIZE, size);
	/*
	 * Link-layer fields are matched as raw payload: nft 1.0.6 guards its
	 * "ether" matches with "meta iiftype ether", which never matches in
	 * an egress chain.  Their sets are declared as nft(8) declares
	 * "typeof iif . @ll,48,48" and "typeof @ll,96,16" (the userdata bytes
	 * are what nft 1.0.6 writes for those), so the ruleset and its nft -f
	 * rendering are the same.
	 */
	if (s == S_MAC)
		nftnl_set_set_data(set, NFTNL_SET_USERDATA, typeof_macs,
				   sizeof(typeof_macs));
	if (s == S_L2OK)
		nftnl_set_set_data(set, NFTNL_SET_USERDATA, typeof_l2,
				   sizeof(typeof_l2));
	/* nft(8) prints host-order keys right only when told their order. */
	if (d->key_type == DT_IFINDEX || d->key_type == DT_MARK) {
		static const uint8_t ud[] = { 0 /* KEYBYTEORDER */, 4, 1, 0, 0, 0 };

		nftnl_set_set_data(set, NFTNL_SET_USERDATA, ud, sizeof(ud));
	}
	if (d->flags & NFT_SET_OBJECT)
		nftnl_set_set_u32(set, NFTNL_SET_OBJ_TYPE, NFT_OBJECT_COUNTER);
	if (d->data_type == NFT_DATA_VERDICT) {
		nftnl_set_set_u32(set, NFTNL_SET_DATA_TYPE, NFT_DATA_VERDICT);
		nftnl_set_set_u32(set, NFTNL_SET_DATA_LEN, 0);
	}
	if (s == S_L2OK) {
		static const uint16_t types[] = { ETH_P_IP, ETH_P_ARP, ETH_P_IPV6 };
		unsigned int i;

		for (i = 0; i < ARRAY_SIZE(types); i++) {
			struct nftnl_set_elem *e = nftnl_set_elem_alloc();
			uint16_t be = htons(types[i]);

			if (!e) {
				nftnl_set_free(set);
				return -ENOMEM;
			}
			nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, &be, sizeof(be));
			nftnl_set_elem_add(set, e);
		}
	}
	{
		struct nlmsghdr *nlh = nbatch_msg(b, NFT_MSG_NEWSET, NLM_F_CREATE);

		if (!nlh) {
			nftnl_set_free(set);
			return -ENOMEM;
		}
		nftnl_set_nlmsg_build_payload(nlh, set);
		nbatch_end(b, nlh);
		if (s == S_L2OK) {
			nlh = nbatch_msg(b, NFT_MSG_NEWSETELEM, NLM_F_CREATE);
			if (nlh) {
				nftnl_set_elems_nlmsg_build_payload(nlh, set);
				nbatch_end(b, nlh);
			}
		}
		nftnl_set_free(set);
		return nlh ? 0 : -ENOMEM;
	}
}

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
		nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set_name(s, name, sizeof(name)));
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
			nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain);
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
		nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_SET_NAME, nset_descs[S_CTR].name);
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

/* DHCP discover/request from 0.0.0.0:68 to port 67 skips the IPv4 check. */
static void r_dhcp_client(struct rb *rb, uint32_t key)
{
	uint32_t zero = 0;

	need_proto(rb, ETH_P_IP);
	payload(rb, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG32_01);
	cmp(rb, NFT_REG32_01, NFT_CMP_EQ, &zero, 4);
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

static void r_dhcp_server(struct rb *rb, uint32_t key, uint16_t proto, uint16_t port)
{
	need_proto(rb, proto);
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
		nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, nset_descs[S_CUSTOM].name);
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


/* The rules of each from-guest switch, in the order a mask chain has them. */
static const struct {
	uint32_t sw;
	rule_fn fn;
} switch_rules[] = {
	{ VNIC_SW_L2_ALLOW, r_l2 },
	{ VNIC_SW_MAC_SPOOF, r_mac },
	{ VNIC_SW_IP_SPOOF, r_dhcp_client },
	{ VNIC_SW_IP_SPOOF, r_ip4 },
	{ VNIC_SW_IP6_SPOOF, r_dad_ns },
	{ VNIC_SW_IP6_SPOOF, r_dad_mld },
	{ VNIC_SW_IP6_SPOOF, r_ip6 },
	{ VNIC_SW_ARP_SPOOF, r_arp_mac },
	{ VNIC_SW_ARP_SPOOF, r_arp_ip },
	{ VNIC_SW_DHCP_SERVER, r_dhcp4_server },
	{ VNIC_SW_DHCP_SERVER, r_dhcp6_server },
	{ VNIC_SW_RA_GUARD, r_ra_adv },
	{ VNIC_SW_RA_GUARD, r_ra_redirect },
};

/* A rule of chain to fill with expressions (rb.err on allocation failure). */
static struct rb rule_begin(const struct vnic_nft *n, const char *chain)
{
	struct rb rb = { .r = nftnl_rule_alloc() };

	if (!rb.r) {
		rb.err = -ENOMEM;
		return rb;
	}
	nftnl_rule_set_str(rb.r, NFTNL_RULE_TABLE, n->table);
	nftnl_rule_set_str(rb.r, NFTNL_RULE_CHAIN, chain);
	nftnl_rule_set_u32(rb.r, NFTNL_RULE_FAMILY, NFPROTO_NETDEV);
	return rb;
}

/* Into b, appended or put first in its chain; freed either way. */
static int rule_end(struct nbatch *b, struct rb *rb, bool prepend)
{
	if (rb->err) {
		if (rb->r)
			nftnl_rule_free(rb->r);
		return rb->err;
	}
	rule_tag(rb->r);
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
static int mask_rule(struct vnic_nft *n, struct nbatch *b, const char *chain,
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
static int chain_rules(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		       const char *name)
{
	uint32_t key = c == C_IN ? NFT_META_IIF : NFT_META_OIF;
	uint32_t mask;
	int err = 0;

	for (mask = 1; mask <= SW_FROM && !err; mask++)
		if (swmask_ready(n, mask))
			err = mask_rule(n, b, name, c, mask, false);
	return err ? err : add_rule(n, b, name, r_custom, key);
}

int layout_to_rule(struct vnic_nft *n, struct nbatch *b, const char *chain)
{
	return add_rule(n, b, chain, r_promisc, NFT_META_OIF);
}

/*
 * The devices of a base chain.  A netdev base chain is created with its
 * first devices; after that, adding or removing devices is a chain update
 * (Linux 6.4).  A transaction may create or update a chain once, so the
 * changes of a whole batch are noted here and emitted together at its end;
 * a device removed and added back within one batch cancels out.
 */
struct shard *shard_get(struct vnic_nft *n, enum nchain c, unsigned int k)
{
	struct shard *sh;

	if (k >= n->nshards[c]) {
		sh = realloc(n->shards[c], (k + 1) * sizeof(*sh));
		if (!sh)
			return NULL;
		memset(sh + n->nshards[c], 0, (k + 1 - n->nshards[c]) * sizeof(*sh));
		n->shards[c] = sh;
		for (; n->nshards[c] <= k; n->nshards[c]++)
			snprintf(sh[n->nshards[c]].name, sizeof(sh->name), "%s%u",
				 nchain_names[c], n->nshards[c]);
	}
	return &n->shards[c][k];
}

void shards_clear(struct vnic_nft *n)
{
	unsigned int c, k;

	for (c = 0; c < C__MAX; c++) {
		for (k = 0; k < n->nshards[c]; k++) {
			devlist_clear(&n->shards[c][k].devs);
			devlist_clear(&n->shards[c][k].add);
			devlist_clear(&n->shards[c][k].del);
		}
		free(n->shards[c]);
		n->shards[c] = NULL;
		n->nshards[c] = 0;
	}
}

static unsigned int live_count(const struct devlist *d)
{
	unsigned int i, k = 0;

	for (i = 0; i < d->n; i++)
		k += d->live[i];
	return k;
}

static unsigned int shard_load(const struct shard *sh)
{
	return live_count(&sh->devs) + live_count(&sh->add) - live_count(&sh->del);
}

static struct shard *shard_with(struct vnic_nft *n, enum nchain c,
				const char *dev, size_t list)
{
	unsigned int k;

	for (k = 0; k < n->nshards[c]; k++)
		if (devlist_has((const struct devlist *)
				((const char *)&n->shards[c][k] + list), dev))
			return &n->shards[c][k];
	return NULL;
}

#define IN(field) offsetof(struct shard, field)

/* A device to hook: the first shard with room takes it. */
static int note_add(struct vnic_nft *n, enum nchain c, const char *dev)
{
	struct shard *sh = shard_with(n, c, dev, IN(del));
	unsigned int k;

	if (sh) {			/* removed and added back: no change */
		devlist_del(&sh->del, dev);
		return 0;
	}
	if (shard_with(n, c, dev, IN(devs)) || shard_with(n, c, dev, IN(add)))
		return 0;
	for (k = 0; k < n->nshards[c]; k++)
		if (shard_load(&n->shards[c][k]) < SHARD_DEVS)
			break;
	sh = shard_get(n, c, k);
	return sh ? devlist_add(&sh->add, dev) : -ENOMEM;
}

static int note_del(struct vnic_nft *n, enum nchain c, const char *dev)
{
	struct shard *sh = shard_with(n, c, dev, IN(add));

	if (sh) {
		devlist_del(&sh->add, dev);
		return 0;
	}
	/* Only hooked devices: the kernel refuses removing another. */
	sh = shard_with(n, c, dev, IN(devs));
	return sh ? devlist_add(&sh->del, dev) : 0;
}

int layout_chain_devs(struct vnic_nft *n, enum nchain c, const char **devs,
		      unsigned int ndevs, bool del)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < ndevs && !err; i++)
		err = del ? note_del(n, c, devs[i]) : note_add(n, c, devs[i]);
	return err;
}

static const char **live_names(const struct devlist *d, unsigned int *n)
{
	const char **v = calloc(d->n + 1, sizeof(*v));
	unsigned int i;

	*n = 0;
	for (i = 0; v && i < d->n; i++)
		if (d->live[i])
			v[(*n)++] = d->names[i];
	return v;
}

static int chain_msg(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		     struct shard *sh, bool del)
{
	bool create = !del && !sh->ready;
	struct nftnl_chain *ch;
	unsigned int k, i;
	const char **devs = live_names(del ? &sh->del : &sh->add, &k);
	int err;

	if (!devs)
		return -ENOMEM;
	if (!k || (del && !sh->ready)) {
		free(devs);
		return 0;
	}
	ch = nftnl_chain_alloc();
	if (!ch) {
		free(devs);
		return -ENOMEM;
	}
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, n->table);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, sh->name);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY, NFPROTO_NETDEV);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, chain_hooks[c]);
	nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, 0);
	nftnl_chain_set_array(ch, NFTNL_CHAIN_DEVICES, devs);
	if (create) {
		nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, "filter");
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	}
	err = PUT(b, del ? NFT_MSG_DELCHAIN : NFT_MSG_NEWCHAIN,
		  del ? 0 : NLM_F_CREATE, ch, chain);
	for (i = 0; !err && i < k; i++) {
		if (del)
			devlist_del(&sh->devs, devs[i]);
		else
			err = devlist_add(&sh->devs, devs[i]);
	}
	free(devs);
	if (!err && create) {
		err = chain_rules(n, b, c, sh->name);
		sh->ready = true;	/* re-read if the commit fails */
	}
	return err;
}

/* The whole chain goes: the kernel will not hook devices again into a
 * netdev chain whose device list was emptied.  Its rules go first. */
static int chain_delete(struct vnic_nft *n, struct nbatch *b, struct shard *sh)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_chain *ch;
	int err;

	if (!r)
		return -ENOMEM;
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, n->table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, sh->name);
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_NETDEV);
	err = PUT(b, NFT_MSG_DELRULE, 0, r, rule);
	ch = err ? NULL : nftnl_chain_alloc();
	if (!ch)
		return err ? err : -ENOMEM;
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, n->table);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, sh->name);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY, NFPROTO_NETDEV);
	err = PUT(b, NFT_MSG_DELCHAIN, 0, ch, chain);
	devlist_clear(&sh->devs);
	sh->ready = false;
	return err;
}

int layout_flush_devs(struct vnic_nft *n, struct nbatch *b)
{
	unsigned int c, k;
	int err = 0;

	for (c = 0; c < C__MAX && !err; c++) {
		for (k = 0; k < n->nshards[c] && !err; k++) {
			struct shard *sh = &n->shards[c][k];
			unsigned int adds = live_count(&sh->add);
			unsigned int dels = live_count(&sh->del);

			if (sh->ready && dels && !adds &&
			    dels == live_count(&sh->devs)) {
				err = chain_delete(n, b, sh);
				continue;
			}
			/* Add before removing: the chain never runs empty. */
			err = chain_msg(n, b, c, sh, false);
			if (!err)
				err = chain_msg(n, b, c, sh, true);
		}
	}
	layout_drop_devs(n);
	return err;
}

void layout_drop_devs(struct vnic_nft *n)
{
	unsigned int c, k;

	for (c = 0; c < C__MAX; c++)
		for (k = 0; k < n->nshards[c]; k++) {
			devlist_clear(&n->shards[c][k].add);
			devlist_clear(&n->shards[c][k].del);
		}
}

int layout_skeleton(struct vnic_nft *n, struct nbatch *b)
{
	unsigned int s;
	int err = 0;

	for (s = 0; s < S__MAX && !err; s++)
		err = layout_set(n, b, s, n->size[s]);
	return err;
}

/* --- prefix hooks --------------------------------------------------------- */

static int regular_chain(struct vnic_nft *n, struct nbatch *b, const char *name)
{
	struct nftnl_chain *ch = nftnl_chain_alloc();

	if (!ch)
		return -ENOMEM;
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, n->table);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, name);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY, NFPROTO_NETDEV);
	return PUT(b, NFT_MSG_NEWCHAIN, NLM_F_CREATE, ch, chain);
}

/*
 * What a prefix's base chains jump to: the same rules as the shards', in
 * regular chains every prefix shares.  A prefix matches devices of every
 * kind, so which rules apply is told by the device's kind, not its hook.
 */
int layout_pfx_shared(struct vnic_nft *n, struct nbatch *b)
{
	int err = regular_chain(n, b, PFX_FROM_IN);

	if (!err)
		err = chain_rules(n, b, C_IN, PFX_FROM_IN);
	if (!err)
		err = regular_chain(n, b, PFX_FROM_EG);
	if (!err)
		err = chain_rules(n, b, C_EG, PFX_FROM_EG);
	if (!err)
		err = regular_chain(n, b, PFX_TO);
	if (!err)
		err = layout_to_rule(n, b, PFX_TO);
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
int layout_pfx_guard(struct vnic_nft *n, struct nbatch *b, enum nchain c,
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

/* --- the chains of the from-guest switches -------------------------------- */

void swchain_name(enum nchain c, uint32_t mask, char *buf, size_t len)
{
	snprintf(buf, len, "sw_%s_%02x", nchain_names[c], mask & SW_FROM);
}

/* "sw_7f" -> 0x7f; 0 for another name. */
uint32_t swmask_parse(const char *set)
{
	unsigned long v;
	char *end;

	if (strncmp(set, "sw_", 3) || strlen(set) != 5)
		return 0;
	v = strtoul(set + 3, &end, 16);
	return *end || (v & ~(unsigned long)SW_FROM) ? 0 : (uint32_t)v;
}

bool swmask_ready(const struct vnic_nft *n, uint32_t mask)
{
	return n->swmasks[mask / 8] & (1u << (mask % 8));
}

void swmask_mark(struct vnic_nft *n, uint32_t mask)
{
	n->swmasks[mask / 8] |= (uint8_t)(1u << (mask % 8));
}

static int sw_chain(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		    uint32_t mask)
{
	uint32_t key = c == C_IN ? NFT_META_IIF : NFT_META_OIF;
	unsigned int i;
	char name[16];
	int err;

	swchain_name(c, mask, name, sizeof(name));
	err = regular_chain(n, b, name);
	for (i = 0; !err && i < ARRAY_SIZE(switch_rules); i++)
		if (switch_rules[i].sw & mask)
			err = add_rule(n, b, name, switch_rules[i].fn, key);
	return err;
}

/*
 * What a switch mask needs, made the first time a NIC has it: its set, its
 * chain per kind of base chain, and its rule in every base chain that
 * exists (a chain made later gets the rules of every mask).  Few masks are
 * in use on a host (one, with the defaults), so these stay with the table.
 * Adding a NIC then adds an element to a plain set: unlike an element of a
 * verdict map, it does not make the kernel validate every jump of the
 * table again, which walks every element of such a map.
 */
int layout_sw_mask(struct vnic_nft *n, struct nbatch *b, uint32_t mask)
{
	unsigned int c, k;
	int err;

	uint64_t size;

	mask &= SW_FROM;
	if (!mask || swmask_ready(n, mask))
		return 0;
	/* Made in the batch that fills it, so it cannot grow before: room
	 * for every NIC installed and every NIC of the change. */
	size = layout_set_size(n, S_MASK(mask));
	while (size && size < (uint64_t)n->nelem[S_CTR] + n->change_nics)
		size *= 2;
	n->size[S_MASK(mask)] = size > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)size;
	err = layout_set(n, b, S_MASK(mask), n->size[S_MASK(mask)]);
	for (c = 0; c < C__MAX && !err; c++)
		err = sw_chain(n, b, (enum nchain)c, mask);
	for (c = 0; c < C__MAX && !err; c++)
		for (k = 0; k < n->nshards[c] && !err; k++)
			if (n->shards[c][k].ready)
				err = mask_rule(n, b, n->shards[c][k].name,
						(enum nchain)c, mask, true);
	if (!err && n->pfx_shared)
		err = mask_rule(n, b, PFX_FROM_IN, C_IN, mask, true);
	if (!err && n->pfx_shared)
		err = mask_rule(n, b, PFX_FROM_EG, C_EG, mask, true);
	if (!err)
		swmask_mark(n, mask);	/* re-read if the commit fails */
	return err;
}
