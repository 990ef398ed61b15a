// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The filter policy: guests, their NICs and rules, each checked as it is
 * added so that nothing invalid ever reaches a backend.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "policy/model.h"

/* Bit i of enum vnic_switch; a new switch is appended (bits are ABI). */
static const char *const switch_names[] = {
	"mac-spoof", "ip-spoof", "ip6-spoof", "arp-spoof",
	"dhcp-server", "ra-guard", "l2-allow", "no-promisc",
	"nd-spoof", "dhcp6-server",
};

_Static_assert(VNIC_SW_CLEAN == (1u << ARRAY_SIZE(switch_names)) - 1,
	       "a name for every switch of VNIC_SW_CLEAN");

VNIC_EXPORT uint32_t vnic_switch_from_name(const char *name)
{
	unsigned int i;

	if (name && !strcmp(name, "clean"))
		return VNIC_SW_CLEAN;
	for (i = 0; name && i < ARRAY_SIZE(switch_names); i++)
		if (!strcmp(name, switch_names[i]))
			return 1u << i;
	return 0;
}

VNIC_EXPORT const char *vnic_switch_name(uint32_t sw)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(switch_names); i++)
		if (sw == 1u << i)
			return switch_names[i];
	return NULL;
}

__attribute__((format(printf, 4, 5)))
static int bad(const struct vnic_policy *p, int err, const char *guest,
	       const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return vnic_set_err(p->ctx, err, VNIC_STEP_VALIDATE, -1, NULL,
			    "guest %s: %s", guest ? guest : "(null)", what);
}

