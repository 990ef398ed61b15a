// SPDX-License-Identifier: LGPL-2.1-or-later
/* The rtnetlink messages the allocator sends. */
#include <stdio.h>
#include <string.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "allocator/msg.h"
#include "lib/link.h"

static struct ifinfomsg *put_ifinfo(struct nlmsghdr *nlh, int ifindex, bool up)
{
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	if (up) {
		ifi->ifi_flags = IFF_UP;
		ifi->ifi_change = IFF_UP;
	}
	return ifi;
}

/*
 * One end of a veth, or the NIC itself.  Both ends carry the owner's group
 * (rtnl_create_link() applies it to each) and the NIC's MTU.
 */
struct end {
	const char *name;
	const uint8_t *mac;
	int netns_fd;
	bool up;
};

static void put_end(struct nlmsghdr *nlh, const struct vnic_nic *nic,
		    const struct end *e)
{
	mnl_attr_put_strz(nlh, IFLA_IFNAME, e->name);
	mnl_attr_put(nlh, IFLA_ADDRESS, 6, e->mac);
	/* The owner's mark, from the instant the link exists: the kernel
	 * ignores IFLA_IFALIAS here, but rtnl_create_link() sets the group. */
	mnl_attr_put_u32(nlh, IFLA_GROUP, nic->group);
	if (nic->mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, nic->mtu);
	if (e->netns_fd >= 0)
		mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)e->netns_fd);
}

/* VETH_INFO_PEER holds a struct ifinfomsg of its own before its attributes.
 * Never IFF_UP there: the peer is configured before the pair is tied, and
 * veth_open() refuses (ENOTCONN) a device without its peer. */
static void put_veth_peer(struct nlmsghdr *nlh, const struct vnic_nic *nic,
			  const struct end *inner)
{
	struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload_tail(nlh);

	memset(ifi, 0, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	nlh->nlmsg_len += MNL_ALIGN(sizeof(*ifi));
	put_end(nlh, nic, inner);
	mnl_attr_nest_end(nlh, peer);
}

static void put_linkinfo(struct nlmsghdr *nlh, const struct vnic_nic *nic,
			 const struct end *inner)
{
	struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	struct nlattr *data;

	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, kind_link_name(nic->kind));
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	if (nic->kind == VNIC_KIND_VETH)
		put_veth_peer(nlh, nic, inner);
	else
		mnl_attr_put_u32(nlh, IFLA_MACVLAN_MODE, nic->mode);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
}

/*
 * A NIC is created with the MAC libvnic chose, which carries the owner's
 * check (mark.c): so it is the owner's from the instant it exists.  A MAC
 * the caller gave is set afterwards, with the tag, and the NIC is brought
 * up only then (IPv6 and the lower's filter see the final MAC from the
 * start).  tun/tap get theirs then too; a passthru macvlan takes its
 * lower's MAC at creation, and a MAC given for it sets the lower's.
 */
static bool mac_after_create(const struct vnic_nic *nic)
{
	return nic->kind == VNIC_KIND_TAP ||
	       (nic->mac_given && nic->kind != VNIC_KIND_TUN);
}

/* A veth whose peer is the outer device (below) is the inner one: it
 * cannot come up before the pair is tied. */
static bool up_after_create(const struct vnic_nic *nic)
{
	return kind_is_tun(nic->kind) || mac_after_create(nic) || nic->peer_outer;
}

/*
 * A veth's outer device is configured (rtnl_configure_link(), its ifi_flags)
 * after veth_newlink() has tied both ends, its peer before.  So a peer that
 * must come up in another namespace is made the outer device, up from its
 * birth, and the NIC goes in the nest: it comes up with its tag (step 4),
 * through our own socket, and no socket is opened in the peer's namespace.
 */
struct nlmsghdr *msg_newlink(struct nl_batch *b, const struct vnic_nic *nic,
			     const char *name, bool echo)
{
	uint16_t flags = NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	struct end self = { name, nic->birth_mac, nic->netns_fd,
			    nic->up && !up_after_create(nic) };
	struct end peer = { nic->peer_name, nic->peer_mac, nic->peer_netns_fd,
			    nic->peer_outer };
	const struct end *outer = nic->peer_outer ? &peer : &self;
	const struct end *inner = nic->peer_outer ? &self : &peer;
	struct nlmsghdr *nlh;

	nlh = nl_batch_msg(b, RTM_NEWLINK, flags | (echo ? NLM_F_ECHO : 0));
	if (!nlh)
		return NULL;
	put_ifinfo(nlh, 0, outer->up);
	put_end(nlh, nic, outer);
	if (nic->lower_ifindex)
		mnl_attr_put_u32(nlh, IFLA_LINK, (uint32_t)nic->lower_ifindex);
	put_linkinfo(nlh, nic, inner);
	return nlh;
}

