// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The installed table read back once (for sync and diff), whatever is in it: the table, then
 * one dump each of its sets, chains, rules and objects, then one dump per
 * set of libvnic's of its elements.  The number of requests depends on the
 * layout (the sets libvnic has), never on the number of guests or NICs, and
 * nothing is looked up per NIC.
 *
 * Everything is kept by name (state.h).  An object whose name is not of
 * libvnic's layout is only named: diff.c removes it.  One of libvnic's is
 * checked against the reply policies (attrs.c) before libnftnl parses it;
 * a set of ours whose elements cannot be read (an element with an
 * expression libvnic does not parse) is marked unreadable: the sync flushes
 * and fills it again.
 *
 * The pieces come from several requests: a commit by anyone in between
 * would make them disagree, so the read is made again while the ruleset's
 * generation moves (a bounded number of times).  A read that begins at a
 * generation libvnic's last commit made skips the rules of the guests'
 * chains (read_rules_vouched()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <endian.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/chain.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft/read.h"
#include "nft/state.h"

#define READ_TRIES 5

struct rd {
	struct vnic_nft *n;
	struct tstate *t;
	struct st_set *set;		/* of the element dump */
	int err;
};

/* The attributes of a message, by type (up to max). */
struct attrs {
	const struct nlattr *a[32];
};

static int attr_cb(const struct nlattr *a, void *data)
{
	struct attrs *at = data;
	uint16_t type = mnl_attr_get_type(a);

	if (type < ARRAY_SIZE(at->a))
		at->a[type] = a;
	return MNL_CB_OK;
}

static void attrs_of(const struct nlmsghdr *nlh, struct attrs *at)
{
	memset(at, 0, sizeof(*at));
	mnl_attr_parse(nlh, sizeof(struct nfgenmsg), attr_cb, at);
}

static const char *a_str(const struct attrs *at, unsigned int type)
{
	const struct nlattr *a = at->a[type];

	return a && !mnl_attr_validate(a, MNL_TYPE_NUL_STRING) ?
		mnl_attr_get_str(a) : NULL;
}

static bool a_u32(const struct attrs *at, unsigned int type, uint32_t *v)
{
	const struct nlattr *a = at->a[type];

	if (!a || mnl_attr_validate(a, MNL_TYPE_U32))
		return false;
	*v = ntohl(mnl_attr_get_u32(a));
	return true;
}

static struct nlmsghdr *dump_req(char *buf, struct vnic_nft *n, uint16_t type,
				 uint16_t flags)
{
	struct nlmsghdr *req = nfnl_req(buf, type, flags, n);

	mnl_attr_put_strz(req, NFTA_TABLE_NAME, n->table);	/* attr 1 of each */
	return req;
}

/* --- the table ---------------------------------------------------------- */

static int table_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rd *rd = data;
	struct nftnl_table *t = nftnl_table_alloc();
	int err;

	if (!t)
		return -ENOMEM;
	err = NPARSE(nftnl_table_nlmsg_parse(nlh, t));
	if (!err) {
		const void *ud;
		uint32_t len = 0;

		rd->t->exists = true;
		rd->t->tflags = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS);
		if (nftnl_table_is_set(t, NFTNL_TABLE_OWNER))
			rd->t->towner = nftnl_table_get_u32(t, NFTNL_TABLE_OWNER);
		ud = nftnl_table_get_data(t, NFTNL_TABLE_USERDATA, &len);
		rd->t->comment_ours = check_table_comment(ud, len);
	}
	nftnl_table_free(t);
	return err < 0 ? err : 0;
}

/* --- sets ------------------------------------------------------------------ */

static bool shape_ok(struct nftnl_set *s, const struct nset_desc *d)
{
	if (nftnl_set_get_u32(s, NFTNL_SET_KEY_TYPE) != d->key_type ||
	    nftnl_set_get_u32(s, NFTNL_SET_KEY_LEN) != d->key_len ||
	    nftnl_set_get_u32(s, NFTNL_SET_FLAGS) != d->flags)
		return false;
	if ((d->flags & NFT_SET_MAP) &&
	    nftnl_set_get_u32(s, NFTNL_SET_DATA_TYPE) != d->data_type)
		return false;
	if ((d->flags & NFT_SET_OBJECT) &&
	    nftnl_set_get_u32(s, NFTNL_SET_OBJ_TYPE) != d->obj_type)
		return false;
	/* An expression on the set makes every element count or limit. */
	return !nftnl_set_is_set(s, NFTNL_SET_EXPR) &&
	       !nftnl_set_is_set(s, NFTNL_SET_EXPRESSIONS);
}

