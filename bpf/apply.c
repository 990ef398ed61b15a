// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A change (apply, sync, remove) of the bpf backend, all or nothing:
 *
 *  1. Check everything that needs no write: the policy, that the bpf
 *     backend can express it (no custom rules), every NIC's ifindex, no
 *     device named twice (an altname), NICs claimed by installed guests
 *     that the change does not replace.
 *  2. Which guests are unchanged: same digest and same ifindexes.
 *  3. Read back every NIC's filters (one pipelined batch of gets), and
 *     attach what is missing: every qdisc, then every filter.  A filter on
 *     a NIC without map state passes everything, so this changes no verdict.
 *     A filter of ours that runs an older program is left alone (4b).
 *  4. Map writes, each logged with what it replaced: first what leaves
 *     (the nics entries and counters of NICs no guest keeps, the guests
 *     entries of guests removed), which makes room at capacity; then per
 *     changed NIC, its addresses under a new generation, its counter, then
 *     its "nics" entry, the instant the NIC's new policy takes effect; the
 *     guests' entries and the state.
 * 4b. Filters of ours on an older program swapped in place to ours.  A
 *     failure in 4 or 4b undoes the log in reverse, the filters step 3
 *     made, and puts the older program back where 4b swapped it.
 *  5. Past that point nothing fails the change: the previous generation's
 *     addresses, the counters of no NIC (another process's), and the
 *     filters of NICs no guest uses any more are removed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/internal.h"

/* --- the undo log ----------------------------------------------------------- */

#define KEY_MAX		BPF_GUEST_LEN
#define VAL_MAX		sizeof(struct bpf_nic)
/* write_new() reads an old value of any map but drops (per CPU) here. */
_Static_assert(sizeof(struct bpf_guest) <= VAL_MAX && sizeof(struct bpf_state) <= VAL_MAX,
	       "a logged old value must fit struct uop");

struct uop {
	int fd;
	uint32_t klen, vlen;
	bool had;
	void *big;		/* an old per-CPU value (a counter), malloc'd */
	uint8_t key[KEY_MAX];
	uint8_t old[VAL_MAX];
};

struct ulog {
	struct uop *op;
	unsigned int n, cap;
	unsigned int writes;
};

static struct uop *ulog_new(struct ulog *l)
{
	if (l->n == l->cap) {
		unsigned int cap = l->cap ? 2 * l->cap : 64;
		struct uop *op = realloc(l->op, cap * sizeof(*op));

		if (!op)
			return NULL;
		l->op = op;
		l->cap = cap;
	}
	return &l->op[l->n++];
}

/* The number of entries that could not be restored. */
static unsigned int ulog_undo(struct ulog *l)
{
	unsigned int failed = 0;

	while (l->n--) {
		struct uop *u = &l->op[l->n];

		if (u->had) {
			if (bpf_map_update_elem(u->fd, u->key, u->big ? u->big : u->old,
						BPF_ANY))
				failed++;
		} else if (bpf_map_delete_elem(u->fd, u->key) && errno != ENOENT) {
			failed++;
		}
		free(u->big);
	}
	l->n = 0;
	return failed;
}

static void ulog_free(struct ulog *l)
{
	while (l->n)
		free(l->op[--l->n].big);
	free(l->op);
	l->op = NULL;
}

static int oom(struct vnic_bpf *b, const char *what)
{
	return vnic_set_err(b->ctx, -ENOMEM, VNIC_STEP_CONFIGURE, -1, NULL,
			    "bpf: out of memory (%s)", what);
}

static int map_err(struct vnic_bpf *b, int err, const char *map)
{
	if (err == -E2BIG || err == -ENOSPC)
		return vnic_set_err(b->ctx, -ENOSPC, VNIC_STEP_CONFIGURE, -1, NULL,
				    "bpf: map %s is full (capacity %u NICs): remove guests, "
				    "or remove every guest, close every handle and open "
				    "with a larger vnic_bpf_opts.capacity (maps in use "
				    "cannot grow)", map, b->capacity);
	return vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
			    "bpf: writing map %s%s", map, err == -EIO ? " (injected)" : "");
}

/*
 * Delete key from fd, its old value into u (u->had): one syscall where the
 * map type has BPF_MAP_LOOKUP_AND_DELETE_ELEM (hash maps: Linux 5.14), a
 * lookup and a delete before.  A remove of 1,000 guests deletes 5,000
 * entries this way, each logged for the undo.
 */