struct nlmsghdr *msg_configure(struct nl_batch *b, const struct vnic_nic *nic,
			       const char *tag)
{
	bool tun = kind_is_tun(nic->kind);
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_NEWLINK, NLM_F_ACK);

	if (!nlh)
		return NULL;
	/* do_setlink() sets the address before it changes the flags. */
	put_ifinfo(nlh, nic->ifindex, nic->up && up_after_create(nic));
	mnl_attr_put_strz(nlh, IFLA_IFALIAS, tag);
	/* TUNSETIFF cannot set a group: a tap gets it with its tag, and is
	 * made persistent only afterwards (tap.c). */
	if (tun)
		mnl_attr_put_u32(nlh, IFLA_GROUP, nic->group);
	if (tun && nic->mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, nic->mtu);
	if (mac_after_create(nic))
		mnl_attr_put(nlh, IFLA_ADDRESS, 6, nic->mac);
	return nlh;
}

struct nlmsghdr *msg_peer_up(struct nl_batch *b, const struct vnic_nic *nic)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_NEWLINK, NLM_F_ACK);

	if (!nlh)
		return NULL;
	put_ifinfo(nlh, 0, true);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, nic->peer_name);
	return nlh;
}

/* Test hook (create.c): no NLM_F_CREATE, so nothing is made; the kernel
 * looks the name up in the socket's namespace, as one before 6.15 does for
 * a peer-outside create, and answers EEXIST if it is there. */
struct nlmsghdr *msg_excl_lookup(struct nl_batch *b, const char *name)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_NEWLINK, NLM_F_ACK | NLM_F_EXCL);

	if (!nlh)
		return NULL;
	put_ifinfo(nlh, 0, false);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	return nlh;
}

struct nlmsghdr *msg_getlink(struct nl_batch *b, const char *name)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_GETLINK, NLM_F_ACK);

	if (nlh)
		link_getlink_by_name(nlh, name);
	return nlh;
}

struct nlmsghdr *msg_getlink_index(struct nl_batch *b, int ifindex)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_GETLINK, NLM_F_ACK);

	if (!nlh)
		return NULL;
	put_ifinfo(nlh, ifindex, false);
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return nlh;
}

struct nlmsghdr *msg_dellink(struct nl_batch *b, int ifindex, const char *name)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_DELLINK, NLM_F_ACK);

	if (!nlh)
		return NULL;
	put_ifinfo(nlh, ifindex, false);
	if (!ifindex)
		mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	return nlh;
}

void nic_learn(struct vnic_nic *nic, const struct link_attrs *la)
{
	nic->ifindex = la->ifindex;
	/* What the link really has (passthru inherits its lower's MAC),
	 * unless the MAC is still to be set by the configure step. */
	if (la->mac && !mac_after_create(nic))
		memcpy(nic->mac, la->mac, 6);
	if (la->name)
		snprintf(nic->name, sizeof(nic->name), "%s", la->name);
}

struct nlmsghdr *msg_setgroup(struct nl_batch *b, int ifindex, uint32_t group)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_NEWLINK, NLM_F_ACK);

	if (!nlh)
		return NULL;
	put_ifinfo(nlh, ifindex, false);
	mnl_attr_put_u32(nlh, IFLA_GROUP, group);
	return nlh;
}

struct nlmsghdr *msg_delgroup(struct nl_batch *b, uint32_t group)
{
	struct nlmsghdr *nlh = nl_batch_msg(b, RTM_DELLINK, NLM_F_ACK);

	if (!nlh)
		return NULL;
	put_ifinfo(nlh, 0, false);
	mnl_attr_put_u32(nlh, IFLA_GROUP, group);
	return nlh;
}

int msg_learn_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_attrs la;

	if (!link_parse(nlh, &la) && la.type == RTM_NEWLINK)
		nic_learn(data, &la);
	return 0;
}
