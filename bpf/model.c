// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bpf backend's model of what is installed (struct binst, one per
 * guest, as read from the maps or as a change left them) and the values
 * the maps hold for a policy: what apply.c writes and diff.c compares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/internal.h"

uint16_t bpf_flags_of(uint32_t sw, uint32_t kind)
{
	static const struct { uint32_t sw; uint16_t bf; } t[] = {
		{ VNIC_SW_MAC_SPOOF, BF_MAC },
		{ VNIC_SW_IP_SPOOF, BF_IP4 },
		{ VNIC_SW_IP6_SPOOF, BF_IP6 },
		{ VNIC_SW_ARP_SPOOF, BF_ARP },
		{ VNIC_SW_DHCP_SERVER, BF_DHCP4 },
		{ VNIC_SW_DHCP6_SERVER, BF_DHCP6 },
		{ VNIC_SW_ND_SPOOF, BF_ND },
		{ VNIC_SW_RA_GUARD, BF_RA },
		{ VNIC_SW_L2_ALLOW, BF_L2 },
		{ VNIC_SW_NO_PROMISC, BF_PROMISC },
	};
	uint16_t f = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		if (sw & t[i].sw)
			f |= t[i].bf;
	/* no-promisc filters traffic to the guest, which only veth and tap
	 * NICs are hooked for (the macvlan driver delivers only its MAC). */
	if (bpf_hooks_of(kind) == HOOK_EG)
		f &= (uint16_t)~BF_PROMISC;
	return f;
}

uint64_t bpf_digest(const struct vnic_bpf *b, const struct pguest *g)
{
	uint64_t h = pguest_digest(g);

	/* Version 0 hashes nothing: the digests of libraries before it. */
	if (b->render_version)
		h = vnic_hash64(&b->render_version, sizeof(b->render_version), h);
	return h;
}

void bpf_nic_value(struct bpf_nic *v, const struct pnic *pn, const char *guest,
		   uint32_t gen, unsigned int idx)
{
	memset(v, 0, sizeof(*v));
	memcpy(v->mac, pn->mac, 6);
	v->flags = bpf_flags_of(pn->sw, pn->kind);
	v->gen = gen;
	v->where = bpf_hooks_of(pn->kind) == HOOK_EG ? BW_FROM_EGRESS : BW_FROM_INGRESS;
	v->kind = pn->kind;
	v->idx = idx;
	v->n_in4 = pn->n4 <= BPF_IN4 ? (uint8_t)pn->n4 : BPF_IN_MAP;
	v->n_in6 = pn->n6 <= BPF_IN6 ? (uint8_t)pn->n6 : BPF_IN_MAP;
	if (v->n_in4 != BPF_IN_MAP)
		memcpy(v->in4, pn->v4, pn->n4 * sizeof(v->in4[0]));
	if (v->n_in6 != BPF_IN_MAP)
		memcpy(v->in6, pn->v6, pn->n6 * 16);
	snprintf(v->ifname, sizeof(v->ifname), "%s", pn->ifname);
	snprintf(v->guest, sizeof(v->guest), "%s", guest);
}

/*
 * Every installed NIC by ifindex, sorted: a change asks who owns each NIC
 * of its policy, and a scan of every guest per question made a sync or an
 * apply quadratic in installed NICs.  Built on the first question after
 * b->inst changed (everything that changes it calls bpf_index_drop()); an
 * entry is checked against b->inst before it answers, and without memory
 * for the index the scan answers.  Sorted by ifindex, then in guest order:
 * among equal ifindexes (none: the maps are keyed by it, and a plan refuses
 * a NIC two guests claim) the first answers, as the scan's would.
 */
static int nix_cmp(const void *a, const void *b)
{
	const struct bnix *x = a, *y = b;

	if (x->ifindex != y->ifindex)
		return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
	if (x->gi != y->gi)
		return (x->gi > y->gi) - (x->gi < y->gi);
	return (x->k > y->k) - (x->k < y->k);
}

