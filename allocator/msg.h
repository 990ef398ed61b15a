/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The rtnetlink messages the allocator sends. */
#ifndef VNIC_ALLOC_MSG_H
#define VNIC_ALLOC_MSG_H

#include "allocator/nic.h"

/* RTM_NEWLINK creating nic under 'name' (exact, or the template). */
struct nlmsghdr *msg_newlink(struct nl_batch *b, const struct vnic_nic *nic,
			     const char *name, bool echo);
/* RTM_NEWLINK changing an existing link (by ifindex): its tag, and for
 * tun/tap (made by ioctl) also group, MAC, MTU and up. */
struct nlmsghdr *msg_configure(struct nl_batch *b, const struct vnic_nic *nic,
			       const char *tag);
/* RTM_NEWLINK bringing a veth's peer up, by name, in its namespace. */
struct nlmsghdr *msg_peer_up(struct nl_batch *b, const struct vnic_nic *nic);
/* RTM_GETLINK of one link by name. */
struct nlmsghdr *msg_excl_lookup(struct nl_batch *b, const char *name);
struct nlmsghdr *msg_getlink(struct nl_batch *b, const char *name);
/* RTM_GETLINK of one link by ifindex. */
struct nlmsghdr *msg_getlink_index(struct nl_batch *b, int ifindex);
/* RTM_DELLINK by ifindex, or by name when the ifindex is unknown. */
struct nlmsghdr *msg_dellink(struct nl_batch *b, int ifindex, const char *name);

/* RTM_NEWLINK moving a link into a link group. */
struct nlmsghdr *msg_setgroup(struct nl_batch *b, int ifindex, uint32_t group);
/* RTM_DELLINK of every link of a group, in one unregister. */
struct nlmsghdr *msg_delgroup(struct nl_batch *b, uint32_t group);

struct link_attrs;
/* What a link message tells about nic: ifindex, name, MAC. */
void nic_learn(struct vnic_nic *nic, const struct link_attrs *la);
/* Reply callback: nic_learn() for nic (data). */
int msg_learn_cb(const struct nlmsghdr *nlh, void *data);

#endif /* VNIC_ALLOC_MSG_H */
