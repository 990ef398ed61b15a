// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The ruleset for a policy as nft(8) text: what vnic_nft_apply() installs
 * on an empty table, for debugging and for loading with nft -f (which gives
 * the same ruleset, but for the owner and persist flags that nft 1.0.6
 * cannot spell).  Rules are written the way nft 1.0.6 lists the rules
 * rules.c builds, so that they parse back into the same expressions.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "nft/internal.h"

struct out {
	char *buf;
	size_t len, cap;
	int err;
	const struct vnic_nft *n;
	uint8_t masks[(SW_FROM + 1) / 8];	/* chains written */
	uint8_t used[(SW_FROM + 1) / 8];	/* masks of the policy */
	uint32_t mask;				/* the mask set being written */
	uint64_t nelem[STATE_COUNTS];		/* what each set holds */
};

/* A set's size as apply makes it in an empty table: the new table's,
 * doubled until need fits (change.c's fit_size, layout_sw_mask()), so
 * that nft -f of a large policy does not fill a set (ENFILE). */
static uint32_t fit(uint64_t size, uint64_t need)
{
	while (size && size < need)
		size *= 2;
	return size > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)size;
}

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	char *buf;
	int n;

	/* After a failure nothing more is written (the buffer may be gone). */
	if (o->err)
		return;
	for (;;) {
		size_t room = o->cap - o->len;

		va_start(ap, fmt);
		n = vsnprintf(o->buf ? o->buf + o->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			o->len += (size_t)n;
			return;
		}
		o->cap = o->cap ? o->cap * 2 : 64 * 1024;
		while (o->cap - o->len <= (size_t)n)
			o->cap *= 2;
		buf = realloc(o->buf, o->cap);
		if (!buf) {
			o->err = -ENOMEM;	/* o->buf freed by the caller */
			return;
		}
		o->buf = buf;
	}
}

/* The base chains' last rule, after one per switch mask (@K: iif or oif). */
static const char *const custom_rule_text = "@K vmap @custom";

/* The rules of each from-guest switch, in rules.c's order. */
static const struct {
	uint32_t sw, unless;
	const char *rule;
} switch_rules[] = {
	{ VNIC_SW_L2_ALLOW, 0, "@ll,96,16 != @l2_allowed counter name @K map @drops drop" },
	{ VNIC_SW_MAC_SPOOF, 0, "@K . @ll,48,48 != @macs counter name @K map @drops drop" },
	{ SW_ADDR, VNIC_SW_L2_ALLOW, "meta protocol 8021q counter name @K map @drops drop" },
	{ SW_ADDR, VNIC_SW_L2_ALLOW, "meta protocol 8021ad counter name @K map @drops drop" },
	{ VNIC_SW_IP_SPOOF, 0, "ip saddr 0.0.0.0 ip frag-off & 0x1fff == 0 "
			    "udp sport 68 udp dport 67 accept" },
	{ VNIC_SW_IP_SPOOF, 0, "@K . ip saddr != @ip4s counter name @K map @drops drop" },
	{ VNIC_SW_IP6_SPOOF, 0, "ip6 saddr :: exthdr frag missing "
			     "icmpv6 type nd-neighbor-solicit accept" },
	{ VNIC_SW_IP6_SPOOF, 0, "ip6 saddr :: exthdr frag missing "
			     "icmpv6 type mld2-listener-report accept" },
	{ VNIC_SW_IP6_SPOOF, 0, "meta protocol ip6 @K . @nh,64,128 != @ip6s "
			     "counter name @K map @drops drop" },
	{ VNIC_SW_ARP_SPOOF, 0, "meta protocol arp @K . @nh,64,48 != @macs "
			     "counter name @K map @drops drop" },
	{ VNIC_SW_ARP_SPOOF, 0, "arp saddr ip != 0.0.0.0 @K . arp saddr ip != @ip4s "
			     "counter name @K map @drops drop" },
	{ VNIC_SW_ND_SPOOF | VNIC_SW_DHCP6_SERVER | VNIC_SW_RA_GUARD, 0,
	  "frag frag-off != 0 return" },
	{ VNIC_SW_ND_SPOOF, 0, "icmpv6 type nd-neighbor-advert @K . @th,64,128 != @ip6s "
			    "counter name @K map @drops drop" },
	{ VNIC_SW_ND_SPOOF, 0, "icmpv6 type nd-neighbor-advert @th,192,16 != 0x0101 "
			    "@th,192,16 != 0x0201 counter name @K map @drops drop" },
	{ VNIC_SW_ND_SPOOF, 0, "icmpv6 type nd-neighbor-advert @K . @th,208,48 != @macs "
			    "counter name @K map @drops drop" },
	{ VNIC_SW_DHCP_SERVER, 0, "meta protocol ip ip frag-off & 0x1fff == 0 udp sport 67 "
			       "counter name @K map @drops drop" },
	{ VNIC_SW_DHCP6_SERVER, 0, "meta protocol ip6 udp sport 547 counter name @K map @drops drop" },
	{ VNIC_SW_RA_GUARD, 0, "icmpv6 type nd-router-advert counter name @K map @drops drop" },
	{ VNIC_SW_RA_GUARD, 0, "icmpv6 type nd-redirect counter name @K map @drops drop" },
};

