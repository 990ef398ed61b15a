/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading RTM_NEWLINK messages (dumps, echoes, replies, notifications). */
#ifndef VNIC_LINK_H
#define VNIC_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/netlink.h>

struct link_attrs {
	int ifindex;
	uint16_t type;		/* RTM_NEWLINK or RTM_DELLINK */
	uint8_t family;		/* ifi_family: AF_UNSPEC for the link's
				 * own messages, AF_BRIDGE for a bridge
				 * port's (no IFLA_LINKINFO) */
	unsigned int flags;	/* ifi_flags */
	const char *name;	/* IFLA_IFNAME, or NULL */
	const char *alias;	/* IFLA_IFALIAS, or NULL */
	const char *kind;	/* IFLA_INFO_KIND, or NULL */
	const uint8_t *mac;	/* IFLA_ADDRESS when 6 bytes, or NULL */
	int link;		/* IFLA_LINK, or 0 */
	bool link_netnsid;	/* IFLA_LINK is in another namespace */
	uint32_t mtu;
	uint32_t group;		/* IFLA_GROUP, or 0 (the default group) */
	int tun_type;		/* IFLA_TUN_TYPE (IFF_TUN/IFF_TAP), or 0 */
};

/* 0, or -EBADMSG if nlh is not a link message.  Pointers point into nlh. */
int link_parse(const struct nlmsghdr *nlh, struct link_attrs *la);
/* la's kind as an enum vnic_kind (a "tun" by its IFLA_TUN_TYPE), 0 for a
 * kind libvnic does not make or none (a physical device). */
int link_kind(const struct link_attrs *la);

/* Fill an RTM_GETLINK request (header made by the caller) for one name. */
void link_getlink_by_name(struct nlmsghdr *nlh, const char *name);
/* Reply callback: *(int *)data = the link's ifindex. */
int link_ifindex_cb(const struct nlmsghdr *nlh, void *data);

/* Start an RTM_GETLINK dump request in buf (8 KiB), without statistics. */
struct nlmsghdr *link_dump_request(char *buf);

#endif /* VNIC_LINK_H */
