// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sync by difference: the table the kernel has (installed.c) against the
 * table a clean apply of the policy would make (want.c), object by object,
 * and one batch that turns the first into the second.  The kernel's table
 * is the truth: whatever another process removed is made again from the
 * clean apply's own messages, whatever it added to libvnic's table is
 * removed, so after a sync the table is exactly what a clean apply into an
 * empty table makes.  Its cost is the read (a bounded number of dumps), the
 * comparison (hash lookups) and a batch of the difference only: no request
 * per guest or per NIC.
 *
 * The batch, in the order the kernel's references need:
 *   1. elements that go (and the state element), sets that cannot be read
 *      flushed;
 *   2. rules that go: every rule of a chain whose rules are not the wanted
 *      ones, by handle (rules carry a tag, ruletag.c), and every rule of
 *      a shard of a kind no longer wanted (it goes at 11); a changed
 *      guest's chain whose rules were not read (a vouched table) is
 *      flushed;
 *   3. chains, 4. counters, 5. sets that go;
 *   6. sets, 7. counters, 8. chains (with their rules) that are missing,
 *      and the policy of base chains whose policy another process changed;
 *   9. the wanted rules of the chains emptied in 2;
 *  10. elements that are missing; 11. the devices of the shared base
 *      chains (layout.c makes or deletes a shard as needed); 12. the new
 *      state element, which records the generation the commit makes.
 * Before it, each in a commit of its own: sets that grow, a dormant table
 * woken, a deferred claim; all of them only once the caller's fn has seen
 * every difference and let the sync go on.
 *
 * Every difference is also told to the caller, attributed: to a guest that
 * is added, changed or removed (nothing more to say), or as a repair of
 * libvnic's object, or as a foreign object.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/chain.h>
#include <libnftnl/object.h>
#include <libnftnl/set.h>

#include "nft/state.h"


enum gstat { G_SAME, G_ADDED, G_CHANGED, G_REMOVED };

struct ifg {
	uint32_t ifi;
	const char *guest;
};

struct dentry {
	uint32_t kind;
	char object[96];
	uint32_t added, removed;
};

struct dctx {
	struct vnic_nft *n;
	const struct vnic_policy *p;
	const struct resolved *r;
	struct tstate *have, *want;
	struct nbatch *b;
	struct strmap gstat;		/* guest name -> enum gstat */
	struct ifg *ifg;		/* ifindex -> guest, sorted */
	unsigned int nifg, capifg;
	struct ifg *keyg;		/* guests-set key -> guest, sorted */
	unsigned int nkeyg, capkeyg;
	char **owned;			/* names ifg borrows from drops */
	unsigned int nowned;
	bool masks_moved;		/* the switch masks in use change */
	/* Masks the table has and the policy no longer uses, while it uses
	 * no new one: their sets and chains, and the base chains' jumps to
	 * them (ltags), are what apply and remove leave behind.  tidy: the
	 * messages that only drop those; alone they are no difference. */
	uint8_t left[(SW_FROM + 1) / 8];
	bool left_only;
	uint64_t *ltags;
	unsigned int nltags;
	unsigned int tidy;
	struct dentry *ent;
	unsigned int nent, capent;
	uint32_t counts[S__MAX];	/* wanted elements per set */
	struct vnic_nft_result *res;
};

/* --- attribution ------------------------------------------------------- */

