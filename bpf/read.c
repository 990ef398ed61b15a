// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The installed guests as the maps hold them, read once when a handle
 * adopts the maps of an earlier one: "nics" gives each NIC its guest,
 * ifindex, kind and generation, "guests" each guest's digest, and ip4s/ip6s
 * the addresses of each NIC's current generation (others are leftovers of
 * a change that did not finish its clean-up, or another writer's next
 * generation: noted here, deleted by this handle's next change); "drops"
 * which NICs have their counter, and the counters of no NIC (noted too).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/internal.h"

static struct binst *guest_get(struct vnic_bpf *b, const char *name)
{
	struct binst *g = bpf_inst_of(b, name);

	if (g)
		return g;
	if (b->ni == b->capi) {
		unsigned int cap = b->capi ? 2 * b->capi : 16;
		struct binst *p = realloc(b->inst, cap * sizeof(*p));

		if (!p)
			return NULL;
		b->inst = p;
		b->capi = cap;
		bpf_index_drop(b);
	}
	g = &b->inst[b->ni++];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	bpf_index_guest_added(b);
	return g;
}

/* The addresses a nics value holds itself (the others are in the maps). */
static int inline_addrs(struct bnic *n, const struct bpf_nic *v)
{
	unsigned int k;

	if (v->n_in4 != BPF_IN_MAP && v->n_in4 <= BPF_IN4) {
		n->v4 = calloc(v->n_in4 + 1, sizeof(*n->v4));
		if (!n->v4)
			return -ENOMEM;
		for (k = 0; k < v->n_in4; k++)
			n->v4[k].s_addr = v->in4[k];
		n->n4 = v->n_in4;
	}
	if (v->n_in6 != BPF_IN_MAP && v->n_in6 <= BPF_IN6) {
		n->v6 = calloc(v->n_in6 + 1, sizeof(*n->v6));
		if (!n->v6)
			return -ENOMEM;
		memcpy(n->v6, v->in6, v->n_in6 * 16u);
		n->n6 = v->n_in6;
	}
	return 0;
}

/* fn sees each entry of a map: its key and value. */
typedef int (*entry_fn)(struct vnic_bpf *b, const void *key, const void *val, void *arg);

#define BATCH	256

/* The per-key walk: two syscalls an entry (the fallback of map_each()). */
static int map_walk(struct vnic_bpf *b, int fd, uint32_t klen, entry_fn fn, void *arg,
		    uint8_t *key, uint8_t *next, uint8_t *val)
{
	void *prev = NULL;
	int err = 0;

	while (!err && !bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, klen);
		prev = key;
		if (!bpf_map_lookup_elem(fd, key, val))
			err = fn(b, key, val, arg);
	}
	return err;
}

/*
 * Every entry of map fd, BATCH at a time (BPF_MAP_LOOKUP_BATCH, Linux 5.6):
 * one syscall a batch where the per-key walk takes two an entry, which was
 * most of a restart's map read.  The walk where the kernel refuses batches.
 */
static int map_each(struct vnic_bpf *b, int fd, uint32_t klen, uint32_t vlen,
		    entry_fn fn, void *arg)
{
	uint8_t *keys = malloc(BATCH * klen + klen), *vals = malloc(BATCH * vlen);
	uint32_t token = 0, count, i;
	bool first = true;
	int err = 0, ret;

	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		count = BATCH;
		ret = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys, vals,
					   &count, NULL) ? -errno : 0;
		if (ret && ret != -ENOENT) {
			if (first)	/* e.g. -EINVAL before 5.6 */
				err = map_walk(b, fd, klen, fn, arg, keys, keys + klen, vals);
			else
				err = ret;
			break;
		}
		for (i = 0; !err && i < count; i++)
			err = fn(b, keys + i * klen, vals + i * vlen, arg);
		if (err || ret == -ENOENT)
			break;
		first = false;
	}
out:
	free(keys);
	free(vals);
	return err;
}

