// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * GC (CNI 1.1): every attachment of this network that is not in
 * cni.dev/valid-attachments goes, with its filter, its NIC and its IPAM
 * lease; nothing else is touched.  "Of this network" is what libvnic can
 * prove: NICs whose tag and link group name the network as owner, and the
 * state files under dataDir/NETWORK.  The NICs go in one request
 * (vnic_collect_orphans), then the filters in one nft batch (a failure
 * leaves a NIC that still exists filtered); the leases in one
 * IPAM GC where the IPAM plugin speaks 1.1, else one IPAM DEL each (the
 * stock plugins know no GC), several at a time (release_all()).
 *
 * A filter that cannot be removed (a table another process owns refuses
 * every write of ours) does not stop the rest: the spec asks a GC that
 * meets an error to remove what it can and report the error.  The NICs
 * and leases go; the guests left in the filter keep their state files, by
 * which the next GC finds them again (a NIC is deleted after its state
 * file is written and before it is removed, so a filter guest always has
 * one).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cni/cni.h"

struct gc {
	char (*valid)[CNI_GUEST_MAX + 1];
	const char **keep;
	unsigned int nvalid;
	const char **stale;
	unsigned int nstale, cap;
	char **live;		/* vnic_guest_list()'s block */
	unsigned int nlive;
	bool *left;		/* per stale: its filter stays; NULL: none */
};

static bool is_valid(const struct gc *g, const char *guest)
{
	unsigned int i;

	for (i = 0; i < g->nvalid; i++)
		if (!strcmp(g->valid[i], guest))
			return true;
	return false;
}