static int ifg_add(struct ifg **v, unsigned int *n, unsigned int *cap,
		   uint32_t ifi, const char *guest)
{
	if (*n == *cap) {
		unsigned int c = *cap ? *cap * 2 : 256;
		struct ifg *p = realloc(*v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[*n].ifi = ifi;
	(*v)[(*n)++].guest = guest;
	return 0;
}

static int ifg_cmp(const void *a, const void *b)
{
	const struct ifg *x = a, *y = b;

	return x->ifi < y->ifi ? -1 : x->ifi > y->ifi;
}

static const char *ifg_find(const struct ifg *v, unsigned int n, uint32_t ifi)
{
	const struct ifg k = { ifi, NULL }, *f;

	f = v ? bsearch(&k, v, n, sizeof(*v), ifg_cmp) : NULL;
	return f ? f->guest : NULL;
}

static enum gstat status(const struct dctx *dc, const char *guest)
{
	uint32_t v;

	return guest && !strmap_get(&dc->gstat, guest, &v) ? (enum gstat)v : G_SAME;
}

/* The guests' statuses: the policy's digests against the guests set's. */
static int guests_status(struct dctx *dc)
{
	const struct vnic_policy *p = dc->p;
	struct tstate *h = dc->have;
	unsigned int i, k;
	uint32_t hi;
	int err = 0;

	for (i = 0; i < p->n && !err; i++) {
		const char *name = p->g[i]->name;
		uint64_t d = dc->r->digest[i];
		enum gstat st = G_ADDED;

		char ctr[80], chain[80];

		guest_names(name, ctr, chain, sizeof(ctr));
		if (!strmap_get(&h->guests, name, &hi))
			st = h->gdigest[hi] == d ? G_SAME : G_CHANGED;
		else if (ntab_get(&h->objs, ctr))
			/* Its record in the guests set is gone, its counter is
			 * there: installed, each of its objects compared. */
			st = G_SAME;
		err = strmap_add(&dc->gstat, name, st);
		for (k = 0; !err && k < p->g[i]->nn; k++)
			err = ifg_add(&dc->ifg, &dc->nifg, &dc->capifg,
				      (uint32_t)dc->r->ifi[dc->r->off[i] + k], name);
		if (!err)
			err = ifg_add(&dc->keyg, &dc->nkeyg, &dc->capkeyg,
				      guest_key(name), name);
	}
	for (i = 0; i < h->ng && !err; i++) {
		if (!policy_find(p, h->gname[i], &k))
			continue;
		err = strmap_add(&dc->gstat, h->gname[i], G_REMOVED);
		if (!err)
			err = ifg_add(&dc->keyg, &dc->nkeyg, &dc->capkeyg,
				      guest_key(h->gname[i]), h->gname[i]);
	}
	return err;
}

/* Installed NICs of guests the policy drops: the drops map says whose
 * counter each ifindex counts on. */
static int drops_owners(struct dctx *dc)
{
	struct st_set *s = ntab_get(&dc->have->sets, nset_descs[S_CTR].name);
	unsigned int i;
	char name[POLICY_GUEST_MAX + 1];
	char **v;
	int err = 0;

	if (!s)
		return 0;
	v = calloc(s->n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	dc->owned = v;
	for (i = 0; i < s->n && !err; i++) {
		const char *o = st_elem_objref(s, &s->el[i]);
		uint32_t ifi;

		if (s->el[i].klen != 4 || strncmp(o, "c_", 2) ||
		    strlen(o + 2) > POLICY_GUEST_MAX)
			continue;
		strcpy(name, o + 2);
		memcpy(&ifi, s->el[i].key, 4);
		if (ifg_find(dc->ifg, dc->nifg, ifi))
			continue;
		v[dc->nowned] = strdup(name);
		if (!v[dc->nowned])
			return -ENOMEM;
		err = ifg_add(&dc->ifg, &dc->nifg, &dc->capifg, ifi, v[dc->nowned++]);
	}
	return err;
}

/* The guest an element is of, or NULL. */
static const char *elem_guest(const struct dctx *dc, const struct st_set *s,
			      const struct st_elem *e)
{
	uint32_t k;

	if (e->klen < 4)
		return NULL;
	memcpy(&k, e->key, 4);
	if (!strcmp(s->name, nset_descs[S_GUESTS].name))
		return ifg_find(dc->keyg, dc->nkeyg, k);
	return ifg_find(dc->ifg, dc->nifg, k);
}

/* --- masks left behind ------------------------------------------------ */

static bool mask_left(const struct dctx *dc, uint32_t m)
{
	return m && dc->left_only && (dc->left[m / 8] & (1u << (m % 8)));
}

/* The tag of the jump rule to mask m's chain of kind c, as rule_mask()
 * writes it. */
static int jump_tag(struct dctx *dc, enum nchain c, uint32_t m, uint64_t *tag)
{
	struct nlmsghdr *first;
	const struct nlattr *a;
	struct nbatch b;
	bool found = false;
	int err;

	nbatch_init(&b);
	/* The rule goes where the first message would be made. */
	first = nbatch_msg(&b, 0, 0);
	err = first ? rule_mask(dc->n, &b, "x", c, m, false) : -ENOMEM;
	if (!err)
		mnl_attr_for_each(a, first, sizeof(struct nfgenmsg))
			if (mnl_attr_get_type(a) == NFTA_RULE_USERDATA)
				found = rule_tag_parse(mnl_attr_get_payload(a),
						       mnl_attr_get_payload_len(a), tag);
	nbatch_free(&b);
	return err ? err : found ? 0 : -EPROTO;
}

static int left_tags(struct dctx *dc)
{
	unsigned int m, c;
	int err = 0;

	for (m = 1; m <= SW_FROM && !err; m++) {
		if (!mask_left(dc, m))
			continue;
		for (c = 0; c < C__MAX && !err; c++) {
			uint64_t *v = realloc(dc->ltags, (dc->nltags + 1) * sizeof(*v));

			if (!v)
				return -ENOMEM;
			dc->ltags = v;
			err = jump_tag(dc, (enum nchain)c, m, &v[dc->nltags]);
			if (!err)
				dc->nltags++;
		}
	}
	return err;
}

static bool left_jump(const struct dctx *dc, const struct st_rule *r)
{
	unsigned int i;

	for (i = 0; r->tagged && i < dc->nltags; i++)
		if (r->tag == dc->ltags[i])
			return true;
	return false;
}

/* h has w's rules, in order, and besides them only jumps to left masks. */
static bool same_but_left(const struct dctx *dc, const struct st_chain *h,
			  const struct st_chain *w)
{
	unsigned int i, j = 0;

	if (!dc->nltags || !w)
		return false;
	for (i = 0; i < h->nrules; i++) {
		if (left_jump(dc, &h->rules[i]))
			continue;
		if (j == w->nrules || !h->rules[i].tagged ||
		    h->rules[i].tag != w->rules[j].tag)
			return false;
		j++;
	}
	return j == w->nrules;
}

/* A chain of a left mask's. */
static bool left_chain(const struct dctx *dc, const char *name)
{
	char set[24], want[16];
	unsigned int c;
	uint32_t m;

	/* "sw_in_37f": mask 37f, as its set "sw_37f" says it. */
	if (strncmp(name, "sw_", 3) || strlen(name) < 7)
		return false;
	snprintf(set, sizeof(set), "sw_%s", name + 6);
	m = swmask_parse(set);
	if (!m)
		return false;
	for (c = 0; c < C__MAX; c++) {
		swchain_name((enum nchain)c, m, want, sizeof(want));
		if (!strcmp(want, name))
			return mask_left(dc, m);
	}
	return false;
}

/* --- what is told -------------------------------------------------------- */

__attribute__((format(printf, 5, 6)))
static int note(struct dctx *dc, uint32_t kind, uint32_t added,
		uint32_t removed, const char *fmt, ...)
{
	char obj[96];
	unsigned int i;
	va_list ap;

	if (!dc->have->exists)
		return 0;	/* a new table: its guests say it all */
	va_start(ap, fmt);
	vsnprintf(obj, sizeof(obj), fmt, ap);
	va_end(ap);
	for (i = 0; i < dc->nent; i++)
		if (dc->ent[i].kind == kind && !strcmp(dc->ent[i].object, obj))
			break;
	if (i == dc->nent) {
		if (dc->nent == dc->capent) {
			unsigned int cap = dc->capent ? dc->capent * 2 : 16;
			struct dentry *e = realloc(dc->ent, cap * sizeof(*e));

			if (!e)
				return -ENOMEM;
			dc->ent = e;
			dc->capent = cap;
		}
		memset(&dc->ent[i], 0, sizeof(dc->ent[i]));
		dc->ent[i].kind = kind;
		snprintf(dc->ent[i].object, sizeof(dc->ent[i].object), "%s", obj);
		dc->nent++;
	}
	dc->ent[i].added += added;
	dc->ent[i].removed += removed;
	return 0;
}

/* A difference of guest g's object (g NULL: a shared one). */
static int note_of(struct dctx *dc, const char *g, uint32_t added,
		   uint32_t removed, const char *what)
{
	if (g && status(dc, g) != G_SAME)
		return 0;
	return note(dc, VNIC_NFT_DIFF_REPAIR, added, removed, "%s", what);
}

static const char *set_kind(const char *name)
{
	int i = st_set_index(name);

	return i >= 0 && i < S__MAX && (nset_descs[i].flags & NFT_SET_MAP) ?
		"map" : "set";
}

/* --- messages ------------------------------------------------------------ */

static int put_copy(struct nbatch *b, const struct nlmsghdr *m)
{
	struct nlmsghdr *nlh = nbatch_msg(b, NFNL_MSG_TYPE(m->nlmsg_type),
					  m->nlmsg_flags);
	uint32_t seq;

	if (!nlh)
		return -ENOMEM;
	seq = nlh->nlmsg_seq;
	memcpy(nlh, m, m->nlmsg_len);
	nlh->nlmsg_seq = seq;
	nbatch_end(b, nlh);
	return 0;
}

static struct nftnl_set *elem_set(struct vnic_nft *n, const char *name)
{
	struct nftnl_set *s = nftnl_set_alloc();

	if (s && set_id(s, n->table, name)) {
		nftnl_set_free(s);
		s = NULL;
	}
	return s;
}

static int put_elems(struct dctx *dc, struct nftnl_set *s, bool add)
{
	struct nlmsghdr *nlh;

	nlh = nbatch_msg(dc->b, add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM,
			 add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	if (nlh) {
		nftnl_set_elems_nlmsg_build_payload(nlh, s);
		nbatch_end(dc->b, nlh);
	}
	nftnl_set_free(s);
	return nlh ? 0 : -ENOMEM;
}

/* A batch of elements of one set, ELIST_MAX a message (elist.c): a delete
 * by key, an add as want.c read it from the clean apply's batch. */
struct eput {
	struct dctx *dc;
	const char *set;
	bool add;
	struct elist l;
};

static int eput_one(struct eput *ep, const struct st_elem *e)
{
	bool full = ep->add ? elist_full_raw(&ep->l, e->raw) :
			      elist_full(&ep->l, e->klen, NULL);
	int err = 0;

	if (full)
		err = elist_flush(&ep->l, ep->dc->b, ep->dc->n->table, ep->set,
				  ep->add);
	if (!err)
		err = ep->add ? elist_add_raw(&ep->l, e->raw) :
				elist_add(&ep->l, e->key, e->klen, NULL);
	return err;
}

/* The last message out unless err; the list freed either way. */
static int eput_end(struct eput *ep, int err)
{
	if (!err)
		err = elist_flush(&ep->l, ep->dc->b, ep->dc->n->table, ep->set,
				  ep->add);
	elist_free(&ep->l);
	return err;
}

/* DELSETELEM without elements flushes the set. */
static int flush_set(struct dctx *dc, const char *name)
{
	struct nftnl_set *s = elem_set(dc->n, name);

	return s ? put_elems(dc, s, false) : -ENOMEM;
}

static int del_named(struct dctx *dc, uint16_t type, const char *name,
		     uint32_t objtype)
{
	struct nlmsghdr *nlh = nbatch_msg(dc->b, type, 0);

	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, 1 /* NFTA_*_TABLE */, dc->n->table);
	mnl_attr_put_strz(nlh, type == NFT_MSG_DELCHAIN ? NFTA_CHAIN_NAME :
			  2 /* NFTA_SET_NAME, NFTA_OBJ_NAME */, name);
	if (type == NFT_MSG_DELOBJ)
		mnl_attr_put_u32(nlh, NFTA_OBJ_TYPE, htonl(objtype));
	nbatch_end(dc->b, nlh);
	return 0;
}

static int del_rule(struct dctx *dc, const char *chain, uint64_t handle)
{
	struct nlmsghdr *nlh = nbatch_msg(dc->b, NFT_MSG_DELRULE, 0);

	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_RULE_TABLE, dc->n->table);
	mnl_attr_put_strz(nlh, NFTA_RULE_CHAIN, chain);
	mnl_attr_put_u64(nlh, NFTA_RULE_HANDLE, htobe64(handle));
	nbatch_end(dc->b, nlh);
	return 0;
}

/* DELRULE without a handle flushes the chain (rules unread, diff.c). */
static int flush_chain(struct dctx *dc, const char *chain)
{
	struct nlmsghdr *nlh = nbatch_msg(dc->b, NFT_MSG_DELRULE, 0);

	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_RULE_TABLE, dc->n->table);
	mnl_attr_put_strz(nlh, NFTA_RULE_CHAIN, chain);
	nbatch_end(dc->b, nlh);
	return 0;
}

/*
 * A wanted rule into chain (another shard of the same kind, maybe): its
 * message copied attribute by attribute, the chain's name replaced.  Not
 * parsed and built again: libnftnl reads an objref's name as a C string,
 * and a name whose length is a multiple of 4 ("c_g0") has no NUL or
 * padding after it, so it would take the next attribute's length byte
 * with it ("c_g00") and the kernel would find no such counter (ENOENT).
 */
static int put_rule(struct dctx *dc, const struct st_rule *r, const char *chain)
{
	struct nlmsghdr *nlh = nbatch_msg(dc->b, NFT_MSG_NEWRULE,
					  NLM_F_CREATE | NLM_F_APPEND);
	const struct nlattr *a;

	if (!nlh)
		return -ENOMEM;
	mnl_attr_for_each(a, r->msg, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) == NFTA_RULE_CHAIN)
			mnl_attr_put_strz(nlh, NFTA_RULE_CHAIN, chain);
		else if (mnl_attr_get_type(a) != NFTA_RULE_HANDLE)
			mnl_attr_put(nlh, a->nla_type, mnl_attr_get_payload_len(a),
				     mnl_attr_get_payload(a));
	}
	nbatch_end(dc->b, nlh);
	return 0;
}

