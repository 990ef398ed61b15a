// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every rule libvnic writes carries a tag in its userdata: a 64-bit hash of
 * its expressions as libvnic builds them.  Reading a chain back then tells
 * which of its rules are libvnic's and unchanged by comparing tags, without
 * parsing expressions the kernel dumps in its own form (defaults it adds,
 * nests it flags differently) and without handing a foreign rule's
 * expressions to libnftnl.  A rule someone added has no tag, one replaced
 * in place has lost it; only a deliberate forgery of the tag goes unseen.
 *
 * The tag is a userdata TLV of a type nft(8) does not use (it skips it:
 * listings show the rule as before).
 */
#include <errno.h>
#include <string.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/rule.h>

#include "nft/internal.h"

#define TAG_TYPE	0x76	/* 'v' */
#define TAG_LEN		8

static uint64_t expr_hash(const struct nftnl_rule *r)
{
	char buf[8192] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	const struct nlattr *a;

	/* libmnl 1.0.4 leaves an attribute's padding as it finds it. */
	memset(buf, 0, sizeof(buf));
	nlh = mnl_nlmsg_put_header(buf);
	mnl_nlmsg_put_extra_header(nlh, sizeof(struct nfgenmsg));
	nftnl_rule_nlmsg_build_payload(nlh, (struct nftnl_rule *)r);
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == NFTA_RULE_EXPRESSIONS)
			return vnic_hash64(mnl_attr_get_payload(a),
					   mnl_attr_get_payload_len(a), VNIC_HASH_INIT);
	return VNIC_HASH_INIT;
}

int rule_tag(struct nftnl_rule *r)
{
	uint64_t h = expr_hash(r);
	uint8_t ud[2 + TAG_LEN] = { TAG_TYPE, TAG_LEN };

	memcpy(ud + 2, &h, TAG_LEN);
	/* An untagged rule would be taken for someone else's at read-back. */
	return nftnl_rule_set_data(r, NFTNL_RULE_USERDATA, ud, sizeof(ud)) < 0 ?
	       -ENOMEM : 0;
}

bool rule_tag_parse(const uint8_t *ud, uint32_t len, uint64_t *tag)
{
	uint32_t off, l;

	for (off = 0; ud && off + 2 <= len; off += 2 + l) {
		l = ud[off + 1];
		if (off + 2 + l > len)
			return false;
		if (ud[off] == TAG_TYPE && l == TAG_LEN) {
			memcpy(tag, ud + off + 2, TAG_LEN);
			return true;
		}
	}
	return false;
}