static int take(struct vnic_bpf *b, struct uop *u, int fd, const void *key)
{
	if (!b->no_take) {
		if (!bpf_map_lookup_and_delete_elem(fd, key, u->old)) {
			u->had = true;
			return 0;
		}
		if (errno == ENOENT)
			return 0;
		/* 524: the kernel's ENOTSUPP, before 5.14 */
		if (errno != EINVAL && errno != EOPNOTSUPP && errno != 524)
			return -errno;
		b->no_take = true;
	}
	u->had = !bpf_map_lookup_elem(fd, key, u->old);
	return bpf_map_delete_elem(fd, key) && errno != ENOENT ? -errno : 0;
}

/*
 * A key the handle did not see when it read the maps: written only where
 * it is still absent (BPF_NOEXIST), so that the common case reads nothing
 * before the write and its undo is a delete.  Another writer may have made
 * it since: then its value is read first, and the undo puts it back; a
 * drop counter made meanwhile is kept as it is (nothing written, nothing
 * to undo: 1 on return).
 */
static int write_new(struct vnic_bpf *b, struct uop *u, int fd, const void *key,
		     const void *val)
{
	if (!bpf_map_update_elem(fd, key, val, BPF_NOEXIST))
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (fd == b->map_drops)
		return 1;
	u->had = !bpf_map_lookup_elem(fd, key, u->old);
	return bpf_map_update_elem(fd, key, val, BPF_ANY) ? -errno : 0;
}

/* Write (val) or delete (NULL) key in fd, logging what it replaces;
 * vlen 0: a key the handle takes for new (write_new()). */
static int mwrite(struct vnic_bpf *b, struct ulog *l, int fd, const char *map,
		  const void *key, uint32_t klen, const void *val, uint32_t vlen)
{
	struct uop *u = ulog_new(l);
	int err;

	if (!u)
		return oom(b, "the undo log");
	u->fd = fd;
	u->klen = klen;
	u->vlen = vlen;
	u->had = false;
	u->big = NULL;
	memcpy(u->key, key, klen);
	err = bpf_fault(b, BPF_FAULT_MAP);
	if (!err) {
		l->writes++;
		if (!val && vlen) {
			err = take(b, u, fd, key);
		} else if (val && vlen) {
			u->had = !bpf_map_lookup_elem(fd, key, u->old);
			err = bpf_map_update_elem(fd, key, val, BPF_ANY) ? -errno : 0;
		} else if (val) {
			err = write_new(b, u, fd, key, val);
		} else {
			err = bpf_map_delete_elem(fd, key) && errno != ENOENT ? -errno : 0;
		}
	}
	if (err > 0) {		/* kept as it was: nothing to undo */
		l->n--;
		return 0;
	}
	if (err) {
		l->n--;
		return map_err(b, err, map);
	}
	bpf_tap_map(b, fd, key, klen, val);
	return 0;
}

/* --- translating the policy ------------------------------------------------ */

static void guest_key(struct bpf_guest_key *k, const char *name)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", name);
}

/* --- the installed model ---------------------------------------------------- */

/* The installed form of guest g of p with the ifindexes and generations. */
static int binst_make(struct binst *out, const struct pguest *g, uint64_t digest,
		      const int *ifi, const uint32_t *gen)
{
	unsigned int k;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", g->name);
	out->digest = digest;
	out->nics = calloc(g->nn + 1, sizeof(*out->nics));
	if (!out->nics)
		return -ENOMEM;
	out->nn = g->nn;
	for (k = 0; k < g->nn; k++) {
		struct bnic *n = &out->nics[k];
		const struct pnic *pn = &g->nics[k];

		n->ifindex = ifi[k];
		snprintf(n->ifname, sizeof(n->ifname), "%s", pn->ifname);
		n->kind = pn->kind;
		n->idx = k;
		n->gen = gen[k];
		n->counted = true;	/* written with it, or kept */
		n->v4 = calloc(pn->n4 + 1, sizeof(*n->v4));
		n->v6 = calloc(pn->n6 + 1, sizeof(*n->v6));
		if (!n->v4 || !n->v6) {
			binst_free(out);
			return -ENOMEM;
		}
		memcpy(n->v4, pn->v4, pn->n4 * sizeof(*n->v4));
		memcpy(n->v6, pn->v6, pn->n6 * sizeof(*n->v6));
		n->n4 = pn->n4;
		n->n6 = pn->n6;
	}
	return 0;
}

/* --- step 1: checks ----------------------------------------------------------- */

static int check_policy(struct vnic_bpf *b, const struct vnic_policy *p)
{
	unsigned int gi;
	int err = vnic_policy_check(p);

	if (err)
		return err;
	for (gi = 0; gi < p->n; gi++)
		if (p->g[gi]->nr)
			return vnic_set_err(b->ctx, -EOPNOTSUPP, VNIC_STEP_VALIDATE, -1, NULL,
					    "guest %s: custom rules cannot be expressed by the "
					    "bpf backend (use the nft backend); nothing was changed",
					    p->g[gi]->name);
	return 0;
}