VNIC_EXPORT int vnic_policy_new(struct vnic_ctx *ctx, struct vnic_policy **out)
{
	struct vnic_policy *p;

	if (!out) {
		if (!ctx)
			return -EINVAL;
		vnic_clear_err(ctx);
		return vnic_null_arg(ctx, __func__, "out");
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* The model needs no kernel: without a context, errors go to a bare
	 * one that opens nothing, so that a file can be checked anywhere. */
	if (!ctx) {
		p->own_err = calloc(1, sizeof(*p->own_err));
		if (!p->own_err) {
			free(p);
			return -ENOMEM;
		}
		p->own_err->netns_fd = -1;
		ctx = p->own_err;
	}
	vnic_clear_err(ctx);
	p->ctx = ctx;
	strmap_init(&p->guests);
	strmap_init(&p->ifnames);
	*out = p;
	return 0;
}

void pguest_free(struct pguest *g)
{
	unsigned int i;

	if (!g || g->packed) {
		free(g);
		return;
	}
	for (i = 0; i < g->nn; i++) {
		free(g->nics[i].v4);
		free(g->nics[i].v6);
	}
	free(g->nics);
	free(g->rules);
	free(g);
}

#define PACK_ALIGN(x)	(((x) + 15) & ~(size_t)15)

/* Bytes of g's NICs, rules and addresses, each array aligned. */
static size_t pack_size(const struct pguest *g)
{
	size_t sz = PACK_ALIGN(sizeof(*g)) +
		    PACK_ALIGN((g->nn + 1) * sizeof(*g->nics)) +
		    PACK_ALIGN((g->nr + 1) * sizeof(*g->rules));
	unsigned int i;

	for (i = 0; i < g->nn; i++)
		sz += PACK_ALIGN((g->nics[i].n4 + 1) * sizeof(*g->nics[i].v4)) +
		      PACK_ALIGN((g->nics[i].n6 + 1) * sizeof(*g->nics[i].v6));
	return sz;
}

static void *pack_take(char **at, size_t len)
{
	void *p = *at;

	*at += PACK_ALIGN(len);
	return p;
}

/*
 * A deep copy (the backends keep what they installed), in one allocation:
 * a backend keeps one per guest it installs, so a large apply would
 * otherwise make 3 + 2 per NIC allocations per guest.  It is never grown
 * (guests grow in a policy only) and pguest_free() frees it whole.
 */
struct pguest *pguest_dup(const struct pguest *g)
{
	char *at = calloc(1, pack_size(g));
	struct pguest *c = (struct pguest *)at;
	unsigned int i;

	if (!c)
		return NULL;
	pack_take(&at, sizeof(*c));
	*c = *g;
	c->packed = true;
	c->capn = c->nn;
	c->capr = c->nr;
	c->nics = pack_take(&at, (g->nn + 1) * sizeof(*c->nics));
	c->rules = pack_take(&at, (g->nr + 1) * sizeof(*c->rules));
	if (g->nr)	/* g->rules may be NULL then, which memcpy must not get */
		memcpy(c->rules, g->rules, g->nr * sizeof(*g->rules));
	for (i = 0; i < g->nn; i++) {
		struct pnic *d = &c->nics[i];

		*d = g->nics[i];
		d->v4 = pack_take(&at, (d->n4 + 1) * sizeof(*d->v4));
		d->v6 = pack_take(&at, (d->n6 + 1) * sizeof(*d->v6));
		if (d->n4)
			memcpy(d->v4, g->nics[i].v4, d->n4 * sizeof(*d->v4));
		if (d->n6)
			memcpy(d->v6, g->nics[i].v6, d->n6 * sizeof(*d->v6));
	}
	return c;
}

VNIC_EXPORT void vnic_policy_free(struct vnic_policy *p)
{
	unsigned int i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		pguest_free(p->g[i]);
	for (i = 0; i < p->nkeys; i++)
		free(p->keys[i]);
	free(p->g);
	free(p->keys);
	free(p->own_err);	/* a bare context: no socket to close */
	strmap_free(&p->guests);
	strmap_free(&p->ifnames);
	free(p);
}

int policy_find(const struct vnic_policy *p, const char *guest, unsigned int *idx)
{
	return strmap_get(&p->guests, guest, idx);
}

static int grow(void **arr, unsigned int *cap, unsigned int n, size_t elem)
{
	unsigned int c = *cap ? *cap * 2 : 8;
	void *q;

	if (n < *cap)
		return 0;
	q = realloc(*arr, c * elem);
	if (!q)
		return -ENOMEM;
	*arr = q;
	*cap = c;
	return 0;
}

static int switches_of(const struct vnic_policy *p, const char *guest,
		       uint32_t sw, int set, uint32_t dflt, uint32_t *out)
{
	if (!set) {
		*out = dflt;
		return 0;
	}
	if (sw & ~(uint32_t)VNIC_SW_CLEAN)
		return bad(p, -EINVAL, guest, "unknown switches 0x%x", sw);
	*out = sw;
	return 0;
}

VNIC_EXPORT int vnic_policy_add_guest(struct vnic_policy *p, const char *guest,
				      const struct vnic_guest_policy *opts)
{
	struct vnic_guest_policy o;
	struct pguest *g;
	uint32_t idx;
	int err;

	if (!p)
		return -EINVAL;
	vnic_clear_err(p->ctx);
	err = vnic_opts_copy(&o, sizeof(o), opts);
	if (err)
		return bad(p, err, guest, "vnic_guest_policy");
	if (!vnic_valid_tag(guest, POLICY_GUEST_MAX))
		return bad(p, -EINVAL, guest, "a guest name is 1 to 64 of [A-Za-z0-9_.-]");
	if (!strmap_get(&p->guests, guest, &idx))
		return bad(p, -EEXIST, guest, "already in the policy");
	g = calloc(1, sizeof(*g));
	if (!g || grow((void **)&p->g, &p->cap, p->n, sizeof(*p->g))) {
		free(g);
		return bad(p, -ENOMEM, guest, "adding the guest");
	}
	snprintf(g->name, sizeof(g->name), "%s", guest);
	err = switches_of(p, guest, o.switches, o.switches_set, VNIC_SW_CLEAN, &g->sw);
	if (!err)
		err = strmap_add(&p->guests, g->name, p->n);
	if (err) {
		free(g);
		return bad(p, err, guest, "adding the guest");
	}
	p->g[p->n++] = g;
	return 0;
}

/* fe80::/64 with the EUI-64 interface id of the MAC (RFC 4291 2.5.1). */
static void link_local(const uint8_t mac[6], struct in6_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->s6_addr[0] = 0xfe;
	a->s6_addr[1] = 0x80;
	a->s6_addr[8] = mac[0] ^ 0x02;
	a->s6_addr[9] = mac[1];
	a->s6_addr[10] = mac[2];
	a->s6_addr[11] = 0xff;
	a->s6_addr[12] = 0xfe;
	a->s6_addr[13] = mac[3];
	a->s6_addr[14] = mac[4];
	a->s6_addr[15] = mac[5];
}

/*
 * Why no NIC can own a, or NULL.  Each address is an allowed source of the
 * guest's packets, so one no host sends from (RFC 1122 3.2.1.3, RFC 4291)
 * would let through what the switches mean to drop: 0.0.0.0 every protocol
 * from it, where ip-spoof lets only DHCP pass; a broadcast or multicast
 * source makes every reply a broadcast or a group's; loopback a neighbour
 * with route_localnet takes for its own.
 */
static const char *unownable4(const struct in_addr *a)
{
	uint32_t h = ntohl(a->s_addr);

	if (!h)
		return "the unspecified address (allowed as a source, it would "
		       "let every protocol from 0.0.0.0 pass, not only DHCP)";
	if (h == 0xffffffff)
		return "the limited broadcast address, never a source";
	if ((h >> 28) == 0xe)
		return "a multicast address (224.0.0.0/4), never a source";
	if ((h >> 24) == 127)
		return "a loopback address (127.0.0.0/8), never on a link";
	return NULL;
}

static const char *unownable6(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return "the unspecified address (allowed as a source, it would "
		       "let every packet from :: pass, not only DAD)";
	if (IN6_IS_ADDR_LOOPBACK(a))
		return "the loopback address, never on a link";
	if (IN6_IS_ADDR_MULTICAST(a))
		return "a multicast address (ff00::/8), never a source";
	/* Linux drops these as a source (RFC 4291 2.5.5.2): the IPv4
	 * address belongs in ipv4. */
	if (IN6_IS_ADDR_V4MAPPED(a))
		return "an IPv4-mapped address (::ffff:0:0/96), never a source; "
		       "give the IPv4 address in ipv4";
	return NULL;
}

static int parse_addrs(const struct vnic_policy *p, const char *guest,
		       const struct vnic_nic_policy *o, struct pnic *nic)
{
	const char *why;
	unsigned int i;

	if (o->n_ipv4 > POLICY_ADDRS_MAX || o->n_ipv6 > POLICY_ADDRS_MAX)
		return bad(p, -E2BIG, guest, "NIC %s: %u ipv4 and %u ipv6 addresses: "
			   "at most %d per family", nic->ifname, o->n_ipv4,
			   o->n_ipv6, POLICY_ADDRS_MAX);
	if ((o->n_ipv4 && !o->ipv4) || (o->n_ipv6 && !o->ipv6))
		return bad(p, -EINVAL, guest, "NIC %s: address count without addresses",
			   nic->ifname);
	nic->v4 = calloc(o->n_ipv4 + 1, sizeof(*nic->v4));
	nic->v6 = calloc(o->n_ipv6 + 1, sizeof(*nic->v6));
	if (!nic->v4 || !nic->v6)
		return -ENOMEM;
	/* The field and index as the caller's arrays have them, so that a
	 * tool can point at the element (ipv6[1]) without checking it too. */
	for (i = 0; i < o->n_ipv4; i++, nic->n4++) {
		if (!o->ipv4[i] || inet_pton(AF_INET, o->ipv4[i], &nic->v4[i]) != 1)
			return bad(p, -EINVAL, guest, "NIC %s: ipv4[%u] '%s' is not an "
				   "IPv4 address like 192.0.2.10", nic->ifname, i,
				   o->ipv4[i] ? o->ipv4[i] : "(null)");
		why = unownable4(&nic->v4[i]);
		if (why)
			return bad(p, -EINVAL, guest, "NIC %s: ipv4[%u] '%s' is %s",
				   nic->ifname, i, o->ipv4[i], why);
	}
	for (i = 0; i < o->n_ipv6; i++, nic->n6++) {
		if (!o->ipv6[i] || inet_pton(AF_INET6, o->ipv6[i], &nic->v6[i]) != 1)
			return bad(p, -EINVAL, guest, "NIC %s: ipv6[%u] '%s' is not an "
				   "IPv6 address like 2001:db8::10", nic->ifname, i,
				   o->ipv6[i] ? o->ipv6[i] : "(null)");
		why = unownable6(&nic->v6[i]);
		if (why)
			return bad(p, -EINVAL, guest, "NIC %s: ipv6[%u] '%s' is %s",
				   nic->ifname, i, o->ipv6[i], why);
	}
	for (i = 0; i < nic->n4; i++)
		for (unsigned int k = 0; k < i; k++)
			if (nic->v4[i].s_addr == nic->v4[k].s_addr)
				return bad(p, -EEXIST, guest, "NIC %s: ipv4[%u] '%s' is "
					   "ipv4[%u] again", nic->ifname, i,
					   o->ipv4[i], k);
	for (i = 0; i < nic->n6; i++)
		for (unsigned int k = 0; k < i; k++)
			if (!memcmp(&nic->v6[i], &nic->v6[k], sizeof(nic->v6[i])))
				return bad(p, -EEXIST, guest, "NIC %s: ipv6[%u] '%s' is "
					   "ipv6[%u] again", nic->ifname, i,
					   o->ipv6[i], k);
	/* The link-local every IPv6 stack derives from its MAC, unless given. */
	link_local(nic->mac, &nic->v6[nic->n6]);
	for (i = 0; i < nic->n6; i++)
		if (!memcmp(&nic->v6[i], &nic->v6[nic->n6], sizeof(nic->v6[i])))
			return 0;
	nic->n6++;
	return 0;
}

static int check_nic(const struct vnic_policy *p, const struct pguest *g,
		     const struct vnic_nic_policy *o, struct pnic *nic)
{
	const char *why = NULL;
	bool tmpl;
	int err;

	if (!o->ifname || name_check(o->ifname, &tmpl, &why) || tmpl)
		return bad(p, -EINVAL, g->name, "NIC ifname '%s': %s",
			   o->ifname ? o->ifname : "(null)",
			   why ? why : "a NIC needs an exact name, not a template");
	snprintf(nic->ifname, sizeof(nic->ifname), "%s", o->ifname);
	if (o->kind != VNIC_KIND_MACVTAP && o->kind != VNIC_KIND_MACVLAN &&
	    o->kind != VNIC_KIND_VETH && o->kind != VNIC_KIND_TAP)
		return bad(p, -EOPNOTSUPP, g->name, "NIC %s: kind %s cannot be "
			   "filtered (macvtap, macvlan, veth, tap)", nic->ifname,
			   vnic_kind_name(o->kind) ? vnic_kind_name(o->kind) : "unknown");
	nic->kind = o->kind;
	if (!o->mac)
		return bad(p, -EINVAL, g->name, "NIC %s: no mac", nic->ifname);
	if (mac_parse_why(o->mac, nic->mac, &why))
		return bad(p, -EINVAL, g->name, "NIC %s: mac '%s' %s", nic->ifname,
			   o->mac, why);
	err = switches_of(p, g->name, o->switches, o->switches_set, g->sw, &nic->sw);
	if (!err)
		err = parse_addrs(p, g->name, o, nic);
	return err;
}

/* The start of every addition to a guest: find it, read the options. */
static int begin_add(struct vnic_policy *p, const char *guest, void *dst,
		     size_t dst_sz, const void *opts, const char *what,
		     uint32_t *gi)
{
	int err;

	if (!p)
		return -EINVAL;
	vnic_clear_err(p->ctx);
	if (!guest || policy_find(p, guest, gi))
		return bad(p, -ENOENT, guest, "no such guest in the policy");
	err = vnic_opts_copy(dst, dst_sz, opts);
	return err ? bad(p, err, guest, "%s", what) : 0;
}

static int keep_key(struct vnic_policy *p, const char *s, char **out)
{
	if (grow((void **)&p->keys, &p->capkeys, p->nkeys, sizeof(*p->keys)))
		return -ENOMEM;
	*out = strdup(s);
	if (!*out)
		return -ENOMEM;
	p->keys[p->nkeys++] = *out;
	return 0;
}

VNIC_EXPORT int vnic_policy_add_nic(struct vnic_policy *p, const char *guest,
				    const struct vnic_nic_policy *opts)
{
	struct vnic_nic_policy o;
	struct pguest *g;
	struct pnic nic = { 0 };
	uint32_t gi, other;
	char *key;
	int err;

	err = begin_add(p, guest, &o, sizeof(o), opts, "vnic_nic_policy", &gi);
	if (err)
		return err;
	g = p->g[gi];
	err = check_nic(p, g, &o, &nic);
	if (!err && !strmap_get(&p->ifnames, nic.ifname, &other))
		err = bad(p, -EEXIST, guest, "NIC %s is claimed by guest %s already",
			  nic.ifname, p->g[other]->name);
	if (!err)
		err = grow((void **)&g->nics, &g->capn, g->nn, sizeof(*g->nics));
	if (!err)
		err = keep_key(p, nic.ifname, &key);
	if (!err)
		err = strmap_add(&p->ifnames, key, gi);
	if (err) {
		free(nic.v4);
		free(nic.v6);
		return bad(p, err, guest, "adding NIC %s", nic.ifname);
	}
	g->nics[g->nn++] = nic;
	return 0;
}

/* NIC i of an allocator guest, checked as vnic_policy_add_nic() checks
 * one, and not claimed by any guest nor by an earlier one of nics[]. */
static int check_nic_of(struct vnic_policy *p, const struct pguest *g,
			const struct vnic_guest *ag, unsigned int i,
			struct pnic *nics)
{
	VNIC_OPTS(vnic_nic_info, info);
	VNIC_OPTS(vnic_nic_policy, o);
	char mac[18];
	uint32_t other;
	unsigned int k;
	int err;

	err = vnic_guest_nic_info(ag, i, &info);
	if (err)
		return bad(p, err, g->name, "NIC %u of guest %s", i, vnic_guest_name(ag));
	if (!info.created)
		return bad(p, -EINVAL, g->name, "NIC %u of guest %s is not created",
			   i, vnic_guest_name(ag));
	/* The allocator knows the device's own MAC, which is the guest's
	 * only where the guest uses the device itself: every MAC-keyed
	 * switch (mac-spoof, arp-spoof, nd-spoof, the link-local) would
	 * drop the guest's own frames. */
	if (info.kind == VNIC_KIND_VETH || info.kind == VNIC_KIND_TAP)
		return bad(p, -EOPNOTSUPP, g->name, "NIC %s (%u of allocator guest "
			   "%s) is a %s: the guest sends from %s, not from the "
			   "device's; add it with vnic_policy_add_nic() and the "
			   "guest's MAC", info.name, i, vnic_guest_name(ag),
			   vnic_kind_name(info.kind),
			   info.kind == VNIC_KIND_VETH ? "the peer's MAC" :
			   "the virtual machine's NIC's MAC");
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", info.mac[0],
		 info.mac[1], info.mac[2], info.mac[3], info.mac[4], info.mac[5]);
	o.ifname = info.name;
	o.kind = info.kind;
	o.mac = mac;
	err = check_nic(p, g, &o, &nics[i]);
	if (!err && !strmap_get(&p->ifnames, nics[i].ifname, &other))
		return bad(p, -EEXIST, g->name, "NIC %s is claimed by guest %s already",
			   nics[i].ifname, p->g[other]->name);
	for (k = 0; !err && k < i; k++)
		if (!strcmp(nics[k].ifname, nics[i].ifname))
			return bad(p, -EEXIST, g->name, "NIC %s is NIC %u and %u of "
				   "guest %s", nics[i].ifname, k, i, vnic_guest_name(ag));
	return err;
}

