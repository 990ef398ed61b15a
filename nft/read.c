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
	int err;

	if (!t)
		return -ENOMEM;
	err = NPARSE(nftnl_table_nlmsg_parse(nlh, t));
	if (!err) {
		const void *ud;
		uint32_t len = 0;

		ti->exists = true;
		ti->flags = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS);
		if (nftnl_table_is_set(t, NFTNL_TABLE_OWNER))
			ti->owner = nftnl_table_get_u32(t, NFTNL_TABLE_OWNER);
		ud = nftnl_table_get_data(t, NFTNL_TABLE_USERDATA, &len);
		ti->comment_ours = check_table_comment(ud, len);
	}
	nftnl_table_free(t);
	return err < 0 ? err : 0;
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
const char *ud_comment(const uint8_t *ud, uint32_t len)
{
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

static int state_cb(const struct relem *e, void *data)
{
	struct table_info *ti = data;
	const char *c = ud_comment(e->ud, e->udlen);
	unsigned long long d;
	uint32_t key;

	if (!e->key || e->klen != 4)
		return 0;
	memcpy(&key, e->key, 4);
	if (key != STATE_KEY)
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
	err = table_id(t, n->table);
	nftnl_table_nlmsg_build_payload(req, t);
	nftnl_table_free(t);
	if (err)
		return err;
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
	if (!err)
		err = NPARSE(nftnl_chain_nlmsg_parse(nlh, c)) ?:
		      chain_parsed_devs(nlh, c);
	if (err) {
		if (err > 0)
			err = 0;	/* named only */
		goto out;
	}
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
	int err;

	if (!c)
		return -ENOMEM;
	shards_clear(n);
	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	for (i = 0; i < n->npfx; i++)
		n->pfx[i].installed = n->pfx[i].pending = false;
	n->pfx_shared = false;
	req = nfnl_req(buf, NFT_MSG_GETCHAIN, NLM_F_DUMP, n);
	err = chain_id(c, n->table, NULL);
	nftnl_chain_nlmsg_build_payload(req, c);
	nftnl_chain_free(c);
	/* Without the table's name the dump would be every table's. */
	return err ? err : nfnl_get(n, req, &nr_chain, chain_cb, &cr);
}

struct elem_read {
	int (*fn)(const struct relem *e, void *data);
	void *data;
};

/* --- elements as the kernel reads them --------------------------------- */

static const struct nlattr *nested(const struct nlattr *nest, uint16_t type)
{
	const struct nlattr *a;

	mnl_attr_for_each_nested(a, nest)
		if (mnl_attr_get_type(a) == type)
			return a;
	return NULL;
}

static bool str_ok(const struct nlattr *a)
{
	return !mnl_attr_validate(a, MNL_TYPE_NUL_STRING);
}

/* NFTA_SET_ELEM_DATA: a value, or a verdict (with a chain for a jump). */
static int relem_data(const struct nlattr *d, struct relem *e)
{
	const struct nlattr *v = nested(d, NFTA_DATA_VALUE), *c;

	if (v) {
		e->data = mnl_attr_get_payload(v);
		e->dlen = mnl_attr_get_payload_len(v);
		return 0;
	}
	v = nested(d, NFTA_DATA_VERDICT);
	if (!v)
		return 0;
	c = nested(v, NFTA_VERDICT_CODE);
	if (c) {
		if (mnl_attr_validate(c, MNL_TYPE_U32))
			return -EBADMSG;
		e->verdict = ntohl(mnl_attr_get_u32(c));
		e->has_verdict = true;
	}
	c = nested(v, NFTA_VERDICT_CHAIN);
	if (c && !str_ok(c))
		return -EBADMSG;
	e->chain = c ? mnl_attr_get_str(c) : NULL;
	return 0;
}

static int relem_parse(const struct nlattr *nest, struct relem *e)
{
	const struct nlattr *a, *v;
	int err = 0;

	memset(e, 0, sizeof(*e));
	e->nest = nest;
	mnl_attr_for_each_nested(a, nest) {
		switch (mnl_attr_get_type(a)) {
		case NFTA_SET_ELEM_KEY:
			v = nested(a, NFTA_DATA_VALUE);
			e->key = v ? mnl_attr_get_payload(v) : NULL;
			e->klen = v ? mnl_attr_get_payload_len(v) : 0;
			break;
		case NFTA_SET_ELEM_DATA:
			err = relem_data(a, e);
			break;
		case NFTA_SET_ELEM_OBJREF:
			if (!str_ok(a))
				return -EBADMSG;
			e->objref = mnl_attr_get_str(a);
			break;
		case NFTA_SET_ELEM_USERDATA:
			e->ud = mnl_attr_get_payload(a);
			e->udlen = mnl_attr_get_payload_len(a);
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

int relems_each(const struct nlmsghdr *nlh,
		int (*fn)(const struct relem *e, void *data), void *data)
{
	const struct nlattr *a, *el;
	struct relem e;
	int err = 0;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) != NFTA_SET_ELEM_LIST_ELEMENTS)
			continue;
		mnl_attr_for_each_nested(el, a) {
			err = relem_parse(el, &e);
			if (!err)
				err = fn(&e, data);
			if (err)
				return err;
		}
	}
	return 0;
}

static int elem_cb(const struct nlmsghdr *nlh, void *data)
{
	struct elem_read *er = data;

	return relems_each(nlh, er->fn, er->data);
}

int read_elems(struct vnic_nft *n, enum nset set,
	       int (*fn)(const struct relem *e, void *data), void *data)
{
	struct elem_read er = { fn, data };
	char buf[512] = { 0 }, name[16];
	struct nftnl_set *s = nftnl_set_alloc();
	struct nlmsghdr *req;
	int err;

	if (!s)
		return -ENOMEM;
	req = nfnl_req(buf, NFT_MSG_GETSETELEM, NLM_F_DUMP, n);
	err = set_id(s, n->table, set_name(set, name, sizeof(name)));
	nftnl_set_elems_nlmsg_build_payload(req, s);
	nftnl_set_free(s);
	return err ? err : nfnl_get(n, req, &nr_elems, elem_cb, &er);
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
	err = set_id(s, n->table, nset_descs[S_GUESTS].name);
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, &key, sizeof(key));
	nftnl_set_elem_add(s, e);
	nftnl_set_elems_nlmsg_build_payload(req, s);
	nftnl_set_free(s);
	if (err)
		return err;
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
	int err;

	if (!o)
		return -ENOMEM;
	err = NPARSE(nftnl_obj_nlmsg_parse(nlh, o));
	if (!err) {
		cr->pkts = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS);
		cr->bytes = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_BYTES);
		cr->found = true;
	}
	nftnl_obj_free(o);
	return err < 0 ? err : 0;
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
	err = obj_id(o, n->table, name);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	if (!err)
		nftnl_obj_nlmsg_build_payload(req, o);
	nftnl_obj_free(o);
	if (err)
		return err;
	err = nfnl_get(n, req, &nr_obj, obj_cb, &cr);
	if (!err && !cr.found)
		err = -ENOENT;
	if (!err) {
		*pkts = cr.pkts;
		*bytes = cr.bytes;
	}
	return err;
}