static const char *const to_rules[] = {
	"@K @no_promisc @ll,0,8 & 0x1 == 0x0 @K . @ll,0,48 != @macs counter name @K map @drops drop",
};

static void mac48(struct out *o, const uint8_t *m)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 6; i++)
		v = v << 8 | m[i];
	put(o, "0x%llx", (unsigned long long)v);
}

typedef void (*elem_fn)(struct out *o, const struct pguest *g,
			const struct pnic *nic, unsigned int i, bool *first);

static void sep(struct out *o, bool *first)
{
	put(o, *first ? " " : ", ");
	*first = false;
}

static void each_nic(struct out *o, const struct vnic_policy *p, elem_fn fn)
{
	unsigned int gi, ni;
	bool first = true;

	for (gi = 0; gi < p->n; gi++)
		for (ni = 0; ni < p->g[gi]->nn; ni++)
			fn(o, p->g[gi], &p->g[gi]->nics[ni], ni, &first);
	/* nft wants no "elements = { }": take the opening back. */
	if (first)
		o->len -= strlen("\t\telements = {");
	else
		put(o, " }\n");
}

static void e_switch(struct out *o, const struct pguest *g, const struct pnic *n,
		     unsigned int i, bool *first)
{
	if ((n->sw & SW_FROM) == o->mask) {
		sep(o, first);
		put(o, "\"%s\"", n->ifname);
	}
}

static void e_promisc(struct out *o, const struct pguest *g, const struct pnic *n,
		      unsigned int i, bool *first)
{
	if ((n->sw & VNIC_SW_NO_PROMISC) && layout_from_chain(n->kind) == C_IN) {
		sep(o, first);
		put(o, "\"%s\"", n->ifname);
	}
}

static void e_mac(struct out *o, const struct pguest *g, const struct pnic *n,
		  unsigned int i, bool *first)
{
	sep(o, first);
	put(o, "\"%s\" . ", n->ifname);
	mac48(o, n->mac);
}

static void e_ip4(struct out *o, const struct pguest *g, const struct pnic *n,
		  unsigned int i, bool *first)
{
	char a[INET_ADDRSTRLEN];
	unsigned int k;

	for (k = 0; k < n->n4; k++) {
		sep(o, first);
		put(o, "\"%s\" . %s", n->ifname,
		    inet_ntop(AF_INET, &n->v4[k], a, sizeof(a)));
	}
}

/* ip6s holds raw 128-bit keys (nft/schema.c): written as nft prints them. */
static void e_ip6(struct out *o, const struct pguest *g, const struct pnic *n,
		  unsigned int i, bool *first)
{
	unsigned int k, b;

	for (k = 0; k < n->n6; k++) {
		sep(o, first);
		put(o, "\"%s\" . 0x", n->ifname);
		for (b = 0; b < 16; b++)
			put(o, "%02x", n->v6[k].s6_addr[b]);
	}
}

static void e_drops(struct out *o, const struct pguest *g, const struct pnic *n,
		    unsigned int i, bool *first)
{
	sep(o, first);
	put(o, "\"%s\" : \"c_%s\"", n->ifname, g->name);
}