/* --- the change ------------------------------------------------------------------ */

static bool same_guest(const struct binst *in, const struct pguest *g, uint64_t digest,
		       const int *ifi)
{
	unsigned int k;

	if (!in || in->digest != digest || in->nn != g->nn)
		return false;
	for (k = 0; k < g->nn; k++)
		if (in->nics[k].ifindex != ifi[k])
			return false;
	return true;
}

static bool has4(const struct in_addr *v, unsigned int n, const struct in_addr *a)
{
	while (n--)
		if (v[n].s_addr == a->s_addr)
			return true;
	return false;
}

static bool has6(const struct in6_addr *v, unsigned int n, const struct in6_addr *a)
{
	while (n--)
		if (!memcmp(&v[n], a, sizeof(*a)))
			return true;
	return false;
}

/* The same addresses, as sets (ip4s/ip6s keys come in hash order). */
static bool addrs_equal(const struct bnic *n, const struct pnic *pn)
{
	unsigned int a;

	for (a = 0; a < pn->n4; a++)
		if (!has4(n->v4, n->n4, &pn->v4[a]))
			return false;
	for (a = 0; a < n->n4; a++)
		if (!has4(pn->v4, pn->n4, &n->v4[a]))
			return false;
	for (a = 0; a < pn->n6; a++)
		if (!has6(n->v6, n->n6, &pn->v6[a]))
			return false;
	for (a = 0; a < n->n6; a++)
		if (!has6(pn->v6, pn->n6, &n->v6[a]))
			return false;
	return true;
}

/* Whether the maps, as read, hold byte for byte what installing g on ifi
 * writes (at the generations they have), and each NIC its counter: what
 * another process changed in them is found here, by a sync (same_guest()
 * holds). */
static bool maps_intact(const struct binst *in, const struct pguest *g)
{
	unsigned int k;

	for (k = 0; k < g->nn; k++) {
		const struct bnic *n = &in->nics[k];
		struct bpf_nic v;

		bpf_nic_value(&v, &g->nics[k], g->name, n->gen, k);
		if (memcmp(&v, &n->raw, sizeof(v)) || !addrs_equal(n, &g->nics[k]) ||
		    !n->counted)
			return false;
	}
	return true;
}

static bool in_policy(const struct vnic_policy *p, const char *name)
{
	unsigned int idx;

	return p && !policy_find(p, name, &idx);
}

static int plan(struct vnic_bpf *b, struct change *c, const char *const *remove,
		unsigned int nremove, bool sync)
{
	const struct vnic_policy *p = c->p;
	unsigned int gi, k, i;

	for (i = 0; i < nremove; i++) {
		struct binst *in = bpf_inst_of(b, remove[i] ? remove[i] : "");

		if (!in)
			return vnic_set_err(b->ctx, -ENOENT, VNIC_STEP_VALIDATE, -1, NULL,
					    "guest %s is not installed; nothing was changed",
					    remove[i] ? remove[i] : "(null)");
		c->gone[in - b->inst] = c->drop[in - b->inst] = true;
	}
	for (i = 0; sync && i < b->ni; i++)
		if (!in_policy(p, b->inst[i].name))
			c->gone[i] = c->drop[i] = true;
	for (gi = 0; p && gi < p->n; gi++) {
		const struct pguest *g = p->g[gi];
		struct binst *in = bpf_inst_of(b, g->name);
		uint64_t digest = bpf_digest(b, g);

		for (k = 0; k < g->nn; k++) {
			const struct binst *o = bpf_owner_of(b, c->ifi[c->off[gi] + k]);

			if (o && strcmp(o->name, g->name) && !c->gone[o - b->inst])
				return vnic_set_err(b->ctx, -EEXIST, VNIC_STEP_VALIDATE, -1,
						    NULL, "guest %s: NIC %s belongs to installed "
						    "guest %s; nothing was changed", g->name,
						    g->nics[k].ifname, o->name);
		}
		c->same[gi] = same_guest(in, g, digest, &c->ifi[c->off[gi]]);
		if (c->same[gi] && sync && !maps_intact(in, g))
			c->same[gi] = false;
		/* the guest's policy is what is installed (or its guests
		 * entry is gone): what differs is another process's doing */
		c->fix[gi] = sync && in && !c->same[gi] &&
			     (in->digest == digest || !in->digest);
		if (in && !c->same[gi])
			c->gone[in - b->inst] = true;
	}
	change_index_kept(b, c);
	return 0;
}

