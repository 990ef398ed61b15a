// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Finding NICs by their tag ("vnic:OWNER:GUEST:INDEX" in IFLA_IFALIAS):
 * listing guests, adopting one, collecting orphans after a crash.  One
 * RTM_GETLINK dump of the context's namespace each.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>

#include "allocator/nic.h"
#include "lib/link.h"

struct tagged {
	int ifindex;
	int peer;		/* veth: its peer's ifindex, same namespace */
	char peer_name[IFNAMSIZ];
	unsigned int idx;
	enum vnic_kind kind;
	uint8_t mac[6];
	char name[IFNAMSIZ];
	char guest[GUEST_NAME_MAX + 1];
};

/* Every link's name by ifindex, to name veth peers that live beside. */
struct named {
	int ifindex;
	char name[IFNAMSIZ];
};

struct scan {
	const char *owner;
	struct tagged *t;
	unsigned int n, cap;
	struct named *all;
	unsigned int nall, capall;
	int err;
};

static void *grow(void *p, unsigned int *cap, size_t elem, int *err)
{
	unsigned int n = *cap ? *cap * 2 : 64;
	void *q = realloc(p, n * elem);

	if (!q) {
		*err = -ENOMEM;
		return NULL;
	}
	*cap = n;
	return q;
}

static void remember(struct scan *sc, const struct link_attrs *la)
{
	struct named *a;

	if (sc->nall == sc->capall) {
		a = grow(sc->all, &sc->capall, sizeof(*a), &sc->err);
		if (!a)
			return;
		sc->all = a;
	}
	a = &sc->all[sc->nall++];
	a->ifindex = la->ifindex;
	snprintf(a->name, sizeof(a->name), "%s", la->name);
}

static enum vnic_kind kind_of(const struct link_attrs *la)
{
	if (!la->kind)
		return 0;
	if (!strcmp(la->kind, "tun"))
		return la->tun_type == IFF_TUN ? VNIC_KIND_TUN : VNIC_KIND_TAP;
	return vnic_kind_from_name(la->kind);
}

/* "vnic:OWNER:GUEST:IDX" for our owner -> guest, idx. */
static int tag_parse(const char *alias, const char *owner, char *guest,
		     unsigned int *idx)
{
	size_t olen = strlen(owner), glen;
	const char *p, *colon;
	char *end;

	if (strncmp(alias, TAG_PREFIX, strlen(TAG_PREFIX)))
		return -1;
	p = alias + strlen(TAG_PREFIX);
	if (strncmp(p, owner, olen) || p[olen] != ':')
		return -1;
	p += olen + 1;
	colon = strrchr(p, ':');
	if (!colon || colon == p || (glen = (size_t)(colon - p)) > GUEST_NAME_MAX)
		return -1;
	*idx = (unsigned int)strtoul(colon + 1, &end, 10);
	if (*end || end == colon + 1)
		return -1;
	memcpy(guest, p, glen);
	guest[glen] = '\0';
	return 0;
}

static int scan_cb(const struct nlmsghdr *nlh, void *data)
{
	struct scan *sc = data;
	struct link_attrs la;
	struct tagged *t;

	if (!nlh) {
		sc->n = sc->nall = 0;
		return 0;
	}
	if (link_parse(nlh, &la) || !la.name)
		return 0;
	remember(sc, &la);
	if (!la.alias)
		return 0;
	if (sc->n == sc->cap) {
		t = grow(sc->t, &sc->cap, sizeof(*t), &sc->err);
		if (!t)
			return 0;
		sc->t = t;
	}
	t = &sc->t[sc->n];
	memset(t, 0, sizeof(*t));
	if (tag_parse(la.alias, sc->owner, t->guest, &t->idx))
		return 0;
	t->ifindex = la.ifindex;
	t->kind = kind_of(&la);
	t->peer = t->kind == VNIC_KIND_VETH && !la.link_netnsid ? la.link : 0;
	snprintf(t->name, sizeof(t->name), "%s", la.name);
	if (la.mac)
		memcpy(t->mac, la.mac, 6);
	sc->n++;
	return 0;
}

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	return x->ifindex < y->ifindex ? -1 : x->ifindex > y->ifindex;
}

/* A veth peer in the same namespace is named by the same dump. */
static void name_peers(struct scan *sc)
{
	unsigned int i;

	if (!sc->nall)	/* sc->all is NULL: nothing to sort or name */
		return;
	qsort(sc->all, sc->nall, sizeof(*sc->all), cmp_named);
	for (i = 0; i < sc->n; i++) {
		struct named key = { .ifindex = sc->t[i].peer }, *p;

		if (!key.ifindex)
			continue;
		p = bsearch(&key, sc->all, sc->nall, sizeof(*sc->all), cmp_named);
		if (p)
			memcpy(sc->t[i].peer_name, p->name, IFNAMSIZ);
	}
}

static int scan_links(struct vnic_ctx *ctx, struct scan *sc)
{
	char req[1024];
	int err;

	memset(sc, 0, sizeof(*sc));
	sc->owner = ctx->owner;
	err = vnic_fault(ctx, VNIC_STEP_DUMP, 0);
	if (!err)
		err = nl_dump(&ctx->nl, link_dump_request(req), scan_cb, sc,
			      ctx->err.extack, sizeof(ctx->err.extack));
	if (!err)
		err = sc->err;
	if (!err)
		name_peers(sc);
	free(sc->all);
	sc->all = NULL;
	if (err) {
		free(sc->t);
		return vnic_set_err(ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "listing tagged links");
	}
	return 0;
}