/* Room for n more NICs of g and n more ifnames, with their keys copied
 * into keys[]: after this, adding them cannot fail. */
static int reserve_nics(struct vnic_policy *p, struct pguest *g,
			const struct pnic *nics, unsigned int n, char **keys)
{
	unsigned int i;
	int err = 0;

	while (!err && g->capn < g->nn + n)
		err = grow((void **)&g->nics, &g->capn, g->capn, sizeof(*g->nics));
	while (!err && p->capkeys < p->nkeys + n)
		err = grow((void **)&p->keys, &p->capkeys, p->capkeys, sizeof(*p->keys));
	if (!err)
		err = strmap_reserve(&p->ifnames, n);
	for (i = 0; !err && i < n; i++) {
		keys[i] = strdup(nics[i].ifname);
		if (!keys[i])
			err = -ENOMEM;
	}
	return err;
}

/* All of the guest's NICs or none: each is checked before any is added. */
VNIC_EXPORT int vnic_policy_add_nics_of(struct vnic_policy *p, const char *guest,
					const struct vnic_guest *ag)
{
	unsigned int i, n;
	struct pnic *nics;
	struct pguest *g;
	char **keys;
	uint32_t gi;
	int err;

	if (!p)
		return -EINVAL;
	vnic_clear_err(p->ctx);
	if (!ag)
		return bad(p, -EINVAL, guest, "no allocator guest (NULL)");
	if (!guest || policy_find(p, guest, &gi))
		return bad(p, -ENOENT, guest, "no such guest in the policy");
	g = p->g[gi];
	n = vnic_guest_nic_count(ag);
	nics = calloc(n + 1, sizeof(*nics));
	keys = calloc(n + 1, sizeof(*keys));
	err = nics && keys ? 0 : -ENOMEM;
	for (i = 0; !err && i < n; i++)
		err = check_nic_of(p, g, ag, i, nics);
	if (!err)
		err = reserve_nics(p, g, nics, n, keys);
	for (i = 0; !err && i < n; i++) {
		p->keys[p->nkeys++] = keys[i];
		strmap_add(&p->ifnames, keys[i], gi);
		g->nics[g->nn++] = nics[i];
	}
	for (i = 0; err && nics && keys && i < n; i++) {
		free(nics[i].v4);
		free(nics[i].v6);
		free(keys[i]);
	}
	free(nics);
	free(keys);
	return err ? bad(p, err, guest, "adding the NICs of guest %s",
			 vnic_guest_name(ag)) : 0;
}