/* --- shards -------------------------------------------------------------- */

/* "eg12" -> C_EG; -1 for another name. */
static int shard_kind(const char *name)
{
	unsigned int c;
	size_t len;

	for (c = 0; c < C__MAX; c++) {
		len = strlen(nchain_names[c]);
		if (!strncmp(name, nchain_names[c], len) && name[len] &&
		    strspn(name + len, "0123456789") == strlen(name + len))
			return (int)c;
	}
	return -1;
}

/* The wanted rules of every shard of kind c: its first shard's. */
static const struct st_chain *shard_template(const struct dctx *dc, int c)
{
	unsigned int i;

	for (i = 0; i < dc->want->chains.n; i++) {
		const struct st_chain *ch = dc->want->chains.v[i];

		if (shard_kind(ch->name) == c)
			return ch;
	}
	return NULL;
}

/* --- 1. elements that go ------------------------------------------------ */

static int elems_out(struct dctx *dc)
{
	unsigned int i, j;
	int err = 0;

	for (i = 0; i < dc->want->sets.n && !err; i++) {
		struct st_set *w = dc->want->sets.v[i];
		struct st_set *h = ntab_get(&dc->have->sets, w->name);
		struct eput ep = { .dc = dc, .set = w->name, .add = false };

		if (!h || !strcmp(w->name, nset_descs[S_L2OK].name))
			continue;
		if (!h->readable) {
			err = flush_set(dc, w->name);
			if (!err)
				err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 0,
					   "%s %s (unreadable elements, flushed)",
					   set_kind(w->name), w->name);
			continue;
		}
		for (j = 0; j < h->n && !err; j++) {
			const struct st_elem *e = &h->el[j];

			if (st_elem_same(h, e, w, st_elem_find(w, e->key, e->klen)))
				continue;
			err = eput_one(&ep, e);
			if (!err && !elem_guest(dc, h, e))
				err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 1, "%s %s",
					   set_kind(w->name), w->name);
			else if (!err && status(dc, elem_guest(dc, h, e)) == G_SAME)
				err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 1, "%s %s",
					   set_kind(w->name), w->name);
		}
		err = eput_end(&ep, err);
	}
	return err;
}

/* --- 2. rules that go, 9. rules that come -------------------------------- */

static bool same_rules(const struct st_chain *h, const struct st_chain *w)
{
	unsigned int i;

	if (!w || h->nrules != w->nrules)
		return false;
	for (i = 0; i < h->nrules; i++)
		if (!h->rules[i].tagged || h->rules[i].tag != w->rules[i].tag)
			return false;
	return true;
}

/* How many of a's rules b lacks (by tag; untagged ones always). */
static uint32_t rules_lacking(const struct st_chain *a, const struct st_chain *b)
{
	unsigned int i, j;
	uint32_t k = 0;

	for (i = 0; i < a->nrules; i++) {
		for (j = 0; b && j < b->nrules; j++)
			if (a->rules[i].tagged && b->rules[j].tagged &&
			    a->rules[i].tag == b->rules[j].tag)
				break;
		k += !b || j == b->nrules;
	}
	return k;
}

/* The wanted chain for installed chain h: its own, or its kind's shard's;
 * NULL when h goes whole. */
static const struct st_chain *wanted_for(const struct dctx *dc,
					 const struct st_chain *h)
{
	int c = shard_kind(h->name);

	return c >= 0 ? shard_template(dc, c) : ntab_get(&dc->want->chains, h->name);
}

/* A base chain at another hook or priority than wanted: another process
 * deleted it and made it again there (an ingress chain at egress leaves
 * the ingress unfiltered).  A hook can only change that way, and a chain
 * only be put back the same way. */
static bool misplaced(const struct st_chain *h, const struct st_chain *w)
{
	return h->hooked && w->hooked &&
	       (h->hooknum != w->hooknum || h->prio != w->prio);
}