static int set_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rd *rd = data;
	struct attrs at;
	const char *name;
	struct st_set *st;
	struct nftnl_set *s;
	char why[160];
	int idx, err;

	attrs_of(nlh, &at);
	name = a_str(&at, NFTA_SET_NAME);
	if (!name)
		return 0;
	st = ntab_add(&rd->t->sets, name, sizeof(*st));
	if (!st)
		return -ENOMEM;
	idx = st_set_index(name);
	st->ours = idx >= 0;
	if (!st->ours || nreply_check(&nr_set, nlh, why, sizeof(why)))
		return 0;
	s = nftnl_set_alloc();
	if (!s)
		return -ENOMEM;
	err = NPARSE(nftnl_set_nlmsg_parse(nlh, s));
	if (!err) {
		st->shape_ok = shape_ok(s, nset_desc((enum nset)idx));
		st->size = nftnl_set_is_set(s, NFTNL_SET_DESC_SIZE) ?
			   nftnl_set_get_u32(s, NFTNL_SET_DESC_SIZE) : 0;
	}
	nftnl_set_free(s);
	return err < 0 ? err : 0;
}

/* --- chains, rules, objects ------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int chain_devs(struct st_chain *c, const struct nlmsghdr *nlh)
{
	struct nftnl_chain *ch = nftnl_chain_alloc();
	const char *const *devs, *dev;
	char why[160];
	unsigned int k = 0, i;
	int err = 0;

	if (!ch)
		return -ENOMEM;
	/* libnftnl 1.2 cannot parse a prefix hook: such a chain has none. */
	if (nreply_check(&nr_chain, nlh, why, sizeof(why)) ||
	    (err = NPARSE(nftnl_chain_nlmsg_parse(nlh, ch)) ?:
		   chain_parsed_devs(nlh, ch)))
		goto out;
	st_chain_hook(c, ch);
	/* libnftnl 1.2 gives a chain of one device both ways. */
	devs = nftnl_chain_is_set(ch, NFTNL_CHAIN_DEVICES) ?
	       nftnl_chain_get_array(ch, NFTNL_CHAIN_DEVICES) : NULL;
	dev = !devs && nftnl_chain_is_set(ch, NFTNL_CHAIN_DEV) ?
	      nftnl_chain_get_str(ch, NFTNL_CHAIN_DEV) : NULL;
	while (devs && devs[k])
		k++;
	c->devs = calloc(k + 2, sizeof(*c->devs));
	if (!c->devs) {
		nftnl_chain_free(ch);
		return -ENOMEM;
	}
	if (dev)
		c->devs[c->ndevs++] = strdup(dev);
	for (i = 0; i < k; i++)
		c->devs[c->ndevs++] = strdup(devs[i]);
	for (i = 0; i < c->ndevs; i++)
		if (!c->devs[i]) {
			nftnl_chain_free(ch);
			return -ENOMEM;
		}
	qsort(c->devs, c->ndevs, sizeof(*c->devs), cmp_str);
out:
	nftnl_chain_free(ch);
	return err < 0 ? err : 0;
}

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rd *rd = data;
	struct attrs at;
	const char *name;
	struct st_chain *c;

	attrs_of(nlh, &at);
	name = a_str(&at, NFTA_CHAIN_NAME);
	if (!name)
		return 0;
	c = ntab_add(&rd->t->chains, name, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base = at.a[NFTA_CHAIN_HOOK] != NULL;
	/* Another process may set it to drop ("nft add chain ... { policy
	 * drop; }"): every frame its rules let through would be lost. */
	c->policy = NF_ACCEPT;
	a_u32(&at, NFTA_CHAIN_POLICY, &c->policy);
	return c->base ? chain_devs(c, nlh) : 0;
}

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rd *rd = data;
	const struct nlattr *ud, *h;
	struct attrs at;
	const char *chain;
	struct st_chain *c;
	uint64_t handle = 0;

	attrs_of(nlh, &at);
	chain = a_str(&at, NFTA_RULE_CHAIN);
	h = at.a[NFTA_RULE_HANDLE];
	if (!chain || !h || mnl_attr_validate(h, MNL_TYPE_U64))
		return 0;
	handle = be64toh(mnl_attr_get_u64(h));
	c = ntab_add(&rd->t->chains, chain, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ud = at.a[NFTA_RULE_USERDATA];
	return st_rule_add(c, handle, ud ? mnl_attr_get_payload(ud) : NULL,
			   ud ? mnl_attr_get_payload_len(ud) : 0, NULL);
}

static int obj_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rd *rd = data;
	struct attrs at;
	const char *name;
	struct st_obj *o;
	uint32_t type = 0;

	attrs_of(nlh, &at);
	name = a_str(&at, NFTA_OBJ_NAME);
	if (!name || !a_u32(&at, NFTA_OBJ_TYPE, &type))
		return 0;
	o = ntab_add(&rd->t->objs, name, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->type = type;
	return 0;
}