/* Another handle changed the maps since this one last read or wrote them:
 * its view (generations, digests, guests) is stale, and writing from it
 * could reuse generations or delete live addresses.  As the nft backend
 * does on a ruleset generation change: -EAGAIN, build the change again
 * (from a new handle).  A window between this check and the writes
 * remains: one writer per namespace is still the rule. */
static int still_ours(struct vnic_bpf *b)
{
	struct bpf_state now;
	uint32_t zero = 0;

	memset(&now, 0, sizeof(now));
	if (bpf_map_lookup_elem(b->map_state, &zero, &now))
		return map_err(b, -errno, "state");
	if (memcmp(&now, &b->st, sizeof(now)))
		return vnic_set_err(b->ctx, -EAGAIN, VNIC_STEP_CONFIGURE, -1, NULL,
				    "bpf: another handle changed this namespace's maps "
				    "meanwhile: open a new handle and sync again");
	return 0;
}

static bool nic_was(struct vnic_bpf *b, int ifindex)
{
	return bpf_owner_of(b, ifindex) != NULL;
}

/* Step 3: which hooks of the NICs of p hold our filters (read back; a
 * diff stops after this).  A hook whose filter of ours runs an older
 * program (a library upgrade, maps that could not be adopted) keeps it
 * until the new maps are written: repoint(). */
static int check_hooks(struct vnic_bpf *b, struct change *c)
{
	unsigned int total = c->p ? c->off[c->p->n] : 0, gi, k, i, fresh = 0;
	int err;

	if (!total)
		return 0;
	c->want = calloc(total, sizeof(*c->want));
	c->have = calloc(total, sizeof(*c->have));
	c->old = calloc(2 * total, sizeof(*c->old));
	err = c->want && c->have && c->old ? 0 : -ENOMEM;
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
				    "bpf: out of memory for %u NICs", total);
	for (gi = 0; gi < c->p->n; gi++)
		for (k = 0; k < c->p->g[gi]->nn; k++)
			c->want[c->off[gi] + k] = bpf_hooks_of(c->p->g[gi]->nics[k].kind);
	for (i = 0; i < total; i++)
		fresh += !nic_was(b, c->ifi[i]);
	/* mostly new NICs: one qdisc dump finds the few with a clsact */
	return tc_check(b, c->ifi, c->want, c->have, c->old, total,
			fresh >= 32 && 2 * fresh > total);
}

/* Step 3, continued: attach what is missing. */

static int attach(struct vnic_bpf *b, struct change *c, struct tc_made *made,
		  struct vnic_filter_result *res)
{
	unsigned int total = c->p ? c->off[c->p->n] : 0, i;
	int err;

	for (i = 0; i < total && !(c->want[i] & ~c->have[i]); i++)
		;
	if (i == total)
		return 0;	/* every hook holds ours: no program to load */
	/* a program an adopted set lacks is loaded before it is attached */
	err = bpf_progs_ready(b);
	return err ? err : tc_attach(b, c->ifi, c->want, c->have, c->old, total, false,
				     made, res);
}

/* Step 4b: our filters that still run an older program are swapped, each in
 * place, to ours, now that our maps hold the policy: no hook is ever
 * without a filter, nor runs ours over empty maps. */
static int repoint(struct vnic_bpf *b, struct change *c, struct tc_made *made,
		   struct vnic_filter_result *res)
{
	unsigned int total = c->p ? c->off[c->p->n] : 0, i;
	int err;

	for (i = 0; i < 2 * total && !c->old[i]; i++)
		;
	if (i == 2 * total)
		return 0;	/* no filter runs an older program */
	/* an adopted set may lack the program to swap in */
	err = bpf_progs_ready(b);
	return err ? err : tc_attach(b, c->ifi, c->want, c->have, c->old, total, true,
				     made, res);
}

static int write_addrs(struct vnic_bpf *b, struct change *c, const struct pnic *pn,
		       int ifindex, uint32_t gen)
{
	unsigned int a;
	uint8_t one = 1;
	int err = 0;

	/* few addresses are in the nics value itself (nic_value()) */
	for (a = 0; !err && pn->n4 > BPF_IN4 && a < pn->n4; a++) {
		struct bpf_a4 k = { .ifindex = (uint32_t)ifindex, .gen = gen,
				    .addr = pn->v4[a].s_addr };

		err = mwrite(b, c->log, b->map_ip4, "ip4s", &k, sizeof(k), &one, 0);
	}
	for (a = 0; !err && pn->n6 > BPF_IN6 && a < pn->n6; a++) {
		struct bpf_a6 k = { .ifindex = (uint32_t)ifindex, .gen = gen };

		memcpy(k.addr, &pn->v6[a], 16);
		err = mwrite(b, c->log, b->map_ip6, "ip6s", &k, sizeof(k), &one, 0);
	}
	return err;
}

