// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One guest in or out of the table: its set elements, its drop counter, the
 * base-chain devices of its NICs and, for custom rules, its own chain.  The
 * same function builds the add and the delete, so a delete removes exactly
 * what the add put in.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>

#include "nft/internal.h"

/*
 * Elements go out one message per set and ELIST_MAX elements (elist.c).
 * Those a change adds gather in the handle across its guests (n->adds) and
 * go out before its hooks: a batch of many small guests then holds few
 * messages.  Deletes go out with their guest (n->dels), before its counter
 * and chain, which the kernel keeps while an element refers to them.
 */
struct put {
	struct vnic_nft *n;
	struct nbatch *b;
	bool add;
	bool uncounted;			/* the state element */
	struct elist *s;		/* n->adds or n->dels */
	int err;
};

static void put_init(struct put *pt, struct vnic_nft *n, struct nbatch *b,
		     bool add, bool gather)
{
	pt->n = n;
	pt->b = b;
	pt->add = add;
	pt->uncounted = false;
	pt->s = gather ? n->adds : n->dels;
	pt->err = 0;
}

static int flush_set(struct put *pt, enum nset s)
{
	char name[16];

	if (!pt->s[s].count)	/* most of the NSETS mask sets, always */
		return 0;
	return elist_flush(&pt->s[s], pt->b, pt->n->table,
			   set_name(s, name, sizeof(name)), pt->add);
}

/* An element of set s; x: what it carries besides its key (adds only). */
static void elem(struct put *pt, enum nset s, const void *key, uint32_t len,
		 const struct elist_extra *x)
{
	if (pt->err)
		return;
	if (!pt->add)
		x = NULL;
	pt->err = elist_add(&pt->s[s], key, len, x);
	if (pt->err > 0) {
		pt->err = flush_set(pt, s);
		if (!pt->err)
			pt->err = elist_add(&pt->s[s], key, len, x);
	}
	if (!pt->err && !pt->uncounted)
		pt->n->pend[s] += pt->add ? 1 : -1;
}

/* Keys: the ifindex as meta iif/oif loads it (host order), then each field
 * in its own 32-bit registers, as the rules' concatenations lay them out. */
struct key {
	uint8_t b[32];
	uint32_t len;
};

static void key_init(struct key *k, int ifindex)
{
	uint32_t v = (uint32_t)ifindex;

	memset(k, 0, sizeof(*k));
	memcpy(k->b, &v, 4);
	k->len = 4;
}

static void key_add(struct key *k, const void *p, uint32_t len)
{
	memcpy(k->b + k->len, p, len);
	k->len += (len + 3) & ~3u;
}

static void nic_addrs(struct put *pt, const struct pnic *nic, int ifindex)
{
	struct key k;
	unsigned int i;

	key_init(&k, ifindex);
	key_add(&k, nic->mac, 6);
	elem(pt, S_MAC, k.b, k.len, NULL);
	for (i = 0; i < nic->n4; i++) {
		key_init(&k, ifindex);
		key_add(&k, &nic->v4[i], 4);
		elem(pt, S_IP4, k.b, k.len, NULL);
	}
	for (i = 0; i < nic->n6; i++) {
		key_init(&k, ifindex);
		key_add(&k, &nic->v6[i], 16);
		elem(pt, S_IP6, k.b, k.len, NULL);
	}
}

static void nic_elems(struct put *pt, const struct pguest *g, const struct pnic *nic,
		      int ifindex, const char *ctr, const char *chain)
{
	enum nchain c = layout_from_chain(nic->kind);
	uint32_t idx = (uint32_t)ifindex;
	struct elist_extra counter = { .objref = ctr }, jump = { .chain = chain };

	if (nic->sw & SW_FROM)
		elem(pt, S_MASK(nic->sw), &idx, 4, NULL);
	/* Traffic to a macvtap or macvlan is filtered by its own MAC. */
	if ((nic->sw & VNIC_SW_NO_PROMISC) && c == C_IN)
		elem(pt, S_PROMISC, &idx, 4, NULL);
	nic_addrs(pt, nic, ifindex);
	elem(pt, S_CTR, &idx, 4, &counter);
	if (g->nr)
		elem(pt, S_CUSTOM, &idx, 4, &jump);
}

uint32_t guest_key(const char *name)
{
	uint32_t k = (uint32_t)vnic_hash64(name, strlen(name), VNIC_HASH_INIT);

	return k == STATE_KEY ? k + 1 : k;
}

