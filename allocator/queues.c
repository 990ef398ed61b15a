// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Queue fds for a hypervisor.  A macvtap's character device is
 * /dev/tap<ifindex>; each open is one queue.  Since /dev is not per
 * namespace, the name TUNGETIFF reports is checked against the NIC's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>

#include "allocator/tap.h"

static int open_macvtap(struct vnic_guest *g, unsigned int idx, int *out,
			unsigned int n)
{
	struct vnic_nic *nic = &g->nics[idx];
	int *fds = calloc(n, sizeof(*fds));
	char path[32];
	unsigned int q;
	int err = 0;

	if (!fds)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/dev/tap%d", nic->ifindex);
	for (q = 0; q < n && !err; q++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		err = vnic_fault(g->ctx, VNIC_STEP_OPEN, q);
		if (err)
			break;
		fds[q] = open(path, O_RDWR | O_CLOEXEC);
		if (fds[q] < 0) {
			err = -errno;
			break;
		}
		g->ctx->stats.ioctls++;
		if (ioctl(fds[q], TUNGETIFF, &ifr) < 0)
			err = -errno;
		else if (strncmp(ifr.ifr_name, nic->name, IFNAMSIZ))
			err = -ESTALE;
	}
	if (err) {
		/* fds[0..q-1] are open: the loop counted the failed one in
		 * only if its open() had succeeded. */
		while (q--)
			close(fds[q]);
		free(fds);
		return vnic_set_err(g->ctx, err, VNIC_STEP_OPEN, (int)idx, NULL,
				    "%s (%s)", path, nic->name);
	}
	memcpy(out, fds, n * sizeof(*fds));
	free(fds);
	return 0;
}

/* tun/tap fds were opened at creation: hand over n, close the rest. */
static int take_tap(struct vnic_guest *g, unsigned int idx, int *fds,
		    unsigned int n)
{
	struct vnic_nic *nic = &g->nics[idx];
	unsigned int q;

	if (!nic->nfds)
		return vnic_set_err(g->ctx, -ENOENT, VNIC_STEP_OPEN, (int)idx, NULL,
				    "%s: queue fds were handed over already",
				    nic->name);
	if (n > nic->nfds)
		return vnic_set_err(g->ctx, -EINVAL, VNIC_STEP_OPEN, (int)idx, NULL,
				    "%s has %u queues", nic->name, nic->nfds);
	for (q = 0; q < n; q++)
		fds[q] = nic->fds[q];
	for (; q < nic->nfds; q++)
		close(nic->fds[q]);
	free(nic->fds);
	nic->fds = NULL;
	nic->nfds = 0;
	return 0;
}

VNIC_EXPORT int vnic_guest_nic_open_queues(struct vnic_guest *g, unsigned int idx,
					   int *fds, unsigned int n)
{
	struct vnic_nic *nic;

	if (!g || !fds || !n || idx >= g->n)
		return -EINVAL;
	vnic_clear_err(g->ctx);
	nic = &g->nics[idx];
	if (!nic->created)
		return vnic_set_err(g->ctx, -ENODEV, VNIC_STEP_OPEN, (int)idx, NULL,
				    "not created");
	if (nic->kind == VNIC_KIND_MACVTAP)
		return open_macvtap(g, idx, fds, n);
	if (kind_is_tun(nic->kind))
		return take_tap(g, idx, fds, n);
	return vnic_set_err(g->ctx, -EOPNOTSUPP, VNIC_STEP_OPEN, (int)idx, NULL,
			    "%s has no queue fds", vnic_kind_name(nic->kind));
}
