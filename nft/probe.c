// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's nf_tables features, asked of the kernel rather than guessed
 * from its version (a distribution kernel may have them backported).
 *
 * A batch sent without its NFNL_MSG_BATCH_END is checked and thrown away:
 * nfnetlink_rcv_batch() runs every message, reaches the end of the datagram
 * without END, and aborts instead of committing (how nft --check works).
 * So a flag or attribute the kernel does not know comes back as that
 * message's error (EOPNOTSUPP, EINVAL), and the ruleset and its generation
 * stay as they were.  Every message asks for its ack, so each answers.
 *
 *   owner, persist   NEWTABLE with NFT_TABLE_F_OWNER, then OWNER|PERSIST
 *   egress           NEWCHAIN of a netdev base chain at NF_NETDEV_EGRESS
 *   prefix hook      NEWCHAIN hooking NFTA_DEVICE_PREFIX instead of a name
 *   genid            BEGIN with a generation that is not the ruleset's:
 *                    a kernel that checks it refuses the batch (ERESTART)
 *
 * Two features no checked batch can show, so for them the kernel version
 * tells (vnic_kernel_at_least()):
 *
 *   set size     a NEWSET that names an existing set with another size is
 *                acked 0 by kernels before 6.5 too: nft_set_is_same()
 *                does not compare sizes, and they drop the new one
 *                silently.  The size changes at commit, so no later
 *                message of the batch meets it either.
 *   hook update  adding a device to a netdev chain needs a second device
 *                that exists (6.12 refuses a name that does not with
 *                ENOENT, updates or not; 6.18 hooks it), and a namespace
 *                may hold lo alone.
 *
 * A kernel where the version says yes but a raised size is dropped fails
 * the first batch that passes the old size with ENFILE, which change.c
 * reports as such; one where it says no gets unsized sets, which grow.
 */
#include <errno.h>
#include <stdio.h>
#include <arpa/inet.h>

#include "nft/internal.h"

enum { P_TABLE, P_OWNER, P_PERSIST, P_EGRESS, P_PREFIX, P__MAX };

/* The feature each message shows (P_TABLE: the table the chains go in). */
static const uint32_t probe_bits[P__MAX] = {
	[P_OWNER] = VNIC_NFT_FEAT_OWNER,
	[P_PERSIST] = VNIC_NFT_FEAT_PERSIST,
	[P_EGRESS] = VNIC_NFT_FEAT_EGRESS,
	[P_PREFIX] = VNIC_NFT_FEAT_PREFIX_HOOK,
};

static int put_table(struct nbatch *b, const char *name, uint32_t flags)
{
	struct nlmsghdr *nlh = nbatch_msg(b, NFT_MSG_NEWTABLE,
					  NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);

	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, name);
	mnl_attr_put_u32(nlh, NFTA_TABLE_FLAGS, htonl(flags));
	nbatch_end(b, nlh);
	return 0;
}

/* A netdev filter base chain at hook, on the device named dev, or on every
 * device whose name starts with dev (attr NFTA_DEVICE_PREFIX). */
static int put_chain(struct nbatch *b, const char *table, const char *name,
		     uint32_t hook, uint16_t attr, const char *dev)
{
	struct nlmsghdr *nlh = nbatch_msg(b, NFT_MSG_NEWCHAIN,
					  NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
	struct nlattr *h, *devs;

	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_CHAIN_TABLE, table);
	mnl_attr_put_strz(nlh, NFTA_CHAIN_NAME, name);
	h = mnl_attr_nest_start(nlh, NFTA_CHAIN_HOOK);
	mnl_attr_put_u32(nlh, NFTA_HOOK_HOOKNUM, htonl(hook));
	mnl_attr_put_u32(nlh, NFTA_HOOK_PRIORITY, htonl(0));
	devs = mnl_attr_nest_start(nlh, NFTA_HOOK_DEVS);
	mnl_attr_put_strz(nlh, attr, dev);
	mnl_attr_nest_end(nlh, devs);
	mnl_attr_nest_end(nlh, h);
	mnl_attr_put_u32(nlh, NFTA_CHAIN_POLICY, htonl(NF_ACCEPT));
	mnl_attr_put_strz(nlh, NFTA_CHAIN_TYPE, "filter");
	nbatch_end(b, nlh);
	return 0;
}