/* An element of the guests set with its comment. */
static void comment_elem(struct put *pt, uint32_t key, const char *comment)
{
	uint8_t ud[260];
	struct elist_extra x = { .udata = ud };

	x.udata_len = (uint32_t)udata_comment(comment, ud, sizeof(ud));
	elem(pt, S_GUESTS, &key, 4, &x);
}

/* "libvnic-state DIGEST n=A,B,...": the digest, and how many elements each
 * set holds after the batch (S_PROMISC up to S_GUESTS, without this one;
 * the mask sets are not counted: drops bounds each). */
int state_elem(struct vnic_nft *n, struct nbatch *b, uint64_t digest, bool add)
{
	char comment[200];
	unsigned int s;
	struct put pt;
	int len;

	put_init(&pt, n, b, add, false);
	pt.uncounted = true;
	if (add) {
		/* g=: the generation this commit makes (0: unknown). */
		len = snprintf(comment, sizeof(comment), "libvnic-state %016llx g=%u n=",
			       (unsigned long long)digest, n->state_gen);
		for (s = 0; s < STATE_COUNTS; s++)
			len += snprintf(comment + len, sizeof(comment) - (size_t)len,
					"%s%lld", s ? "," : "",
					(long long)n->nelem[s] + n->pend[s]);
		comment_elem(&pt, STATE_KEY, comment);
	} else {
		uint32_t key = STATE_KEY;

		elem(&pt, S_GUESTS, &key, 4, NULL);
	}
	return pt.err ? pt.err : flush_set(&pt, S_GUESTS);
}

/* "NAME DIGEST" (digest in 16 lowercase hex digits), as "%s %016llx"
 * writes it: one per guest, where printf's machinery was a tenth of the
 * build. */
static void guest_comment(const char *name, uint64_t digest, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strnlen(name, POLICY_GUEST_MAX);
	unsigned int i;

	memcpy(out, name, len);
	out[len++] = ' ';
	for (i = 0; i < 16; i++)
		out[len + i] = hex[(digest >> (60 - 4 * i)) & 0xf];
	out[len + 16] = '\0';
}

static void guest_elem(struct put *pt, const struct pguest *g, uint64_t digest)
{
	uint32_t key = guest_key(g->name);
	char comment[POLICY_GUEST_MAX + 18];

	if (!pt->add) {
		elem(pt, S_GUESTS, &key, 4, NULL);
		return;
	}
	guest_comment(g->name, digest, comment);
	comment_elem(pt, key, comment);
}

/*
 * The guest's drop counter, encoded here as libnftnl 1.2.4 encodes an
 * nftnl_obj with table, name and type set (then an empty NFTA_OBJ_DATA:
 * a counter object with nothing to say), without making one: one per
 * guest, each an allocation and two string copies.
 */
static int put_counter(struct put *pt, const char *name)
{
	struct nlmsghdr *nlh;
	struct nlattr *data;

	nlh = nbatch_msg(pt->b, pt->add ? NFT_MSG_NEWOBJ : NFT_MSG_DELOBJ,
			 pt->add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	if (!nlh)
		return -ENOMEM;
	mnl_attr_put_strz(nlh, NFTA_OBJ_TABLE, pt->n->table);
	mnl_attr_put_strz(nlh, NFTA_OBJ_NAME, name);
	mnl_attr_put_u32(nlh, NFTA_OBJ_TYPE, htonl(NFT_OBJECT_COUNTER));
	data = mnl_attr_nest_start(nlh, NFTA_OBJ_DATA);
	mnl_attr_nest_end(nlh, data);
	nbatch_end(pt->b, nlh);
	return 0;
}

static int flush_rules(struct put *pt, const char *chain);

/* --- custom rules: a chain of the guest's own ------------------------- */

/* A rule being built; err: the first expression that could not be made
 * (the rule would match more than it says without it). */
struct xrule {
	struct nftnl_rule *r;
	int err;
};

static struct nftnl_expr *add_expr(struct xrule *x, const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);

	if (e)
		nftnl_rule_add_expr(x->r, e);
	else
		x->err = -ENOMEM;
	return e;
}

static void e_meta(struct xrule *r, uint32_t key)
{
	struct nftnl_expr *e = add_expr(r, "meta");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG32_00);
	}
}

