// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a sync would change, told difference by difference: the planned
 * change (apply.c: the maps read again, every hook read back) against the
 * kernel.  The same plan drives the sync, so a diff says what it does:
 *
 *   guests   added, changed (another policy), removed;
 *   maps     "map nics", "map ip4s", "map ip6s", "map guests", "map
 *            drops": entries of a guest whose policy is installed that
 *            another process changed, deleted or added (restored /
 *            removed), and entries no guest of libvnic's explains
 *            (foreign: removed; a counter of no NIC is one);
 *   hooks    "qdisc clsact on IF" (gone), "filter vnic on IF ingress"
 *            (gone, or running an older program), and "filter pref 30318
 *            on IF egress" (foreign, in our slot: removed).
 *
 * A NIC deleted and made again under its name shows as its nics entry
 * (new ifindex restored, old one removed) and its hooks.  What is told
 * here is counted in result.repaired; messages is what the sync would
 * send, as counted by the same rules the change follows.
 *
 * Without a policy (bpf_damage(), for `vnicctl filter show`), the maps and
 * hooks are checked against what the backend recorded itself: each guests
 * entry's NIC count, each NIC's counter and hooks, the NIC under its
 * ifindex still being the one its entry names, and entries of no guest.
 * What only the policy knows (the addresses, the switches) is not checked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "bpf/internal.h"

enum { M_NICS, M_IP4, M_IP6, M_GUESTS, M_DROPS, M__MAX };

static const char *const map_obj[M__MAX] = {
	"map nics", "map ip4s", "map ip6s", "map guests", "map drops",
};

struct rep {
	struct vnic_bpf *b;
	const struct change *c;
	vnic_filter_diff_fn fn;
	void *arg;
	int err;
	uint32_t nobj, guests, msgs, map_writes;
	uint32_t fix_add[M__MAX], fix_del[M__MAX], foreign[M__MAX];
};

static int tell(struct rep *r, uint32_t kind, const char *guest, const char *object,
		uint32_t added, uint32_t removed)
{
	struct vnic_filter_diff d = { .sz = sizeof(d), .kind = kind, .guest = guest,
				      .object = object, .added = added,
				      .removed = removed };

	if (object)
		r->nobj++;
	else
		r->guests++;
	if (r->fn && !r->err)
		r->err = r->fn(&d, r->arg);
	return r->err;
}

static const struct bnic *nic_of(const struct binst *in, int ifindex)
{
	unsigned int k;

	for (k = 0; in && k < in->nn; k++)
		if (in->nics[k].ifindex == ifindex)
			return &in->nics[k];
	return NULL;
}

static unsigned int in_map(unsigned int n, unsigned int inline_max)
{
	return n > inline_max ? n : 0;
}

/* The map writes installing g makes: per NIC its nics entry, its counter
 * when new, missing or another guest's, its addresses beyond the inline ones; the guests
 * entry. */
static uint32_t guest_writes(struct vnic_bpf *b, const struct pguest *g,
			     const int *ifi)
{
	uint32_t w = 1;
	unsigned int k;

	for (k = 0; k < g->nn; k++)
		w += 1 + !bpf_nic_counted_for(b, ifi[k], g->name) +
		     in_map(g->nics[k].n4, BPF_IN4) +
		     in_map(g->nics[k].n6, BPF_IN6);
	return w;
}

static unsigned int missing4(const struct in_addr *want, unsigned int nw,
			     const struct in_addr *have, unsigned int nh)
{
	unsigned int a, h, miss = 0;

	for (a = 0; a < nw; a++) {
		for (h = 0; h < nh && have[h].s_addr != want[a].s_addr; h++)
			;
		miss += h == nh;
	}
	return miss;
}

static unsigned int missing6(const struct in6_addr *want, unsigned int nw,
			     const struct in6_addr *have, unsigned int nh)
{
	unsigned int a, h, miss = 0;

	for (a = 0; a < nw; a++) {
		for (h = 0; h < nh && memcmp(&have[h], &want[a], 16); h++)
			;
		miss += h == nh;
	}
	return miss;
}

/* A guest whose policy is installed but whose map entries differ: what
 * differs, entry by entry, into the per-map counts. */