/*
 * The counter of a NIC leaving: deleted with its nics entry, before the
 * new NICs' are written, so that at capacity what leaves makes room for
 * what comes in the same change (deleted after it, a sync swapping one
 * guest for another in full maps failed with -ENOSPC).  Its per-CPU value
 * is held aside for the undo; not counted in writes, as the delete was not
 * when it came after the change.
 */
static int forget_counter(struct vnic_bpf *b, struct ulog *l, uint32_t key,
			  struct bpf_drop *carry)
{
	int ncpu = bpf_ncpu(b), err;
	struct uop *u;
	void *old;

	if (ncpu < 0)
		return ncpu;
	old = calloc(ncpu, sizeof(struct bpf_drop));
	if (!old)
		return oom(b, "a drop counter");
	if (bpf_map_lookup_elem(b->map_drops, &key, old)) {
		free(old);	/* no counter (or another process's doing) */
		return 0;
	}
	u = ulog_new(l);
	if (!u) {
		free(old);
		return oom(b, "the undo log");
	}
	u->fd = b->map_drops;
	u->klen = sizeof(key);
	u->vlen = 0;
	u->had = true;
	u->big = old;
	memcpy(u->key, &key, sizeof(key));
	err = bpf_fault(b, BPF_FAULT_MAP);
	if (!err && bpf_map_delete_elem(b->map_drops, &key) && errno != ENOENT)
		err = -errno;
	if (err) {
		l->n--;
		free(old);
		return map_err(b, err, "drops");
	}
	bpf_tap_map(b, b->map_drops, &key, sizeof(key), NULL);
	for (int cpu = 0; carry && cpu < ncpu; cpu++) {
		carry[cpu].packets += ((struct bpf_drop *)old)[cpu].packets;
		carry[cpu].bytes += ((struct bpf_drop *)old)[cpu].bytes;
	}
	return 0;
}

/* Where the counts of a NIC that leaves guest i go: to the new counter of
 * its replacement (c->carry, one per guest of the policy, NULL when the
 * guest is removed, its counter with it). */
static int carry_of(struct vnic_bpf *b, struct change *c, unsigned int i,
		    struct bpf_drop **carry)
{
	unsigned int gi;
	int ncpu;

	*carry = NULL;
	if (c->drop[i] || !c->p || policy_find(c->p, b->inst[i].name, &gi))
		return 0;
	if (!c->carry[gi]) {
		ncpu = bpf_ncpu(b);
		if (ncpu < 0)
			return ncpu;
		c->carry[gi] = calloc(ncpu, sizeof(struct bpf_drop));
		if (!c->carry[gi])
			return oom(b, "a drop counter");
	}
	*carry = c->carry[gi];
	return 0;
}

/*
 * A counter for NIC key of guest gi of the policy: new, missing (another
 * process deleted it) or another guest's (was: the NIC changed guests; its
 * counts are not this guest's, and go).  As nft's counter is the guest's
 * and outlives its devices, the counts of the guest's NICs that left in
 * this change (a NIC made again under its name: a new ifindex) start it,
 * once; else it starts at 0.  A per-CPU value: one copy per possible CPU.
 */
static int new_counter(struct vnic_bpf *b, struct change *c, unsigned int gi,
		       uint32_t key, bool was)
{
	int ncpu = bpf_ncpu(b), err = 0;
	struct bpf_drop *z;

	if (ncpu < 0)
		return ncpu;
	if (was)
		err = forget_counter(b, c->log, key, NULL);
	z = err ? NULL : c->carry[gi] ? c->carry[gi] : calloc(ncpu, sizeof(*z));
	if (!err && !z)
		return oom(b, "a drop counter");
	if (!err)
		err = mwrite(b, c->log, b->map_drops, "drops", &key, sizeof(key), z, 0);
	if (z == c->carry[gi])
		c->carry[gi] = NULL;	/* carried once */
	free(z);
	return err;
}

/* Step 4 for guest gi of p. */
static int write_guest(struct vnic_bpf *b, struct change *c, unsigned int gi,
		       struct bpf_state *st)
{
	const struct pguest *g = c->p->g[gi];
	struct bpf_guest gv = { .digest = bpf_digest(b, g), .nics = g->nn };
	struct bpf_guest_key gk;
	unsigned int k;
	int err = 0;

