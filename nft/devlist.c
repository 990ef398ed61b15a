// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Device (and chain) name lists with O(1) membership: the devices of a
 * base chain, the custom and to-guest chains read back.  A removed name
 * stays in its slot, marked dead, so indexes stay valid within a batch
 * (devlist_compact() drops the dead between batches).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/chain.h>

#include "nft/internal.h"

void devlist_clear(struct devlist *d)
{
	unsigned int i;

	for (i = 0; i < d->n; i++)
		free(d->names[i]);
	free(d->names);
	free(d->live);
	strmap_free(&d->map);
	memset(d, 0, sizeof(*d));
}

bool devlist_has(const struct devlist *d, const char *name)
{
	uint32_t v;

	return !strmap_get(&d->map, name, &v) && d->live[v];
}

void devlist_del(struct devlist *d, const char *name)
{
	uint32_t v;

	if (!strmap_get(&d->map, name, &v) && d->live[v]) {
		d->live[v] = false;
		d->ndead++;
	}
}

/* Dead names are dropped once there are at least this many and they are
 * most of the list: a compaction costs no more than the deletes that made
 * them. */
#define DEVLIST_DEAD_MIN 64

/*
 * A handle's list of guests' chains outlives many guests: without this it
 * would hold every name it ever had.  Between batches only (it moves the
 * indexes the map holds).  The names are copies of their own, so the new
 * map is built first: if it cannot be, the list stays as it was.
 */
void devlist_compact(struct devlist *d)
{
	struct strmap m;
	unsigned int i, k = 0;

	if (d->ndead < DEVLIST_DEAD_MIN || 2 * d->ndead <= d->n)
		return;
	strmap_init(&m);
	for (i = 0; i < d->n; i++)
		if (d->live[i] && strmap_add(&m, d->names[i], k++)) {
			strmap_free(&m);
			return;
		}
	for (i = 0, k = 0; i < d->n; i++) {
		if (!d->live[i]) {
			free(d->names[i]);
			continue;
		}
		d->names[k] = d->names[i];
		d->live[k++] = true;
	}
	strmap_free(&d->map);
	d->map = m;
	d->n = k;
	d->ndead = 0;
}

int devlist_add(struct devlist *d, const char *name)
{
	uint32_t v;
	char *copy;

	if (!strmap_get(&d->map, name, &v)) {
		d->ndead -= !d->live[v];
		d->live[v] = true;
		return 0;
	}
	if (d->n == d->cap) {
		unsigned int cap = d->cap ? d->cap * 2 : 16;
		char **p = realloc(d->names, cap * sizeof(*p));
		bool *l = realloc(d->live, cap * sizeof(*l));

		if (p)
			d->names = p;
		if (l)
			d->live = l;
		if (!p || !l)
			return -ENOMEM;
		d->cap = cap;
	}
	copy = strdup(name);
	if (!copy || strmap_add(&d->map, copy, d->n)) {
		free(copy);
		return -ENOMEM;
	}
	d->live[d->n] = true;
	d->names[d->n++] = copy;
	return 0;
}

/*
 * devs (NULL-terminated) as a base chain's hook devices.  libnftnl 1.2.4
 * copies each name with strdup() and keeps a NULL where that failed; the
 * message it builds then dereferences it.  So the copy is read back: a
 * name missing from it is -ENOMEM, as the failed copy was.
 */
int chain_set_devices(struct nftnl_chain *c, const char **devs)
{
	const char *const *got;
	unsigned int n = 0, i;

	while (devs[n])
		n++;
	if (nftnl_chain_set_array(c, NFTNL_CHAIN_DEVICES, devs) < 0)
		return -ENOMEM;
	got = nftnl_chain_get_array(c, NFTNL_CHAIN_DEVICES);
	for (i = 0; got && i < n && got[i]; i++)
		;
	return got && i == n ? 0 : -ENOMEM;
}

/* The device names of a chain message's NFTA_HOOK_DEVS. */
static unsigned int msg_devs(const struct nlmsghdr *nlh)
{
	const struct nlattr *a, *h, *d;
	unsigned int k = 0;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) != NFTA_CHAIN_HOOK)
			continue;
		mnl_attr_for_each_nested(h, a) {
			if (mnl_attr_get_type(h) != NFTA_HOOK_DEVS)
				continue;
			mnl_attr_for_each_nested(d, h)
				k += mnl_attr_get_type(d) == NFTA_DEVICE_NAME;
		}
	}
	return k;
}

/*
 * A chain libnftnl parsed from nlh: libnftnl 1.2.4 copies the names of
 * NFTA_HOOK_DEVS with strdup() and ends the array at the first copy that
 * failed, parsing "successfully" (NFTA_HOOK_DEV's failure it reports).  So
 * the names kept are counted against the message's: fewer is -ENOMEM, not
 * a chain that lost devices.
 */
int chain_parsed_devs(const struct nlmsghdr *nlh, const struct nftnl_chain *c)
{
	const char *const *devs = nftnl_chain_is_set(c, NFTNL_CHAIN_DEVICES) ?
				  nftnl_chain_get_array(c, NFTNL_CHAIN_DEVICES) : NULL;
	unsigned int k = 0;

	while (devs && devs[k])
		k++;
	return k < msg_devs(nlh) ? -ENOMEM : 0;
}