static void fix_guest(struct rep *r, const struct binst *in, const struct pguest *g,
		      const int *ifi)
{
	unsigned int k;

	if (!in->digest)
		r->fix_add[M_GUESTS]++;
	for (k = 0; k < g->nn; k++) {
		const struct pnic *pn = &g->nics[k];
		const struct bnic *n = nic_of(in, ifi[k]);
		struct bpf_nic v;

		if (!n) {
			r->fix_add[M_NICS]++;
			r->fix_add[M_IP4] += in_map(pn->n4, BPF_IN4);
			r->fix_add[M_IP6] += in_map(pn->n6, BPF_IN6);
			continue;
		}
		bpf_nic_value(&v, pn, g->name, n->gen, k);
		if (memcmp(&v, &n->raw, sizeof(v)))
			r->fix_add[M_NICS]++;
		if (!n->counted)
			r->fix_add[M_DROPS]++;
		/* inline addresses are the nics value's; keys of its
		 * generation besides them are another process's */
		if (pn->n4 > BPF_IN4)
			r->fix_add[M_IP4] += missing4(pn->v4, pn->n4, n->v4, n->n4);
		r->fix_del[M_IP4] += missing4(n->v4, n->n4, pn->v4, pn->n4);
		if (pn->n6 > BPF_IN6)
			r->fix_add[M_IP6] += missing6(pn->v6, pn->n6, n->v6, n->n6);
		r->fix_del[M_IP6] += missing6(n->v6, n->n6, pn->v6, pn->n6);
	}
	for (k = 0; k < in->nn; k++) {
		unsigned int j;

		for (j = 0; j < g->nn && ifi[j] != in->nics[k].ifindex; j++)
			;
		if (j == g->nn)
			r->fix_del[M_NICS]++;
	}
}

static int guests(struct rep *r)
{
	const struct change *c = r->c;
	struct vnic_bpf *b = r->b;
	unsigned int gi, i;

	for (gi = 0; c->p && gi < c->p->n; gi++) {
		const struct pguest *g = c->p->g[gi];
		const int *ifi = &c->ifi[c->off[gi]];
		const struct binst *in = bpf_inst_of(b, g->name);

		if (c->same[gi])
			continue;
		r->map_writes += guest_writes(b, g, ifi);
		if (c->fix[gi])
			fix_guest(r, in, g, ifi);
		else if (tell(r, in ? VNIC_FILTER_DIFF_GUEST_CHANGE : VNIC_FILTER_DIFF_GUEST_ADD,
			      g->name, NULL, 0, 0))
			return r->err;
	}
	for (i = 0; i < b->nfdrops; i++)	/* step 5 deletes them */
		if (!change_keeps(c, (int)b->fdrops[i])) {
			r->foreign[M_DROPS]++;
			r->msgs++;
		}
	for (i = 0; i < b->ni; i++) {
		const struct binst *in = &b->inst[i];

		if (!c->drop[i])
			continue;
		if (!in->nn)
			r->foreign[M_GUESTS]++;
		else if (!in->digest)
			r->foreign[M_NICS] += in->nn;
		else if (tell(r, VNIC_FILTER_DIFF_GUEST_REMOVE, in->name, NULL, 0, 0))
			return r->err;
	}
	return 0;
}

static int maps(struct rep *r)
{
	unsigned int m;

	for (m = 0; m < M__MAX; m++) {
		if ((r->fix_add[m] || r->fix_del[m]) &&
		    tell(r, VNIC_FILTER_DIFF_REPAIR, NULL, map_obj[m], r->fix_add[m],
			 r->fix_del[m]))
			return r->err;
		if (r->foreign[m] &&
		    tell(r, VNIC_FILTER_DIFF_FOREIGN, NULL, map_obj[m], 0, r->foreign[m]))
			return r->err;
	}
	return 0;
}