/* --- elements -------------------------------------------------------------- */

static int guests_elem(struct rd *rd, const struct relem *e, uint32_t key)
{
	const char *c = ud_comment(e->ud, e->udlen);
	char name[POLICY_GUEST_MAX + 1];
	unsigned long long d;

	if (key == STATE_KEY) {
		struct tstate *t = rd->t;

		t->has_state = true;
		t->state_ok = !state_comment_parse(c, &t->state_digest, &t->state_gen);
		free(t->state_comment);
		t->state_comment = c ? strdup(c) : NULL;
		return 0;
	}
	/* A guest's element: its name and digest, if its key is its name's. */
	if (c && sscanf(c, "%64s %llx", name, &d) == 2 &&
	    strcmp(name, "libvnic-state") && guest_key(name) == key)
		return st_guest_add(rd->t, name, d);
	return 0;
}

static int one_elem(const struct relem *e, void *data)
{
	struct rd *rd = data;
	uint32_t klen = e->klen, k = 0;
	const uint8_t *key = e->key;
	int err;

	if (!key || !klen)
		return 0;
	if (klen >= 4)
		memcpy(&k, key, 4);
	if (rd->set == ntab_get(&rd->t->sets, nset_descs[S_GUESTS].name)) {
		err = guests_elem(rd, e, k);
		if (err || (klen == 4 && k == STATE_KEY))
			return err;
	}
	return st_elem_add(rd->set, key, klen, e, NULL);
}

static int elem_cb(const struct nlmsghdr *nlh, void *data)
{
	return relems_each(nlh, one_elem, data);
}

static int read_set_elems(struct rd *rd, struct st_set *st)
{
	const struct vnic_err saved = rd->n->ctx->err;
	char buf[512] = { 0 };
	struct nlmsghdr *req;
	int err;

	rd->set = st;
	req = nfnl_req(buf, NFT_MSG_GETSETELEM, NLM_F_DUMP, rd->n);
	mnl_attr_put_strz(req, NFTA_SET_ELEM_LIST_TABLE, rd->n->table);
	mnl_attr_put_strz(req, NFTA_SET_ELEM_LIST_SET, st->name);
	err = nfnl_get(rd->n, req, &nr_elems, elem_cb, rd);
	st->readable = !err;
	if (err == -EBADMSG || err == -ENOENT) {
		/* Unparsable elements (or the set went): flushed and filled. */
		rd->n->ctx->err = saved;
		return 0;
	}
	return err;
}

/* A guest's chain ("g_NAME", "to_NAME"): its rules are its guest's. */
static bool guest_chain(const char *name)
{
	return !strncmp(name, "g_", 2) || !strncmp(name, "to_", 3);
}

/* Shared chains past this many: one dump of every rule instead. */
#define RULE_DUMPS_MAX 64

/*
 * The rules of a table at the vouched generation (its objects: see
 * objs_vouched()): nobody has committed since libvnic's last commit, so
 * every guest's chain holds what libvnic wrote for that guest, whose
 * digest the guests set keeps.  Those rules
 * (most of the table's, and the dearest part of the read: the kernel
 * dumps each rule's expressions) are not read; diff.c rewrites the chains
 * of the guests that change whole.  The shared chains' rules, a number
 * the layout bounds, are read one chain each.
 */
static int read_rules_vouched(struct rd *rd)
{
	struct tstate *t = rd->t;
	unsigned int i, shared = 0;
	char buf[512] = { 0 };
	struct nlmsghdr *req;
	int err = 0;

	for (i = 0; i < t->chains.n; i++)
		shared += !guest_chain(*(char **)t->chains.v[i]);
	if (shared > RULE_DUMPS_MAX)
		return nfnl_get(rd->n, dump_req(buf, rd->n, NFT_MSG_GETRULE,
						NLM_F_DUMP),
				&nr_rule_any, rule_cb, rd);
	for (i = 0; i < t->chains.n && !err; i++) {
		struct st_chain *c = t->chains.v[i];

		c->rules_unread = guest_chain(c->name);
		if (c->rules_unread)
			continue;
		req = dump_req(buf, rd->n, NFT_MSG_GETRULE, NLM_F_DUMP);
		mnl_attr_put_strz(req, NFTA_RULE_CHAIN, c->name);
		err = nfnl_get(rd->n, req, &nr_rule_any, rule_cb, rd);
	}
	return err;
}