/* An installed base chain hooked otherwise than wanted (a guest's to-guest
 * chain, any chain misplaced, a shard too) is made again whole. */
static bool remade(const struct st_chain *h, const struct st_chain *w)
{
	unsigned int i;

	if (!w || !w->base || !h->base)
		return false;
	if (misplaced(h, w))
		return true;
	if (shard_kind(h->name) >= 0 || !w->ndevs)
		return false;
	if (h->ndevs != w->ndevs)
		return true;
	for (i = 0; i < h->ndevs; i++)
		if (strcmp(h->devs[i], w->devs[i]))
			return true;
	return false;
}

static int rule_note(struct dctx *dc, const struct st_chain *h,
		     const struct st_chain *w)
{
	const char *g = st_obj_guest(h->name);
	bool shared = !g;

	/* Shared chains' rules follow the switch masks in use. */
	if (shared && dc->masks_moved && strncmp(h->name, "sw_", 3))
		return 0;
	if (g && status(dc, g) != G_SAME)
		return 0;
	return note(dc, VNIC_NFT_DIFF_REPAIR, rules_lacking(w, h),
		    rules_lacking(h, w), "rules of chain %s", h->name);
}

/* Chain h's rules go (rules_out()) and w's come (rules_in()): h is
 * wanted, not made again whole, and its rules differ.  Called once by
 * each: what only drops the jumps to masks left behind counts its
 * messages, h's deletes and w's rules, as tidy.  A guest's chain whose
 * rules were not read (a vouched table) holds what libvnic wrote for its
 * guest: the same while the guest is, rewritten whole when it changes. */
static bool redo_rules(struct dctx *dc, const struct st_chain *h,
		       const struct st_chain *w, bool out)
{
	if (!w || remade(h, w))
		return false;
	if (h->rules_unread)
		return status(dc, st_obj_guest(h->name)) != G_SAME;
	if (same_rules(h, w))
		return false;
	if (same_but_left(dc, h, w))
		dc->tidy += out ? h->nrules : w->nrules;
	return true;
}

static int rules_out(struct dctx *dc)
{
	unsigned int i, j;
	int err = 0;

	for (i = 0; i < dc->have->chains.n && !err; i++) {
		struct st_chain *h = dc->have->chains.v[i];
		const struct st_chain *w = wanted_for(dc, h);

		/* A shard of a kind no longer wanted goes only at step 11, with
		 * its devices; its rules name the mask sets and chains that
		 * steps 3 and 5 delete, so they go now (EBUSY otherwise). */
		if (!w && shard_kind(h->name) >= 0) {
			for (j = 0; j < h->nrules && !err; j++)
				err = del_rule(dc, h->name, h->rules[j].handle);
			continue;
		}
		if (!redo_rules(dc, h, w, true))
			continue;
		if (h->rules_unread)
			err = flush_chain(dc, h->name);
		for (j = 0; j < h->nrules && !err; j++)
			err = del_rule(dc, h->name, h->rules[j].handle);
		if (!err)
			err = rule_note(dc, h, w);
	}
	return err;
}

static int rules_in(struct dctx *dc)
{
	unsigned int i, j;
	int err = 0;

	for (i = 0; i < dc->have->chains.n && !err; i++) {
		struct st_chain *h = dc->have->chains.v[i];
		const struct st_chain *w = wanted_for(dc, h);

		if (!redo_rules(dc, h, w, false))
			continue;
		for (j = 0; j < w->nrules && !err; j++)
			err = put_rule(dc, &w->rules[j], h->name);
	}
	return err;
}

/*
 * A vouched read skipped the guests' rules, so the chains of the guests
 * that change are rewritten whole: a flush and their rules again, about
 * 10 µs a chain in the kernel, where a dump of every rule costs about 3 µs
 * a rule.  When more than half of the guests' chains would be rewritten
 * (every guest changed, each keeping its rules), the rules are read after
 * all and only the chains that differ are rewritten.
 */
static int rules_if_cheaper(struct dctx *dc)
{
	unsigned int i, unread = 0, redo = 0;

	for (i = 0; i < dc->have->chains.n; i++) {
		const struct st_chain *h = dc->have->chains.v[i];

		if (!h->rules_unread)
			continue;
		unread++;
		redo += redo_rules(dc, h, wanted_for(dc, h), false);
	}
	return redo * 2 > unread ? installed_read_rules(dc->n, dc->have) : 0;
}

/* --- 3-5. chains, counters, sets that go ----------------------------------- */

static bool ours_chain(const char *name)
{
	return st_obj_guest(name) || !strncmp(name, "sw_", 3) ||
	       !strncmp(name, "pfx", 3) || shard_kind(name) >= 0;
}

static int chains_out(struct dctx *dc)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < dc->have->chains.n && !err; i++) {
		struct st_chain *h = dc->have->chains.v[i];
		const struct st_chain *w = wanted_for(dc, h);

		if ((shard_kind(h->name) >= 0 || w) && !remade(h, w))
			continue;
		err = del_named(dc, NFT_MSG_DELCHAIN, h->name, 0);
		if (err)
			break;
		if (!w && left_chain(dc, h->name))
			dc->tidy++;
		/* A shard's devices are hooked again by hooks() (step 11),
		 * which tells of each; say that the chain went. */
		if (shard_kind(h->name) >= 0)
			err = note(dc, VNIC_NFT_DIFF_REPAIR, 1, 1,
				   "chain %s (hooked elsewhere)", h->name);
		else if (w)
			continue;	/* made again: chains_in() tells */
		else if (!ours_chain(h->name))
			err = note(dc, VNIC_NFT_DIFF_FOREIGN, 0, h->nrules,
				   "chain %s", h->name);
	}
	return err;
}

static int objs_out(struct dctx *dc)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < dc->have->objs.n && !err; i++) {
		struct st_obj *h = dc->have->objs.v[i];
		struct st_obj *w = ntab_get(&dc->want->objs, h->name);

		if (w && w->type == h->type)
			continue;
		err = del_named(dc, NFT_MSG_DELOBJ, h->name, h->type);
		if (!err && (h->type != NFT_OBJECT_COUNTER || !st_obj_guest(h->name)))
			err = note(dc, VNIC_NFT_DIFF_FOREIGN, 0, 0, "object %s",
				   h->name);
	}
	return err;
}

static int sets_out(struct dctx *dc)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < dc->have->sets.n && !err; i++) {
		struct st_set *h = dc->have->sets.v[i];

		if (ntab_get(&dc->want->sets, h->name))
			continue;
		err = del_named(dc, NFT_MSG_DELSET, h->name, 0);
		if (!err && h->ours && mask_left(dc, swmask_parse(h->name)) && !h->n)
			dc->tidy++;
		if (!err && !h->ours)
			err = note(dc, VNIC_NFT_DIFF_FOREIGN, 0, 0, "set %s", h->name);
	}
	return err;
}

/* --- 6-8. sets, counters, chains that come ------------------------------ */

