// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Hooks by device-name prefix (NFTA_DEVICE_PREFIX, Linux 6.17).  A netdev
 * base chain that names a device costs, at every commit that adds it, a
 * scan of the namespace's devices (nft_netdev_hook_alloc() compares the name
 * with each, since 6.16 allowed wildcards); thousands of guest NICs next to
 * thousands of devices make that the whole cost of a commit.  A chain that
 * names a prefix is made once and hooks every matching device, those made
 * later too (the kernel hooks them as they register), so a guest whose NICs
 * all match costs set elements only.
 *
 * Per prefix P, two base chains: "pfxin_P" (ingress) and "pfxeg_P"
 * (egress).  Their rules send a packet by its device's kind to the shared
 * regular chains that hold the shards' rules (rule_pfx_guard()).
 *
 * libnftnl 1.2 has no way to put NFTA_DEVICE_PREFIX, so these chain
 * messages are written here, attribute by attribute.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "nft/internal.h"


/* Room for the suffix a name needs after its prefix. */
#define PREFIX_MAX (IFNAMSIZ - 2)

static struct hook_prefix *find(struct vnic_nft *n, const char *name)
{
	unsigned int i;

	for (i = 0; i < n->npfx; i++)
		if (!strcmp(n->pfx[i].name, name))
			return &n->pfx[i];
	return NULL;
}

static bool starts_with(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

#define bad(n, ...) \
	vnic_set_err((n)->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL, __VA_ARGS__)

int prefix_ask(struct vnic_nft *n, const char *const *prefixes)
{
	unsigned int i, j;

	for (i = 0; prefixes && prefixes[i]; i++) {
		const char *p = prefixes[i];

		if (i == VNIC_NFT_PREFIXES)
			return bad(n, "hook_prefixes: more than %d", VNIC_NFT_PREFIXES);
		if (!vnic_valid_tag(p, PREFIX_MAX))
			return bad(n, "hook prefix '%s' must be 1..%d of [A-Za-z0-9_.-]",
				   p, PREFIX_MAX);
		for (j = 0; j < i; j++)
			if (starts_with(p, prefixes[j]) || starts_with(prefixes[j], p))
				return bad(n, "hook prefixes '%s' and '%s' overlap",
					   prefixes[j], p);
	}
	for (i = 0; prefixes && prefixes[i]; i++)
		snprintf(n->pfx[n->npfx++].name, IFNAMSIZ, "%s", prefixes[i]);
	return 0;
}

void prefix_seen(struct vnic_nft *n, const char *chain)
{
	const char *p = chain + strlen(PFX_CHAIN_IN);
	struct hook_prefix *h;

	if (!strcmp(chain, PFX_TO))
		n->pfx_shared = true;
	if (!starts_with(chain, PFX_CHAIN_IN) || !*p || strlen(p) > PREFIX_MAX)
		return;
	h = find(n, p);
	if (!h && n->npfx < ARRAY_SIZE(n->pfx)) {
		h = &n->pfx[n->npfx++];
		snprintf(h->name, IFNAMSIZ, "%s", p);
	}
	if (h)
		h->installed = true;
}

/* NEWCHAIN: a netdev filter base chain hooking every device named P*. */
static int base_chain(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		      const char *name, const char *prefix)
{
	struct nlmsghdr *nlh = nbatch_msg(b, NFT_MSG_NEWCHAIN, NLM_F_CREATE);
	struct nlattr *hook, *devs;

	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_CHAIN_TABLE, n->table);
	mnl_attr_put_strz(nlh, NFTA_CHAIN_NAME, name);
	hook = mnl_attr_nest_start(nlh, NFTA_CHAIN_HOOK);
	mnl_attr_put_u32(nlh, NFTA_HOOK_HOOKNUM,
			 htonl(c == C_IN ? NF_NETDEV_INGRESS : layout_egress_hook()));
	mnl_attr_put_u32(nlh, NFTA_HOOK_PRIORITY, htonl(0));
	devs = mnl_attr_nest_start(nlh, NFTA_HOOK_DEVS);
	mnl_attr_put_strz(nlh, NFTA_DEVICE_PREFIX, prefix);
	mnl_attr_nest_end(nlh, devs);
	mnl_attr_nest_end(nlh, hook);
	mnl_attr_put_u32(nlh, NFTA_CHAIN_POLICY, htonl(NF_ACCEPT));
	mnl_attr_put_strz(nlh, NFTA_CHAIN_TYPE, "filter");
	nbatch_end(b, nlh);
	return 0;
}

