// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table as objects by name (state.h): the containers installed.c and
 * want.c fill and diff.c compares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libnftnl/chain.h>

#include "nft/state.h"

void *ntab_get(struct ntab *t, const char *name)
{
	uint32_t i;

	return strmap_get(&t->idx, name, &i) ? NULL : t->v[i];
}

/* A new zeroed item of size bytes named name (or the one of that name). */
void *ntab_add(struct ntab *t, const char *name, size_t size)
{
	void *it = ntab_get(t, name);
	char **nm;

	if (it)
		return it;
	if (t->n == t->cap) {
		unsigned int cap = t->cap ? t->cap * 2 : 16;
		void **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	it = calloc(1, size);
	nm = it;
	if (!it || !(*nm = strdup(name)) || strmap_add(&t->idx, *nm, t->n)) {
		if (it)
			free(*nm);
		free(it);
		return NULL;
	}
	t->v[t->n++] = it;
	return it;
}

static void set_free(struct st_set *s)
{
	unsigned int i;

	for (i = 0; i < s->nmsgs; i++)
		free(s->msgs[i]);
	free(s->msgs);
	free(s->el);
	free(s->kslot);
	free(s->vbuf);
	free(s->msg);
	free(s->msg2);
}

static void chain_free(struct st_chain *c)
{
	unsigned int i;

	for (i = 0; i < c->ndevs; i++)
		free(c->devs[i]);
	for (i = 0; i < c->nrules; i++)
		free(c->rules[i].msg);
	free(c->devs);
	free(c->rules);
	free(c->msg);
}

static void ntab_free(struct ntab *t, void (*fn)(void *))
{
	unsigned int i;

	for (i = 0; i < t->n; i++) {
		fn(t->v[i]);
		free(*(char **)t->v[i]);
		free(t->v[i]);
	}
	free(t->v);
	strmap_free(&t->idx);
}

static void obj_free(void *o)
{
	free(((struct st_obj *)o)->msg);
}

void tstate_free(struct tstate *t)
{
	unsigned int i;

	ntab_free(&t->sets, (void (*)(void *))set_free);
	ntab_free(&t->chains, (void (*)(void *))chain_free);
	ntab_free(&t->objs, obj_free);
	for (i = 0; i < t->ng; i++)
		free(t->gname[i]);
	free(t->gname);
	free(t->gdigest);
	strmap_free(&t->guests);
	free(t->state_comment);
	memset(t, 0, sizeof(*t));
}

/* Elements by key: open addressing over the key's bytes, a slot holding
 * an index into el plus one (0: empty), at most half of them full. */
static uint32_t probe(const struct st_set *s, const uint8_t *key, uint32_t klen)
{
	uint32_t m = s->kcap - 1;
	uint32_t i = (uint32_t)vnic_hash64(key, klen, VNIC_HASH_INIT) & m;

	while (s->kslot[i]) {
		const struct st_elem *e = &s->el[s->kslot[i] - 1];

		if (e->klen == klen && !memcmp(e->key, key, klen))
			break;
		i = (i + 1) & m;
	}
	return i;
}

static int kgrow(struct st_set *s)
{
	uint32_t cap = s->kcap ? s->kcap * 2 : 128, *old = s->kslot;
	unsigned int j;

	s->kslot = calloc(cap, sizeof(*s->kslot));
	if (!s->kslot) {
		s->kslot = old;
		return -ENOMEM;
	}
	s->kcap = cap;
	for (j = 0; j < s->n; j++)
		s->kslot[probe(s, s->el[j].key, s->el[j].klen)] = j + 1;
	free(old);
	return 0;
}

struct st_elem *st_elem_find(const struct st_set *s, const uint8_t *key,
			     uint32_t klen)
{
	uint32_t i;

	if (!s->kcap || klen > KEY_MAX)
		return NULL;
	i = probe(s, key, klen);
	return s->kslot[i] ? &s->el[s->kslot[i] - 1] : NULL;
}

/*
 * An element's value, appended to its set's vbuf: the name of its object
 * and of its chain, each ended by a NUL, then the verdict (a flag and the
 * code), the data and the userdata, each after its length byte.  Compared
 * byte for byte: no string is made, nothing allocated per element.  The
 * data is at most KEY_MAX bytes and the userdata 255, as in libvnic's sets.
 */
static int val_put(struct st_set *s, const struct relem *e, uint32_t *len)
{
	size_t o = e->objref ? strlen(e->objref) : 0;
	size_t c = e->chain ? strlen(e->chain) : 0;
	uint32_t dlen = e->data ? (e->dlen > KEY_MAX ? KEY_MAX : e->dlen) : 0;
	uint32_t ulen = e->ud ? (e->udlen > 255 ? 255 : e->udlen) : 0;
	uint32_t verdict = e->has_verdict ? e->verdict : 0;
	size_t need = o + 1 + c + 1 + 1 + 4 + 1 + dlen + 1 + ulen;
	char *p;

	if (s->vused + need > s->vcap) {
		size_t cap = s->vcap ? s->vcap * 2 : 4096;

		while (cap < s->vused + need)
			cap *= 2;
		p = realloc(s->vbuf, cap);
		if (!p)
			return -ENOMEM;
		s->vbuf = p;
		s->vcap = cap;
	}
	p = s->vbuf + s->vused;
	memcpy(p, e->objref ? e->objref : "", o + 1);
	p += o + 1;
	memcpy(p, e->chain ? e->chain : "", c + 1);
	p += c + 1;
	*p++ = (char)e->has_verdict;
	memcpy(p, &verdict, 4);
	p += 4;
	*p++ = (char)dlen;
	if (dlen)
		memcpy(p, e->data, dlen);
	p += dlen;
	*p++ = (char)ulen;
	if (ulen)
		memcpy(p, e->ud, ulen);
	*len = (uint32_t)need;
	return 0;
}

int st_elem_add(struct st_set *s, const uint8_t *key, uint32_t klen,
		const struct relem *e, const struct nlattr *raw)
{
	struct st_elem *el;
	uint32_t i, vlen;

	if (klen > KEY_MAX)
		return 0;
	if ((s->n + 1) * 2 > s->kcap && kgrow(s))
		return -ENOMEM;
	i = probe(s, key, klen);
	if (s->kslot[i])
		return 0;	/* a key is in a set once */
	if (s->n == s->cap) {
		unsigned int cap = s->cap ? s->cap * 2 : 64;

		el = realloc(s->el, cap * sizeof(*el));
		if (!el)
			return -ENOMEM;
		s->el = el;
		s->cap = cap;
	}
	if (val_put(s, e, &vlen))
		return -ENOMEM;
	el = &s->el[s->n];
	memcpy(el->key, key, klen);
	el->klen = klen;
	el->raw = raw;
	el->voff = (uint32_t)s->vused;
	el->vlen = vlen;
	s->vused += vlen;
	s->kslot[i] = ++s->n;
	return 0;
}

bool st_elem_same(const struct st_set *a, const struct st_elem *x,
		  const struct st_set *b, const struct st_elem *y)
{
	return x && y && x->vlen == y->vlen &&
	       !memcmp(a->vbuf + x->voff, b->vbuf + y->voff, x->vlen);
}

const char *st_elem_objref(const struct st_set *s, const struct st_elem *e)
{
	return s->vbuf + e->voff;
}

int st_rule_add(struct st_chain *c, uint64_t handle, const uint8_t *ud,
		uint32_t udlen, const struct nlmsghdr *msg)
{
	struct st_rule *r;

	if (c->nrules == c->caprules) {
		unsigned int cap = c->caprules ? c->caprules * 2 : 8;

		r = realloc(c->rules, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		c->rules = r;
		c->caprules = cap;
	}
	r = &c->rules[c->nrules];
	memset(r, 0, sizeof(*r));
	r->handle = handle;
	r->tagged = rule_tag_parse(ud, udlen, &r->tag);
	if (msg && !(r->msg = msg_dup(msg)))
		return -ENOMEM;
	c->nrules++;
	return 0;
}

int st_guest_add(struct tstate *t, const char *name, uint64_t digest)
{
	if (t->ng == t->capg) {
		unsigned int cap = t->capg ? t->capg * 2 : 64;
		char **g = realloc(t->gname, cap * sizeof(*g));
		uint64_t *d;

		if (!g)
			return -ENOMEM;
		t->gname = g;
		d = realloc(t->gdigest, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		t->gdigest = d;
		t->capg = cap;
	}
	t->gname[t->ng] = strdup(name);
	if (!t->gname[t->ng])
		return -ENOMEM;
	if (strmap_add(&t->guests, t->gname[t->ng], t->ng)) {
		free(t->gname[t->ng]);
		return 0;	/* named twice: the first counts */
	}
	t->gdigest[t->ng++] = digest;
	return 0;
}

struct nlmsghdr *msg_dup(const struct nlmsghdr *nlh)
{
	struct nlmsghdr *m = malloc(nlh->nlmsg_len);

	if (m)
		memcpy(m, nlh, nlh->nlmsg_len);
	return m;
}

int st_set_index(const char *name)
{
	unsigned int i;

	for (i = 0; i < S__MAX; i++)
		if (!strcmp(name, nset_descs[i].name))
			return (int)i;
	return swmask_parse(name) ? (int)S_MASK(swmask_parse(name)) : -1;
}

const char *st_obj_guest(const char *name)
{
	if (!strncmp(name, "c_", 2) || !strncmp(name, "g_", 2))
		return name + 2;
	if (!strncmp(name, "to_", 3))
		return name + 3;
	return NULL;
}

int state_comment_parse(const char *c, uint64_t *digest, uint32_t *gen)
{
	unsigned long long d;
	const char *g;

	if (!c || sscanf(c, "libvnic-state %llx", &d) != 1)
		return -1;
	*digest = d;
	*gen = 0;
	g = strstr(c, " g=");
	if (g)
		*gen = (uint32_t)strtoul(g + 3, NULL, 10);
	return 0;
}

void st_chain_hook(struct st_chain *c, const struct nftnl_chain *ch)
{
	c->hooked = nftnl_chain_is_set(ch, NFTNL_CHAIN_HOOKNUM) &&
		    nftnl_chain_is_set(ch, NFTNL_CHAIN_PRIO);
	if (!c->hooked)
		return;
	c->hooknum = nftnl_chain_get_u32(ch, NFTNL_CHAIN_HOOKNUM);
	c->prio = nftnl_chain_get_s32(ch, NFTNL_CHAIN_PRIO);
}