/* The hooks of NIC ifi of p (ifname) that lack our filter. */
static int nic_hooks(struct rep *r, unsigned int i, const char *ifname, bool tell_it)
{
	const struct change *c = r->c;
	uint32_t miss = c->want[i] & ~c->have[i], h;
	char obj[96];
	bool noq = false, q = false;

	for (h = HOOK_IN; h <= HOOK_EG; h <<= 1) {
		const char *dir = h == HOOK_IN ? "ingress" : "egress";
		int dmg;

		if (!(miss & h))
			continue;
		if (c->old[2 * i + (h == HOOK_EG)]) {
			r->msgs++;	/* swapped in place */
			snprintf(obj, sizeof(obj), "filter vnic on %s %s (an older program)",
				 ifname, dir);
			if (tell_it && tell(r, VNIC_FILTER_DIFF_REPAIR, NULL, obj, 1, 0))
				return r->err;
			continue;
		}
		dmg = tell_it ? tc_damage(r->b, c->ifi[i], h) : DMG_NOQDISC;
		/* cls_bpf: one clsact create a NIC (EEXIST where it is
		 * there), then a hook's filter, after a delete of our slot
		 * where the qdisc was there; tcx: one attach */
		if (!r->b->tcx && !q)
			r->msgs++;
		q = true;
		r->msgs += (r->b->tcx || noq || dmg == DMG_NOQDISC) ? 1 : 2;
		if (dmg == DMG_NOQDISC) {
			if (!noq && !r->b->tcx) {
				snprintf(obj, sizeof(obj), "qdisc clsact on %s", ifname);
				if (tell_it && tell(r, VNIC_FILTER_DIFF_REPAIR, NULL, obj, 1, 0))
					return r->err;
			}
			noq = true;
			continue;
		}
		if (dmg == DMG_FOREIGN) {
			snprintf(obj, sizeof(obj), "filter pref %u on %s %s", BPF_FILTER_PRIO,
				 ifname, dir);
			if (tell(r, VNIC_FILTER_DIFF_FOREIGN, NULL, obj, 0, 1))
				return r->err;
		}
		snprintf(obj, sizeof(obj), "%s on %s %s", r->b->tcx ? "tcx program" :
			 "filter vnic", ifname, dir);
		if (tell(r, VNIC_FILTER_DIFF_REPAIR, NULL, obj, 1, 0))
			return r->err;
	}
	return 0;
}

/* Hooks: told for the guests installed with this policy (unchanged or
 * repaired: all their NICs) and for the NICs a changed guest already had;
 * an added NIC's hooks are part of adding it. */
static int hooks(struct rep *r)
{
	const struct change *c = r->c;
	unsigned int gi, k;

	for (gi = 0; c->p && gi < c->p->n; gi++) {
		const struct pguest *g = c->p->g[gi];
		const struct binst *in = bpf_inst_of(r->b, g->name);

		for (k = 0; k < g->nn; k++) {
			unsigned int i = c->off[gi] + k;
			bool tell_it = c->same[gi] || c->fix[gi] ||
				       (in && nic_of(in, c->ifi[i]));

			if ((c->want[i] & ~c->have[i]) &&
			    nic_hooks(r, i, g->nics[k].ifname, tell_it))
				return r->err;
		}
	}
	return 0;
}

/* What the sync sends for the installed guests that go or are replaced,
 * by the rules bpf/apply.c follows: their NICs no guest keeps lose their
 * nics entry and our hooks (cls_bpf: the clsact delete when nothing else
 * is on it, else two filter deletes; tcx: one detach), a guest removed its
 * guests entry. */
static void leaving(struct rep *r)
{
	const struct vnic_bpf *b = r->b;
	unsigned int i, k;

	for (i = 0; i < b->ni; i++) {
		const struct binst *in = &b->inst[i];

		if (!r->c->gone[i])
			continue;
		r->map_writes += r->c->drop[i];
		for (k = 0; k < in->nn; k++) {
			int ifi = in->nics[k].ifindex;

			if (change_keeps(r->c, ifi))
				continue;
			r->map_writes++;
			/* only a diff reports the count: a sync's detach
			 * checks the hooks itself, and twice is a dump a
			 * hook more for every NIC leaving */
			if (r->b->tcx || r->c->mode != CH_DIFF)
				r->msgs++;
			else
				r->msgs += tc_filters_left(r->b, ifi) ? 2 : 1;
		}
	}
}

int bpf_report(struct vnic_bpf *b, const struct change *c, vnic_filter_diff_fn fn,
	       void *arg, struct vnic_filter_result *res)
{
	struct rep r = { .b = b, .c = c, .fn = fn, .arg = arg };

	if (!guests(&r) && !maps(&r))
		hooks(&r);
	if (!r.err)
		leaving(&r);
	if (r.err) {
		if (r.err < 0)
			vnic_set_err(b->ctx, r.err, VNIC_STEP_VALIDATE, -1, NULL,
				     "bpf: the diff callback stopped it; nothing was written");
		return r.err;
	}
	res->repaired = r.nobj;
	res->messages = r.msgs + r.map_writes + (r.map_writes ? 1 : 0);
	res->writes = r.nobj || r.guests;
	return 0;
}

