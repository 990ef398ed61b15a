// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table a policy wants: what a clean apply of it into an empty table
 * would write, built by the same code (elems.c, layout.c, prefix.c) on a
 * scratch handle that starts from nothing, and read back from that batch
 * into objects by name (state.h).  diff.c copies the messages of what is
 * missing, so a repaired object is byte for byte what a clean apply makes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/chain.h>
#include <libnftnl/set.h>

#include "nft/state.h"

/* A scratch handle: n's table, flags, features and hook prefixes (the
 * installed and the asked ones: all made, as on an empty table), nothing
 * installed. */
static struct vnic_nft *shadow_new(const struct vnic_nft *n, uint32_t nics)
{
	struct vnic_nft *s = calloc(1, sizeof(*s));
	unsigned int i;

	if (!s)
		return NULL;
	s->ctx = n->ctx;
	s->ifsock = -1;
	memcpy(s->table, n->table, sizeof(s->table));
	s->flags = n->flags;
	s->features = n->features;
	s->capacity = n->capacity;
	s->change_nics = nics;
	for (i = 0; i < n->npfx; i++) {
		if (!n->pfx[i].installed)
			continue;
		s->pfx[s->npfx] = n->pfx[i];
		s->pfx[s->npfx].installed = s->pfx[s->npfx].pending = true;
		s->npfx++;
	}
	for (i = 0; i < S__MAX; i++)
		s->size[i] = layout_set_size(s, (enum nset)i);
	return s;
}

static void shadow_free(struct vnic_nft *s)
{
	shards_clear(s);
	guest_adds_drop(s);
	shards_drop(s);
	devlist_clear(&s->customs);
	devlist_clear(&s->tochains);
	free(s);
}

/* Sizes as a new table gets them: doubled until the elements fit. */
static void fit_sizes(struct vnic_nft *s)
{
	unsigned int i;

	for (i = 0; i < S__MAX; i++) {
		uint64_t sz = s->size[i];
		int64_t need = s->pend[i] + (i == S_GUESTS);

		while (sz && need > 0 && sz < (uint64_t)need)
			sz *= 2;
		s->size[i] = sz > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)sz;
	}
}

static int build(struct vnic_nft *s, const struct vnic_policy *p,
		 const struct resolved *r, struct nbatch *b)
{
	unsigned int i, k;
	int err = 0;

	for (i = 0; i < p->n && !err; i++) {
		const int *ifi = &r->ifi[r->off[i]];

		err = guest_put(s, b, p->g[i], ifi, r->digest[i], true, 0);
	}
	if (!err)
		err = guest_adds_flush(s, b);
	if (!err)
		err = shards_flush(s, b);
	if (!err)
		err = prefix_build(s, b, &k);
	fit_sizes(s);
	if (!err)
		err = layout_table(s, b, true);
	if (!err)
		err = layout_skeleton(s, b);
	return err;
}

/* --- the batch read as objects ------------------------------------------- */

static const char *str_attr(const struct nlmsghdr *nlh, uint16_t type)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == type &&
		    !mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
			return mnl_attr_get_str(a);
	return NULL;
}

static bool has_attr(const struct nlmsghdr *nlh, uint16_t type)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == type)
			return true;
	return false;
}

/* A base chain's policy as its message gives it (the kernel's default:
 * accept). */
static uint32_t policy_attr(const struct nlmsghdr *nlh)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == NFTA_CHAIN_POLICY &&
		    !mnl_attr_validate(a, MNL_TYPE_U32))
			return ntohl(mnl_attr_get_u32(a));
	return NF_ACCEPT;
}

static int w_set(struct tstate *t, const struct nlmsghdr *nlh)
{
	const char *name = str_attr(nlh, NFTA_SET_NAME);
	struct nftnl_set *s;
	struct st_set *st;
	int err;

	st = name ? ntab_add(&t->sets, name, sizeof(*st)) : NULL;
	if (!st)
		return -ENOMEM;
	st->ours = true;
	st->shape_ok = st->readable = true;
	if (!st->msg && !(st->msg = msg_dup(nlh)))
		return -ENOMEM;
	s = nftnl_set_alloc();
	if (!s)
		return -ENOMEM;
	err = NPARSE(nftnl_set_nlmsg_parse(nlh, s));
	if (!err && nftnl_set_is_set(s, NFTNL_SET_DESC_SIZE))
		st->size = nftnl_set_get_u32(s, NFTNL_SET_DESC_SIZE);
	nftnl_set_free(s);
	return err < 0 ? err : 0;
}

/* Each element points into its message, which the set keeps. */
static int w_elem(const struct relem *e, void *data)
{
	if (!e->key)
		return -EPROTO;
	return st_elem_add(data, e->key, e->klen, e, e->nest);
}