static void e_custom(struct out *o, const struct pguest *g, const struct pnic *n,
		     unsigned int i, bool *first)
{
	if (!g->nr)
		return;
	sep(o, first);
	put(o, "\"%s\" : jump g_%s", n->ifname, g->name);
}

static void set_block(struct out *o, enum nset s, const struct vnic_policy *p,
		      elem_fn fn)
{
	const struct nset_desc *d = &nset_descs[s];

	put(o, "\t%s %s {\n", d->flags & (NFT_SET_MAP | NFT_SET_OBJECT) ? "map" : "set",
	    d->name);
	put(o, "\t\t%s%s\n", strncmp(d->render_type, "typeof", 6) ? "type " : "",
	    d->render_type);
	if (o->n->size[s])
		put(o, "\t\tsize %u\n", fit(o->n->size[s], o->nelem[s]));
	put(o, "\t\telements = {");
	each_nic(o, p, fn);
	put(o, "\t}\n\n");
}

/* What each set holds once p is applied on an empty table, as the state
 * element's comment counts it (elems.c). */
static void policy_counts(const struct vnic_policy *p, uint64_t *nelem)
{
	unsigned int gi, ni;

	memset(nelem, 0, STATE_COUNTS * sizeof(*nelem));
	for (gi = 0; gi < p->n; gi++) {
		const struct pguest *g = p->g[gi];

		nelem[S_GUESTS]++;
		for (ni = 0; ni < g->nn; ni++) {
			const struct pnic *nic = &g->nics[ni];

			nelem[S_PROMISC] += (nic->sw & VNIC_SW_NO_PROMISC) &&
					    layout_from_chain(nic->kind) == C_IN;
			nelem[S_MAC]++;
			nelem[S_IP4] += nic->n4;
			nelem[S_IP6] += nic->n6;
			nelem[S_CTR]++;
			nelem[S_CUSTOM] += g->nr > 0;
		}
	}
}

static void guests_block(struct out *o, const struct vnic_policy *p,
			 const struct resolved *r)
{
	uint64_t all = 0, nelem[STATE_COUNTS];
	unsigned int i;

	put(o, "\tset guests {\n\t\ttype mark\n");
	if (o->n->size[S_GUESTS])
		put(o, "\t\tsize %u\n", fit(o->n->size[S_GUESTS], o->nelem[S_GUESTS] + 1));
	put(o, "\t\telements = {");
	for (i = 0; i < p->n; i++) {
		uint64_t d = r->digest[i];

		put(o, " 0x%08x comment \"%s %016llx\",", guest_key(p->g[i]->name),
		    p->g[i]->name, (unsigned long long)d);
		all ^= state_mix(p->g[i]->name, d);
	}
	/* g=0: the generation is unknown, as after an apply (nft.h). */
	put(o, " 0x%08x comment \"libvnic-state %016llx g=0 n=", STATE_KEY,
	    (unsigned long long)all);
	memcpy(nelem, o->nelem, sizeof(nelem));
	for (i = 0; i < STATE_COUNTS; i++)
		put(o, "%s%llu", i ? "," : "", (unsigned long long)nelem[i]);
	put(o, "\" }\n\t}\n\n");
}

static void custom_rule(struct out *o, const struct pguest *g, const struct prule *r)
{
	static const char *const l4[256] = {
		[IPPROTO_TCP] = "tcp", [IPPROTO_UDP] = "udp",
		[IPPROTO_ICMP] = "icmp", [IPPROTO_ICMPV6] = "ipv6-icmp",
	};
	char a[INET6_ADDRSTRLEN];
	bool ports = r->pmin || r->pmax;

	put(o, "\t\t");
	if (r->family) {
		put(o, "%s daddr %s", r->family == AF_INET ? "ip" : "ip6",
		    inet_ntop(r->family, r->addr, a, sizeof(a)));
		if (r->plen < (r->family == AF_INET ? 32 : 128))
			put(o, "/%u", r->plen);
		put(o, " ");
	}
	if (ports && r->pmin == r->pmax)
		put(o, "%s dport %u ", l4[r->l4proto], r->pmin);
	else if (ports)
		put(o, "%s dport %u-%u ", l4[r->l4proto], r->pmin, r->pmax);
	else if (r->l4proto)
		put(o, "meta l4proto %s ", l4[r->l4proto]);
	if (r->accept)
		put(o, "accept\n");
	else
		put(o, "counter name \"c_%s\" drop\n", g->name);
}