static void e_payload(struct xrule *r, uint32_t base, uint32_t off, uint32_t len)
{
	struct nftnl_expr *e = add_expr(r, "payload");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG32_00);
	}
}

static void e_cmp(struct xrule *r, const void *data, uint32_t len)
{
	struct nftnl_expr *e = add_expr(r, "cmp");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG32_00);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	}
}

static void e_daddr(struct xrule *r, const struct prule *pr)
{
	uint32_t len = pr->family == AF_INET ? 4 : 16;
	uint8_t mask[16] = { 0 }, x[16] = { 0 };
	uint16_t proto = htons(pr->family == AF_INET ? ETH_P_IP : ETH_P_IPV6);
	struct nftnl_expr *e;
	unsigned int i;

	e_meta(r, NFT_META_PROTOCOL);
	e_cmp(r, &proto, 2);
	e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, pr->family == AF_INET ? 16 : 24, len);
	if (pr->plen < len * 8) {
		for (i = 0; i < pr->plen; i++)
			mask[i / 8] |= (uint8_t)(0x80 >> (i % 8));
		e = add_expr(r, "bitwise");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG32_00);
			nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG32_00);
			nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
			nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
			nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, x, len);
		}
	}
	e_cmp(r, pr->addr, len);
}

static void e_ports(struct xrule *r, const struct prule *pr)
{
	uint16_t lo = htons(pr->pmin), hi = htons(pr->pmax);
	struct nftnl_expr *e;

	e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
	if (pr->pmin == pr->pmax) {
		e_cmp(r, &lo, 2);
		return;
	}
	e = add_expr(r, "range");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_RANGE_SREG, NFT_REG32_00);
		nftnl_expr_set_u32(e, NFTNL_EXPR_RANGE_OP, NFT_RANGE_EQ);
		nftnl_expr_set(e, NFTNL_EXPR_RANGE_FROM_DATA, &lo, 2);
		nftnl_expr_set(e, NFTNL_EXPR_RANGE_TO_DATA, &hi, 2);
	}
}

/* The rule, tagged, or NULL when any part of it could not be made. */
static struct nftnl_rule *custom_rule(struct put *pt, const char *chain,
				      const char *ctr, const struct prule *pr)
{
	struct xrule xr = { nftnl_rule_alloc(), 0 }, *r = &xr;
	struct nftnl_expr *e;

	if (!xr.r)
		return NULL;
	xr.err = rule_id(xr.r, pt->n->table, chain);
	if (pr->family)
		e_daddr(r, pr);
	if (pr->l4proto) {
		e_meta(r, NFT_META_L4PROTO);
		e_cmp(r, &pr->l4proto, 1);
	}
	if (pr->pmin || pr->pmax)	/* 0, 0: any port; 0-N is a range */
		e_ports(r, pr);
	if (!pr->accept) {
		e = add_expr(r, "objref");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
			xr.err = xr.err ?: expr_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, ctr);
		}
	}
	e = add_expr(r, "immediate");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT,
				   pr->accept ? NF_ACCEPT : NF_DROP);
	}
	if (!xr.err)
		xr.err = rule_tag(xr.r);
	if (xr.err) {
		nftnl_rule_free(xr.r);
		return NULL;
	}
	return xr.r;
}

static int put_chain(struct put *pt, const char *name, uint16_t type)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nlmsghdr *nlh;

	if (!c)
		return -ENOMEM;
	nlh = chain_id(c, pt->n->table, name) ? NULL :
	      nbatch_msg(pt->b, type, type == NFT_MSG_NEWCHAIN ? NLM_F_CREATE : 0);
	if (nlh) {
		nftnl_chain_nlmsg_build_payload(nlh, c);
		nbatch_end(pt->b, nlh);
	}
	nftnl_chain_free(c);
	return nlh ? 0 : -ENOMEM;
}

/* Delete: the rules, and the chain unless kept.  Add: the chain unless
 * kept, and the rules. */