	for (k = 0; !err && k < g->nn; k++) {
		int ifindex = c->ifi[c->off[gi] + k];
		uint32_t key = (uint32_t)ifindex, gen = st->next_gen++;
		const struct bnic *bn = bpf_nic_of(b, ifindex);
		bool was = bn != NULL;
		struct bpf_nic v;

		if (!gen)
			gen = st->next_gen++;
		c->gen[c->off[gi] + k] = gen;
		err = write_addrs(b, c, &g->nics[k], ifindex, gen);
		if (!err && !bpf_nic_counted_for(b, ifindex, g->name))
			err = new_counter(b, c, gi, key, bn && bn->counted);
		bpf_nic_value(&v, &g->nics[k], g->name, gen, k);
		/* a NIC or guest the maps did not hold when read: written
		 * only if still absent, its undo a delete (write_new()) */
		if (!err)
			err = mwrite(b, c->log, b->map_nics, "nics", &key, sizeof(key),
				     &v, was ? sizeof(v) : 0);
	}
	guest_key(&gk, g->name);
	if (!err)
		err = mwrite(b, c->log, b->map_guests, "guests", &gk, sizeof(gk), &gv,
			     bpf_inst_of(b, g->name) ? sizeof(gv) : 0);
	return err;
}

/* Step 4 for the NICs and entries of installed guests going away. */
static int write_removals(struct vnic_bpf *b, struct change *c)
{
	unsigned int i, k;
	int err = 0;

	for (i = 0; !err && i < b->ni; i++) {
		struct bpf_guest_key gk;
		struct bpf_drop *carry;

		if (!c->gone[i])
			continue;
		err = carry_of(b, c, i, &carry);
		for (k = 0; !err && k < b->inst[i].nn; k++) {
			uint32_t key = (uint32_t)b->inst[i].nics[k].ifindex;

			if (change_keeps(c, (int)key))
				continue;
			err = mwrite(b, c->log, b->map_nics, "nics", &key, sizeof(key),
				     NULL, sizeof(struct bpf_nic));
			if (!err)
				err = forget_counter(b, c->log, key, carry);
		}
		guest_key(&gk, b->inst[i].name);
		if (!err && c->drop[i])
			err = mwrite(b, c->log, b->map_guests, "guests", &gk, sizeof(gk),
				     NULL, sizeof(struct bpf_guest));
	}
	return err;
}

static int write_maps(struct vnic_bpf *b, struct change *c, struct bpf_state *st)
{
	unsigned int gi, i;
	uint32_t zero = 0;
	int err = 0;

	*st = b->st;
	/* what leaves first: its entries make room for what comes */
	err = write_removals(b, c);
	for (gi = 0; !err && c->p && gi < c->p->n; gi++) {
		if (!c->same[gi])
			err = write_guest(b, c, gi, st);
	}
	if (err)
		return err;
	st->digest = 0;
	st->guests = 0;
	for (i = 0; i < b->ni; i++)
		if (!c->gone[i]) {
			st->digest ^= b->inst[i].digest;
			st->guests++;
		}
	for (gi = 0; c->p && gi < c->p->n; gi++)
		if (!c->same[gi]) {
			st->digest ^= bpf_digest(b, c->p->g[gi]);
			st->guests++;
		}
	/* Nothing written: state stays as it is, and so must the handle's
	 * copy, which still_ours() and bpf_reread() compare with the
	 * kernel's (the sums differ where another process deleted or added
	 * a guests entry since; the next write puts them right). */
	if (!c->log->writes && st->next_gen == b->st.next_gen) {
		*st = b->st;
		return 0;
	}
	return mwrite(b, c->log, b->map_state, "state", &zero, sizeof(zero), st,
		      sizeof(*st));
}

/* --- step 5 ------------------------------------------------------------------------ */

static void old_addrs(struct vnic_bpf *b, const struct bnic *n)
{
	unsigned int a;

	for (a = 0; n->n4 > BPF_IN4 && a < n->n4; a++) {
		struct bpf_a4 k = { .ifindex = (uint32_t)n->ifindex, .gen = n->gen,
				    .addr = n->v4[a].s_addr };

		bpf_map_delete_elem(b->map_ip4, &k);
		bpf_tap_map(b, b->map_ip4, &k, sizeof(k), NULL);
	}
	for (a = 0; n->n6 > BPF_IN6 && a < n->n6; a++) {
		struct bpf_a6 k = { .ifindex = (uint32_t)n->ifindex, .gen = n->gen };

		memcpy(k.addr, &n->v6[a], 16);
		bpf_map_delete_elem(b->map_ip6, &k);
		bpf_tap_map(b, b->map_ip6, &k, sizeof(k), NULL);
	}
}

/* The counters no NIC had when the maps were read, where still no NIC's:
 * the policy's NICs got theirs in step 4, and a nics entry there now is
 * another writer's NIC, whose counter it writes first. */
static void drop_foreign_counters(struct vnic_bpf *b, const struct change *c,
				  struct vnic_filter_result *res)
{
	struct bpf_nic v;
	unsigned int i;