static int sets_in(struct dctx *dc)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < dc->want->sets.n && !err; i++) {
		struct st_set *w = dc->want->sets.v[i];
		uint32_t m = swmask_parse(w->name);
		char chain[16];

		if (ntab_get(&dc->have->sets, w->name))
			continue;
		err = put_copy(dc->b, w->msg);
		if (!err && w->msg2)
			err = put_copy(dc->b, w->msg2);
		if (err)
			break;
		/* A new mask's set is no repair; one whose chains exist is. */
		swchain_name(C_IN, m, chain, sizeof(chain));
		if (!m || ntab_get(&dc->have->chains, chain))
			err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 0, "%s %s",
				   set_kind(w->name), w->name);
	}
	return err;
}

static int objs_in(struct dctx *dc)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < dc->want->objs.n && !err; i++) {
		struct st_obj *w = dc->want->objs.v[i];
		struct st_obj *h = ntab_get(&dc->have->objs, w->name);
		char what[96];

		if (h && h->type == w->type)
			continue;
		err = put_copy(dc->b, w->msg);
		snprintf(what, sizeof(what), "counter %s", w->name);
		if (!err)
			err = note_of(dc, st_obj_guest(w->name), 0, 0, what);
	}
	return err;
}

static int chains_in(struct dctx *dc)
{
	unsigned int i, j;
	int err = 0;

	for (i = 0; i < dc->want->chains.n && !err; i++) {
		struct st_chain *w = dc->want->chains.v[i];
		struct st_chain *h = ntab_get(&dc->have->chains, w->name);
		char what[96];

		if (shard_kind(w->name) >= 0 || (h && !remade(h, w)))
			continue;
		err = put_copy(dc->b, w->msg);
		for (j = 0; j < w->nrules && !err; j++)
			err = put_copy(dc->b, w->rules[j].msg);
		snprintf(what, sizeof(what), "chain %s", w->name);
		/* A new mask's chains, or new prefix chains, are no repair. */
		if (!err && !h && (!strncmp(w->name, "sw_", 3) ||
				   !strncmp(w->name, "pfx", 3)))
			continue;
		if (!err)
			err = note_of(dc, st_obj_guest(w->name), 0, 0, what);
	}
	return err;
}

/* A base chain of libvnic's whose policy another process changed (to drop:
 * every frame its rules let through is lost) gets the wanted one back, in
 * an update naming only the policy.  A chain made again has it already. */
static int put_policy(struct dctx *dc, const char *chain, uint32_t policy)
{
	struct nlmsghdr *nlh = nbatch_msg(dc->b, NFT_MSG_NEWCHAIN, 0);

	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_CHAIN_TABLE, dc->n->table);
	mnl_attr_put_strz(nlh, NFTA_CHAIN_NAME, chain);
	mnl_attr_put_u32(nlh, NFTA_CHAIN_POLICY, htonl(policy));
	nbatch_end(dc->b, nlh);
	return 0;
}

static int policies(struct dctx *dc)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < dc->have->chains.n && !err; i++) {
		const struct st_chain *h = dc->have->chains.v[i];
		const struct st_chain *w = wanted_for(dc, h);
		char what[96];

		if (!h->base || !w || !w->base || remade(h, w) ||
		    h->policy == w->policy)
			continue;
		err = put_policy(dc, h->name, w->policy);
		snprintf(what, sizeof(what), "policy of chain %s", h->name);
		if (!err)
			err = note_of(dc, st_obj_guest(h->name), 0, 0, what);
	}
	return err;
}

/* --- 10. elements that come --------------------------------------------- */

static int elems_in(struct dctx *dc)
{
	unsigned int i, j;
	int err = 0;

	for (i = 0; i < dc->want->sets.n && !err; i++) {
		struct st_set *w = dc->want->sets.v[i];
		struct st_set *h = ntab_get(&dc->have->sets, w->name);
		struct eput ep = { .dc = dc, .set = w->name, .add = true };
		int idx = st_set_index(w->name);

		if (idx >= 0 && idx < S__MAX)
			dc->counts[idx] = w->n;
		if (!strcmp(w->name, nset_descs[S_L2OK].name))
			continue;
		for (j = 0; j < w->n && !err; j++) {
			const struct st_elem *e = &w->el[j];
			const struct st_elem *he = h && h->readable ?
				st_elem_find(h, e->key, e->klen) : NULL;

			if (st_elem_same(h, he, w, e))
				continue;
			err = eput_one(&ep, e);
			if (!err && h && status(dc, elem_guest(dc, w, e)) == G_SAME)
				err = note(dc, VNIC_NFT_DIFF_REPAIR, 1, 0, "%s %s",
					   set_kind(w->name), w->name);
		}
		err = eput_end(&ep, err);
	}
	return err;
}

/* --- 11. devices of the shared base chains ------------------------------ */

/* The handle's shards as installed, then the devices' difference noted
 * (layout.c emits it: updates, new shards with their rules, empty shards
 * deleted). */
static int hooks(struct dctx *dc)
{
	struct vnic_nft *n = dc->n;
	struct devlist want[C__MAX] = { { 0 } };
	unsigned int i, j, c, k;
	uint32_t gi;
	int err = 0;

	shards_clear(n);
	for (i = 0; i < dc->have->chains.n && !err; i++) {
		struct st_chain *h = dc->have->chains.v[i];
		int kind = shard_kind(h->name);
		struct shard *sh;

		/* A shard hooked elsewhere goes (chains_out()): its devices
		 * are in no shard. */
		if (kind < 0 || remade(h, wanted_for(dc, h)))
			continue;
		sh = shard_get(n, (enum nchain)kind,
			       (unsigned int)strtoul(h->name + strlen(nchain_names[kind]),
						     NULL, 10));
		if (!sh)
			return -ENOMEM;
		sh->ready = true;
		for (j = 0; j < h->ndevs && !err; j++)
			err = devlist_add(&sh->devs, h->devs[j]);
	}
	for (i = 0; i < dc->want->chains.n && !err; i++) {
		struct st_chain *w = dc->want->chains.v[i];
		int kind = shard_kind(w->name);

		for (j = 0; kind >= 0 && j < w->ndevs && !err; j++)
			err = devlist_add(&want[kind], w->devs[j]);
	}
	for (c = 0; c < C__MAX && !err; c++) {
		/* Devices to hook: wanted, in no shard. */
		for (i = 0; i < want[c].n && !err; i++) {
			const char *dev = want[c].names[i];
			bool in = false;

			for (k = 0; k < n->nshards[c] && !in; k++)
				in = devlist_has(&n->shards[c][k].devs, dev);
			if (in)
				continue;
			err = shard_note_devs(n, (enum nchain)c, &dev, 1, false);
			if (!err && !strmap_get(&dc->p->ifnames, dev, &gi) &&
			    status(dc, dc->p->g[gi]->name) == G_SAME)
				err = note(dc, VNIC_NFT_DIFF_REPAIR, 1, 0,
					   "hooks of the %s chains",
					   c == C_IN ? "ingress" : "egress");
		}
		/* Devices to unhook: hooked, not wanted. */
		for (k = 0; k < n->nshards[c] && !err; k++) {
			struct devlist *d = &n->shards[c][k].devs;

			for (i = 0; i < d->n && !err; i++) {
				const char *dev = d->names[i];

				if (d->live[i] && !devlist_has(&want[c], dev))
					err = shard_note_devs(n, (enum nchain)c,
								&dev, 1, true);
			}
		}
	}
	for (c = 0; c < C__MAX; c++)
		devlist_clear(&want[c]);
	return err ? err : shards_flush(n, dc->b);
}

/* --- the state element --------------------------------------------------- */