static int prefix_chains(struct vnic_nft *n, struct nbatch *b, const char *p)
{
	static const char *const heads[C__MAX] = { PFX_CHAIN_IN, PFX_CHAIN_EG };
	char name[32];
	unsigned int c;
	int err = 0;

	for (c = 0; c < C__MAX && !err; c++) {
		snprintf(name, sizeof(name), "%s%s", heads[c], p);
		err = base_chain(n, b, (enum nchain)c, name, p);
		if (!err)
			err = rule_pfx_guard(n, b, (enum nchain)c, name);
	}
	return err;
}

/* An installed prefix that overlaps asked prefix a (NULL: none); the
 * asked ones were checked against each other by prefix_ask(). */
static const struct hook_prefix *overlap(const struct vnic_nft *n, const char *a)
{
	unsigned int i;

	for (i = 0; i < n->npfx; i++)
		if (n->pfx[i].installed &&
		    (starts_with(a, n->pfx[i].name) || starts_with(n->pfx[i].name, a)))
			return &n->pfx[i];
	return NULL;
}

/*
 * Two prefix chains whose prefixes overlap both hook the devices they have
 * in common, and each packet of those walks both.  An asked prefix an
 * installed one covers is not made: its devices are hooked already.  One
 * that covers an installed prefix is refused, as prefix chains stay with
 * the table.
 */
int prefix_plan(struct vnic_nft *n, bool can)
{
	const struct hook_prefix *o;
	unsigned int i;

	for (i = 0; can && i < n->npfx; i++) {
		if (n->pfx[i].installed)
			continue;
		o = overlap(n, n->pfx[i].name);
		if (o && !starts_with(n->pfx[i].name, o->name)) {
			prefix_done(n, false);
			return bad(n, "hook prefix '%s' covers prefix '%s' that table "
				   "netdev %s hooks already: their devices would be "
				   "hooked twice; ask '%s', or delete the table (nft "
				   "delete table netdev %s) and apply the policy again",
				   n->pfx[i].name, o->name, n->table, o->name, n->table);
		}
		/* Covered: left neither installed nor pending, forgotten by
		 * the next prefix_done(). */
		n->pfx[i].installed = n->pfx[i].pending = !o;
	}
	if (!can)
		prefix_done(n, false);
	return 0;
}

int prefix_build(struct vnic_nft *n, struct nbatch *b, unsigned int *count)
{
	unsigned int i;
	int err = 0;

	*count = 0;
	for (i = 0; i < n->npfx && !err; i++) {
		if (!n->pfx[i].pending)
			continue;
		if (!*count && !n->pfx_shared)
			err = layout_pfx_shared(n, b);
		if (!err)
			err = prefix_chains(n, b, n->pfx[i].name);
		++*count;
	}
	return err;
}

void prefix_done(struct vnic_nft *n, bool made)
{
	unsigned int i, k = 0;

	for (i = 0; i < n->npfx; i++) {
		if (n->pfx[i].pending)
			n->pfx[i].installed = made;
		n->pfx[i].pending = false;
		if (n->pfx[i].installed)
			n->pfx[k++] = n->pfx[i];
	}
	n->npfx = k;
	if (made && k)
		n->pfx_shared = true;
}

bool prefix_covers(const struct vnic_nft *n, const char *ifname)
{
	unsigned int i;

	for (i = 0; i < n->npfx; i++)
		if (n->pfx[i].installed && starts_with(ifname, n->pfx[i].name))
			return true;
	return false;
}
