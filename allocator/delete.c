// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Deleting NICs, per namespace they live in, in one request.
 *
 * Each RTM_DELLINK of one link unregisters it on its own, and every
 * unregister waits for RCU grace periods: 82 macvtaps took ~2 s that way.
 * An RTM_DELLINK naming a link group instead deletes the whole group in one
 * unregister_netdevice_many(), one wait for all (~30 ms).  So the NICs are
 * first moved into their owner's "dying" group (mark.c) and the group is
 * deleted, all in one sendmsg().  Should the group delete fail, the links
 * are deleted one by one.  A single NIC is deleted by its ifindex: one
 * unregister either way, and a group delete looks at every link of the
 * namespace (rtnl_group_dellink()).
 *
 * The dying group is still the owner's mark: a process killed between the
 * moves and the group delete (they may span several sendmsg() windows)
 * leaves NICs that gc still recognises.  Two deleters of one owner share
 * the group; one of them may delete the other's NICs, which were going
 * anyway, and the other then finds them gone (ENODEV counts as done).
 *
 * Each move is a change of the link (NETDEV_CHANGE), which IPv6 answers
 * with a walk of the namespace's whole IPv6 routing table.  Deleting the
 * owner's live group as it is would skip the moves, but would also take
 * any NIC of the owner created since the caller looked (every NIC is born
 * in that group): only the moved ifindexes are ever deleted.
 */
#include <errno.h>
#include <string.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "allocator/homes.h"
#include "allocator/msg.h"

enum req_kind { R_DELETE, R_MOVE, R_GROUP };

struct del {
	struct vnic_guest *g;
	struct nl_batch b;
	struct {
		unsigned int nic;
		enum req_kind kind;
	} *req;				/* what each request is */
	unsigned int group_req;		/* the group delete's request, or -1 */
};

static int add(struct del *d, struct nlmsghdr *nlh, unsigned int i,
	       enum req_kind kind)
{
	int err = nlh ? nl_batch_end(&d->b, nlh, NULL, NULL) : -ENOMEM;

	if (!err) {
		d->req[d->b.n - 1].nic = i;
		d->req[d->b.n - 1].kind = kind;
	}
	return err;
}

static bool in_home(const struct vnic_nic *nic, unsigned int home)
{
	return nic->home == home && nic->created;
}

static unsigned int in_home_count(const struct vnic_guest *g, unsigned int home,
				  const unsigned int *idx, unsigned int n)
{
	unsigned int k, c = 0;

	for (k = 0; k < n; k++)
		c += in_home(&g->nics[idx[k]], home);
	return c;
}

/* Group moves of every NIC with an ifindex, the group delete, and one
 * delete by name for the others. */
static int build_grouped(struct del *d, unsigned int home, const unsigned int *idx,
			 unsigned int n)
{
	uint32_t grp = mark_group_dying(d->g->ctx->owner);
	unsigned int k, grouped = 0;
	int err = 0;

	for (k = 0; k < n && !err; k++) {
		struct vnic_nic *nic = &d->g->nics[idx[k]];

		if (!in_home(nic, home))
			continue;
		if (nic->ifindex) {
			err = add(d, msg_setgroup(&d->b, nic->ifindex, grp), idx[k],
				  R_MOVE);
			grouped++;
		} else {
			err = add(d, msg_dellink(&d->b, 0, nic->name), idx[k],
				  R_DELETE);
		}
	}
	if (!err && grouped) {
		d->group_req = d->b.n;
		err = add(d, msg_delgroup(&d->b, grp), 0, R_GROUP);
	}
	return err;
}

/* One by one, by ifindex: the fallback. */
static int build_single(struct del *d, unsigned int home, const unsigned int *idx,
			unsigned int n)
{
	unsigned int k;
	int err = 0;

	for (k = 0; k < n && !err; k++) {
		struct vnic_nic *nic = &d->g->nics[idx[k]];

		if (in_home(nic, home))
			err = add(d, msg_dellink(&d->b, nic->ifindex, nic->name),
				  idx[k], R_DELETE);
	}
	return err;
}

