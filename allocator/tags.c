// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Finding the owner's NICs again: listing guests, adopting one, collecting
 * orphans after a crash.  One RTM_GETLINK dump of the context's namespace
 * each.
 *
 * Any process can write any alias, so the tag alone proves nothing.  A
 * link counts as the owner's only where two independent marks agree:
 *
 *   tagged      its alias is a tag of this owner (tag.c) and its link group
 *               is the owner's (mark.c): listed, adoptable, collected unless
 *               its guest is kept;
 *   untagged    no alias at all, the owner's group, and a MAC carrying the
 *               owner's check: a NIC whose creator died before tagging it.
 *               It belongs to no guest and is always collected.
 *
 * Either way its kind must be one libvnic makes.  Anything else (a foreign
 * alias, an alias of the owner's format on a link of another group, a link
 * in the owner's group under another alias or with a MAC of its own, a veth
 * peer end) is not ours and is never touched.
 *
 * A live creator's NICs look untagged between creation and tagging: gc must
 * not run beside a creator of the same owner in the same namespace
 * (Documentation/allocator.rst says why no lock keeps them apart).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/rtnetlink.h>

#include <libmnl/libmnl.h>

#include "allocator/msg.h"
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
	char guest[GUEST_NAME_MAX + 1];	/* "" when untagged */
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