static int key_cmp(const void *a, const void *b)
{
	const struct bnix *x = a, *y = b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

static int index_build(struct vnic_bpf *b)
{
	unsigned int i, k, n = 0;

	for (i = 0; i < b->ni; i++)
		n += b->inst[i].nn;
	b->nix = calloc(n + 1, sizeof(*b->nix));
	if (!b->nix)
		return -ENOMEM;
	for (i = 0; i < b->ni; i++)
		for (k = 0; k < b->inst[i].nn; k++)
			b->nix[b->nnix++] = (struct bnix){ b->inst[i].nics[k].ifindex, i, k };
	qsort(b->nix, b->nnix, sizeof(*b->nix), nix_cmp);
	return 0;
}

void bpf_index_nics_moved(struct vnic_bpf *b)
{
	free(b->nix);
	b->nix = NULL;
	b->nnix = 0;
}

void bpf_index_drop(struct vnic_bpf *b)
{
	bpf_index_nics_moved(b);
	strmap_free(&b->names);
	b->names_ok = false;
}

static const struct bnix *scan(const struct vnic_bpf *b, int ifindex, struct bnix *out)
{
	unsigned int i, k;

	for (i = 0; i < b->ni; i++)
		for (k = 0; k < b->inst[i].nn; k++)
			if (b->inst[i].nics[k].ifindex == ifindex) {
				*out = (struct bnix){ ifindex, i, k };
				return out;
			}
	return NULL;
}

/* Where NIC ifindex is in b->inst, or NULL. */
static const struct bnix *nic_at(struct vnic_bpf *b, int ifindex, struct bnix *tmp)
{
	struct bnix key = { .ifindex = ifindex };
	const struct bnix *f;

	if (!b->nix && index_build(b))
		return scan(b, ifindex, tmp);
	f = bsearch(&key, b->nix, b->nnix, sizeof(*b->nix), key_cmp);
	if (!f)
		return NULL;
	while (f > b->nix && f[-1].ifindex == ifindex)
		f--;
	if (f->gi >= b->ni || f->k >= b->inst[f->gi].nn ||
	    b->inst[f->gi].nics[f->k].ifindex != ifindex) {
		bpf_index_nics_moved(b);	/* stale: a caller missed a drop */
		return scan(b, ifindex, tmp);
	}
	return f;
}

struct bnic *bpf_nic_of(struct vnic_bpf *b, int ifindex)
{
	struct bnix tmp;
	const struct bnix *f = nic_at(b, ifindex, &tmp);

	return f ? &b->inst[f->gi].nics[f->k] : NULL;
}

const struct binst *bpf_owner_of(struct vnic_bpf *b, int ifindex)
{
	struct bnix tmp;
	const struct bnix *f = nic_at(b, ifindex, &tmp);

	return f ? &b->inst[f->gi] : NULL;
}

bool bpf_nic_counted(struct vnic_bpf *b, int ifindex)
{
	const struct bnic *n = bpf_nic_of(b, ifindex);

	return n && n->counted;
}

bool bpf_nic_counted_for(struct vnic_bpf *b, int ifindex, const char *guest)
{
	const struct binst *o = bpf_owner_of(b, ifindex);

	return bpf_nic_counted(b, ifindex) && o && !strcmp(o->name, guest);
}

/*
 * The installed guests by name (lib/strmap.h, the keys borrowed from
 * b->inst): a scan per guest of a policy, and per entry a read finds,
 * made a sync quadratic in installed guests as well.  Built at the first
 * lookup after bpf_index_drop(), and checked the same way; a guest
 * appended without moving b->inst is added (bpf_index_guest_added()).
 */
static int names_build(struct vnic_bpf *b)
{
	unsigned int i;
	int err = 0;

	strmap_init(&b->names);
	for (i = 0; !err && i < b->ni; i++) {
		err = strmap_add(&b->names, b->inst[i].name, i);
		if (err == -EEXIST)	/* the first answers, as the scan's */
			err = 0;
	}
	if (err)
		strmap_free(&b->names);
	b->names_ok = !err;
	return err;
}

static struct binst *name_scan(struct vnic_bpf *b, const char *name)
{
	unsigned int i;

	for (i = 0; i < b->ni; i++)
		if (!strcmp(b->inst[i].name, name))
			return &b->inst[i];
	return NULL;
}

struct binst *bpf_inst_of(struct vnic_bpf *b, const char *name)
{
	uint32_t i;

	if (!b->names_ok && names_build(b))
		return name_scan(b, name);
	if (strmap_get(&b->names, name, &i))
		return NULL;
	if (i >= b->ni || strcmp(b->inst[i].name, name)) {
		bpf_index_drop(b);	/* stale: a caller missed a drop */
		return name_scan(b, name);
	}
	return &b->inst[i];
}

void bpf_index_guest_added(struct vnic_bpf *b)
{
	int err;

	if (!b->names_ok)
		return;
	err = strmap_add(&b->names, b->inst[b->ni - 1].name, b->ni - 1);
	if (err && err != -EEXIST)
		bpf_index_drop(b);
}

void binst_free(struct binst *g)
{
	unsigned int k;

	for (k = 0; k < g->nn; k++) {
		free(g->nics[k].v4);
		free(g->nics[k].v6);
	}
	free(g->nics);
	g->nics = NULL;
	g->nn = 0;
}

bool bpf_inst_foreign(const struct binst *g)
{
	return !g->nn || !g->digest;
}