	for (i = 0; i < b->nfdrops; i++) {
		uint32_t key = b->fdrops[i];

		if (change_keeps(c, (int)key) || !bpf_map_lookup_elem(b->map_nics, &key, &v))
			continue;
		if (!bpf_map_delete_elem(b->map_drops, &key)) {
			bpf_tap_map(b, b->map_drops, &key, sizeof(key), NULL);
			res->writes = 1;
			res->messages++;
		}
	}
	free(b->fdrops);
	b->fdrops = NULL;
	b->nfdrops = 0;
}

/* A NIC leaving, with its generation: the order its clsact goes in. */
struct leave {
	int ifindex;
	uint32_t gen;
};

static int newest_first(const void *x, const void *y)
{
	uint32_t a = ((const struct leave *)x)->gen, b = ((const struct leave *)y)->gen;

	return (a < b) - (a > b);
}

/*
 * The NICs leaving, newest generation first.  Deleting a clsact unbinds
 * its two blocks, and the kernel finds each in a list of every bound block
 * of the host (flow_indr_dev_setup_offload()), newest first: deleted in
 * the order they were made, each search walks past every clsact made after
 * it (quadratic in NICs removed); newest first, each is found at once.  A
 * NIC's generation is a good proxy for its clsact's age: both are assigned
 * when its guest is installed, in the same order.
 */
static void leave_order(struct leave *l, unsigned int n, int *ifindex)
{
	unsigned int i;

	qsort(l, n, sizeof(*l), newest_first);
	for (i = 0; i < n; i++)
		ifindex[i] = l[i].ifindex;
}

/*
 * Step 5: the leftovers of a change that succeeded, best effort (a NIC
 * gone meanwhile took its filters along; a filter left on a NIC without a
 * nics entry passes everything).  Its failures are not the change's: the
 * messages they leave go, or a caller would read them after a return of 0
 * as this call's (vnic_ctx_errmsg() is "" when nothing failed).
 */
static void cleanup(struct vnic_bpf *b, const struct change *c, const int *detach,
		    unsigned int nd, struct vnic_filter_result *res)
{
	bool clean = !b->ctx->err.err;

	if (nd)
		tc_detach(b, detach, nd, res);
	bpf_drop_stale(b);
	drop_foreign_counters(b, c, res);
	bpf_drop_orphans(b, c, res);
	if (clean)
		vnic_clear_err(b->ctx);
}

/* The model after the change; the leftovers cleared. */
static int commit(struct vnic_bpf *b, struct change *c, struct vnic_filter_result *res)
{
	unsigned int i, k, gi, nd = 0, n = 0;
	struct binst *next;
	struct leave *leave;
	int *detach, err = 0;

	for (i = 0; i < b->ni; i++)
		nd += c->gone[i] ? b->inst[i].nn : 0;
	next = calloc(b->ni + (c->p ? c->p->n : 0) + 1, sizeof(*next));
	detach = calloc(nd + 1, sizeof(*detach));
	leave = calloc(nd + 1, sizeof(*leave));
	nd = 0;
	if (!next || !detach || !leave) {
		free(next);
		free(detach);
		free(leave);
		return vnic_set_err(b->ctx, -ENOMEM, VNIC_STEP_CONFIGURE, -1, NULL,
				    "bpf: out of memory recording the change (the "
				    "kernel holds it; open a new handle to read it back)");
	}
	for (i = 0; i < b->ni; i++) {
		if (!c->gone[i]) {
			next[n++] = b->inst[i];
			continue;
		}
		for (k = 0; k < b->inst[i].nn; k++) {
			const struct bnic *bn = &b->inst[i].nics[k];

			old_addrs(b, bn);
			if (change_keeps(c, bn->ifindex))
				continue;
			leave[nd++] = (struct leave){ bn->ifindex, bn->gen };
		}
		binst_free(&b->inst[i]);
	}
	for (gi = 0; c->p && gi < c->p->n; gi++) {
		struct binst *in;

		if (c->same[gi])
			continue;
		in = &next[n];
		if (binst_make(in, c->p->g[gi], bpf_digest(b, c->p->g[gi]), &c->ifi[c->off[gi]],
			       &c->gen[c->off[gi]]))
			err = -ENOMEM;	/* the kernel is right; a re-read fixes us */
		else
			n++;
	}
	free(b->inst);
	b->inst = next;
	b->ni = n;
	b->capi = n;
	bpf_index_drop(b);
	leave_order(leave, nd, detach);
	free(leave);
	cleanup(b, c, detach, nd, res);
	free(detach);
	if (err)
		vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
			     "bpf: out of memory recording the change (the kernel "
			     "holds it; open a new handle to read it back)");
	return err;
}