static void rules_text(struct out *o, const char *const *rules, unsigned int n,
		       const char *key)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const char *r = rules[i], *k;

		put(o, "\t\t");
		while ((k = strstr(r, "@K"))) {
			put(o, "%.*s%s", (int)(k - r), r, key);
			r = k + 2;
		}
		put(o, "%s\n", r);
	}
}

static bool bit(const uint8_t *map, uint32_t mask)
{
	return map[mask / 8] & (1u << (mask % 8));
}

static void set_bit(uint8_t *map, uint32_t mask)
{
	map[mask / 8] |= (uint8_t)(1u << (mask % 8));
}

/* The set of each switch mask of p, in the order apply makes them: as a
 * NIC first needs one. */
static void mask_sets(struct out *o, const struct vnic_policy *p)
{
	uint8_t done[(SW_FROM + 1) / 8] = { 0 };
	unsigned int gi, ni;
	uint32_t size;

	for (gi = 0; gi < p->n; gi++)
		for (ni = 0; ni < p->g[gi]->nn; ni++) {
			o->mask = p->g[gi]->nics[ni].sw & SW_FROM;
			if (!o->mask || bit(done, o->mask))
				continue;
			set_bit(done, o->mask);
			set_bit(o->used, o->mask);
			size = o->n->size[S_MASK(o->mask)];
			if (!size)
				size = layout_set_size(o->n, S_MASK(o->mask));
			size = fit(size, o->nelem[S_CTR]);	/* every NIC */
			put(o, "\tset sw_%02x {\n\t\ttype iface_index\n", o->mask);
			if (size)
				put(o, "\t\tsize %u\n", size);
			put(o, "\t\telements = {");
			each_nic(o, p, e_switch);
			put(o, "\t}\n\n");
		}
}

/* The chains of a NIC's switch mask, where apply makes them: when a NIC
 * first needs it. */
static void sw_chains(struct out *o, const struct pnic *nic)
{
	uint32_t mask = nic->sw & SW_FROM;
	unsigned int c, i;
	char name[16];

	if (!mask || bit(o->masks, mask))
		return;
	set_bit(o->masks, mask);
	for (c = 0; c < C__MAX; c++) {
		swchain_name((enum nchain)c, mask, name, sizeof(name));
		put(o, "\tchain %s {\n", name);
		for (i = 0; i < ARRAY_SIZE(switch_rules); i++)
			if ((switch_rules[i].sw & mask) &&
			    !(switch_rules[i].unless & mask))
				rules_text(o, &switch_rules[i].rule, 1,
					   c == C_IN ? "iif" : "oif");
		put(o, "\t}\n\n");
	}
}

/* A base chain's rules: one per mask of the policy, ascending, then the
 * custom rules' map. */
static void end_chain(struct out *o, enum nchain c)
{
	const char *key = c == C_IN ? "iif" : "oif";
	char name[16];
	uint32_t mask;

	put(o, " } priority filter; policy accept;\n");
	for (mask = 1; mask <= SW_FROM; mask++)
		if (bit(o->used, mask)) {
			swchain_name(c, mask, name, sizeof(name));
			put(o, "\t\t%s @sw_%02x jump %s\n", key, mask, name);
		}
	rules_text(o, &custom_rule_text, 1, key);
	put(o, "\t}\n\n");
}

/* The shared chains of kind c, sharded as apply shards them on an empty
 * table: in policy order, SHARD_DEVS devices a chain. */