/* The checked batch of the table and chain features. */
static int probe_objects(struct vnic_nft *n, uint32_t *f)
{
	char t[3][32];
	int errs[P__MAX], err;
	struct nbatch b;
	unsigned int i;

	/* Names of this socket only (its port id): nothing is made, but a
	 * table of that name that exists would answer EEXIST. */
	for (i = 0; i < 3; i++)
		snprintf(t[i], sizeof(t[i]), "vnic_probe%u_%u", n->nl.portid, i);
	nbatch_init(&b);
	err = put_table(&b, t[0], 0);
	if (!err)
		err = put_table(&b, t[1], NFT_TABLE_F_OWNER);
	if (!err)
		err = put_table(&b, t[2], NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST);
	/* Every namespace has lo. */
	if (!err)
		err = put_chain(&b, t[0], "eg", NF_NETDEV_EGRESS, NFTA_DEVICE_NAME, "lo");
	if (!err)
		err = put_chain(&b, t[0], "pfx", NF_NETDEV_INGRESS, NFTA_DEVICE_PREFIX,
				"vnicprobe");
	if (!err)
		err = nbatch_check(n, &b, NO_GENID, errs);
	nbatch_free(&b);
	/* Without its table nothing else was asked. */
	if (!err && errs[P_TABLE])
		err = errs[P_TABLE];
	for (i = 0; !err && i < P__MAX; i++)
		if (!errs[i])
			*f |= probe_bits[i];
	return err;
}

/* A batch with a generation that cannot be the ruleset's, and nothing in
 * it: ERESTART from a kernel that checks, silence from one that does not. */
static int probe_genid(struct vnic_nft *n, uint32_t *f)
{
	struct nbatch b;
	uint32_t g, wrong;
	int err = nfnl_genid(n, &g);

	if (err)
		return err;
	wrong = g ^ 0x80000000u;	/* 0 would mean "do not check" */
	nbatch_init(&b);
	err = nbatch_check(n, &b, wrong ? wrong : 1, NULL);
	nbatch_free(&b);
	if (err == -ERESTART) {
		*f |= VNIC_NFT_FEAT_GENID;
		err = 0;
	}
	return err;
}

int nft_probe(struct vnic_nft *n, uint32_t *features)
{
	ssize_t (*recv_fn)(void *, char *, size_t, uint32_t) = n->nl.recv_fn;
	uint32_t f = 0;
	int err;

	/* A replay has no kernel to ask: it plays one with every feature. */
	if (!n->nl.mnl) {
		*features = VNIC_NFT_FEAT_GENID | VNIC_NFT_FEAT_OWNER |
			    VNIC_NFT_FEAT_PERSIST | VNIC_NFT_FEAT_EGRESS |
			    VNIC_NFT_FEAT_HOOK_UPDATE | VNIC_NFT_FEAT_SET_SIZE |
			    VNIC_NFT_FEAT_PREFIX_HOOK;
		return 0;
	}
	/* A recording holds the replies of the reads only. */
	n->nl.recv_fn = NULL;
	err = probe_objects(n, &f);
	if (!err)
		err = probe_genid(n, &f);
	n->nl.recv_fn = recv_fn;
	if (err)
		return err;
	if (vnic_kernel_at_least(6, 4))
		f |= VNIC_NFT_FEAT_HOOK_UPDATE;
	if (vnic_kernel_at_least(6, 5))
		f |= VNIC_NFT_FEAT_SET_SIZE;
	*features = f;
	return 0;
}
