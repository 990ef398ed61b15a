// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's extended-ack text from an NLMSG_ERROR message.  The bytes
 * are the kernel's, but an error is read on every path where something went
 * wrong already, so nothing in it is trusted: the nlmsgerr must fit, the
 * echoed request (absent when NLM_F_CAPPED) must fit, and the message is
 * copied up to its NUL or the end of its attribute, whichever comes first.
 */
#include <string.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include "lib/internal.h"

char *parse_extack(const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	size_t plen = mnl_nlmsg_get_payload_len(nlh);
	const struct nlattr *attr;
	size_t off = sizeof(*e);

	if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN || plen < sizeof(*e) ||
	    !(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NULL;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
		if (e->msg.nlmsg_len < sizeof(struct nlmsghdr))
			return NULL;
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	}
	off = MNL_ALIGN(off);
	if (off > plen)
		return NULL;
	/* Up to nlmsg_len exactly, not its aligned end (mnl_attr_for_each). */
	mnl_attr_for_each_payload((const struct nlattr *)((const char *)e + off),
				  plen - off) {
		if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
		    mnl_attr_get_payload_len(attr) > 0)
			return strndup(mnl_attr_get_str(attr),
				       mnl_attr_get_payload_len(attr));
	}
	return NULL;
}
