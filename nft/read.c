// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reading the installed state back: after a restart the handle knows only
 * what the kernel says.  The table's comment holds the digest of the whole
 * state, the guests set one element per guest ("NAME DIGEST"), the drops
 * map which ifindexes belong to which guest's counter.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/chain.h>
#include <libnftnl/object.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft/read.h"

static int table_cb(const struct nlmsghdr *nlh, void *data)
{
	struct table_info *ti = data;
	struct nftnl_table *t = nftnl_table_alloc();

	if (!t)
		return -ENOMEM;
	if (nftnl_table_nlmsg_parse(nlh, t) == 0) {
		const void *ud;
		uint32_t len = 0;

		ti->exists = true;
		ti->flags = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS);
		ud = nftnl_table_get_data(t, NFTNL_TABLE_USERDATA, &len);
		ti->comment_ours = check_table_comment(ud, len);
	}
	nftnl_table_free(t);
	return 0;
}

/* " n=A,B,...": STATE_COUNTS numbers. */
static int parse_counts(const char *s, uint32_t *nelem)
{
	unsigned int i;
	char *end;

	if (!s)
		return -1;
	s += 3;
	for (i = 0; i < STATE_COUNTS; i++) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v > UINT32_MAX || *end != (i + 1 < STATE_COUNTS ? ',' : '\0'))
			return -1;
		nelem[i] = (uint32_t)v;
		s = end + 1;
	}
	return 0;
}

/*
 * The comment in an element's userdata, as nft(8) and udata_comment() write
 * it: TLVs of a type byte and a length byte; the comment's type is 0 and it
 * ends with its NUL.  Anyone may write an element (nft add element ...
 * comment), so it is believed only when it is whole and NUL-ended.
 */
const char *elem_comment(const struct nftnl_set_elem *e)
{
	uint32_t len = 0;
	const uint8_t *ud = nftnl_set_elem_get((struct nftnl_set_elem *)e,
					       NFTNL_SET_ELEM_USERDATA, &len);
	uint32_t off, l;

	for (off = 0; ud && off + 2 <= len; off += 2 + l) {
		l = ud[off + 1];
		if (off + 2 + l > len)
			return NULL;
		if (ud[off] == 0)	/* NFTNL_UDATA_SET_ELEM_COMMENT */
			return l && !ud[off + 2 + l - 1] ?
				(const char *)ud + off + 2 : NULL;
	}
	return NULL;
}

static int state_cb(struct nftnl_set_elem *e, void *data)
{
	struct table_info *ti = data;
	uint32_t klen = 0;
	const uint32_t *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &klen);
	const char *c = elem_comment(e);
	unsigned long long d;

	if (!key || klen != 4 || *key != STATE_KEY)
		return 0;
	if (c && sscanf(c, "libvnic-state %llx", &d) == 1) {
		ti->digest = d;
		ti->has_digest = true;
		ti->has_counts = !parse_counts(strstr(c, " n="), ti->nelem);
		ti->state_gen = strstr(c, " g=") ?
			(uint32_t)strtoul(strstr(c, " g=") + 3, NULL, 10) : 0;
	}
	ti->state_bad = !ti->has_digest;
	return 0;
}

int read_table(struct vnic_nft *n, struct table_info *ti)
{
	char buf[512] = { 0 };
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *req;
	int err;

	memset(ti, 0, sizeof(*ti));
	if (!t)
		return -ENOMEM;
	req = nfnl_req(buf, NFT_MSG_GETTABLE, 0, n);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, n->table);
	nftnl_table_nlmsg_build_payload(req, t);
	nftnl_table_free(t);
	err = nfnl_get(n, req, &nr_table, table_cb, ti);
	if (err == -ENOENT)
		return 0;
	return err || !ti->exists ? err : check_sets(n, ti);
}

struct chain_read {
	struct vnic_nft *n;
	struct devlist *names;		/* every chain's name, for check_chains() */
};

