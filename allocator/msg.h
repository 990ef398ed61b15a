/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The rtnetlink messages the allocator sends. */
#ifndef VNIC_ALLOC_MSG_H
#define VNIC_ALLOC_MSG_H

#include "allocator/nic.h"

/* RTM_NEWLINK creating nic under 'name' (exact, or the template). */
struct nlmsghdr *msg_newlink(struct nl_batch *b, const struct vnic_nic *nic,
			     const char *name, bool echo);
/* RTM_NEWLINK changing an existing link (by ifindex): its tag, and for
 * tun/tap (made by ioctl) also MAC, MTU and up. */
struct nlmsghdr *msg_configure(struct nl_batch *b, const struct vnic_nic *nic,
			       const char *tag);
/* RTM_GETLINK of one link by name. */
struct nlmsghdr *msg_getlink(struct nl_batch *b, const char *name);
/* RTM_DELLINK by ifindex, or by name when the ifindex is unknown. */
struct nlmsghdr *msg_dellink(struct nl_batch *b, int ifindex, const char *name);

/* Reply callback: a link message tells nic (data) its ifindex and name. */
int msg_learn_cb(const struct nlmsghdr *nlh, void *data);

#endif /* VNIC_ALLOC_MSG_H */