static int parse_cidr(const char *s, struct prule *r)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned int max, i;
	long plen;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, r->addr) == 1)
		r->family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, buf, r->addr) == 1)
		r->family = AF_INET6, max = 128;
	else
		return -EINVAL;
	plen = max;
	if (slash) {
		/* Digits only: strtol() would take " +24" too. */
		if (slash[1] < '0' || slash[1] > '9' || strlen(slash + 1) > 3)
			return -EINVAL;
		plen = strtol(slash + 1, &end, 10);
		if (*end || plen > (long)max)
			return -EINVAL;
	}
	r->plen = (uint8_t)plen;
	for (i = r->plen; i < max; i++)		/* host bits off */
		r->addr[i / 8] &= (uint8_t)~(0x80 >> (i % 8));
	return 0;
}

/* Messages name the rule as rules[i], i counting the guest's rules added. */
static int check_rule(const struct vnic_policy *p, const struct pguest *g,
		      const struct vnic_rule *o, struct prule *r)
{
	bool ports = o->l4proto == IPPROTO_TCP || o->l4proto == IPPROTO_UDP;
	const char *guest = g->name;
	unsigned int i = g->nr;

	if (o->l4proto && !ports && o->l4proto != IPPROTO_ICMP &&
	    o->l4proto != IPPROTO_ICMPV6)
		return bad(p, -EINVAL, guest, "rules[%u]: protocol %u (tcp, udp, "
			   "icmp, icmpv6 or any)", i, o->l4proto);
	r->l4proto = o->l4proto;
	r->pmin = o->dport_min;
	r->pmax = o->dport_max ? o->dport_max : o->dport_min;
	if ((r->pmin || r->pmax) && !ports)
		return bad(p, -EINVAL, guest, "rules[%u]: a dport needs protocol "
			   "tcp or udp", i);
	if (r->pmin > r->pmax)
		return bad(p, -EINVAL, guest, "rules[%u]: dport range %u-%u ends "
			   "before it starts", i, o->dport_min, o->dport_max);
	if (o->daddr && parse_cidr(o->daddr, r))
		return bad(p, -EINVAL, guest, "rules[%u]: daddr '%s' is not an "
			   "address or CIDR like 198.51.100.0/24", i, o->daddr);
	if ((r->family == AF_INET && o->l4proto == IPPROTO_ICMPV6) ||
	    (r->family == AF_INET6 && o->l4proto == IPPROTO_ICMP))
		return bad(p, -EINVAL, guest, "rules[%u]: the ICMP version and the "
			   "daddr's address family differ", i);
	if (o->action != VNIC_RULE_DROP && o->action != VNIC_RULE_ACCEPT)
		return bad(p, -EINVAL, guest, "rules[%u]: unknown action %d", i,
			   o->action);
	r->accept = o->action == VNIC_RULE_ACCEPT;
	return 0;
}

