// SPDX-License-Identifier: LGPL-2.1-or-later
/* Deleting NICs: one batch of RTM_DELLINK per namespace they live in. */
#include <errno.h>
#include <string.h>

#include "allocator/homes.h"
#include "allocator/msg.h"

static int delete_home(struct vnic_guest *g, struct homes *hs, unsigned int home,
		       const unsigned int *idx, unsigned int n)
{
	struct nl_batch b;
	unsigned int k, *map = calloc(n + 1, sizeof(*map));
	int err = 0;

	if (!map)
		return -ENOMEM;
	nl_batch_init(&b);
	for (k = 0; k < n && !err; k++) {
		struct vnic_nic *nic = &g->nics[idx[k]];
		struct nlmsghdr *nlh;

		if (nic->home != home)
			continue;
		nlh = msg_dellink(&b, nic->ifindex, nic->name);
		err = nlh ? nl_batch_end(&b, nlh, NULL, NULL) : -ENOMEM;
		if (!err)
			map[b.n - 1] = idx[k];
	}
	if (!err)
		err = nl_batch_run(hs->h[home].s, &b);
	if (err)
		vnic_set_err(g->ctx, err, VNIC_STEP_DELETE, -1, NULL, "sending");
	for (k = 0; !err && k < b.n; k++) {
		struct vnic_nic *nic = &g->nics[map[k]];
		int e = b.reqs[k].err;

		/* Gone already (its namespace died, or someone deleted it). */
		if (e == -ENODEV)
			e = 0;
		if (e)
			err = vnic_set_err(g->ctx, e, VNIC_STEP_DELETE, (int)map[k],
					   b.reqs[k].extack, "%s", nic->name);
		else
			nic->created = false;
	}
	nl_batch_free(&b);
	free(map);
	return err;
}

int nics_delete(struct vnic_guest *g, const unsigned int *idx, unsigned int n)
{
	struct homes hs;
	unsigned int k, h;
	int err = 0, e;

	if (!n)
		return 0;
	homes_init(&hs, g->ctx);
	for (k = 0; k < n && !err; k++) {
		err = vnic_fault(g->ctx, VNIC_STEP_DELETE, idx[k]);
		if (!err)
			err = homes_get(&hs, g->nics[idx[k]].netns_fd,
					&g->nics[idx[k]].home);
		if (err)
			vnic_set_err(g->ctx, err, VNIC_STEP_DELETE, (int)idx[k],
				     NULL, "%s", g->nics[idx[k]].name);
	}
	for (h = 0; !err && h < hs.n; h++) {
		e = delete_home(g, &hs, h, idx, n);
		if (!err)
			err = e;
	}
	homes_fini(&hs);
	return err;
}
