// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A table named like libvnic's, checked before anything is written to it
 * or believed from it.  libvnic makes its table, its sets and its first
 * change in one batch, so a table of its own always has the comment
 * "managed by libvnic" and every set of the layout, of the layout's types;
 * its guests set holds the state element and one "NAME DIGEST" element per
 * guest, and the state's digest is the XOR of the guests' parts.  A table
 * where one of these does not hold was made by hand or damaged: it is
 * refused with -EUCLEAN and a message that says what is wrong and how to
 * start afresh, and nothing is written (not even the claim).
 *
 * Not checked (the next sync or a repair is the place for them): the rules
 * of the chains, the elements of the NIC-keyed sets, and base chains that
 * were deleted whole (libvnic deletes empty ones itself, so their absence
 * does not tell).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/chain.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft/read.h"

#define TABLE_COMMENT "managed by libvnic"

__attribute__((format(printf, 2, 3)))
static int damaged(struct vnic_nft *n, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* Deleting it would fail too: say who holds it first. */
	if (n->tflags & NFT_TABLE_F_OWNER)
		return vnic_set_err(n->ctx, -EPERM, VNIC_STEP_DUMP, -1, NULL,
				    "table netdev %s is owned by another process, "
				    "and is not libvnic's (%s)", n->table, what);
	/* What a later refusal of the table opened anyway says (damaged.c):
	 * the damage, without this call's step, advice and errno.  The last
	 * call of a read is its damage: a torn read's earlier one is not. */
	snprintf(n->damage, sizeof(n->damage), "table netdev %s: %s", n->table,
		 what);
	n->damage_final = false;
	return refuse_table(n, n->damage);
}

/* damaged()'s err for a set of another type under a set's name: rules
 * refer to it, so no sync can make it again. */
static int final(struct vnic_nft *n, int err)
{
	n->damage_final = true;
	return err;
}

bool check_table_comment(const uint8_t *ud, uint32_t len)
{
	/* nft(8)'s comment TLV: type 0, length with the NUL, the string. */
	return ud && len >= 2 + sizeof(TABLE_COMMENT) && ud[0] == 0 &&
	       ud[1] == sizeof(TABLE_COMMENT) &&
	       !memcmp(ud + 2, TABLE_COMMENT, sizeof(TABLE_COMMENT));
}

/* --- sets ----------------------------------------------------------------- */

struct set_read {
	struct vnic_nft *n;
	bool seen[S__MAX];
	unsigned int count;		/* sets of any name */
	int err;
};

static const char *type_str(uint32_t t, char *buf, size_t len)
{
	snprintf(buf, len, "0x%x", t);
	return buf;
}

/* Set s as the kernel reports it, against its description. */
static int check_one(struct vnic_nft *n, struct nftnl_set *s,
		     const char *name, const struct nset_desc *d)
{
	uint32_t kt = nftnl_set_get_u32(s, NFTNL_SET_KEY_TYPE);
	uint32_t kl = nftnl_set_get_u32(s, NFTNL_SET_KEY_LEN);
	uint32_t fl = nftnl_set_get_u32(s, NFTNL_SET_FLAGS);
	char a[16], b[16];

	if (kt != d->key_type || kl != d->key_len)
		return final(n, damaged(n, "set %s has key type %s of %u bytes, "
					"expected %s of %u (%s)", name,
					type_str(kt, a, sizeof(a)), kl,
					type_str(d->key_type, b, sizeof(b)),
					d->key_len, d->render_type));
	if (fl != d->flags)
		return final(n, damaged(n, "set %s has flags 0x%x, expected 0x%x",
					name, fl, d->flags));
	if ((d->flags & NFT_SET_MAP) &&
	    nftnl_set_get_u32(s, NFTNL_SET_DATA_TYPE) != d->data_type)
		return final(n, damaged(n, "map %s does not map to %s", name,
					d->render_type));
	if ((d->flags & NFT_SET_OBJECT) &&
	    nftnl_set_get_u32(s, NFTNL_SET_OBJ_TYPE) != d->obj_type)
		return final(n, damaged(n, "map %s does not map to counters", name));
	return 0;
}

