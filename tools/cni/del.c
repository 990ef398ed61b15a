// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DEL: NIC, filter, IPAM lease, state file, each step fine when its part
 * is already gone, so a second DEL (or one after a failed ADD) succeeds and
 * changes nothing.  A macvlan lives in the container's namespace: without
 * it (CNI_NETNS unset, gone, or no longer a namespace) the NIC went with
 * the namespace.
 */
#include <stdio.h>
#include <unistd.h>

#include "tools/cni/cni.h"

/*
 * A table another process owns refuses every write of ours (EPERM) for as
 * long as it is owned, which may be for good (vnicctl filter hold pointed
 * at it); a damaged one (EUCLEAN: an element or a set deleted by hand)
 * refuses them until someone repairs or deletes it.  Failing would fail
 * each retry of the runtime's until then, and kubelet would not remove the
 * pod.  So DEL leaves the guest there (*left) and succeeds: the NIC it
 * filtered is gone already (del_veth()), the lease goes, and the state
 * file stays, for a later DEL or GC to remove the guest once the table is
 * free or repaired.  The reason goes to stderr, which runtimes log; CHECK
 * and STATUS report a damaged table too.
 */
static int del_filter(struct cni_run *r, struct vnic_ctx *ctx, bool *left)
{
	const char *g = r->guest;
	struct vnic_filter *n;
	struct cni_err saved = r->err;
	bool open;
	int err;

	if (!r->conf.filter)
		return 0;
	err = filter_open(r, ctx, false, &n);
	open = err != 0;
	if (!err) {
		err = filter_remove(r, ctx, n, &g, 1, NULL);
		/* Others' filters another tool removed (restore.c). */
		if (!err)
			filter_restore(r, ctx, n, &g, 1);
		filter_close(n);
	}
	if (!filter_stuck(r, err, open))
		return err ? -1 : 0;
	fprintf(stderr, "vnic-cni: DEL %s: its interface is gone, its filter "
		"may stay in table netdev %s (%s: %s); the state file stays, for "
		"a later DEL or GC to remove it\n", r->guest, r->conf.table,
		r->err.msg, r->err.details);
	r->err = saved;
	*left = true;
	return 0;
}

/*
 * The NIC first, then its filter: a DEL that fails on the way leaves the
 * NIC filtered for as long as it exists.  The filter went first, and a NIC
 * whose deletion failed stayed up unfiltered until the runtime's retry.  A
 * DEL that cannot read the links touches nothing; the filter goes also
 * when the NIC already went with the container's namespace.
 */
static int del_veth(struct cni_run *r, struct vnic_ctx *ctx, const char *hint,
		    bool *left)
{
	struct vnic_guest *g;

	if (attach_lookup(r, ctx, r->guest, hint, &g) ||
	    attach_destroy(r, ctx, g))
		return -1;
	return del_filter(r, ctx, left);
}

static int del_macvlan(struct cni_run *r)
{
	struct vnic_ctx *ctx;
	int fd, ret;

	fd = netns_if_there(r->env.netns);
	if (fd < 0)
		return 0;
	ret = attach_ctx(r, fd, &ctx);
	if (!ret) {
		ret = attach_delete(r, ctx, r->guest, NULL);
		vnic_ctx_free(ctx);
	}
	close(fd);
	return ret;
}

int cni_del(struct cni_run *r)
{
	char hint[VNIC_IFNAME_MAX + 1];
	struct ipam_call call;
	struct cni_err saved;
	struct vnic_ctx *ctx;
	bool ipam = false, left = false;
	int ret;

	if (state_lock(r))
		return -1;
	/* The lease goes even when the NIC could not: a runtime retries DEL
	 * until it succeeds, and host-local's DEL is idempotent too.  It runs
	 * while the filter and the NIC go (they need nothing from it). */
	if (r->conf.ipam) {
		if (ipam_start(r, "DEL", NULL, NULL, &call))
			return -1;
		ipam = true;
	}
	if (r->conf.mode == CNI_MODE_MACVLAN) {
		ret = del_macvlan(r);
	} else if (!(ret = attach_ctx(r, 0, &ctx))) {
		ret = del_veth(r, ctx, state_host(r, r->guest, hint) ? NULL : hint,
			       &left);
		vnic_ctx_free(ctx);
	}
	/* The first error is the one reported. */
	saved = r->err;
	if (ipam && ipam_finish(r, &call, NULL) && !ret)
		ret = -1;
	else if (ret)
		r->err = saved;
	if (!ret && !left)
		state_remove(r, r->guest);
	return ret;
}