static int w_elems(struct tstate *t, const struct nlmsghdr *nlh)
{
	const char *name = str_attr(nlh, NFTA_SET_ELEM_LIST_SET);
	/* The skeleton's sets go last in the batch (want_build()). */
	struct st_set *st = name ? ntab_add(&t->sets, name, sizeof(*st)) : NULL;
	struct nlmsghdr **v, *m;

	if (!st)
		return -ENOMEM;
	if (!strcmp(name, nset_descs[S_L2OK].name)) {
		/* A constant set: its elements are made with it. */
		st->msg2 = msg_dup(nlh);
		return st->msg2 ? 0 : -ENOMEM;
	}
	v = realloc(st->msgs, (st->nmsgs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	st->msgs = v;
	m = msg_dup(nlh);
	if (!m)
		return -ENOMEM;
	st->msgs[st->nmsgs++] = m;
	return relems_each(m, w_elem, st);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int w_chain(struct tstate *t, const struct nlmsghdr *nlh)
{
	const char *name = str_attr(nlh, NFTA_CHAIN_NAME);
	const char *const *devs;
	struct nftnl_chain *ch;
	struct st_chain *c;
	unsigned int k = 0;
	int err;

	c = name ? ntab_add(&t->chains, name, sizeof(*c)) : NULL;
	if (!c)
		return -ENOMEM;
	c->base = has_attr(nlh, NFTA_CHAIN_HOOK);
	if (!c->msg)
		c->policy = policy_attr(nlh);
	if (!c->msg && !(c->msg = msg_dup(nlh)))
		return -ENOMEM;
	ch = c->base ? nftnl_chain_alloc() : NULL;
	if (!ch)
		return c->base ? -ENOMEM : 0;
	err = NPARSE(nftnl_chain_nlmsg_parse(nlh, ch)) ?:
	      chain_parsed_devs(nlh, ch);
	if (!err)
		st_chain_hook(c, ch);
	if (!err && nftnl_chain_is_set(ch, NFTNL_CHAIN_DEVICES)) {
		devs = nftnl_chain_get_array(ch, NFTNL_CHAIN_DEVICES);
		while (devs[k])
			k++;
		c->devs = calloc(k + 1, sizeof(*c->devs));
		for (c->ndevs = 0; c->devs && c->ndevs < k; c->ndevs++)
			if (!(c->devs[c->ndevs] = strdup(devs[c->ndevs])))
				break;
	}
	nftnl_chain_free(ch);
	if (err < 0 || (k && c->ndevs != k))
		return -ENOMEM;
	/* As readback.c has them: sorted, compared one to one (a chain
	 * without devices has no array: qsort must not see NULL). */
	if (c->ndevs > 1)
		qsort(c->devs, c->ndevs, sizeof(*c->devs), cmp_str);
	return 0;
}

static int w_rule(struct tstate *t, const struct nlmsghdr *nlh)
{
	const char *chain = str_attr(nlh, NFTA_RULE_CHAIN);
	const struct nlattr *a, *ud = NULL;
	struct st_chain *c = chain ? ntab_add(&t->chains, chain, sizeof(*c)) : NULL;

	if (!c)
		return -ENOMEM;
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == NFTA_RULE_USERDATA)
			ud = a;
	return st_rule_add(c, 0, ud ? mnl_attr_get_payload(ud) : NULL,
			   ud ? mnl_attr_get_payload_len(ud) : 0, nlh);
}

static int w_obj(struct tstate *t, const struct nlmsghdr *nlh)
{
	const char *name = str_attr(nlh, NFTA_OBJ_NAME);
	struct st_obj *o = name ? ntab_add(&t->objs, name, sizeof(*o)) : NULL;

	if (!o)
		return -ENOMEM;
	o->type = NFT_OBJECT_COUNTER;
	o->msg = msg_dup(nlh);
	return o->msg ? 0 : -ENOMEM;
}

static int parse(struct tstate *t, const struct nbatch *b, size_t start)
{
	size_t off = start;
	int err = 0;

	while (!err && off + sizeof(struct nlmsghdr) <= b->len) {
		const struct nlmsghdr *nlh = (const void *)(b->buf + off);

		switch (NFNL_MSG_TYPE(nlh->nlmsg_type)) {
		case NFT_MSG_NEWSET:
			err = w_set(t, nlh);
			break;
		case NFT_MSG_NEWSETELEM:
			err = w_elems(t, nlh);
			break;
		case NFT_MSG_NEWCHAIN:
			err = w_chain(t, nlh);
			break;
		case NFT_MSG_NEWRULE:
			err = w_rule(t, nlh);
			break;
		case NFT_MSG_NEWOBJ:
			err = w_obj(t, nlh);
			break;
		}
		off += MNL_ALIGN(nlh->nlmsg_len);
	}
	return err;
}

int want_build(struct vnic_nft *n, const struct vnic_policy *p,
	       const struct resolved *r, struct tstate *want)
{
	struct vnic_nft *s = shadow_new(n, r->off[p->n]);
	struct nlmsghdr *first;
	struct nbatch b;
	size_t start;
	int err;

	if (!s)
		return -ENOMEM;
	memset(want, 0, sizeof(*want));
	nbatch_init(&b);
	/* Where the messages start: where the first would be made. */
	first = nbatch_msg(&b, 0, 0);
	err = first ? 0 : -ENOMEM;
	start = first ? (size_t)((char *)first - b.buf) : 0;
	if (!err)
		err = build(s, p, r, &b);
	if (!err)
		err = parse(want, &b, start);
	want->exists = true;
	want->comment_ours = true;
	nbatch_free(&b);
	shadow_free(s);
	return err;
}