static int custom_chain(struct put *pt, const struct pguest *g, const char *chain,
			const char *ctr, bool keep)
{
	struct nlmsghdr *nlh;
	unsigned int i;
	int err = 0;

	if (!g->nr)
		return 0;
	if (!pt->add) {
		err = flush_rules(pt, chain);
		if (!err && !keep) {
			err = put_chain(pt, chain, NFT_MSG_DELCHAIN);
			devlist_del(&pt->n->customs, chain);
		}
		return err;
	}
	if (!keep) {
		err = put_chain(pt, chain, NFT_MSG_NEWCHAIN);
		if (!err)
			err = devlist_add(&pt->n->customs, chain);
	}
	for (i = 0; i < g->nr && !err; i++) {
		struct nftnl_rule *r = custom_rule(pt, chain, ctr, &g->rules[i]);

		if (!r)
			return -ENOMEM;
		nlh = nbatch_msg(pt->b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND);
		if (nlh) {
			nftnl_rule_nlmsg_build_payload(nlh, r);
			nbatch_end(pt->b, nlh);
		}
		nftnl_rule_free(r);
		err = nlh ? 0 : -ENOMEM;
	}
	return err;
}

/* --- base-chain devices ------------------------------------------------- */

/* A NIC a prefix chain covers needs no hook of its own; one hooked before
 * that prefix existed is unhooked on delete.  Each base chain keeps its
 * NICs in the guest's order. */
static int chain_devs(struct put *pt, const struct pguest *g)
{
	unsigned int i;
	int err = 0;

	for (i = 0; !err && i < g->nn; i++) {
		const char *dev = g->nics[i].ifname;

		if (!pt->add || !prefix_covers(pt->n, dev))
			err = shard_note_devs(pt->n,
					      layout_from_chain(g->nics[i].kind),
					      &dev, 1, !pt->add);
	}
	return err;
}

/*
 * A device of the guest's to-guest chain (n NULL: no prefix is known).
 * That chain's one rule is no-promisc's: a NIC without the switch would
 * get an egress hook that every frame to the guest walks and that can
 * never drop one.
 */
static bool to_dev(const struct vnic_nft *n, const struct pnic *nic)
{
	return layout_from_chain(nic->kind) == C_IN &&
	       (nic->sw & VNIC_SW_NO_PROMISC) &&
	       !(n && prefix_covers(n, nic->ifname));
}

const char **guest_to_devs(const struct vnic_nft *n, const struct pguest *g,
			   unsigned int *count)
{
	const char **devs = calloc(g->nn + 1, sizeof(*devs));
	unsigned int i;

	*count = 0;
	for (i = 0; devs && i < g->nn; i++)
		if (to_dev(n, &g->nics[i]))
			devs[(*count)++] = g->nics[i].ifname;
	return devs;
}

unsigned int guest_to_count(const struct vnic_nft *n, const struct pguest *g)
{
	unsigned int i, k = 0;

	for (i = 0; i < g->nn; i++)
		k += to_dev(n, &g->nics[i]);
	return k;
}

/* pfx then name into buf, cut to len as snprintf() would cut it. */
static void name_cat(char *buf, size_t len, const char *pfx, const char *name)
{
	size_t p = strnlen(pfx, len - 1), k = strnlen(name, len - 1 - p);

	memcpy(buf, pfx, p);
	memcpy(buf + p, name, k);
	buf[p + k] = '\0';
}

/* Whether g has a NIC for a to-guest chain (none: no chain to make). */
static bool to_devs_any(const struct vnic_nft *n, const struct pguest *g)
{
	unsigned int i;

	for (i = 0; i < g->nn; i++)
		if (to_dev(n, &g->nics[i]))
			return true;
	return false;
}

void guest_names(const char *guest, char *ctr, char *chain, size_t len)
{
	name_cat(ctr, len, "c_", guest);
	name_cat(chain, len, "g_", guest);
}

static void to_name(const char *guest, char *buf, size_t len)
{
	name_cat(buf, len, "to_", guest);
}

static int flush_rules(struct put *pt, const char *chain)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nlmsghdr *nlh;

	if (!r)
		return -ENOMEM;
	/* A DELRULE without a handle flushes the chain; without the chain's
	 * name, every chain of the table. */
	nlh = rule_id(r, pt->n->table, chain) ? NULL :
	      nbatch_msg(pt->b, NFT_MSG_DELRULE, 0);
	if (nlh) {
		nftnl_rule_nlmsg_build_payload(nlh, r);
		nbatch_end(pt->b, nlh);
	}
	nftnl_rule_free(r);
	return nlh ? 0 : -ENOMEM;
}