/* A set's size from its description, and the masks whose sets exist (a
 * mask's set, chains and rules are made in one batch).  Fed by the one set
 * dump check_sets() makes; sizes_reset() first. */
static void sizes_reset(struct vnic_nft *n)
{
	memset(n->size, 0, sizeof(n->size));
	memset(n->swmasks, 0, sizeof(n->swmasks));
}

static void set_size(struct vnic_nft *n, const struct nftnl_set *s, const char *name)
{
	uint32_t mask = swmask_parse(name), size;
	unsigned int i;

	size = nftnl_set_is_set(s, NFTNL_SET_DESC_SIZE) ?
		nftnl_set_get_u32(s, NFTNL_SET_DESC_SIZE) : 0;
	if (mask) {
		swmask_mark(n, mask);
		n->size[S_MASK(mask)] = size;
	}
	for (i = 0; i < S__MAX; i++)
		if (!strcmp(name, nset_descs[i].name))
			n->size[i] = size;
}

static int name_cb(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == NFTA_SET_NAME &&
	    !mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
		*(const char **)data = mnl_attr_get_str(a);
	return MNL_CB_OK;
}

static bool set_named_ours(const struct nlmsghdr *nlh)
{
	const char *name = NULL;
	unsigned int i;

	mnl_attr_parse(nlh, sizeof(struct nfgenmsg), name_cb, &name);
	if (!name)
		return false;
	for (i = 0; i < S__MAX; i++)
		if (!strcmp(name, nset_descs[i].name))
			return true;
	return swmask_parse(name) != 0;
}

static int set_check_cb(const struct nlmsghdr *nlh, void *data)
{
	struct set_read *sr = data;
	struct nftnl_set *s = nftnl_set_alloc();
	const char *name;
	unsigned int i;
	char why[160];
	int err = 0;

	if (!s)
		return -ENOMEM;
	/* Someone's set (a set with an expression, say) is only named: the
	 * dump passes any well-formed set, ours are checked here; a sync
	 * removes the others (diff.c). */
	if (set_named_ours(nlh) && nreply_check(&nr_set, nlh, why, sizeof(why))) {
		nftnl_set_free(s);
		return vnic_set_err(sr->n->ctx, -EBADMSG, VNIC_STEP_DUMP, -1, NULL,
				    "table netdev %s: refused a malformed reply "
				    "from the kernel: %s", sr->n->table, why);
	}
	if (!set_named_ours(nlh) ||
	    (err = NPARSE(nftnl_set_nlmsg_parse(nlh, s))) ||
	    !(name = nftnl_set_get_str(s, NFTNL_SET_NAME))) {
		sr->count++;
		goto out;
	}
	sr->count++;
	set_size(sr->n, s, name);
	for (i = 0; i < S__MAX; i++)
		if (!strcmp(name, nset_descs[i].name))
			break;
	if (i < S__MAX) {
		sr->seen[i] = true;
		if (!sr->err)
			sr->err = check_one(sr->n, s, name, &nset_descs[i]);
	} else if (swmask_parse(name) && !sr->err) {
		sr->err = check_one(sr->n, s, name, nset_desc(S_MASK(1)));
	}
	/* Other sets are someone's additions: harmless to libvnic. */
out:
	nftnl_set_free(s);
	return err < 0 ? err : 0;
}