static void wanted_masks(struct dctx *dc)
{
	unsigned int i;
	uint8_t had[sizeof(dc->n->swmasks)] = { 0 };

	memset(dc->n->swmasks, 0, sizeof(dc->n->swmasks));
	for (i = 0; i < dc->want->sets.n; i++) {
		uint32_t m = swmask_parse(((struct st_set *)dc->want->sets.v[i])->name);

		if (m)
			swmask_mark(dc->n, m);
	}
	for (i = 0; i < dc->have->sets.n; i++) {
		uint32_t m = swmask_parse(((struct st_set *)dc->have->sets.v[i])->name);

		if (m)
			had[m / 8] |= (uint8_t)(1u << (m % 8));
	}
	dc->masks_moved = memcmp(had, dc->n->swmasks, sizeof(had)) != 0;
	dc->left_only = dc->masks_moved;
	for (i = 0; i < sizeof(had); i++) {
		dc->left[i] = had[i] & (uint8_t)~dc->n->swmasks[i];
		if (dc->n->swmasks[i] & (uint8_t)~had[i])
			dc->left_only = false;
	}
}

static uint64_t policy_digest(const struct dctx *dc)
{
	uint64_t d = 0;
	unsigned int i;

	for (i = 0; i < dc->p->n; i++)
		d ^= state_mix(dc->p->g[i]->name,
			       dc->r->digest[i]);
	return d;
}

/* The state element's comment as this sync would write it with gen. */
static void state_text(const struct dctx *dc, uint64_t digest, uint32_t gen,
		       char *buf, size_t len)
{
	int k = snprintf(buf, len, "libvnic-state %016llx g=%u n=",
			 (unsigned long long)digest, gen);
	unsigned int s;

	for (s = 0; s < STATE_COUNTS && k > 0 && (size_t)k < len; s++)
		k += snprintf(buf + k, len - (size_t)k, "%s%u", s ? "," : "",
			      dc->counts[s]);
}

/* --- the whole ----------------------------------------------------------- */

/* Guests by name, the way `sort -V` puts g2 before g10. */
static int slot_cmp(const void *a, const void *b)
{
	const char *x = (*(const struct strmap_slot *const *)a)->key;
	const char *y = (*(const struct strmap_slot *const *)b)->key;

	return strverscmp(x, y);
}

static int report(struct dctx *dc, int (*fn)(const struct vnic_nft_diff *, void *),
		  void *arg)
{
	struct vnic_nft_diff d;
	unsigned int i;
	uint32_t v;
	int err = 0;

	const struct strmap_slot **g = calloc(dc->gstat.n + 1, sizeof(*g));
	unsigned int k = 0;

	if (!g)
		return -ENOMEM;
	for (i = 0; i < dc->gstat.cap; i++)
		if (dc->gstat.slots[i].key && dc->gstat.slots[i].val != G_SAME)
			g[k++] = &dc->gstat.slots[i];
	qsort(g, k, sizeof(*g), slot_cmp);
	for (i = 0; i < k && !err; i++) {
		v = g[i]->val;
		memset(&d, 0, sizeof(d));
		d.sz = sizeof(d);
		d.kind = v == G_ADDED ? VNIC_NFT_DIFF_GUEST_ADD :
			 v == G_CHANGED ? VNIC_NFT_DIFF_GUEST_CHANGE :
			 VNIC_NFT_DIFF_GUEST_REMOVE;
		d.guest = g[i]->key;
		err = fn ? fn(&d, arg) : 0;
	}
	free(g);
	for (i = 0; i < dc->nent && !err; i++) {
		memset(&d, 0, sizeof(d));
		d.sz = sizeof(d);
		d.kind = dc->ent[i].kind;
		d.object = dc->ent[i].object;
		d.added = dc->ent[i].added;
		d.removed = dc->ent[i].removed;
		err = fn ? fn(&d, arg) : 0;
	}
	return err;
}

static void count_guests(struct dctx *dc)
{
	struct vnic_nft_result *res = dc->res;
	unsigned int i;

	if (!res)
		return;
	for (i = 0; i < dc->gstat.cap; i++) {
		const struct strmap_slot *sl = &dc->gstat.slots[i];

		if (!sl->key)
			continue;
		res->guests_unchanged += sl->val == G_SAME;
		res->guests_added += sl->val == G_ADDED;
		res->guests_changed += sl->val == G_CHANGED;
		res->guests_removed += sl->val == G_REMOVED;
	}
	res->repaired = dc->nent;
}

/* A libvnic set replaced by another of another type cannot be made again
 * while rules refer to it: the table is refused, as check.c does. */
static int refuse_shapes(struct dctx *dc)
{
	unsigned int i;

	if (dc->have->exists && !dc->have->comment_ours)
		return vnic_set_err(dc->n->ctx, -EUCLEAN, VNIC_STEP_DUMP, -1, NULL,
				    "table netdev %s was not made by libvnic (no comment "
				    "\"managed by libvnic\"); nothing was changed; delete it "
				    "(nft delete table netdev %s) and apply the policy again",
				    dc->n->table, dc->n->table);
	for (i = 0; i < dc->have->sets.n; i++) {
		struct st_set *h = dc->have->sets.v[i];

		if (h->ours && !h->shape_ok && dc->n->damaged &&
		    dc->n->damage_final)
			return refuse_table(dc->n, dc->n->damage);
		if (h->ours && !h->shape_ok)
			return vnic_set_err(dc->n->ctx, -EUCLEAN, VNIC_STEP_DUMP, -1,
					    NULL, "table netdev %s: set %s is not of the "
					    "type libvnic gives it; nothing was changed; "
					    "delete the table (nft delete table netdev %s) "
					    "and apply the policy again", dc->n->table,
					    h->name, dc->n->table);
	}
	return 0;
}

/* Sets the wanted elements would overfill grow first, in a commit of
 * their own (a new size takes effect at commit): built into gb here, and
 * committed by grow_commit() only once the caller's fn let the sync go on,
 * as nothing is written before (*k: how many sets grow). */
static int grow_build(struct dctx *dc, struct nbatch *gb, unsigned int *k)
{
	struct vnic_nft *n = dc->n;
	unsigned int i;
	int err = 0;

	for (i = 0; i < dc->want->sets.n && !err; i++) {
		struct st_set *w = dc->want->sets.v[i];
		struct st_set *h = ntab_get(&dc->have->sets, w->name);
		uint64_t need = w->n + !strcmp(w->name, nset_descs[S_GUESTS].name);
		uint64_t sz = h ? h->size : 0;
		int idx = st_set_index(w->name);

		if (!sz || sz >= need || idx < 0)
			continue;
		while (sz < need)
			sz *= 2;
		h->size = sz > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)sz;
		err = layout_set(n, gb, (enum nset)idx, h->size);
		(*k)++;
	}
	return err;
}

/* Pinned to *genid; someone else's commit after it fails the sync. */
static int grow_commit(struct vnic_nft *n, struct nbatch *gb, uint64_t *genid,
		       unsigned int *sent)
{
	uint32_t now;
	int err;

	err = nbatch_commit(n, gb, *genid, sent);
	if (err)
		return err;
	err = nfnl_genid(n, &now);
	if (!err && now != (uint32_t)(*genid + 1))
		err = -ERESTART;
	*genid = now;
	return err;
}

