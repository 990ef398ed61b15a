// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reading RTM_NEWLINK messages. */
#include <errno.h>
#include <string.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <vnic/guest.h>

#include "lib/internal.h"
#include "lib/link.h"

static const char *attr_str(const struct nlattr *a)
{
	/* IFLA strings are NUL-terminated by the kernel; be safe anyway. */
	if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
		return NULL;
	return mnl_attr_get_str(a);
}

static void parse_info_data(const struct nlattr *data, struct link_attrs *la)
{
	const struct nlattr *a;

	if (!la->kind || strcmp(la->kind, "tun"))
		return;
	mnl_attr_for_each_nested(a, data)
		if (mnl_attr_get_type(a) == IFLA_TUN_TYPE &&
		    mnl_attr_get_payload_len(a) >= 1)
			la->tun_type = *(const uint8_t *)mnl_attr_get_payload(a);
}

static void parse_linkinfo(const struct nlattr *info, struct link_attrs *la)
{
	const struct nlattr *a, *data = NULL;

	mnl_attr_for_each_nested(a, info) {
		if (mnl_attr_get_type(a) == IFLA_INFO_KIND)
			la->kind = attr_str(a);
		else if (mnl_attr_get_type(a) == IFLA_INFO_DATA)
			data = a;
	}
	if (data)
		parse_info_data(data, la);
}

int link_parse(const struct nlmsghdr *nlh, struct link_attrs *la)
{
	const size_t hdr = MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct ifinfomsg));
	const struct ifinfomsg *ifi;
	const struct nlattr *attr;

	memset(la, 0, sizeof(*la));
	if ((nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK) ||
	    nlh->nlmsg_len < hdr)
		return -EBADMSG;
	ifi = mnl_nlmsg_get_payload(nlh);
	la->type = nlh->nlmsg_type;
	la->family = ifi->ifi_family;
	la->ifindex = ifi->ifi_index;
	la->flags = ifi->ifi_flags;
	/* Up to nlmsg_len exactly: mnl_attr_for_each() would walk on to the
	 * aligned end, past the last byte of an unaligned message. */
	mnl_attr_for_each_payload((const struct nlattr *)((const char *)nlh + hdr),
				  nlh->nlmsg_len - hdr) {
		switch (mnl_attr_get_type(attr)) {
		case IFLA_IFNAME:
			la->name = attr_str(attr);
			break;
		case IFLA_IFALIAS:
			la->alias = attr_str(attr);
			break;
		case IFLA_ADDRESS:
			if (mnl_attr_get_payload_len(attr) == 6)
				la->mac = mnl_attr_get_payload(attr);
			break;
		case IFLA_LINK:
			if (mnl_attr_get_payload_len(attr) >= 4)
				la->link = (int)mnl_attr_get_u32(attr);
			break;
		case IFLA_LINK_NETNSID:
			la->link_netnsid = true;
			break;
		case IFLA_MTU:
			if (mnl_attr_get_payload_len(attr) >= 4)
				la->mtu = mnl_attr_get_u32(attr);
			break;
		case IFLA_GROUP:
			if (mnl_attr_get_payload_len(attr) >= 4)
				la->group = mnl_attr_get_u32(attr);
			break;
		case IFLA_LINKINFO:
			parse_linkinfo(attr, la);
			break;
		}
	}
	return la->ifindex > 0 ? 0 : -EBADMSG;
}

int link_kind(const struct link_attrs *la)
{
	static const struct {
		const char *name;
		int kind;
	} kinds[] = {
		{ "macvtap", VNIC_KIND_MACVTAP },
		{ "macvlan", VNIC_KIND_MACVLAN },
		{ "veth", VNIC_KIND_VETH },
	};
	unsigned int i;

	if (!la->kind)
		return 0;
	if (!strcmp(la->kind, "tun"))
		return la->tun_type == IFF_TUN ? VNIC_KIND_TUN : VNIC_KIND_TAP;
	for (i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(la->kind, kinds[i].name))
			return kinds[i].kind;
	return 0;
}

struct nlmsghdr *link_dump_request(char *buf)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return nlh;
}

void link_getlink_by_name(struct nlmsghdr *nlh, const char *name)
{
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
}

int link_ifindex_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_attrs la;

	if (!link_parse(nlh, &la))
		*(int *)data = la.ifindex;
	return 0;
}