/* Is la the owner's, by two marks (see the top)?  Fills guest and idx. */
static bool ours(const char *owner, const struct link_attrs *la,
		 enum vnic_kind kind, char *guest, unsigned int *idx)
{
	if (!kind || !mark_group_is(owner, la->group))
		return false;
	if (la->alias && la->alias[0])
		return !tag_parse(la->alias, owner, guest, idx);
	guest[0] = '\0';
	*idx = 0;
	return la->mac && mark_mac_is(owner, MARK_NIC, la->mac);
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
	if (sc->n == sc->cap) {
		t = grow(sc->t, &sc->cap, sizeof(*t), &sc->err);
		if (!t)
			return 0;
		sc->t = t;
	}
	t = &sc->t[sc->n];
	memset(t, 0, sizeof(*t));
	t->kind = (enum vnic_kind)link_kind(&la);
	if (!ours(sc->owner, &la, t->kind, t->guest, &t->idx))
		return 0;
	t->ifindex = la.ifindex;
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

/* A scan's end, by dump or by name: peers named, the scratch freed, and
 * on error the table too, with the step's message. */
static int scan_end(struct vnic_ctx *ctx, struct scan *sc, int err,
		    const char *extack, const char *what)
{
	if (!err)
		err = sc->err;
	if (!err)
		name_peers(sc);
	free(sc->all);
	sc->all = NULL;
	if (err) {
		free(sc->t);
		return vnic_set_err(ctx, err, VNIC_STEP_DUMP, -1, extack, "%s", what);
	}
	return 0;
}

static int scan_links(struct vnic_ctx *ctx, struct scan *sc)
{
	char req[1024], extack[VNIC_EXTACK_MAX] = "";
	int err;

	memset(sc, 0, sizeof(*sc));
	sc->owner = ctx->owner;
	err = vnic_fault(ctx, VNIC_STEP_DUMP, 0);
	/* Interrupted after NL_DUMP_TRIES: every link that lived through the
	 * last dump is in it; one born or gone meanwhile races the caller
	 * whatever we do (Documentation/allocator.rst). */
	if (!err)
		err = nl_dump_settled(&ctx->nl, link_dump_request(req), scan_cb,
				      sc, extack, sizeof(extack));
	if (err == NL_DUMP_INTR)
		err = 0;
	return scan_end(ctx, sc, err, extack, "listing tagged links");
}

static int cmp_tagged(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;
	int c = strcmp(x->guest, y->guest);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The first NIC of a tagged guest in the sorted scan. */
static bool new_guest(const struct scan *sc, unsigned int i)
{
	return sc->t[i].guest[0] &&
	       (!i || strcmp(sc->t[i].guest, sc->t[i - 1].guest));
}

VNIC_EXPORT int vnic_guest_list(struct vnic_ctx *ctx, char ***names,
				unsigned int *count)
{
	struct scan sc;
	unsigned int i, n = 0;
	size_t bytes = 0;
	char **out, *p;
	int err;

	if (!ctx)
		return -EINVAL;
	vnic_clear_err(ctx);
	if (!names || !count)
		return vnic_null_arg(ctx, __func__, names ? "count" : "names");
	err = scan_links(ctx, &sc);
	if (err)
		return err;
	if (sc.n)	/* sc.t is NULL when nothing is tagged */
		qsort(sc.t, sc.n, sizeof(*sc.t), cmp_tagged);
	/* Untagged NICs (guest "") belong to no guest. */
	for (i = 0; i < sc.n; i++)
		if (new_guest(&sc, i)) {
			n++;
			bytes += strlen(sc.t[i].guest) + 1;
		}
	/* One block: the pointer array, then the strings. */
	out = malloc((n + 1) * sizeof(*out) + bytes);
	if (!out) {
		free(sc.t);
		return vnic_err_fallback(ctx, -ENOMEM, VNIC_STEP_DUMP, "guest list");
	}
	p = (char *)(out + n + 1);
	for (i = 0, n = 0; i < sc.n; i++)
		if (new_guest(&sc, i)) {
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
	nic->adopted = true;
	/* Keep its tag; a NIC added later must not reuse one. */
	nic->tag = t->idx;
	if (t->idx >= g->next_tag)
		g->next_tag = t->idx + 1;
	return 0;
}

/* The links of a scan (scan_links() or scan_named()) that belong to g's
 * name become its NICs, in NIC order, and the scan's table is freed; *out
 * is g, or g is freed and the error returned (none: -ENOENT, said as
 * the scan was made: by a dump, or by the names given). */
static int adopt_scan(struct vnic_ctx *ctx, struct vnic_guest *g,
		      struct scan *sc, bool named, struct vnic_guest **out)
{
	unsigned int i;
	int err = 0;

	if (sc->n)	/* sc->t is NULL when nothing is tagged */
		qsort(sc->t, sc->n, sizeof(*sc->t), cmp_tagged);
	for (i = 0; i < sc->n && !err; i++)
		if (!strcmp(sc->t[i].guest, g->name))
			err = adopt_nic(g, &sc->t[i]);
	free(sc->t);
	if (!err && !g->n && named)
		err = vnic_set_err(ctx, -ENOENT, VNIC_STEP_DUMP, -1, NULL,
				   "no link named as given is a NIC of guest '%s' of "
				   "owner '%s'", g->name, ctx->owner);
	else if (!err && !g->n)
		err = vnic_set_err(ctx, -ENOENT, VNIC_STEP_DUMP, -1, NULL,
				   "guest '%s' has no NICs of owner '%s'", g->name,
				   ctx->owner);
	if (err) {
		vnic_guest_free(g);
		return vnic_err_fallback(ctx, err, VNIC_STEP_DUMP, "adopting");
	}
	*out = g;
	return 0;
}

VNIC_EXPORT int vnic_guest_adopt(struct vnic_ctx *ctx, const char *name,
				 struct vnic_guest **out)
{
	struct vnic_guest *g;
	struct scan sc;
	int err;

	if (!ctx)
		return -EINVAL;
	if (!out) {
		vnic_clear_err(ctx);
		return vnic_null_arg(ctx, __func__, "out");
	}
	err = vnic_guest_new(ctx, name, &g);
	if (err)
		return err;
	err = scan_links(ctx, &sc);
	if (err) {
		vnic_guest_free(g);
		return err;
	}
	return adopt_scan(ctx, g, &sc, false, out);
}

static int getlink_index(struct nl_batch *b, int ifindex, struct scan *sc)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_GETLINK, NLM_F_ACK);
	struct ifinfomsg *ifi;

	if (!nlh)
		return -ENOMEM;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return nl_batch_end(b, nlh, scan_cb, sc);
}

static bool was_read(const struct scan *sc, int ifindex)
{
	unsigned int i;

	for (i = 0; i < sc->nall; i++)
		if (sc->all[i].ifindex == ifindex)
			return true;
	return false;
}

static int cmp_ifindex(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;

	return x->ifindex < y->ifindex ? -1 : x->ifindex > y->ifindex;
}

/* One link is one NIC: a name given twice reads the link twice. */
static void drop_dups(struct scan *sc)
{
	unsigned int i, n = 0;

	if (!sc->n)
		return;
	qsort(sc->t, sc->n, sizeof(*sc->t), cmp_ifindex);
	for (i = 0; i < sc->n; i++)
		if (!n || sc->t[n - 1].ifindex != sc->t[i].ifindex)
			sc->t[n++] = sc->t[i];
	sc->n = n;
}

/* The links named in names, one RTM_GETLINK each in one batch (a name no
 * link has is skipped), scanned as a dump's would be, peers too: each link
 * once, however often it is named or whether it is also a named link's
 * peer. */
static int scan_named(struct vnic_ctx *ctx, const char *const *names,
		      unsigned int n, struct scan *sc)
{
	struct nl_batch b;
	unsigned int i;
	int err = 0;

	memset(sc, 0, sizeof(*sc));
	sc->owner = ctx->owner;
	nl_batch_init(&b);
	for (i = 0; i < n && !err; i++) {
		struct nlmsghdr *nlh = msg_getlink(&b, names[i]);

		err = nlh ? nl_batch_end(&b, nlh, scan_cb, sc) : -ENOMEM;
	}
	if (!err)
		err = nl_batch_run(&ctx->nl, &b);
	/* A veth peer beside it is named as a dump names it: read it too. */
	nl_batch_reset(&b);
	for (i = 0, n = sc->n; !err && i < n; i++)
		if (sc->t[i].peer && !was_read(sc, sc->t[i].peer))
			err = getlink_index(&b, sc->t[i].peer, sc);
	if (!err)
		err = nl_batch_run(&ctx->nl, &b);
	nl_batch_free(&b);
	if (!err && !sc->err)
		drop_dups(sc);
	return scan_end(ctx, sc, err, NULL, "reading links by name");
}

VNIC_EXPORT int vnic_guest_adopt_named(struct vnic_ctx *ctx, const char *name,
				       const char *const *ifnames, unsigned int n,
				       struct vnic_guest **out)
{
	struct vnic_guest *g;
	struct scan sc;
	unsigned int i;
	int err;