/*
 * A dormant table (another process set NFT_TABLE_F_DORMANT with a table
 * update; the table was not owned) has every chain unhooked: nothing is
 * filtered.  It is woken in a commit of its own, pinned to *genid: the
 * kernel refuses a table's flags and a base chain's hooks changed in one
 * transaction (nft_table_pending_update()).
 */
static bool dormant(const struct dctx *dc)
{
	return dc->have->exists && (dc->have->tflags & NFT_TABLE_F_DORMANT);
}

static int wake(struct dctx *dc, uint64_t *genid)
{
	struct vnic_nft *n = dc->n;
	struct nlmsghdr *nlh;
	struct nbatch b;
	uint32_t now;
	int err;

	nbatch_init(&b);
	nlh = nbatch_msg(&b, NFT_MSG_NEWTABLE, 0);
	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, n->table);
	mnl_attr_put_u32(nlh, NFTA_TABLE_FLAGS,
			 htonl(dc->have->tflags & ~(uint32_t)NFT_TABLE_F_DORMANT));
	nbatch_end(&b, nlh);
	err = nbatch_commit(n, &b, *genid, NULL);
	nbatch_free(&b);
	if (err == -ERESTART || err == -EINTR)
		return err;
	if (err)
		return nfnl_set_err(n, err, "waking dormant table netdev %s", n->table);
	err = nfnl_genid(n, &now);
	if (!err && now != (uint32_t)(*genid + 1))
		err = -ERESTART;	/* someone else's commit came between */
	*genid = now;
	return err;
}

static bool guests_differ(const struct dctx *dc)
{
	unsigned int i;

	for (i = 0; i < dc->gstat.cap; i++)
		if (dc->gstat.slots[i].key && dc->gstat.slots[i].val != G_SAME)
			return true;
	return false;
}

static int build(struct dctx *dc, uint64_t digest, uint32_t gen)
{
	struct vnic_nft *n = dc->n;
	unsigned int s;
	int err = 0;

	if (!dc->have->exists)
		err = layout_table(n, dc->b, true);
	if (!err && dormant(dc))
		err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 0, "table (dormant)");
	if (!err)
		err = elems_out(dc);
	if (!err)
		err = rules_out(dc);
	if (!err)
		err = chains_out(dc);
	if (!err)
		err = objs_out(dc);
	if (!err)
		err = sets_out(dc);
	if (!err)
		err = sets_in(dc);
	if (!err)
		err = objs_in(dc);
	if (!err)
		err = chains_in(dc);
	if (!err)
		err = policies(dc);
	if (!err)
		err = rules_in(dc);
	if (!err)
		err = elems_in(dc);
	if (!err)
		err = hooks(dc);
	if (err)
		return err;
	/* Only what apply and remove leave of masks no NIC uses: no
	 * difference, nothing written (a sync that writes anyway drops it). */
	if (dc->tidy && dc->tidy == dc->b->msgs && !dc->nent && !guests_differ(dc)) {
		unsigned int m;

		nbatch_free(dc->b);
		for (m = 1; m <= SW_FROM; m++)
			if (mask_left(dc, m))
				swmask_mark(n, m);
	}
	/* The state: always with a change; alone when it is what differs. */
	if (!dc->b->msgs) {
		char text[200];

		state_text(dc, digest, dc->have->state_gen, text, sizeof(text));
		/* Woken, the table's generation moves: the state records it. */
		if (dc->have->has_state && dc->have->state_comment &&
		    !strcmp(text, dc->have->state_comment) && !dormant(dc))
			return 0;
		if (dc->have->exists)
			err = note(dc, VNIC_NFT_DIFF_REPAIR, 1, dc->have->has_state,
				   "state element");
	}
	for (s = 0; s < S__MAX; s++) {
		n->nelem[s] = dc->counts[s];
		n->pend[s] = 0;
	}
	n->state_gen = gen;
	if (!err && dc->have->has_state)
		err = state_elem(n, dc->b, 0, false);
	if (!err)
		err = state_elem(n, dc->b, digest, true);
	n->state_gen = 0;	/* change.c sets its own */
	return err;
}

/* --- without a policy: the table against its own state ------------------- */

/*
 * What can be told without a policy (filter show): the state element is
 * there and agrees with the guests, each set holds as many elements as the
 * state says, every rule is libvnic's, nothing foreign.
 */
static int self_check(struct dctx *dc)
{
	struct tstate *h = dc->have;
	uint32_t want[STATE_COUNTS] = { 0 };
	uint64_t digest = 0;
	unsigned int i, j;
	const char *c;
	char *end;
	int err = 0, kind;

	if (!h->exists)
		return 0;
	if (dormant(dc))
		err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 0, "table (dormant)");
	for (i = 0; i < h->ng; i++)
		digest ^= state_mix(h->gname[i], h->gdigest[i]);
	if (err)
		return err;
	if (!h->has_state || !h->state_ok)
		err = note(dc, VNIC_NFT_DIFF_REPAIR, 1, 0, "state element");
	else if (h->state_digest != digest)
		err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 0,
			   "state element (its digest is not the guests')");
	/* " n=A,B,...": how many elements each set holds. */
	c = h->state_comment ? strstr(h->state_comment, " n=") : NULL;
	for (i = 0, c = c ? c + 3 : NULL; c && i < STATE_COUNTS; i++) {
		want[i] = (uint32_t)strtoul(c, &end, 10);
		c = *end == ',' ? end + 1 : NULL;
	}
	for (i = 0; !err && h->state_ok && i < STATE_COUNTS; i++) {
		struct st_set *s = ntab_get(&h->sets, nset_descs[i].name);
		uint32_t k = s ? s->n : 0;

		if (!s)
			err = note(dc, VNIC_NFT_DIFF_REPAIR, want[i], 0, "%s %s (missing)",
				   set_kind(nset_descs[i].name), nset_descs[i].name);
		else if (k != want[i])
			err = note(dc, VNIC_NFT_DIFF_REPAIR, k < want[i] ? want[i] - k : 0,
				   k > want[i] ? k - want[i] : 0, "%s %s",
				   set_kind(s->name), s->name);
	}
	for (i = 0; i < h->sets.n && !err; i++)
		if (!((struct st_set *)h->sets.v[i])->ours)
			err = note(dc, VNIC_NFT_DIFF_FOREIGN, 0, 0, "set %s",
				   ((struct st_set *)h->sets.v[i])->name);
	for (i = 0; i < h->objs.n && !err; i++) {
		struct st_obj *o = h->objs.v[i];

		if (o->type != NFT_OBJECT_COUNTER || strncmp(o->name, "c_", 2))
			err = note(dc, VNIC_NFT_DIFF_FOREIGN, 0, 0, "object %s", o->name);
	}
	for (i = 0; i < h->chains.n && !err; i++) {
		struct st_chain *ch = h->chains.v[i];

		if (!ours_chain(ch->name)) {
			err = note(dc, VNIC_NFT_DIFF_FOREIGN, 0, ch->nrules, "chain %s",
				   ch->name);
			continue;
		}
		/* libvnic makes every base chain with policy accept, and
		 * each shard at its kind's hook, priority 0. */
		if (ch->base && ch->policy != NF_ACCEPT)
			err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 0, "policy of chain %s",
				   ch->name);
		kind = shard_kind(ch->name);
		if (!err && kind >= 0 && ch->hooked &&
		    (ch->hooknum != nchain_hook((enum nchain)kind) || ch->prio))
			err = note(dc, VNIC_NFT_DIFF_REPAIR, 1, 1,
				   "chain %s (hooked elsewhere)", ch->name);
		for (j = 0; j < ch->nrules && ch->rules[j].tagged; j++)
			;
		if (!err && j < ch->nrules)
			err = note(dc, VNIC_NFT_DIFF_REPAIR, 0, 1, "rules of chain %s",
				   ch->name);
	}
	return err;
}