static void base_chains(struct out *o, const struct vnic_policy *p, enum nchain c)
{
	unsigned int gi, ni, n = 0, shard = 0;

	for (gi = 0; gi < p->n; gi++)
		for (ni = 0; ni < p->g[gi]->nn; ni++) {
			if (layout_from_chain(p->g[gi]->nics[ni].kind) != c)
				continue;
			if (n == 0)
				put(o, "\tchain %s%u {\n\t\ttype filter hook %s "
				    "devices = { ", nchain_names[c], shard,
				    c == C_IN ? "ingress" : "egress");
			put(o, "%s\"%s\"", n ? ", " : "", p->g[gi]->nics[ni].ifname);
			if (++n < SHARD_DEVS)
				continue;
			end_chain(o, c);
			n = 0;
			shard++;
		}
	if (n)
		end_chain(o, c);
}

static void to_chain(struct out *o, const struct pguest *g)
{
	unsigned int k, i;
	const char **devs = guest_to_devs(NULL, g, &k);

	if (devs && k) {
		put(o, "\tchain to_%s {\n\t\ttype filter hook egress devices = { ",
		    g->name);
		for (i = 0; i < k; i++)
			put(o, "%s\"%s\"", i ? ", " : "", devs[i]);
		put(o, " } priority filter; policy accept;\n");
		rules_text(o, to_rules, ARRAY_SIZE(to_rules), "oif");
		put(o, "\t}\n\n");
	}
	if (!devs)
		o->err = -ENOMEM;
	free(devs);
}

static void render(struct out *o, const struct vnic_nft *n, const struct vnic_policy *p,
		   const struct resolved *r)
{
	unsigned int i, k;

	policy_counts(p, o->nelem);
	put(o, "table netdev %s {\n\tcomment \"managed by libvnic\"\n\n", n->table);
	for (i = 0; i < p->n; i++)
		put(o, "\tcounter c_%s {\n\t}\n\n", p->g[i]->name);
	set_block(o, S_PROMISC, p, e_promisc);
	set_block(o, S_MAC, p, e_mac);
	set_block(o, S_IP4, p, e_ip4);
	set_block(o, S_IP6, p, e_ip6);
	set_block(o, S_CTR, p, e_drops);
	set_block(o, S_CUSTOM, p, e_custom);
	guests_block(o, p, r);
	put(o, "\tset l2_allowed {\n\t\ttypeof @ll,96,16\n\t\tflags constant\n"
	    "\t\telements = { 0x800, 0x806, 0x86dd }\n\t}\n\n");
	mask_sets(o, p);
	/* Chains in the order apply creates them on an empty table (nft lists
	 * them so): per guest its custom chain, the chains of the switch masks
	 * its NICs are the first to need, its to-guest chain, then the shared
	 * base chains at the end of the batch. */
	for (i = 0; i < p->n; i++) {
		const struct pguest *g = p->g[i];

		if (g->nr) {
			put(o, "\tchain g_%s {\n", g->name);
			for (k = 0; k < g->nr; k++)
				custom_rule(o, g, &g->rules[k]);
			put(o, "\t}\n\n");
		}
		for (k = 0; k < g->nn; k++)
			sw_chains(o, &g->nics[k]);
		to_chain(o, g);
	}
	for (i = 0; i < C__MAX; i++)
		base_chains(o, p, (enum nchain)i);
	if (o->len >= 1 && o->buf[o->len - 1] == '\n' && o->buf[o->len - 2] == '\n')
		o->len--;
	put(o, "}\n");
}

int vnic_nft_render(struct vnic_nft *n, const struct vnic_policy *p,
				char **text)
{
	struct out o = { .n = n };
	struct resolved r = { 0 };
	int err;

	if (!n || !p || !text)
		return -EINVAL;
	vnic_clear_err(n->ctx);
	err = vnic_policy_check(p);
	/* The digests cover ifindexes: the NICs must exist, as for nft -f. */
	if (!err)
		err = resolve_policy(n, p, &r);
	if (err) {
		resolved_free(&r);
		return vnic_err_fallback(n->ctx, err, VNIC_STEP_VALIDATE,
					 "rendering the policy as nft text");
	}
	render(&o, n, p, &r);
	resolved_free(&r);
	if (o.err) {
		free(o.buf);
		return vnic_set_err(n->ctx, o.err, VNIC_STEP_VALIDATE, -1, NULL,
				    "rendering the policy as nft text");
	}
	*text = o.buf;
	return 0;
}