VNIC_EXPORT int vnic_policy_add_rule(struct vnic_policy *p, const char *guest,
				     const struct vnic_rule *opts)
{
	struct vnic_rule o;
	struct prule r = { 0 };
	struct pguest *g;
	uint32_t gi;
	int err;

	err = begin_add(p, guest, &o, sizeof(o), opts, "vnic_rule", &gi);
	if (err)
		return err;
	g = p->g[gi];
	/* Zeroes would read as "drop everything": a NULL rule is a bug. */
	if (!opts)
		return bad(p, -EINVAL, guest, "rules[%u]: no rule (NULL)", g->nr);
	if (g->nr >= POLICY_RULES_MAX)
		return bad(p, -E2BIG, guest, "rules[%u]: at most %d rules", g->nr,
			   POLICY_RULES_MAX);
	err = check_rule(p, g, &o, &r);
	if (!err)
		err = grow((void **)&g->rules, &g->capr, g->nr, sizeof(*g->rules));
	if (err)
		return bad(p, err, guest, "adding rules[%u]", g->nr);
	g->rules[g->nr++] = r;
	return 0;
}

VNIC_EXPORT int vnic_policy_check(const struct vnic_policy *p)
{
	unsigned int i;

	if (!p)
		return -EINVAL;
	vnic_clear_err(p->ctx);
	for (i = 0; i < p->n; i++)
		if (!p->g[i]->nn)
			return bad(p, -EINVAL, p->g[i]->name,
				   "has no NIC (a guest needs at least one)");
	return 0;
}