static int add_stale(struct gc *g, const char *guest)
{
	unsigned int i;

	if (is_valid(g, guest))
		return 0;
	for (i = 0; i < g->nstale; i++)
		if (!strcmp(g->stale[i], guest))
			return 0;
	if (g->nstale == g->cap) {
		unsigned int cap = g->cap ? g->cap * 2 : 64;
		const char **n = realloc(g->stale, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		g->stale = n;
		g->cap = cap;
	}
	g->stale[g->nstale] = strdup(guest);
	return g->stale[g->nstale++] ? 0 : -ENOMEM;
}

/* Whether guest's filter stayed (gc_filter()): its state file stays too. */
static bool is_left(const struct gc *g, const char *guest)
{
	unsigned int i;

	for (i = 0; g->left && i < g->nstale; i++)
		if (g->left[i] && !strcmp(g->stale[i], guest))
			return true;
	return false;
}

static void drop_state(struct cni_run *r, const struct gc *g, const char *guest)
{
	if (!is_left(g, guest))
		state_remove(r, guest);
}

static int valid_names(struct cni_run *r, struct gc *g)
{
	size_t n = json_array_size(r->conf.valid), i;
	json_t *a;

	g->valid = calloc(n + 1, sizeof(*g->valid));
	g->keep = calloc(n + 1, sizeof(*g->keep));
	if (!g->valid || !g->keep)
		return cni_fail(r, CNI_ERR_IO, "out of memory", "GC");
	json_array_foreach(r->conf.valid, i, a) {
		const char *cid = json_string_value(json_object_get(a, "containerID"));
		const char *ifn = json_string_value(json_object_get(a, "ifname"));

		/* An id no ADD would take names no attachment of ours. */
		if (!cni_valid_id(cid) || !cni_valid_ifname(ifn))
			continue;
		cni_guest_name(cid, ifn, g->valid[g->nvalid]);
		g->keep[g->nvalid] = g->valid[g->nvalid];
		g->nvalid++;
	}
	return 0;
}

static int stale_state(struct cni_run *r, const char *guest, const char *cid,
		       const char *ifname, const char *netns, void *arg)
{
	return add_stale(arg, guest) ? cni_fail(r, CNI_ERR_IO, "out of memory",
						"GC") : 0;
}

/* A stale macvlan lives in its container's namespace, if that still is. */
static void gc_macvlan(struct cni_run *r, const char *guest, const char *netns)
{
	struct vnic_ctx *ctx;
	int fd = netns_if_there(netns);

	if (fd < 0)
		return;
	if (!attach_ctx(r, fd, &ctx)) {
		attach_delete(r, ctx, guest, NULL);
		vnic_ctx_free(ctx);
	}
	close(fd);
}

/*
 * The leases of the stale attachments.  An IPAM plugin that speaks 1.1
 * gets one GC with the valid list, as the spec asks.  The stock ones (at
 * most 1.0.0) get one DEL per lease, up to IPAM_POOL of them running at a
 * time: each is a Go process whose start, not its work, is the cost
 * (host-local serializes its work on its own lock).  A lease's state file
 * goes once its DEL succeeded.
 */
#define IPAM_POOL	8

struct slot {
	struct ipam_call call;
	char guest[CNI_GUEST_MAX + 1];
};

struct pool {
	struct gc *g;
	bool leases;		/* one IPAM DEL per stale attachment */
	struct slot s[IPAM_POOL];
	unsigned int head, n;	/* running: s[head], s[head + 1], ... */
	int ret;
	struct cni_err first;	/* the first failure's error */
};

static void pool_reap(struct cni_run *r, struct pool *p)
{
	struct slot *sl = &p->s[p->head];

	if (ipam_finish(r, &sl->call, NULL)) {
		if (!p->ret)
			p->first = r->err;
		p->ret = -1;
	} else {
		drop_state(r, p->g, sl->guest);
	}
	p->head = (p->head + 1) % IPAM_POOL;
	p->n--;
}

static int release(struct cni_run *r, const char *guest, const char *cid,
		   const char *ifname, const char *netns, void *arg)
{
	struct pool *p = arg;
	struct slot *sl;

	if (is_valid(p->g, guest))
		return 0;
	if (r->conf.mode == CNI_MODE_MACVLAN)
		gc_macvlan(r, guest, netns);
	if (!p->leases) {
		drop_state(r, p->g, guest);
		return 0;
	}
	if (p->n == IPAM_POOL)
		pool_reap(r, p);
	/* After a failure no new DEL starts; those running are reaped. */
	if (p->ret)
		return 0;
	sl = &p->s[(p->head + p->n) % IPAM_POOL];
	snprintf(sl->guest, sizeof(sl->guest), "%s", guest);
	if (ipam_start(r, "DEL", cid, ifname, &sl->call)) {
		p->first = r->err;
		p->ret = -1;
		return 0;
	}
	p->n++;
	return 0;
}

/* Without IPAM GC: the leases one by one; with it: the state files only. */
static int release_all(struct cni_run *r, struct gc *g, bool ipam_gc)
{
	struct pool p = { .g = g, .leases = r->conf.ipam && !ipam_gc };
	int err = state_each(r, release, &p);

	while (p.n)
		pool_reap(r, &p);
	if (p.ret)
		r->err = p.first;
	return err || p.ret ? -1 : 0;
}

/*
 * The stale guests' filters, in one batch, then the valid ones' that
 * another tool removed (restore.c), in another.  On a failure (its error
 * recorded) g->left says which stale guests may still be installed: all of
 * them when the table could not be opened or read.  With none stale, a
 * table that cannot be opened is no failure: only a restore needed it.
 */
static int gc_filter(struct cni_run *r, struct vnic_ctx *ctx, struct gc *g)
{
	struct cni_err saved = r->err;
	struct vnic_filter *n;
	unsigned int i;
	int err = 0;

	g->left = calloc(g->nstale + 1, sizeof(*g->left));
	if (!g->left)
		return cni_fail(r, CNI_ERR_IO, "out of memory", "GC");
	if (filter_open(r, ctx, false, &n)) {
		for (i = 0; i < g->nstale; i++)
			g->left[i] = true;
		if (g->nstale)
			return -1;
		r->err = saved;
		free(g->left);
		g->left = NULL;
		return 0;
	}
	if (g->nstale)
		err = filter_remove(r, ctx, n, g->stale, g->nstale, g->left);
	if (!err)
		filter_restore(r, ctx, n, g->stale, g->nstale);
	filter_close(n);
	if (!err) {
		/* Nothing left: no state file to keep, no lookup per file. */
		free(g->left);
		g->left = NULL;
		return 0;
	}
	fprintf(stderr, "vnic-cni: GC: the filter of stale attachments stays "
		"(%s: %s); their NICs and leases go, their state files stay "
		"for a later GC\n", r->err.msg, r->err.details);
	return -1;
}

static int collect(struct cni_run *r, struct vnic_ctx *ctx, struct gc *g)
{
	unsigned int i;
	int err, ipam_gc, ret = 0;

	cni_lap("start");
	err = vnic_guest_list(ctx, &g->live, &g->nlive);
	if (err)
		return cni_fail_vnic(r, CNI_ERR_IO, "cannot list interfaces", ctx, err);
	for (i = 0; i < g->nlive; i++)
		if (add_stale(g, g->live[i]))
			return cni_fail(r, CNI_ERR_IO, "out of memory", "GC");
	cni_lap("list");
	if (state_each(r, stale_state, g))
		return -1;
	cni_lap("state");
	/* The NICs before their filters, as DEL: a failure leaves a NIC that
	 * still exists filtered. */
	if (r->conf.mode == CNI_MODE_VETH && g->nlive) {
		err = vnic_collect_orphans(ctx, g->keep, g->nvalid, NULL);
		if (err)
			return cni_fail_vnic(r, CNI_ERR_NIC, "cannot delete interfaces",
					     ctx, err);
	}
	cni_lap("nics");
	if (r->conf.filter && gc_filter(r, ctx, g)) {
		if (!g->left)
			return -1;
		ret = -1;
	}
	cni_lap("filter");
	ipam_gc = r->conf.ipam ? ipam_knows_gc(r) : 0;
	if (ipam_gc < 0 || (ipam_gc && ipam_exec(r, "GC", NULL)))
		return -1;
	err = release_all(r, g, ipam_gc);
	cni_lap("release");
	return err || ret ? -1 : 0;
}

int cni_gc(struct cni_run *r)
{
	struct gc g = { 0 };
	struct vnic_ctx *ctx = NULL;
	unsigned int i;
	int ret;

	ret = state_lock(r) || valid_names(r, &g) || attach_ctx(r, 0, &ctx) ?
	      -1 : collect(r, ctx, &g);
	for (i = 0; i < g.nstale; i++)
		free((char *)g.stale[i]);
	free(g.stale);
	free(g.live);
	free(g.valid);
	free(g.keep);
	free(g.left);
	vnic_ctx_free(ctx);
	return ret;
}