/* The objects of a table at the vouched generation: libvnic makes one,
 * each guest's drop counter, and removes it with its guest, so they are
 * the guests set's guests' (not dumped: their counts are of no use here). */
static int objs_vouched(struct tstate *t)
{
	char name[POLICY_GUEST_MAX + 3];
	struct st_obj *o;
	unsigned int i;

	for (i = 0; i < t->ng; i++) {
		snprintf(name, sizeof(name), "c_%s", t->gname[i]);
		o = ntab_add(&t->objs, name, sizeof(*o));
		if (!o)
			return -ENOMEM;
		o->type = NFT_OBJECT_COUNTER;
	}
	return 0;
}

/* --- the whole --------------------------------------------------------- */

static int read_once(struct vnic_nft *n, struct tstate *t, bool elems_only,
		     bool vouched)
{
	struct rd rd = { .n = n, .t = t };
	char buf[512] = { 0 };
	struct nlmsghdr *req;
	unsigned int i;
	int err;

	tstate_free(t);
	req = nfnl_req(buf, NFT_MSG_GETTABLE, 0, n);
	mnl_attr_put_strz(req, NFTA_TABLE_NAME, n->table);
	err = nfnl_get(n, req, &nr_table, table_cb, &rd);
	if (err == -ENOENT)
		return 0;
	if (err || !t->exists)
		return err;
	err = nfnl_get(n, dump_req(buf, n, NFT_MSG_GETSET, NLM_F_DUMP),
		       &nr_set_any, set_cb, &rd);
	if (!err && !elems_only)
		err = nfnl_get(n, dump_req(buf, n, NFT_MSG_GETCHAIN, NLM_F_DUMP),
			       &nr_chain_any, chain_cb, &rd);
	if (!err && !elems_only && vouched)
		err = read_rules_vouched(&rd);
	else if (!err && !elems_only)
		err = nfnl_get(n, dump_req(buf, n, NFT_MSG_GETRULE, NLM_F_DUMP),
			       &nr_rule_any, rule_cb, &rd);
	if (!err && !elems_only && !vouched)
		err = nfnl_get(n, dump_req(buf, n, NFT_MSG_GETOBJ, NLM_F_DUMP),
			       &nr_obj_any, obj_cb, &rd);
	for (i = 0; !err && i < t->sets.n; i++) {
		struct st_set *st = t->sets.v[i];

		if (st->ours && st->shape_ok)
			err = read_set_elems(&rd, st);
	}
	return !err && !elems_only && vouched ? objs_vouched(t) : err;
}

static int read_all(struct vnic_nft *n, struct tstate *t, bool elems_only,
		    const uint32_t *vouched)
{
	uint32_t g0 = 0, g1 = 0;
	unsigned int i;
	int err = nfnl_genid(n, &g0);
	bool v = false;

	for (i = 1; !err; i++) {
		/* Vouched only if nobody committed since: a read that begins
		 * later, or is torn, reads every rule. */
		v = vouched && *vouched == g0;
		err = read_once(n, t, elems_only, v);
		if (!err)
			err = nfnl_genid(n, &g1);
		if (err || g1 == g0 || i == READ_TRIES)
			break;
		g0 = g1;
	}
	/* The generation the last read began at: a read torn on every try
	 * pins a commit that then fails (-EAGAIN), and never vouches for a
	 * table it did not see whole. */
	t->genid = g0;
	t->vouched = v;
	t->torn = !err && g1 != g0;
	return err;
}

int installed_read(struct vnic_nft *n, struct tstate *t, const uint32_t *vouched)
{
	return read_all(n, t, false, vouched);
}

/* The rules a vouched read skipped, all of them in one dump after all; a
 * commit of anyone's since the read makes it -ERESTART (the batch, pinned
 * to the read's generation, would fail anyway). */
int installed_read_rules(struct vnic_nft *n, struct tstate *t)
{
	struct rd rd = { .n = n, .t = t };
	char buf[512] = { 0 };
	unsigned int i;
	uint32_t g = 0;
	int err;

	for (i = 0; i < t->chains.n; i++) {
		struct st_chain *c = t->chains.v[i];

		c->nrules = 0;		/* none has a message: nothing to free */
		c->rules_unread = false;
	}
	err = nfnl_get(n, dump_req(buf, n, NFT_MSG_GETRULE, NLM_F_DUMP),
		       &nr_rule_any, rule_cb, &rd);
	if (!err)
		err = nfnl_genid(n, &g);
	return !err && g != t->genid ? -ERESTART : err;
}

/* What removing guests needs: the sets and their elements, without the
 * chains, rules and objects (a guest's are found by name). */
int installed_read_elems(struct vnic_nft *n, struct tstate *t)
{
	return read_all(n, t, true, NULL);
}