/* Returns 1 when the grouped NICs must be deleted one by one after all. */
static int collect(struct del *d, int *first_err)
{
	bool group_ok = d->group_req != UINT32_MAX && !d->b.reqs[d->group_req].err;
	unsigned int k;
	int retry = 0;

	for (k = 0; k < d->b.n; k++) {
		struct nl_req *r = &d->b.reqs[k];
		struct vnic_nic *nic = &d->g->nics[d->req[k].nic];
		int e = r->err;

		if (d->req[k].kind == R_GROUP)
			continue;
		/* A NIC moved into the group goes with it, or not at all. */
		if (d->req[k].kind == R_MOVE && !e && !group_ok) {
			retry = 1;
			continue;
		}
		/* Gone already (its namespace died, or someone deleted it). */
		if (e == -ENODEV)
			e = 0;
		if (e && !*first_err)
			*first_err = vnic_set_err(d->g->ctx, e, VNIC_STEP_DELETE,
						  (int)d->req[k].nic, r->extack, "%s",
						  nic->name);
		if (!e)
			nic->created = false;
	}
	return retry;
}

static int run(struct del *d, struct nl_sock *s, int *first_err)
{
	int err = nl_batch_run(s, &d->b);

	if (err) {
		if (!*first_err)
			*first_err = vnic_set_err(d->g->ctx, err, VNIC_STEP_DELETE,
						  -1, NULL, "sending");
		return 0;
	}
	return collect(d, first_err);
}

static int delete_home(struct vnic_guest *g, struct homes *hs, unsigned int home,
		       const unsigned int *idx, unsigned int n)
{
	struct del d = { .g = g, .group_req = UINT32_MAX };
	int err, first_err = 0;

	/* At most a move per NIC and the group delete. */
	d.req = calloc(n + 1, sizeof(*d.req));
	if (!d.req)
		return -ENOMEM;
	nl_batch_init(&d.b);
	/* One NIC is one unregister either way: by its ifindex, it costs
	 * neither a move nor the kernel's walk of every link for a group. */
	if (in_home_count(g, home, idx, n) == 1)
		err = build_single(&d, home, idx, n);
	else
		err = build_grouped(&d, home, idx, n);
	if (!err && run(&d, hs->h[home].s, &first_err)) {
		nl_batch_reset(&d.b);
		d.group_req = UINT32_MAX;
		err = build_single(&d, home, idx, n);
		if (!err)
			run(&d, hs->h[home].s, &first_err);
	}
	nl_batch_free(&d.b);
	free(d.req);
	return first_err ? first_err : err;
}

/*
 * One round: the NICs of idx[0..n-1] whose namespaces fit one homes (16
 * sockets) are deleted, the others go to later[] (*nlater of them).
 */
static int delete_round(struct vnic_guest *g, const unsigned int *idx,
			unsigned int n, unsigned int *now, unsigned int *later,
			unsigned int *nlater)
{
	struct homes hs;
	unsigned int k, h, nnow = 0;
	int err = 0, e;

	*nlater = 0;
	homes_init(&hs, g->ctx);
	for (k = 0; k < n && !err; k++) {
		err = vnic_fault(g->ctx, VNIC_STEP_DELETE, idx[k]);
		if (!err)
			err = homes_get(&hs, g->nics[idx[k]].netns_fd,
					&g->nics[idx[k]].home);
		if (err == -E2BIG) {	/* every socket taken: next round */
			later[(*nlater)++] = idx[k];
			err = 0;
		} else if (err) {
			vnic_set_err(g->ctx, err, VNIC_STEP_DELETE, (int)idx[k],
				     NULL, "%s", g->nics[idx[k]].name);
		} else {
			now[nnow++] = idx[k];
		}
	}
	for (h = 0; !err && h < hs.n; h++) {
		e = delete_home(g, &hs, h, now, nnow);
		if (!err)
			err = e;
	}
	homes_fini(&hs);
	return err;
}

/* In rounds of at most MAX_HOMES namespaces, so that a guest whose NICs
 * live in more (made by several creates) is deleted whole. */
int nics_delete(struct vnic_guest *g, const unsigned int *idx, unsigned int n)
{
	unsigned int *now, *later, *todo, nlater;
	int err = 0;

	if (!n)
		return 0;
	now = calloc(n, sizeof(*now));
	later = calloc(n, sizeof(*later));
	todo = calloc(n, sizeof(*todo));
	if (!now || !later || !todo)
		err = -ENOMEM;
	if (!err)
		memcpy(todo, idx, n * sizeof(*todo));
	while (!err && n) {
		err = delete_round(g, todo, n, now, later, &nlater);
		memcpy(todo, later, nlater * sizeof(*todo));
		n = nlater;
	}
	free(now);
	free(later);
	free(todo);
	return err;
}