VNIC_EXPORT unsigned int vnic_policy_guest_count(const struct vnic_policy *p)
{
	return p ? p->n : 0;
}

VNIC_EXPORT const char *vnic_policy_errmsg(const struct vnic_policy *p)
{
	return p ? vnic_ctx_errmsg(p->ctx) : "";
}

VNIC_EXPORT const char *vnic_policy_guest_name(const struct vnic_policy *p,
					       unsigned int i)
{
	return p && i < p->n ? p->g[i]->name : NULL;
}

/* Field by field, fixed widths: the same policy gives the same digest on
 * every build and process.  What is digested, in order, each piece handed
 * to put(): one walk for the digest and for its bytes (inlined into each,
 * so that put() is too: copying the bytes costs little next to hashing). */
static inline __attribute__((always_inline)) void
digest_walk(const struct pguest *g,
	    void (*put)(void *arg, const void *p, size_t len), void *arg)
{
	unsigned int i;

	put(arg, g->name, strlen(g->name) + 1);
	for (i = 0; i < g->nn; i++) {
		const struct pnic *n = &g->nics[i];
		uint32_t hdr[4] = { (uint32_t)n->kind, n->sw, n->n4, n->n6 };

		put(arg, n->ifname, strlen(n->ifname) + 1);
		put(arg, hdr, sizeof(hdr));
		put(arg, n->mac, 6);
		put(arg, n->v4, n->n4 * sizeof(*n->v4));
		put(arg, n->v6, n->n6 * sizeof(*n->v6));
	}
	for (i = 0; i < g->nr; i++) {
		const struct prule *r = &g->rules[i];
		uint32_t f[6] = { r->l4proto, r->pmin, r->pmax, (uint32_t)r->family,
				  r->plen, r->accept };

		put(arg, f, sizeof(f));
		put(arg, r->addr, sizeof(r->addr));
	}
}

static inline void put_hash(void *arg, const void *p, size_t len)
{
	uint64_t *h = arg;

	*h = vnic_hash64(p, len, *h);
}

uint64_t pguest_digest(const struct pguest *g)
{
	uint64_t h = VNIC_HASH_INIT;

	digest_walk(g, put_hash, &h);
	return h;
}

static inline void put_len(void *arg, const void *p, size_t len)
{
	(void)p;
	*(size_t *)arg += len;
}

size_t pguest_digest_len(const struct pguest *g)
{
	size_t len = 0;

	digest_walk(g, put_len, &len);
	return len;
}

static inline void put_copy(void *arg, const void *p, size_t len)
{
	uint8_t **at = arg;

	if (len)
		memcpy(*at, p, len);
	*at += len;
}

size_t pguest_digest_bytes(const struct pguest *g, uint8_t *out)
{
	uint8_t *at = out;

	digest_walk(g, put_copy, &at);
	return (size_t)(at - out);
}