/* --- the entry ----------------------------------------------------------- */

static void dctx_free(struct dctx *dc)
{
	unsigned int i;

	strmap_free(&dc->gstat);
	free(dc->ifg);
	free(dc->keyg);
	for (i = 0; i < dc->nowned; i++)
		free(dc->owned[i]);
	free(dc->owned);
	free(dc->ent);
	free(dc->ltags);
}

/* After the commit: the handle knows the table as the policy made it. */
static int adopt_chains(struct vnic_nft *n, const struct tstate *want)
{
	unsigned int i;
	int err = 0;

	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	for (i = 0; i < want->chains.n && !err; i++) {
		const char *name = ((struct st_chain *)want->chains.v[i])->name;

		if (!strncmp(name, "g_", 2))
			err = devlist_add(&n->customs, name);
		else if (!strncmp(name, "to_", 3))
			err = devlist_add(&n->tochains, name);
		else if (!strcmp(name, PFX_TO))
			n->pfx_shared = true;
	}
	prefix_done(n, true);
	return err;
}

static int once(struct vnic_nft *n, const struct vnic_policy *p,
		const struct resolved *r, bool commit,
		int (*fn)(const struct vnic_nft_diff *d, void *arg), void *arg,
		struct vnic_nft_result *res)
{
	struct tstate have = { 0 }, want = { 0 };
	struct dctx dc = { .n = n, .p = p, .r = r, .have = &have, .want = &want,
			   .res = res };
	uint64_t digest = 0;
	unsigned int sent = 0, grown = 0, gsent = 0;
	uint32_t genid;
	bool claim, woken = false, stopped = false;
	struct nbatch b, gb;
	int err;

	nbatch_init(&b);
	nbatch_init(&gb);
	dc.b = &b;
	/* A sync against a policy reads a table the kernel vouches for
	 * (nobody committed since libvnic's last commit) without its guests'
	 * rules.  A diff that writes nothing reads them all: it is how one
	 * looks for damage, and the vouch trusts the state element's g=,
	 * which any writer of the table could have set. */
	err = installed_read(n, &have, p && commit && n->clean &&
				       n->has_state && !n->replay ?
				       &n->clean_gen : NULL);
	genid = have.genid;
	/* Every try of the read saw a commit: its pieces need not agree, and
	 * what it would report (or a batch pinned to it would meet) is no
	 * state the table had.  Said as a lost race, before any of it is
	 * told to fn: a diff has no commit whose failure would say it. */
	if (!err && have.torn) {
		err = vnic_set_err(n->ctx, -EAGAIN, VNIC_STEP_DUMP, -1, NULL,
				   "table netdev %s changed during each of its "
				   "reads (other processes committing): try again",
				   n->table);
		goto out;
	}
	if (!err && !p) {
		err = self_check(&dc);
		goto out;
	}
	if (!err)
		err = refuse_shapes(&dc);
	if (!err)
		err = want_build(n, p, r, &want);
	if (!err)
		err = guests_status(&dc);
	if (!err && have.vouched)
		err = rules_if_cheaper(&dc);
	if (!err)
		err = drops_owners(&dc);
	if (err)
		goto out;
	/* Arrays made on first use: NULL while empty, which qsort must not see. */
	if (dc.nifg > 1)
		qsort(dc.ifg, dc.nifg, sizeof(*dc.ifg), ifg_cmp);
	if (dc.nkeyg > 1)
		qsort(dc.keyg, dc.nkeyg, sizeof(*dc.keyg), ifg_cmp);
	wanted_masks(&dc);
	err = left_tags(&dc);
	if (err)
		goto out;
	digest = policy_digest(&dc);
	if (commit)
		err = grow_build(&dc, &gb, &grown);
	/* A pending claim commits right before the batch, if it writes: the
	 * state records the generation after both. */
	claim = commit && n->claim_pending;
	/* So does waking a dormant table, before both, and growing sets,
	 * before all three. */
	woken = commit && dormant(&dc);
	if (!err)
		err = build(&dc, digest, genid + 1 + !!grown + claim + woken);
	n->stale = true;	/* the handle's shards and masks were rebuilt */
	if (!err && commit && b.msgs && n->before_commit)
		n->before_commit(n->before_commit_arg);
out:
	if (!err)
		stopped = (err = report(&dc, fn, arg)) != 0;
	if (!err && commit && b.msgs) {
		uint64_t g = genid;

		err = grown ? grow_commit(n, &gb, &g, &gsent) : 0;
		if (!err && woken)
			err = wake(&dc, &g);
		if (!err)
			err = claim_commit(n, &g);
		genid = (uint32_t)g;
		if (!err)
			err = nbatch_commit(n, &b, genid, &sent);
		if (sent && err && err != -ERESTART && err != -EINTR) {
			char extack[VNIC_EXTACK_MAX];

			snprintf(extack, sizeof(extack), "%s", n->ctx->err.extack);
			vnic_set_err(n->ctx, err, VNIC_STEP_CREATE, -1, extack,
				     "commit to table netdev %s", n->table);
		}
	}
	shards_drop(n);
	if (!err && res) {
		count_guests(&dc);
		res->messages = commit ? gsent + sent : b.msgs;
		res->batches = !!gsent + !!sent;
		res->writes = b.msgs > 0;
		res->genid = commit && sent ? genid + 1 : genid;
	}
	if (!err && commit) {
		/* Committed: a failure now is the handle's memory of it only,
		 * which is read again before it is used (not the sync's). */
		n->stale = adopt_chains(n, &want) != 0;
		n->table_digest = digest;
		n->has_state = true;
		n->pending = n->damaged = false;
		n->view_volatile = have.exists &&
				   owner_volatile(n, have.tflags, have.towner);
		n->clean = !n->stale && !n->view_volatile;
		n->clean_gen = sent ? genid + 1 : genid;
	}
	nbatch_free(&b);
	nbatch_free(&gb);
	dctx_free(&dc);
	tstate_free(&have);
	tstate_free(&want);
	/* A commit of anyone's between the read and ours fails ours (the
	 * batch carries the generation read): -EAGAIN, as apply and remove.
	 * What the caller's fn returned is returned as it is, whatever. */
	if (!stopped && (err == -ERESTART || err == -EINTR))
		err = vnic_set_err(n->ctx, -EAGAIN, VNIC_STEP_CREATE, -1, NULL,
				   "the ruleset of table %s changed while this "
				   "commit was built", n->table);
	return err;
}

int diff_sync(struct vnic_nft *n, const struct vnic_policy *p,
	      const struct resolved *r, bool commit,
	      int (*fn)(const struct vnic_nft_diff *d, void *arg), void *arg,
	      struct vnic_nft_result *res)
{
	if (res) {
		memset(res, 0, sizeof(*res));
		res->sz = sizeof(*res);
	}
	return once(n, p, r, commit, fn, arg, res);
}
