// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table every guest shares, made from the schema (schema.c): the table
 * itself, its sets, the regular chains hook prefixes jump to, and what a
 * switch mask needs.  Adding a guest adds set elements (and devices to the
 * base chains, shard.c), never rules, so its cost does not grow with the
 * number of guests, and a packet costs a few hash lookups whatever the
 * number of guests.
 */
#include <errno.h>
#include <stdint.h>
#include <libnftnl/chain.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft/internal.h"

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
	nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, flags);
	udlen = udata_comment("managed by libvnic", ud, sizeof(ud));
	if (table_id(t, n->table) ||
	    (udlen && nftnl_table_set_data(t, NFTNL_TABLE_USERDATA, ud,
					   (uint32_t)udlen) < 0)) {
		nftnl_table_free(t);
		return -ENOMEM;
	}
	return PUT(b, NFT_MSG_NEWTABLE, NLM_F_CREATE | (create ? NLM_F_EXCL : 0),
		   t, table);
}

/* Set s's constant elements (its description's) into set. */
static int set_const_elems(struct nftnl_set *set, const struct nset_desc *d)
{
	uint32_t i;

	for (i = 0; i < d->nelems; i++) {
		struct nftnl_set_elem *e = nftnl_set_elem_alloc();

		if (!e)
			return -ENOMEM;
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, d->elems + i * d->key_len,
				   d->key_len);
		nftnl_set_elem_add(set, e);
	}
	return 0;
}

/*
 * NEWSET for set s, as its description says, then its constant elements.
 * A set with a size gets the kernel's fixed-size hash (nft_hash), whose
 * buckets are made once: filling it costs no rehash, where the resizable
 * one (nft_rhash) doubles its table over and over in a large first batch.
 * The size is also the most elements the set takes; change_end() raises it
 * before a batch would pass it.
 */
int layout_set(struct vnic_nft *n, struct nbatch *b, enum nset s, uint32_t size)
{
	const struct nset_desc *d = nset_desc(s);
	struct nftnl_set *set = nftnl_set_alloc();
	struct nlmsghdr *nlh;
	char name[16];
	int err;

	if (!set)
		return -ENOMEM;
	err = set_id(set, n->table, set_name(s, name, sizeof(name)));
	nftnl_set_set_u32(set, NFTNL_SET_KEY_TYPE, d->key_type);
	nftnl_set_set_u32(set, NFTNL_SET_KEY_LEN, d->key_len);
	nftnl_set_set_u32(set, NFTNL_SET_FLAGS, d->flags);
	nftnl_set_set_u32(set, NFTNL_SET_ID, (uint32_t)s + 1);
	if (size)
		nftnl_set_set_u32(set, NFTNL_SET_DESC_SIZE, size);
	if (!err && d->udata &&
	    nftnl_set_set_data(set, NFTNL_SET_USERDATA, d->udata, d->udata_len) < 0)
		err = -ENOMEM;
	if (d->flags & NFT_SET_OBJECT)
		nftnl_set_set_u32(set, NFTNL_SET_OBJ_TYPE, d->obj_type);
	if (d->flags & NFT_SET_MAP) {
		nftnl_set_set_u32(set, NFTNL_SET_DATA_TYPE, d->data_type);
		nftnl_set_set_u32(set, NFTNL_SET_DATA_LEN, 0);
	}
	if (!err)
		err = set_const_elems(set, d);
	nlh = err ? NULL : nbatch_msg(b, NFT_MSG_NEWSET, NLM_F_CREATE);
	if (nlh) {
		nftnl_set_nlmsg_build_payload(nlh, set);
		nbatch_end(b, nlh);
	}
	if (nlh && d->nelems) {
		nlh = nbatch_msg(b, NFT_MSG_NEWSETELEM, NLM_F_CREATE);
		if (nlh) {
			nftnl_set_elems_nlmsg_build_payload(nlh, set);
			nbatch_end(b, nlh);
		}
	}
	nftnl_set_free(set);
	return err ? err : nlh ? 0 : -ENOMEM;
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
	if (chain_id(ch, n->table, name)) {
		nftnl_chain_free(ch);
		return -ENOMEM;
	}
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
		err = rules_base_chain(n, b, C_IN, PFX_FROM_IN);
	if (!err)
		err = regular_chain(n, b, PFX_FROM_EG);
	if (!err)
		err = rules_base_chain(n, b, C_EG, PFX_FROM_EG);
	if (!err)
		err = regular_chain(n, b, PFX_TO);
	if (!err)
		err = rule_to_guest(n, b, PFX_TO);
	return err;
}

/* --- the chains of the from-guest switches -------------------------------- */

static int sw_chain(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		    uint32_t mask)
{
	char name[16];
	int err;

	swchain_name(c, mask, name, sizeof(name));
	err = regular_chain(n, b, name);
	return err ? err : rules_switch(n, b, name, c, mask);
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
				err = rule_mask(n, b, n->shards[c][k].name,
						(enum nchain)c, mask, true);
	if (!err && n->pfx_shared)
		err = rule_mask(n, b, PFX_FROM_IN, C_IN, mask, true);
	if (!err && n->pfx_shared)
		err = rule_mask(n, b, PFX_FROM_EG, C_EG, mask, true);
	if (!err)
		swmask_mark(n, mask);	/* re-read if the commit fails */
	return err;
}