/* The guest's own egress base chain for traffic to it (no-promisc). */
static int to_chain(struct put *pt, const struct pguest *g)
{
	unsigned int k;
	const char **devs;
	struct nftnl_chain *c;
	struct nlmsghdr *nlh;
	char name[80];
	int err = 0;

	/* It may predate a prefix that now covers its devices: by name. */
	if (!pt->add)
		return guest_del_to_chain(pt->n, pt->b, g->name);
	if (!to_devs_any(pt->n, g))
		return 0;
	devs = guest_to_devs(pt->n, g, &k);
	if (!devs)
		return -ENOMEM;
	to_name(g->name, name, sizeof(name));
	if (!k)
		goto out;
	c = nftnl_chain_alloc();
	if (!c) {
		err = -ENOMEM;
		goto out;
	}
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, layout_egress_hook());
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, 0);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	nlh = chain_id(c, pt->n->table, name) ||
	      nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter") < 0 ||
	      chain_set_devices(c, devs) ? NULL :
	      nbatch_msg(pt->b, NFT_MSG_NEWCHAIN, NLM_F_CREATE);
	if (nlh) {
		nftnl_chain_nlmsg_build_payload(nlh, c);
		nbatch_end(pt->b, nlh);
	}
	nftnl_chain_free(c);
	err = nlh ? rule_to_guest(pt->n, pt->b, name) : -ENOMEM;
	if (!err)
		err = devlist_add(&pt->n->tochains, name);
out:
	free(devs);
	return err;
}

int guest_del_to_chain(struct vnic_nft *n, struct nbatch *b, const char *guest)
{
	struct put pt;
	char name[80];
	int err;

	put_init(&pt, n, b, false, false);
	to_name(guest, name, sizeof(name));
	if (!devlist_has(&n->tochains, name))
		return 0;
	err = flush_rules(&pt, name);
	if (!err)
		err = put_chain(&pt, name, NFT_MSG_DELCHAIN);
	if (!err)
		devlist_del(&n->tochains, name);
	return err;
}

/*
 * Add: counter and chains before the elements that refer to them (which
 * gather in n->adds until guest_adds_flush()).  Delete: the reverse, all
 * in place.  What a replacement keeps is neither deleted nor made again,
 * so its counter goes on counting.
 */
int guest_put(struct vnic_nft *n, struct nbatch *b, const struct pguest *g,
	      const int *ifindex, uint64_t digest, bool add, unsigned int keep)
{
	char ctr[80], chain[80];
	unsigned int i, s;
	struct put pt;
	int err = 0;

	put_init(&pt, n, b, add, add);
	guest_names(g->name, ctr, chain, sizeof(ctr));
	if (!add)
		err = chain_devs(&pt, g);
	if (!err && !add && !(keep & GP_KEEP_TO))
		err = to_chain(&pt, g);
	if (!err && add && !(keep & GP_KEEP_COUNTER))
		err = put_counter(&pt, ctr);
	if (!err && add)
		err = custom_chain(&pt, g, chain, ctr, keep & GP_KEEP_CHAIN);
	for (i = 0; !err && add && i < g->nn; i++)
		err = layout_sw_mask(n, b, g->nics[i].sw);
	for (i = 0; !err && !pt.err && i < g->nn; i++)
		nic_elems(&pt, g, &g->nics[i], ifindex[i], ctr, chain);
	guest_elem(&pt, g, digest);
	for (s = 0; !add && s < NSETS; s++) {
		int e = flush_set(&pt, s);

		if (!pt.err)
			pt.err = e;
	}
	if (!err)
		err = pt.err;
	if (!err && !add)
		err = custom_chain(&pt, g, chain, ctr, keep & GP_KEEP_CHAIN);
	if (!err && !add && !(keep & GP_KEEP_COUNTER))
		err = put_counter(&pt, ctr);
	if (!err && add && !(keep & GP_KEEP_TO))
		err = to_chain(&pt, g);
	if (!err && add)
		err = chain_devs(&pt, g);
	return err;
}

int guest_adds_flush(struct vnic_nft *n, struct nbatch *b)
{
	unsigned int s;
	struct put pt;
	int err = 0;

	put_init(&pt, n, b, true, true);
	for (s = 0; s < NSETS; s++) {
		int e = flush_set(&pt, s);

		if (!err)
			err = e;
	}
	return err;
}

void guest_adds_drop(struct vnic_nft *n)
{
	unsigned int s;

	for (s = 0; s < NSETS; s++) {
		elist_free(&n->adds[s]);
		elist_free(&n->dels[s]);
	}
}
