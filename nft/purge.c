// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Removing a guest the handle knows only by name (installed before a
 * restart): what it has is read from the kernel, not remembered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <libnftnl/set.h>

#include "nft/read.h"

/* Its ifindexes are the drops map's elements naming its counter;
 * every set element keyed by one of them goes. */
struct purge {
	struct vnic_nft *n;
	struct nbatch *b;
	const char *ctr;
	int *ifi;
	unsigned int nifi, cap;
	struct nftnl_set *del;
	enum nset set;			/* of del */
};

static int drops_cb(struct nftnl_set_elem *e, void *data)
{
	struct purge *pu = data;
	const char *obj = nftnl_set_elem_get_str(e, NFTNL_SET_ELEM_OBJREF);
	uint32_t len = 0;
	const uint32_t *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);

	if (!obj || !key || len < 4 || strcmp(obj, pu->ctr))
		return 0;
	if (pu->nifi == pu->cap) {
		unsigned int cap = pu->cap ? pu->cap * 2 : 16;
		int *p = realloc(pu->ifi, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		pu->ifi = p;
		pu->cap = cap;
	}
	pu->ifi[pu->nifi++] = (int)*key;
	return 0;
}

static int purge_elem_cb(struct nftnl_set_elem *e, void *data)
{
	struct purge *pu = data;
	uint32_t len = 0, k;
	const uint8_t *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
	struct nftnl_set_elem *d;
	unsigned int i;

	if (!key || len < 4)
		return 0;
	memcpy(&k, key, 4);
	for (i = 0; i < pu->nifi && pu->ifi[i] != (int)k; i++)
		;
	if (i == pu->nifi)
		return 0;
	d = nftnl_set_elem_alloc();
	if (!d)
		return -ENOMEM;
	nftnl_set_elem_set(d, NFTNL_SET_ELEM_KEY, key, len);
	nftnl_set_elem_add(pu->del, d);
	pu->n->pend[pu->set]--;
	return 0;
}

static int purge_set(struct purge *pu, enum nset s)
{
	char name[16];
	struct nftnl_set_elems_iter *it;
	struct nlmsghdr *nlh;
	bool any;
	int err;

	pu->del = nftnl_set_alloc();
	if (!pu->del)
		return -ENOMEM;
	pu->set = s;
	nftnl_set_set_str(pu->del, NFTNL_SET_TABLE, pu->n->table);
	nftnl_set_set_str(pu->del, NFTNL_SET_NAME, set_name(s, name, sizeof(name)));
	err = read_elems(pu->n, s, purge_elem_cb, pu);
	/* A mask's set made earlier in this batch is not in the kernel yet
	 * and holds none of the guest's elements. */
	if (err == -ENOENT && s >= S__MAX)
		err = 0;
	it = err ? NULL : nftnl_set_elems_iter_create(pu->del);
	any = it && nftnl_set_elems_iter_next(it);
	nftnl_set_elems_iter_destroy(it);
	if (any) {
		nlh = nbatch_msg(pu->b, NFT_MSG_DELSETELEM, 0);
		if (nlh) {
			nftnl_set_elems_nlmsg_build_payload(nlh, pu->del);
			nbatch_end(pu->b, nlh);
		} else {
			err = -ENOMEM;
		}
	}
	nftnl_set_free(pu->del);
	pu->del = NULL;
	return err;
}

/*
 * A purged guest's NICs, known by ifindex, leave the shared chains under
 * the names they have now.  A NIC gone since has left its chain by itself
 * (the kernel unhooks a device that goes); only hooked names are removed.
 */
static int unhook_ifindexes(struct vnic_nft *n, const int *ifi, unsigned int k)
{
	char names[k + 1][IFNAMSIZ];
	const char *devs[k + 1];
	unsigned int i, m = 0, c;
	int err = k ? ifsock_get(n) : 0;

	for (i = 0; !err && i < k; i++) {
		struct ifreq ifr = { .ifr_ifindex = ifi[i] };

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

int purge_guest(struct vnic_nft *n, struct nbatch *b, const char *name,
		unsigned int keep)
{
	struct pguest g = { 0 };
	char ctr[80], chain[80];
	struct purge pu = { .n = n, .b = b, .ctr = ctr };
	unsigned int s;
	int err;

	guest_names(name, ctr, chain, sizeof(ctr));
	err = read_elems(n, S_CTR, drops_cb, &pu);
	for (s = 0; !err && s < NSETS; s++)
		if (s != S_GUESTS && s != S_L2OK &&
		    (s < S__MAX || swmask_ready(n, s - S__MAX)))
			err = purge_set(&pu, (enum nset)s);
	if (!err)
		err = unhook_ifindexes(n, pu.ifi, pu.nifi);
	free(pu.ifi);
	/* Its to-guest chain goes whole: its old devices are unknown. */
	if (!err)
		err = guest_del_to_chain(n, b, name);
	if (err)
		return err;
	snprintf(g.name, sizeof(g.name), "%s", name);
	g.nr = devlist_has(&n->customs, chain);
	return guest_put(n, b, &g, NULL, 0, false, keep & ~GP_KEEP_TO);
}