static int cmp_tagged(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;
	int c = strcmp(x->guest, y->guest);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

VNIC_EXPORT int vnic_guest_list(struct vnic_ctx *ctx, char ***names,
				unsigned int *count)
{
	struct scan sc;
	unsigned int i, n = 0;
	size_t bytes = 0;
	char **out, *p;
	int err;

	if (!ctx || !names || !count)
		return -EINVAL;
	vnic_clear_err(ctx);
	err = scan_links(ctx, &sc);
	if (err)
		return err;
	if (sc.n)	/* sc.t is NULL when nothing is tagged */
		qsort(sc.t, sc.n, sizeof(*sc.t), cmp_tagged);
	for (i = 0; i < sc.n; i++)
		if (!i || strcmp(sc.t[i].guest, sc.t[i - 1].guest)) {
			n++;
			bytes += strlen(sc.t[i].guest) + 1;
		}
	/* One block: the pointer array, then the strings. */
	out = malloc((n + 1) * sizeof(*out) + bytes);
	if (!out) {
		free(sc.t);
		return -ENOMEM;
	}
	p = (char *)(out + n + 1);
	for (i = 0, n = 0; i < sc.n; i++)
		if (!i || strcmp(sc.t[i].guest, sc.t[i - 1].guest)) {
			out[n++] = strcpy(p, sc.t[i].guest);
			p += strlen(p) + 1;
		}
	out[n] = NULL;
	free(sc.t);
	*names = out;
	*count = n;
	return 0;
}

static int adopt_nic(struct vnic_guest *g, const struct tagged *t)
{
	struct vnic_nic *nic;
	int err = guest_push_nic(g, &nic);

	if (err)
		return err;
	nic->kind = t->kind;
	nic->naming = VNIC_NAMING_EXPLICIT;
	snprintf(nic->tmpl, sizeof(nic->tmpl), "%s", t->name);
	snprintf(nic->name, sizeof(nic->name), "%s", t->name);
	memcpy(nic->peer_name, t->peer_name, IFNAMSIZ);
	nic->ifindex = t->ifindex;
	memcpy(nic->mac, t->mac, 6);
	nic->created = true;
	/* Keep its tag; a NIC added later must not reuse one. */
	nic->tag = t->idx;
	if (t->idx >= g->next_tag)
		g->next_tag = t->idx + 1;
	return 0;
}

VNIC_EXPORT int vnic_guest_adopt(struct vnic_ctx *ctx, const char *name,
				 struct vnic_guest **out)
{
	struct vnic_guest *g;
	struct scan sc;
	unsigned int i;
	int err;

	if (!ctx || !out)
		return -EINVAL;
	err = vnic_guest_new(ctx, name, &g);
	if (err)
		return err;
	err = scan_links(ctx, &sc);
	if (err) {
		vnic_guest_free(g);
		return err;
	}
	if (sc.n)	/* sc.t is NULL when nothing is tagged */
		qsort(sc.t, sc.n, sizeof(*sc.t), cmp_tagged);
	for (i = 0; i < sc.n && !err; i++)
		if (!strcmp(sc.t[i].guest, name))
			err = adopt_nic(g, &sc.t[i]);
	free(sc.t);
	if (!err && !g->n)
		err = vnic_set_err(ctx, -ENOENT, VNIC_STEP_DUMP, -1, NULL,
				   "guest '%s' has no NICs of owner '%s'", name,
				   ctx->owner);
	if (err) {
		vnic_guest_free(g);
		return err;
	}
	*out = g;
	return 0;
}

static bool kept(const char *guest, const char *const *keep, unsigned int nkeep)
{
	unsigned int i;

	for (i = 0; i < nkeep; i++)
		if (keep[i] && !strcmp(keep[i], guest))
			return true;
	return false;
}

VNIC_EXPORT int vnic_collect_orphans(struct vnic_ctx *ctx,
				     const char *const *keep, unsigned int nkeep,
				     unsigned int *deleted)
{
	struct vnic_guest *g;
	unsigned int i, *idx, n = 0;
	struct scan sc;
	int err;

	if (!ctx || (nkeep && !keep))
		return -EINVAL;
	vnic_clear_err(ctx);
	err = scan_links(ctx, &sc);
	if (err)
		return err;
	/* One handle holds every orphan, whatever its guest: one batch. */
	g = guest_alloc(ctx, "orphans");
	for (i = 0; g && !err && i < sc.n; i++)
		if (!kept(sc.t[i].guest, keep, nkeep))
			err = adopt_nic(g, &sc.t[i]);
	free(sc.t);
	idx = g ? calloc(g->n + 1, sizeof(*idx)) : NULL;
	if (!g || !idx || err) {
		free(idx);
		vnic_guest_free(g);
		return err ? err : -ENOMEM;
	}
	for (i = 0; i < g->n; i++)
		idx[i] = i;
	err = nics_delete(g, idx, g->n);
	for (i = 0; i < g->n; i++)
		n += !g->nics[i].created;
	free(idx);
	vnic_guest_free(g);
	if (!err && deleted)
		*deleted = n;
	return err;
}