static int nic_entry(struct vnic_bpf *b, const void *k, const void *val, void *arg)
{
	struct bpf_nic v;
	struct binst *g;
	struct bnic *n;
	uint32_t key;

	memcpy(&key, k, sizeof(key));
	memcpy(&v, val, sizeof(v));
	v.guest[sizeof(v.guest) - 1] = '\0';
	v.ifname[sizeof(v.ifname) - 1] = '\0';
	g = guest_get(b, v.guest);
	if (!g)
		return -ENOMEM;
	n = realloc(g->nics, (g->nn + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	g->nics = n;
	n = &g->nics[g->nn++];
	bpf_index_nics_moved(b);
	memset(n, 0, sizeof(*n));
	n->ifindex = (int)key;
	memcpy(n->ifname, v.ifname, sizeof(n->ifname));
	n->kind = v.kind;
	n->gen = v.gen;
	n->idx = v.idx;
	n->raw = v;
	return inline_addrs(n, &v);
}

static int read_nics(struct vnic_bpf *b)
{
	return map_each(b, b->map_nics, sizeof(uint32_t), sizeof(struct bpf_nic), nic_entry,
			NULL);
}

static int by_idx(const void *a, const void *b)
{
	const struct bnic *x = a, *y = b;

	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The guests' NICs in the order of the policy that installed them. */
static void sort_nics(struct vnic_bpf *b)
{
	unsigned int i;

	for (i = 0; i < b->ni; i++)
		if (b->inst[i].nn > 1)	/* a guest with no NIC has nics NULL */
			qsort(b->inst[i].nics, b->inst[i].nn, sizeof(b->inst[i].nics[0]),
			      by_idx);
	bpf_index_nics_moved(b);
}

static int guest_entry(struct vnic_bpf *b, const void *k, const void *val, void *arg)
{
	struct bpf_guest_key key;
	struct bpf_guest v;
	struct binst *g;

	memcpy(&key, k, sizeof(key));
	memcpy(&v, val, sizeof(v));
	key.name[sizeof(key.name) - 1] = '\0';
	g = guest_get(b, key.name);
	if (!g)
		return -ENOMEM;
	g->digest = v.digest;
	g->rec_nics = v.nics;
	return 0;
}

static int read_guests(struct vnic_bpf *b)
{
	return map_each(b, b->map_guests, sizeof(struct bpf_guest_key),
			sizeof(struct bpf_guest), guest_entry, NULL);
}

/* Addresses keyed (ifindex, gen): kept for the NIC's current gen.  The
 * others -- a crashed change's, or a concurrent writer's new generation
 * not yet flipped in -- are only noted: opening a handle writes nothing,
 * and a reader must not delete what a writer is about to point at. */
struct stale {
	struct bpf_a6 *v;
	unsigned int n;
	bool v6;
};

static int addr_entry(struct vnic_bpf *b, const void *k, const void *val, void *arg)
{
	struct stale *st = arg;
	struct bpf_a6 key;
	struct bnic *n;

	memset(&key, 0, sizeof(key));
	memcpy(&key, k, st->v6 ? sizeof(struct bpf_a6) : sizeof(struct bpf_a4));
	n = bpf_nic_of(b, (int)key.ifindex);
	if (!n || n->gen != key.gen) {
		struct bpf_a6 *s = realloc(st->v, (st->n + 1) * sizeof(*s));

		if (!s)
			return -ENOMEM;
		(st->v = s)[st->n++] = key;
		return 0;
	}
	if (st->v6) {
		struct in6_addr *a = realloc(n->v6, (n->n6 + 1) * sizeof(*a));

		if (!a)
			return -ENOMEM;
		n->v6 = a;
		memcpy(&a[n->n6++], key.addr, 16);
	} else {
		struct in_addr *a = realloc(n->v4, (n->n4 + 1) * sizeof(*a));
		uint32_t addr;

		if (!a)
			return -ENOMEM;
		n->v4 = a;
		memcpy(&addr, &key.addr[0], 4);
		a[n->n4++].s_addr = addr;
	}
	return 0;
}

static int read_addrs(struct vnic_bpf *b, int fd, bool v6)
{
	struct stale st = { .v6 = v6 };
	int err;

	err = map_each(b, fd, v6 ? sizeof(struct bpf_a6) : sizeof(struct bpf_a4),
		       sizeof(uint8_t), addr_entry, &st);
	free(b->stale[v6]);
	b->stale[v6] = st.v;
	b->nstale[v6] = st.n;
	return err;
}

void bpf_note_orphans(struct vnic_bpf *b, int nics_fd)
{
	struct bpf_map_info mi;
	uint32_t len = sizeof(mi), key, next, *prev = NULL;

	memset(&mi, 0, sizeof(mi));
	if (bpf_obj_get_info_by_fd(nics_fd, &mi, &len) || mi.key_size != sizeof(key))
		return;
	while (!bpf_map_get_next_key(nics_fd, prev, &next)) {
		int *o = realloc(b->orphans, (b->norphans + 1) * sizeof(*o));

		key = next;
		prev = &key;
		if (!o)
			return;		/* best effort: a later remove can do it */
		b->orphans = o;
		o[b->norphans++] = (int)key;
	}
}

void bpf_drop_orphans(struct vnic_bpf *b, const struct change *c,
		      struct vnic_filter_result *res)
{
	uint32_t *want = NULL, *have = NULL, *old = NULL;
	int *ifi = NULL, *drop = NULL;
	unsigned int i, n = 0, nd = 0;

	/* Only a sync's policy is the whole one: an apply or a remove names
	 * some guests, and the older set's others are still enforced by its
	 * program (the list is kept for the first sync). */
	if (c->mode != CH_SYNC)
		return;
	if (!b->norphans || b->tcx)
		goto out;
	ifi = calloc(b->norphans, sizeof(*ifi));
	want = calloc(b->norphans, sizeof(*want));
	have = calloc(b->norphans, sizeof(*have));
	old = calloc(2 * b->norphans, sizeof(*old));
	drop = calloc(b->norphans, sizeof(*drop));
	if (!ifi || !want || !have || !old || !drop)
		goto out;
	for (i = 0; i < b->norphans; i++) {
		if (change_keeps(c, b->orphans[i]) || bpf_nic_of(b, b->orphans[i]))
			continue;	/* the new policy's: re-pointed */
		ifi[n] = b->orphans[i];
		want[n++] = HOOK_IN | HOOK_EG;
	}
	/* only where our filter runs an older program: a NIC gone, or one
	 * whose slot holds something else now, is left alone */
	if (n && !tc_check(b, ifi, want, have, old, n, false))
		for (i = 0; i < n; i++)
			if (old[2 * i] || old[2 * i + 1])
				drop[nd++] = ifi[i];
	if (nd)
		tc_detach(b, drop, nd, res);
out:
	free(ifi);
	free(want);
	free(have);
	free(old);
	free(drop);
	free(b->orphans);
	b->orphans = NULL;
	b->norphans = 0;
}

static bool gen_live(struct vnic_bpf *b, const struct bpf_a6 *k)
{
	const struct bnic *n = bpf_nic_of(b, (int)k->ifindex);

	return n && n->gen == k->gen;
}

void bpf_drop_stale(struct vnic_bpf *b)
{
	int fds[2] = { b->map_ip4, b->map_ip6 };
	unsigned int v, i;

	for (v = 0; v < 2; v++) {
		for (i = 0; i < b->nstale[v]; i++)
			if (!gen_live(b, &b->stale[v][i]))
				bpf_map_delete_elem(fds[v], &b->stale[v][i]);
		free(b->stale[v]);
		b->stale[v] = NULL;
		b->nstale[v] = 0;
	}
}

/* drops: ifindex -> per-CPU counts.  A NIC without its entry drops
 * uncounted; an entry of no NIC is another process's or a crashed
 * change's: both are damage a sync repairs (bpf/diff.c). */
struct counted {
	uint32_t *foreign;
	unsigned int n;
};

static int drop_entry(struct vnic_bpf *b, const void *k, const void *val, void *arg)
{
	struct counted *c = arg;
	struct bnic *n;
	uint32_t key;

	memcpy(&key, k, sizeof(key));
	n = bpf_nic_of(b, (int)key);
	if (n) {
		n->counted = true;
		return 0;
	}
	if (!(c->n & (c->n + 1))) {	/* 0, 1, 3, 7...: grow to twice */
		uint32_t *f = realloc(c->foreign, 2 * (c->n + 1) * sizeof(*f));

		if (!f)
			return -ENOMEM;
		c->foreign = f;
	}
	c->foreign[c->n++] = key;
	return 0;
}

int bpf_ncpu(struct vnic_bpf *b)
{
	int ncpu = libbpf_num_possible_cpus();

	if (ncpu > 0)
		return ncpu;
	return vnic_set_err(b->ctx, ncpu ? ncpu : -EINVAL, VNIC_STEP_DUMP, -1, NULL,
			    "bpf: the number of possible CPUs, the copies of a drop "
			    "counter (/sys/devices/system/cpu/possible)");
}

static int read_drops(struct vnic_bpf *b)
{
	struct counted c = { 0 };
	int ncpu = bpf_ncpu(b), err;

	if (ncpu < 0)
		return ncpu;
	err = map_each(b, b->map_drops, sizeof(uint32_t),
		       (uint32_t)ncpu * sizeof(struct bpf_drop), drop_entry, &c);
	free(b->fdrops);
	b->fdrops = c.foreign;
	b->nfdrops = c.n;
	return err;
}

int bpf_reread(struct vnic_bpf *b)
{
	struct bpf_state now;
	uint32_t zero = 0;
	unsigned int i;

	memset(&now, 0, sizeof(now));
	if (bpf_map_lookup_elem(b->map_state, &zero, &now))
		return vnic_set_err(b->ctx, -errno, VNIC_STEP_DUMP, -1, NULL,
				    "bpf: reading map state");
	if (memcmp(&now, &b->st, sizeof(now)))
		return vnic_set_err(b->ctx, -EAGAIN, VNIC_STEP_DUMP, -1, NULL,
				    "bpf: another handle changed this namespace's maps "
				    "meanwhile: open a new handle and sync again");
	bpf_index_drop(b);
	for (i = 0; i < b->ni; i++)
		binst_free(&b->inst[i]);
	b->ni = 0;
	return bpf_read_installed(b);
}

/* The entries find their guest, and the address and counter keys their
 * NIC, through model.c's indexes (bpf_inst_of(), bpf_nic_of()): a scan of
 * every guest per entry made a restart quadratic. */
int bpf_read_installed(struct vnic_bpf *b)
{
	int err;

	bpf_index_drop(b);
	err = read_nics(b);
	if (!err)
		err = read_guests(b);
	if (!err)
		sort_nics(b);
	if (!err)
		err = read_addrs(b, b->map_ip4, false);
	if (!err)
		err = read_addrs(b, b->map_ip6, true);
	if (!err)
		err = read_drops(b);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "bpf: reading the installed guests");
	return 0;
}