/* "in12" -> (C_IN, 12). */
static int shard_of(const char *name, enum nchain *c, unsigned int *k)
{
	unsigned int i;
	char *end;

	for (i = 0; i < C__MAX; i++) {
		size_t len = strlen(nchain_names[i]);

		if (strncmp(name, nchain_names[i], len) || !name[len] ||
		    name[len] < '0' || name[len] > '9')
			continue;
		*k = (unsigned int)strtoul(name + len, &end, 10);
		if (*end || *k > 100000)
			return -1;
		*c = (enum nchain)i;
		return 0;
	}
	return -1;
}

static int chain_name_cb(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == NFTA_CHAIN_NAME &&
	    !mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
		*(const char **)data = mnl_attr_get_str(a);
	return MNL_CB_OK;
}

static const char *chain_name(const struct nlmsghdr *nlh)
{
	const char *name = NULL;

	mnl_attr_parse(nlh, sizeof(struct nfgenmsg), chain_name_cb, &name);
	return name;
}

/* A shard's devices, as read (a chain has one, "dev", or a list). */
static int shard_read(struct vnic_nft *n, const struct nftnl_chain *c,
		      enum nchain kind, unsigned int k)
{
	struct shard *sh = shard_get(n, kind, k);
	const char *dev, *const *devs;
	int err = 0;

	if (!sh)
		return -ENOMEM;
	sh->ready = true;
	dev = nftnl_chain_get_str(c, NFTNL_CHAIN_DEV);
	if (dev)
		err = devlist_add(&sh->devs, dev);
	devs = nftnl_chain_get_array(c, NFTNL_CHAIN_DEVICES);
	while (!err && devs && *devs)
		err = devlist_add(&sh->devs, *devs++);
	return err;
}

/* A failure here is the read's: nfnl_get() returns it. */
static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct chain_read *cr = data;
	struct nftnl_chain *c = nftnl_chain_alloc();
	const char *name;
	enum nchain kind;
	unsigned int k;
	int err = 0;

	if (!c)
		return -ENOMEM;
	/* libnftnl 1.2 cannot parse a prefix hook: the name is read first. */
	name = chain_name(nlh);
	if (name) {
		prefix_seen(cr->n, name);
		err = devlist_add(cr->names, name);
	}
	if (err || nftnl_chain_nlmsg_parse(nlh, c) < 0)
		goto out;
	name = nftnl_chain_get_str(c, NFTNL_CHAIN_NAME);
	if (name && !strncmp(name, "g_", 2))
		err = devlist_add(&cr->n->customs, name);
	if (!err && name && !strncmp(name, "to_", 3))
		err = devlist_add(&cr->n->tochains, name);
	if (!err && name && !shard_of(name, &kind, &k))
		err = shard_read(cr->n, c, kind, k);
out:
	nftnl_chain_free(c);
	return err;
}

int read_chains(struct vnic_nft *n, struct devlist *names)
{
	char buf[512] = { 0 };
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct chain_read cr = { n, names };
	struct nlmsghdr *req;
	unsigned int i;

	if (!c)
		return -ENOMEM;
	shards_clear(n);
	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	for (i = 0; i < n->npfx; i++)
		n->pfx[i].installed = n->pfx[i].pending = false;
	n->pfx_shared = false;
	req = nfnl_req(buf, NFT_MSG_GETCHAIN, NLM_F_DUMP, n);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, n->table);
	nftnl_chain_nlmsg_build_payload(req, c);
	nftnl_chain_free(c);
	return nfnl_get(n, req, &nr_chain, chain_cb, &cr);
}

struct elem_read {
	int (*fn)(struct nftnl_set_elem *e, void *data);
	void *data;
};

int elems_each(struct nftnl_set *s, const struct nlmsghdr *nlh, bool strict,
	       int (*fn)(struct nftnl_set_elem *e, void *data), void *data)
{
	struct nftnl_set_elems_iter *it;
	struct nftnl_set_elem *e;
	int err = 0;

	/* libnftnl says -1 for both; errno tells a failed allocation. */
	errno = 0;
	if (nftnl_set_elems_nlmsg_parse(nlh, s) < 0)
		return errno == ENOMEM ? -ENOMEM : strict ? -EPROTO : 0;
	it = nftnl_set_elems_iter_create(s);
	if (!it)
		return -ENOMEM;
	for (e = nftnl_set_elems_iter_next(it); e && !err;
	     e = nftnl_set_elems_iter_next(it))
		err = fn(e, data);
	nftnl_set_elems_iter_destroy(it);
	return err;
}

