// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table's schema, at the bottom of nft/: the description of every set
 * (name, key, flags, data, the userdata nft(8) reads, constant elements,
 * size per NIC), the base chains' names and hooks, the names of the sets
 * and chains of the switch masks, and which masks exist.  Everything above
 * builds or checks the table from these tables instead of naming sets.
 *
 *   in  ingress of veth host ends and taps        from the guest, key iif
 *   eg  egress of macvtaps and macvlans           from the guest, key oif
 *   to  egress of veth host ends and taps         to the guest,   key oif
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nft/internal.h"

#define CONCAT(a, b)	((a) << 6 | (b))

/*
 * Link-layer fields are matched as raw payload: nft 1.0.6 guards its
 * "ether" matches with "meta iiftype ether", which never matches in an
 * egress chain.  Their sets are declared as nft(8) declares
 * "typeof iif . @ll,48,48" and "typeof @ll,96,16" (the userdata bytes are
 * what nft 1.0.6 writes for those), so the ruleset and its nft -f
 * rendering are the same.
 */
static const uint8_t typeof_macs[] = {
	0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x03, 0x40, 0x00, 0x04, 0x0d, 0x00,
	0x00, 0x00, 0x01, 0x38, 0x00, 0x0e, 0x00, 0x04, 0x09, 0x00, 0x00, 0x00,
	0x01, 0x06, 0x00, 0x04, 0x04, 0x00, 0x00, 0x00, 0x01, 0x26, 0x00, 0x04,
	0x07, 0x00, 0x00, 0x00, 0x01, 0x1e, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x01, 0x00, 0x00, 0x00,
	0x03, 0x04, 0x30, 0x00, 0x00, 0x00, 0x04, 0x04, 0x30, 0x00, 0x00, 0x00,
};

/* "typeof iif . @nh,64,128": IPv6 addresses as raw 128-bit payload, so
 * that one set serves the IPv6 source (network header, offset 8) and a
 * neighbour advertisement's target (transport header, offset 8): nft 1.0.6
 * has no typed field for the latter and refuses to look up a raw one in a
 * set of ipv6_addr keys.  The bytes of typeof_macs, base 2 (network
 * header), offset 64, length 128 bits. */
static const uint8_t typeof_ip6[] = {
	0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x03, 0x40, 0x00, 0x04, 0x0d, 0x00,
	0x00, 0x00, 0x01, 0x38, 0x00, 0x0e, 0x00, 0x04, 0x09, 0x00, 0x00, 0x00,
	0x01, 0x06, 0x00, 0x04, 0x04, 0x00, 0x00, 0x00, 0x01, 0x26, 0x00, 0x04,
	0x07, 0x00, 0x00, 0x00, 0x01, 0x1e, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x02, 0x00, 0x00, 0x00,
	0x03, 0x04, 0x40, 0x00, 0x00, 0x00, 0x04, 0x04, 0x80, 0x00, 0x00, 0x00,
};

static const uint8_t typeof_l2[] = {
	0x00, 0x04, 0x02, 0x00, 0x00, 0x00, 0x03, 0x26, 0x00, 0x04, 0x07, 0x00,
	0x00, 0x00, 0x01, 0x1e, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04,
	0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x01, 0x00, 0x00, 0x00, 0x03, 0x04,
	0x60, 0x00, 0x00, 0x00, 0x04, 0x04, 0x10, 0x00, 0x00, 0x00,
};

/* nft(8) prints host-order keys right only when told their order
 * (NFTNL_UDATA_SET_KEYBYTEORDER: host). */
static const uint8_t host_order[] = { 0, 4, 1, 0, 0, 0 };

#define UD(a)		.udata = (a), .udata_len = sizeof(a)

/* The ethertypes l2-allow keeps (ETH_P_IP, ETH_P_ARP, ETH_P_IPV6), in
 * network order. */
static const uint8_t l2_types[] = { 0x08, 0x00, 0x08, 0x06, 0x86, 0xdd };

/* Sizes per NIC: an element each in the NIC-keyed sets, room for two IPv4
 * addresses and, in ip6s, for one global, the link-local and one more. */