	if (!ctx)
		return -EINVAL;
	/* Before the names are checked: a refusal here is this call's. */
	vnic_clear_err(ctx);
	if (!out || (n && !ifnames))
		return vnic_null_arg(ctx, __func__, out ? "ifnames" : "out");
	for (i = 0; i < n; i++)
		if (!ifnames[i] || !ifnames[i][0] || strlen(ifnames[i]) >= IFNAMSIZ)
			return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
					    "interface name %u is not one", i);
	err = vnic_guest_new(ctx, name, &g);
	if (err)
		return err;
	err = scan_named(ctx, ifnames, n, &sc);
	if (err) {
		vnic_guest_free(g);
		return err;
	}
	return adopt_scan(ctx, g, &sc, true, out);
}

static bool kept(const char *guest, const char *const *keep, unsigned int nkeep)
{
	unsigned int i;

	for (i = 0; i < nkeep; i++)
		if (!strcmp(keep[i], guest))
			return true;
	return false;
}

/* A name that cannot be a guest's keeps nothing: a typo would delete the
 * guest it meant to keep. */
static int check_keep(struct vnic_ctx *ctx, const char *const *keep,
		      unsigned int nkeep)
{
	unsigned int i;

	for (i = 0; i < nkeep; i++)
		if (!vnic_valid_tag(keep[i], GUEST_NAME_MAX))
			return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1,
					    NULL, "keep[%u]: '%s' is not a guest name "
					    "(1..64 of [A-Za-z0-9_.-])", i,
					    keep[i] ? keep[i] : "(null)");
	return 0;
}

VNIC_EXPORT int vnic_collect_orphans(struct vnic_ctx *ctx,
				     const char *const *keep, unsigned int nkeep,
				     unsigned int *deleted)
{
	struct vnic_guest *g;
	unsigned int i, *idx, n = 0;
	struct scan sc;
	int err;

	if (!ctx)
		return -EINVAL;
	vnic_clear_err(ctx);
	if (nkeep && !keep)
		return vnic_null_arg(ctx, __func__, "keep");
	err = check_keep(ctx, keep, nkeep);
	if (!err)
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
		return vnic_err_fallback(ctx, err ? err : -ENOMEM, VNIC_STEP_DUMP,
					 "collecting orphans");
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
	return vnic_err_fallback(ctx, err, VNIC_STEP_DELETE, "deleting orphans");
}