int check_sets(struct vnic_nft *n, struct table_info *ti)
{
	struct set_read sr = { .n = n };
	char buf[512] = { 0 };
	struct nftnl_set *s = nftnl_set_alloc();
	struct nlmsghdr *req;
	unsigned int i;
	int err;

	if (!s)
		return -ENOMEM;
	n->tflags = ti->flags;
	sizes_reset(n);
	req = nfnl_req(buf, NFT_MSG_GETSET, NLM_F_DUMP, n);
	err = set_id(s, n->table, NULL);
	nftnl_set_nlmsg_build_payload(req, s);
	nftnl_set_free(s);
	if (err)
		return err;
	err = nfnl_get(n, req, &nr_set_any, set_check_cb, &sr);
	if (err)
		return err;
	/* An earlier libvnic had a set per switch and no no_promisc. */
	if (!sr.seen[S_PROMISC] && sr.seen[S_L2OK])
		return vnic_set_err(n->ctx, -EPROTO, VNIC_STEP_DUMP, -1, NULL,
				    "table netdev %s has the layout of an older libvnic; "
				    "delete it (nft delete table netdev %s) to start "
				    "afresh", n->table, n->table);
	if (!ti->comment_ours)
		return damaged(n, "no comment \"%s\"", TABLE_COMMENT);
	if (!sr.count)
		return damaged(n, "none of libvnic's sets");
	if (sr.err)
		return sr.err;
	for (i = 0; i < S__MAX; i++)
		if (!sr.seen[i])
			return damaged(n, "set %s is missing", nset_descs[i].name);
	ti->ours = true;
	return 0;
}

/* --- chains --------------------------------------------------------------- */

/* What the chains must be given the sets and prefixes read: each switch
 * mask's set has its two chains, each prefix its two base chains and the
 * shared chains (made in one batch with them). */
int check_chains(struct vnic_nft *n, const struct devlist *names)
{
	static const char *const shared[] = { PFX_FROM_IN, PFX_FROM_EG, PFX_TO };
	char name[32];
	unsigned int m, c, i;
	bool any_pfx = false;

	for (m = 1; m <= SW_FROM; m++) {
		if (!swmask_ready(n, m))
			continue;
		for (c = 0; c < C__MAX; c++) {
			swchain_name((enum nchain)c, m, name, sizeof(name));
			if (!devlist_has(names, name))
				return damaged(n, "chain %s of set sw_%02x is missing",
					       name, m);
		}
	}
	for (i = 0; i < n->npfx; i++) {
		if (!n->pfx[i].installed)
			continue;
		any_pfx = true;
		snprintf(name, sizeof(name), "%s%s", PFX_CHAIN_EG, n->pfx[i].name);
		if (!devlist_has(names, name))
			return damaged(n, "chain %s of prefix %s is missing", name,
				       n->pfx[i].name);
	}
	for (i = 0; any_pfx && i < ARRAY_SIZE(shared); i++)
		if (!devlist_has(names, shared[i]))
			return damaged(n, "chain %s of the prefix chains is missing",
				       shared[i]);
	return 0;
}

/* --- the guests set ------------------------------------------------------- */

int check_guest_elem(struct vnic_nft *n, uint32_t key, const char *name,
		     bool parsed)
{
	if (key == STATE_KEY)
		return 0;	/* the state element: read_state() judges it */
	if (!parsed)
		return damaged(n, "set guests: element 0x%x has no \"NAME DIGEST\" "
			       "comment", key);
	if (key != guest_key(name))
		return damaged(n, "set guests: element 0x%x names guest %s, whose "
			       "key is 0x%x", key, name, guest_key(name));
	return 0;
}

/* After read_state() and read_guests(): the state element agrees with the
 * guests (its digest is the XOR of their parts).  Its counts are not
 * checked: a table of an earlier libvnic had none, and counted from zero. */
int check_state(struct vnic_nft *n, const struct table_info *ti,
		uint64_t digest, unsigned int nguests)
{
	if (ti->state_bad)
		return damaged(n, "set guests: the state element (key 0) has no "
			       "\"libvnic-state DIGEST n=COUNTS\" comment");
	if (!ti->has_digest && nguests)
		return damaged(n, "set guests: %u guest%s but no state element (key 0)",
			       nguests, nguests == 1 ? "" : "s");
	if (ti->has_digest && ti->digest != digest)
		return damaged(n, "set guests: the state element's digest %016llx "
			       "is not the guests' %016llx",
			       (unsigned long long)ti->digest,
			       (unsigned long long)digest);
	return 0;
}