/* --- without a policy ------------------------------------------------------ */

/* Whether ifindex still names the NIC its entry recorded: a NIC deleted,
 * or deleted and made again under its name, does not. */
static bool same_nic(struct vnic_bpf *b, int sock, const struct bnic *n)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = n->ifindex;
	b->ctx->stats.ioctls++;
	return ioctl(sock, SIOCGIFNAME, &ifr) == 0 &&
	       !strncmp(ifr.ifr_name, n->ifname, IFNAMSIZ);
}

/* The installed guests' NICs (the ones still there) into c, their entries
 * checked against the guests entries and the counters on the way.  A
 * counter of no NIC is foreign, unless a guest lost a NIC's entry: it may
 * be that NIC's, which only the policy tells (the sync keeps it then). */
static unsigned int damage_maps(struct rep *r, struct change *c, int sock,
				const struct bnic **nic)
{
	struct vnic_bpf *b = r->b;
	unsigned int i, k, n = 0;

	for (i = 0; i < b->ni; i++) {
		const struct binst *in = &b->inst[i];

		if (!in->nn && !(in->digest && in->rec_nics)) {
			r->foreign[M_GUESTS]++;
			continue;
		}
		if (!in->digest) {
			r->foreign[M_NICS] += in->nn;
			continue;
		}
		if (in->rec_nics > in->nn)
			r->fix_add[M_NICS] += in->rec_nics - in->nn;
		for (k = 0; k < in->nn; k++) {
			const struct bnic *bn = &in->nics[k];

			if (!same_nic(b, sock, bn)) {
				r->fix_add[M_NICS]++;
				r->fix_del[M_NICS]++;
				continue;
			}
			r->fix_add[M_DROPS] += !bn->counted;
			nic[n] = bn;
			c->ifi[n] = bn->ifindex;
			c->want[n++] = bpf_hooks_of(bn->kind);
		}
	}
	if (!r->fix_add[M_NICS])
		r->foreign[M_DROPS] = b->nfdrops;
	return n;
}

int bpf_damage(struct vnic_bpf *b, vnic_filter_diff_fn fn, void *arg,
	       struct vnic_filter_result *res)
{
	struct change c = { 0 };
	struct rep r = { .b = b, .c = &c, .fn = fn, .arg = arg };
	const struct bnic **nic = NULL;
	unsigned int i, m, total = 0, n;
	int sock, err = b->fresh ? 0 : bpf_reread(b);

	if (err)
		return err;
	sock = bpf_ifsock(b);
	if (sock < 0)
		return sock;
	for (i = 0; i < b->ni; i++)
		total += b->inst[i].nn;
	c.ifi = calloc(total + 1, sizeof(*c.ifi));
	c.want = calloc(total + 1, sizeof(*c.want));
	c.have = calloc(total + 1, sizeof(*c.have));
	c.old = calloc(2 * total + 2, sizeof(*c.old));
	nic = calloc(total + 1, sizeof(*nic));
	if (!c.ifi || !c.want || !c.have || !c.old || !nic) {
		err = vnic_set_err(b->ctx, -ENOMEM, VNIC_STEP_DUMP, -1, NULL,
				   "bpf: out of memory for %u NICs", total);
		goto out;
	}
	n = damage_maps(&r, &c, sock, nic);
	if (n)
		err = tc_check(b, c.ifi, c.want, c.have, c.old, n, false);
	if (!err && !maps(&r))
		for (i = 0; i < n && !r.err; i++)
			if (c.want[i] & ~c.have[i])
				nic_hooks(&r, i, nic[i]->ifname, true);
	if (!err && r.err < 0)
		vnic_set_err(b->ctx, r.err, VNIC_STEP_VALIDATE, -1, NULL,
			     "bpf: the diff callback stopped it");
	err = err ? err : r.err;
	if (!err) {
		res->repaired = r.nobj;
		res->writes = r.nobj != 0;
		/* an estimate: the sync's own plan needs the policy */
		res->messages = r.msgs;
		for (m = 0; m < M__MAX; m++)
			res->messages += r.fix_add[m] + r.fix_del[m] + r.foreign[m];
	}
out:
	free(c.ifi);
	free(c.want);
	free(c.have);
	free(c.old);
	free(nic);
	return err;
}
