// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Removing guests the handle knows only by name (installed before a
 * restart, or by another process): what they have is read from the kernel,
 * not remembered.  The table's sets are read back once per change
 * (readback.c, as a sync reads them), whatever the number of such guests,
 * and indexed: a guest's ifindexes are the drops map's elements naming its
 * counter, and every element of the NIC-keyed sets keyed by one of them
 * goes.  One read per guest would make removing N of them cost N dumps of
 * N elements.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <libnftnl/set.h>

#include "nft/state.h"

/* An element of a NIC-keyed set, by the ifindex its key starts with. */
struct pelem {
	uint32_t ifi;
	enum nset set;
	const struct st_elem *e;
};

/* A drops element: the counter it names, and its NIC. */
struct pctr {
	const char *ctr;		/* into the element's value */
	size_t len;
	uint32_t ifi;
};

struct purge_read {
	struct tstate have;
	struct pelem *el;		/* sorted by ifi */
	unsigned int nel;
	struct pctr *ctr;		/* sorted by ctr */
	unsigned int nctr;
};

void purge_read_free(struct purge_read *pr)
{
	if (!pr)
		return;
	tstate_free(&pr->have);
	free(pr->el);
	free(pr->ctr);
	free(pr);
}

static int cmp_elem(const void *a, const void *b)
{
	const struct pelem *x = a, *y = b;

	return x->ifi < y->ifi ? -1 : x->ifi > y->ifi;
}

static int cmp_ctr(const void *a, const void *b)
{
	const struct pctr *x = a, *y = b;
	size_t l = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->ctr, y->ctr, l);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static uint32_t key_ifi(const struct st_elem *e)
{
	uint32_t k;

	memcpy(&k, e->key, 4);
	return k;
}

/* The sets a NIC has elements in: all of them but the guests set and the
 * constant one.  A set the read could not parse cannot be purged. */
static int index_set(struct vnic_nft *n, struct purge_read *pr,
		     struct st_set *st, unsigned int *k)
{
	int s = st_set_index(st->name);
	unsigned int i;

	if (s < 0 || s == S_GUESTS || s == S_L2OK)
		return 0;
	if (!st->shape_ok || !st->readable)
		return vnic_set_err(n->ctx, -EUCLEAN, VNIC_STEP_DUMP, -1, NULL,
				    "table netdev %s: the elements of set %s "
				    "cannot be read: a sync repairs it",
				    n->table, st->name);
	for (i = 0; i < st->n; i++) {
		const struct st_elem *e = &st->el[i];

		if (e->klen < 4)
			continue;
		pr->el[*k] = (struct pelem){ key_ifi(e), (enum nset)s, e };
		(*k)++;
		/* Its value names its counter. */
		if (s == S_CTR && *st_elem_objref(st, e)) {
			const char *c = st_elem_objref(st, e);

			pr->ctr[pr->nctr++] = (struct pctr){ c, strlen(c),
							     key_ifi(e) };
		}
	}
	return 0;
}

static int purge_read(struct vnic_nft *n, struct purge_read **out)
{
	struct purge_read *pr = calloc(1, sizeof(*pr));
	unsigned int i, total = 0, k = 0;
	int err = pr ? installed_read_elems(n, &pr->have) : -ENOMEM;

	for (i = 0; !err && i < pr->have.sets.n; i++)
		total += ((struct st_set *)pr->have.sets.v[i])->n;
	if (!err) {
		pr->el = calloc(total + 1, sizeof(*pr->el));
		pr->ctr = calloc(total + 1, sizeof(*pr->ctr));
		if (!pr->el || !pr->ctr)
			err = -ENOMEM;
	}
	for (i = 0; !err && i < pr->have.sets.n; i++)
		err = index_set(n, pr, pr->have.sets.v[i], &k);
	if (err) {
		purge_read_free(pr);
		return err;
	}
	pr->nel = k;
	qsort(pr->el, pr->nel, sizeof(*pr->el), cmp_elem);
	qsort(pr->ctr, pr->nctr, sizeof(*pr->ctr), cmp_ctr);
	*out = pr;
	return 0;
}

/* The guest's ifindexes (those its counter has in drops), malloc'd. */
static int guest_ifis(const struct purge_read *pr, const char *ctr,
		      uint32_t **ifi, unsigned int *count)
{
	struct pctr key = { ctr, strlen(ctr), 0 };
	const struct pctr *p = bsearch(&key, pr->ctr, pr->nctr, sizeof(key), cmp_ctr);
	unsigned int lo, hi;

	*count = 0;
	*ifi = NULL;
	if (!p)
		return 0;
	for (lo = (unsigned int)(p - pr->ctr); lo && !cmp_ctr(&pr->ctr[lo - 1], &key); lo--)
		;
	for (hi = lo; hi < pr->nctr && !cmp_ctr(&pr->ctr[hi], &key); hi++)
		;
	*ifi = calloc(hi - lo, sizeof(**ifi));
	if (!*ifi)
		return -ENOMEM;
	for (*count = 0; lo < hi; lo++)
		(*ifi)[(*count)++] = pr->ctr[lo].ifi;
	return 0;
}

