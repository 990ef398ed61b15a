// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bpf backend's model of what is installed (struct binst, one per
 * guest, as read from the maps or as a change left them) and the values
 * the maps hold for a policy: what apply.c writes and diff.c compares.
 */
#include <stdio.h>
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

const struct binst *bpf_owner_of(const struct vnic_bpf *b, int ifindex)
{
	unsigned int i, k;

	for (i = 0; i < b->ni; i++)
		for (k = 0; k < b->inst[i].nn; k++)
			if (b->inst[i].nics[k].ifindex == ifindex)
				return &b->inst[i];
	return NULL;
}

const struct bnic *bpf_nic_of(const struct vnic_bpf *b, int ifindex)
{
	unsigned int i, k;

	for (i = 0; i < b->ni; i++)
		for (k = 0; k < b->inst[i].nn; k++)
			if (b->inst[i].nics[k].ifindex == ifindex)
				return &b->inst[i].nics[k];
	return NULL;
}

bool bpf_nic_counted(const struct vnic_bpf *b, int ifindex)
{
	const struct bnic *n = bpf_nic_of(b, ifindex);

	return n && n->counted;
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