const struct nset_desc nset_descs[S__MAX] = {
	[S_PROMISC] = { .name = "no_promisc", .key_type = DT_IFINDEX, .key_len = 4,
			UD(host_order), .render_type = "iface_index", .per_nic = 1 },
	[S_MAC] = { .name = "macs", .key_type = CONCAT(DT_IFINDEX, DT_INTEGER),
		    .key_len = 12, UD(typeof_macs),
		    .render_type = "typeof iif . @ll,48,48", .per_nic = 1 },
	[S_IP4] = { .name = "ip4s", .key_type = CONCAT(DT_IFINDEX, DT_IPADDR),
		    .key_len = 8, .render_type = "iface_index . ipv4_addr",
		    .per_nic = 2 },
	[S_IP6] = { .name = "ip6s", .key_type = CONCAT(DT_IFINDEX, DT_INTEGER),
		    .key_len = 20, UD(typeof_ip6),
		    .render_type = "typeof iif . @nh,64,128", .per_nic = 3 },
	[S_CTR] = { .name = "drops", .key_type = DT_IFINDEX, .key_len = 4,
		    .flags = NFT_SET_OBJECT, .obj_type = NFT_OBJECT_COUNTER,
		    UD(host_order), .render_type = "iface_index : counter",
		    .per_nic = 1 },
	[S_CUSTOM] = { .name = "custom", .key_type = DT_IFINDEX, .key_len = 4,
		       .flags = NFT_SET_MAP, .data_type = NFT_DATA_VERDICT,
		       UD(host_order), .render_type = "iface_index : verdict",
		       .per_nic = 1 },
	[S_GUESTS] = { .name = "guests", .key_type = DT_MARK, .key_len = 4,
		       UD(host_order), .render_type = "mark", .per_nic = 1 },
	[S_L2OK] = { .name = "l2_allowed", .key_type = DT_INTEGER, .key_len = 2,
		     .flags = NFT_SET_CONSTANT, UD(typeof_l2),
		     .elems = l2_types, .nelems = 3,
		     .render_type = "typeof @ll,96,16" },
};

/* Each set of the NICs of a switch mask, "sw_7f". */
static const struct nset_desc mask_desc = {
	.key_type = DT_IFINDEX, .key_len = 4, UD(host_order),
	.render_type = "iface_index", .per_nic = 1,
};

const struct nset_desc *nset_desc(enum nset s)
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

/* A guest has at least one NIC: the guests set has room for the state
 * element besides. */
uint32_t layout_set_size(const struct vnic_nft *n, enum nset s)
{
	uint64_t size = (uint64_t)n->capacity * nset_desc(s)->per_nic;

	if (!size || !(n->features & VNIC_NFT_FEAT_SET_SIZE))
		return 0;
	size += s == S_GUESTS;
	return size > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)size;
}

const char *const nchain_names[C__MAX] = { "in", "eg" };

static const uint32_t chain_hooks[C__MAX] = {
	NF_NETDEV_INGRESS, NF_NETDEV_EGRESS,
};

uint32_t nchain_hook(enum nchain c)
{
	return chain_hooks[c];
}

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

/* --- the switch masks ---------------------------------------------------- */

void swchain_name(enum nchain c, uint32_t mask, char *buf, size_t len)
{
	snprintf(buf, len, "sw_%s_%02x", nchain_names[c], mask & SW_FROM);
}

/* "sw_37f" -> 0x37f; 0 for another name, or one set_name() would not
 * give (the digits as "sw_%02x" writes them). */
uint32_t swmask_parse(const char *set)
{
	char canon[16];
	unsigned long v;
	char *end;

	if (strncmp(set, "sw_", 3) || strlen(set) < 5 || strlen(set) > 6 ||
	    !isxdigit((unsigned char)set[3]))
		return 0;
	v = strtoul(set + 3, &end, 16);
	if (*end || !v || (v & ~(unsigned long)SW_FROM))
		return 0;
	snprintf(canon, sizeof(canon), "sw_%02lx", v);
	return strcmp(canon, set) ? 0 : (uint32_t)v;
}

bool swmask_ready(const struct vnic_nft *n, uint32_t mask)
{
	return n->swmasks[mask / 8] & (1u << (mask % 8));
}

void swmask_mark(struct vnic_nft *n, uint32_t mask)
{
	n->swmasks[mask / 8] |= (uint8_t)(1u << (mask % 8));
}