static int elem_cb(const struct nlmsghdr *nlh, void *data)
{
	struct elem_read *er = data;
	struct nftnl_set *s = nftnl_set_alloc();
	int err;

	if (!s)
		return -ENOMEM;
	err = elems_each(s, nlh, false, er->fn, er->data);
	nftnl_set_free(s);
	return err;
}

int read_elems(struct vnic_nft *n, enum nset set,
	       int (*fn)(struct nftnl_set_elem *e, void *data), void *data)
{
	struct elem_read er = { fn, data };
	char buf[512] = { 0 }, name[16];
	struct nftnl_set *s = nftnl_set_alloc();
	struct nlmsghdr *req;

	if (!s)
		return -ENOMEM;
	req = nfnl_req(buf, NFT_MSG_GETSETELEM, NLM_F_DUMP, n);
	nftnl_set_set_str(s, NFTNL_SET_TABLE, n->table);
	nftnl_set_set_str(s, NFTNL_SET_NAME, set_name(set, name, sizeof(name)));
	nftnl_set_elems_nlmsg_build_payload(req, s);
	nftnl_set_free(s);
	return nfnl_get(n, req, &nr_elems, elem_cb, &er);
}

/* One element by key: a GETSETELEM without NLM_F_DUMP. */
int read_state(struct vnic_nft *n, struct table_info *ti)
{
	struct elem_read er = { state_cb, ti };
	struct nftnl_set *s = nftnl_set_alloc();
	struct nftnl_set_elem *e = nftnl_set_elem_alloc();
	uint32_t key = STATE_KEY;
	struct nlmsghdr *req;
	char buf[512] = { 0 };
	int err;

	ti->has_digest = false;
	ti->state_bad = false;
	if (!s || !e) {
		/* libnftnl's free functions do not take NULL. */
		if (s)
			nftnl_set_free(s);
		if (e)
			nftnl_set_elem_free(e);
		return -ENOMEM;
	}
	req = nfnl_req(buf, NFT_MSG_GETSETELEM, 0, n);
	nftnl_set_set_str(s, NFTNL_SET_TABLE, n->table);
	nftnl_set_set_str(s, NFTNL_SET_NAME, nset_descs[S_GUESTS].name);
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, &key, sizeof(key));
	nftnl_set_elem_add(s, e);
	nftnl_set_elems_nlmsg_build_payload(req, s);
	nftnl_set_free(s);
	err = nfnl_get(n, req, &nr_elems, elem_cb, &er);
	return err == -ENOENT ? 0 : err;
}

struct ctr_read {
	uint64_t pkts, bytes;
	bool found;
};

static int obj_cb(const struct nlmsghdr *nlh, void *data)
{
	struct ctr_read *cr = data;
	struct nftnl_obj *o = nftnl_obj_alloc();

	if (!o)
		return -ENOMEM;
	if (nftnl_obj_nlmsg_parse(nlh, o) == 0) {
		cr->pkts = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS);
		cr->bytes = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_BYTES);
		cr->found = true;
	}
	nftnl_obj_free(o);
	return 0;
}

int read_counter(struct vnic_nft *n, const char *name, uint64_t *pkts,
		 uint64_t *bytes)
{
	struct ctr_read cr = { 0 };
	char buf[512] = { 0 };
	struct nftnl_obj *o = nftnl_obj_alloc();
	struct nlmsghdr *req;
	int err;

	if (!o)
		return -ENOMEM;
	req = nfnl_req(buf, NFT_MSG_GETOBJ, 0, n);
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, n->table);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	nftnl_obj_nlmsg_build_payload(req, o);
	nftnl_obj_free(o);
	err = nfnl_get(n, req, &nr_obj, obj_cb, &cr);
	if (!err && !cr.found)
		err = -ENOENT;
	if (!err) {
		*pkts = cr.pkts;
		*bytes = cr.bytes;
	}
	return err;
}