/* The elements keyed by ifindex i: pr->el[*first, *end). */
static void elems_of(const struct purge_read *pr, uint32_t i,
		     unsigned int *first, unsigned int *end)
{
	unsigned int lo = 0, hi = pr->nel;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (pr->el[mid].ifi < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (hi < pr->nel && pr->el[hi].ifi == i)
		hi++;
	*end = hi < lo ? lo : hi;
}

static int cmp_set(const void *a, const void *b)
{
	const struct pelem *x = *(const struct pelem *const *)a;
	const struct pelem *y = *(const struct pelem *const *)b;

	return x->set < y->set ? -1 : x->set > y->set;
}

/* One DELSETELEM of el[0]'s set: its elements among el[0..k). */
static int del_set(struct vnic_nft *n, struct nbatch *b,
		   const struct pelem *const *el, unsigned int k)
{
	struct nftnl_set *del = nftnl_set_alloc();
	enum nset s = el[0]->set;
	struct nlmsghdr *nlh;
	unsigned int i;
	char name[16];

	if (!del)
		return -ENOMEM;
	if (set_id(del, n->table, set_name(s, name, sizeof(name)))) {
		nftnl_set_free(del);
		return -ENOMEM;
	}
	for (i = 0; i < k && el[i]->set == s; i++) {
		struct nftnl_set_elem *d = nftnl_set_elem_alloc();

		if (!d) {
			nftnl_set_free(del);
			return -ENOMEM;
		}
		nftnl_set_elem_set(d, NFTNL_SET_ELEM_KEY, el[i]->e->key,
				   el[i]->e->klen);
		nftnl_set_elem_add(del, d);
		n->pend[s]--;
	}
	nlh = nbatch_msg(b, NFT_MSG_DELSETELEM, 0);
	if (nlh) {
		nftnl_set_elems_nlmsg_build_payload(nlh, del);
		nbatch_end(b, nlh);
	}
	nftnl_set_free(del);
	return nlh ? (int)i : -ENOMEM;
}

/* Every element keyed by one of the guest's ifindexes: a DELSETELEM per
 * set holding some. */
static int del_elems(struct vnic_nft *n, struct nbatch *b, const struct purge_read *pr,
		     const uint32_t *ifi, unsigned int k)
{
	const struct pelem **el = NULL;
	unsigned int i, j, end, m = 0, cap = 0;
	int err = 0;

	for (i = 0; i < k; i++)
		for (elems_of(pr, ifi[i], &j, &end); j < end; j++) {
			if (m == cap) {
				const struct pelem **p;

				cap = cap ? 2 * cap : 16;
				p = realloc(el, cap * sizeof(*el));
				if (!p) {
					free(el);
					return -ENOMEM;
				}
				el = p;
			}
			el[m++] = &pr->el[j];
		}
	if (m)
		qsort(el, m, sizeof(*el), cmp_set);
	for (i = 0; i < m && err >= 0; i += (unsigned int)err)
		err = del_set(n, b, &el[i], m - i);
	free(el);
	return err < 0 ? err : 0;
}

/*
 * A purged guest's NICs, known by ifindex, leave the shared chains under
 * the names they have now.  A NIC gone since has left its chain by itself
 * (the kernel unhooks a device that goes); only hooked names are removed.
 */
static int unhook_ifindexes(struct vnic_nft *n, const uint32_t *ifi, unsigned int k)
{
	char names[k + 1][IFNAMSIZ];
	const char *devs[k + 1];
	unsigned int i, m = 0, c;
	int err = k ? ifsock_get(n) : 0;

	for (i = 0; !err && i < k; i++) {
		struct ifreq ifr = { .ifr_ifindex = (int)ifi[i] };

		n->ctx->stats.ioctls++;
		if (ioctl(n->ifsock, SIOCGIFNAME, &ifr) < 0)
			continue;
		memcpy(names[m], ifr.ifr_name, IFNAMSIZ);
		devs[m] = names[m];
		m++;
	}
	for (c = 0; !err && m && c < C__MAX; c++)
		err = shard_note_devs(n, (enum nchain)c, devs, m, true);
	return err;
}

int purge_guest(struct vnic_nft *n, struct nbatch *b, struct purge_read **prp,
		const char *name, unsigned int keep)
{
	struct pguest g = { 0 };
	char ctr[80], chain[80];
	uint32_t *ifi = NULL;
	unsigned int k = 0;
	int err = 0;

	guest_names(name, ctr, chain, sizeof(ctr));
	if (!*prp)
		err = purge_read(n, prp);
	if (!err)
		err = guest_ifis(*prp, ctr, &ifi, &k);
	if (!err)
		err = del_elems(n, b, *prp, ifi, k);
	if (!err)
		err = unhook_ifindexes(n, ifi, k);
	free(ifi);
	/* Its to-guest chain goes whole: its old devices are unknown. */
	if (!err)
		err = guest_del_to_chain(n, b, name);
	if (err)
		return err;
	snprintf(g.name, sizeof(g.name), "%s", name);
	g.nr = devlist_has(&n->customs, chain);
	return guest_put(n, b, &g, NULL, 0, false, keep & ~GP_KEEP_TO);
}