static void change_free(struct change *c)
{
	free(c->ifi);
	free(c->off);
	free(c->same);
	free(c->fix);
	free(c->gone);
	free(c->drop);
	free(c->gen);
	free(c->want);
	free(c->have);
	free(c->old);
	free(c->kept);
	for (unsigned int gi = 0; c->carry && c->p && gi < c->p->n; gi++)
		free(c->carry[gi]);
	free(c->carry);
	ulog_free(c->log);
}

static void count(struct vnic_bpf *b, const struct change *c,
		  struct vnic_filter_result *res)
{
	unsigned int gi, i;

	for (gi = 0; c->p && gi < c->p->n; gi++) {
		if (c->same[gi] || c->fix[gi])
			res->guests_unchanged++;
		else if (bpf_inst_of(b, c->p->g[gi]->name))
			res->guests_changed++;
		else
			res->guests_added++;
	}
	for (i = 0; i < b->ni; i++)
		if (c->drop[i] && !bpf_inst_foreign(&b->inst[i]))
			res->guests_removed++;
}

int bpf_change(struct vnic_bpf *b, const struct vnic_policy *p,
	       const char *const *remove, unsigned int nremove, enum ch_mode mode,
	       vnic_filter_diff_fn fn, void *arg, struct vnic_filter_result *res)
{
	struct ulog log = { 0 };
	struct change c = { .p = p, .mode = mode, .log = &log };
	bool sync = mode != CH_APPLY;
	struct tc_made made = { 0 }, swapped = { 0 };
	unsigned int total;
	struct bpf_state st;
	int err = 0;

	memset(b->fault_seen, 0, sizeof(b->fault_seen));
	if (p) {
		err = check_policy(b, p);
		if (!err)
			err = policy_resolve_nics(b->ctx, p, &b->ifsock, &c.ifi,
						  &c.off);
		if (err) {
			change_free(&c);
			return err;
		}
	}
	/* A sync's truth is the kernel's, not this handle's memory: the maps
	 * are read again (unless open just read them), so that what another
	 * process changed in them is seen and put back. */
	if (sync && !b->fresh)
		err = bpf_reread(b);
	b->fresh = false;
	if (err) {
		change_free(&c);
		return err;
	}
	total = p ? c.off[p->n] : 0;
	c.same = calloc((p ? p->n : 0) + 1, sizeof(*c.same));
	c.fix = calloc((p ? p->n : 0) + 1, sizeof(*c.fix));
	c.gone = calloc(b->ni + 1, sizeof(*c.gone));
	c.drop = calloc(b->ni + 1, sizeof(*c.drop));
	c.gen = calloc(total + 1, sizeof(*c.gen));
	c.carry = calloc((p ? p->n : 0) + 1, sizeof(*c.carry));
	err = c.same && c.fix && c.gone && c.drop && c.gen && c.carry ? 0 :
	      oom(b, "the change's plan");
	if (!err)
		err = plan(b, &c, remove, nremove, sync);
	if (!err)
		count(b, &c, res);
	if (!err)
		err = still_ours(b);
	if (!err)
		err = check_hooks(b, &c);
	if (!err && sync) {
		struct vnic_filter_result rep = { .sz = sizeof(rep) };

		err = bpf_report(b, &c, fn, arg, &rep);
		res->repaired = rep.repaired;
		if (mode == CH_DIFF) {
			res->messages = rep.messages;
			res->writes = rep.writes;
		}
	}
	if (err || mode == CH_DIFF) {
		change_free(&c);
		return err;
	}
	err = attach(b, &c, &made, res);
	if (!err) {
		err = write_maps(b, &c, &st);
		if (!err)
			err = repoint(b, &c, &swapped, res);
		if (err) {
			unsigned int lost = ulog_undo(&log);

			tc_undo(b, &made);
			if (lost) {
				char first[256];

				snprintf(first, sizeof(first), "%s", vnic_ctx_errmsg(b->ctx));
				vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
					     "%s; undo failed for %u map entries: the "
					     "maps may differ from the last policy, sync "
					     "to repair", first, lost);
			}
		}
	}
	tc_made_free(&made);
	tc_made_free(&swapped);
	if (!err) {
		if (log.writes) {
			res->writes = 1;
			res->messages += log.writes;
		}
		b->st = st;
		for (unsigned int gi = 0; p && gi < p->n; gi++)
			if (c.same[gi]) {
				const struct binst *in = bpf_inst_of(b, p->g[gi]->name);

				for (unsigned int k = 0; in && k < in->nn; k++)
					c.gen[c.off[gi] + k] = in->nics[k].gen;
			}
		err = commit(b, &c, res);
	}
	change_free(&c);
	return err;
}
