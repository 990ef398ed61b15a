// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The handle's socket for interface ioctls (SIOCGIFINDEX, SIOCGIFNAME), in
 * the handle's namespace, made on first use: apply.c resolves NIC names
 * with it, diff.c checks that an ifindex still names the NIC it recorded.
 * bpf.c closes it with the handle.
 */
#include <errno.h>
#include <sys/socket.h>

#include "bpf/internal.h"

static int ifsock_fn(void *arg)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	*(int *)arg = fd;
	return fd < 0 ? -errno : 0;
}

int bpf_ifsock(struct vnic_bpf *b)
{
	int err = 0;

	if (b->ifsock < 0)
		err = vnic_in_netns(b->ctx->netns_fd, ifsock_fn, &b->ifsock);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "socket for interface lookups");
	return b->ifsock;
}
