// SPDX-License-Identifier: LGPL-2.1-or-later
/* The namespaces one call touches (see homes.h). */
#include <errno.h>
#include <string.h>

#include "allocator/homes.h"
#include "lib/linkcache.h"

void homes_init(struct homes *hs, struct vnic_ctx *ctx)
{
	memset(hs, 0, sizeof(*hs));
	hs->ctx = ctx;
	hs->h[0].nsfd = -1;
	hs->h[0].s = &ctx->nl;
	hs->n = 1;
}

void homes_fini(struct homes *hs)
{
	unsigned int i;

	for (i = 1; i < hs->n; i++) {
		nl_close(&hs->h[i].own);
		if (hs->h[i].own_lc)
			linkcache_free(hs->h[i].lc);
	}
	hs->n = 1;
}

int homes_get(struct homes *hs, int nsfd, unsigned int *idx)
{
	struct home *h;
	unsigned int i;
	int err;

	for (i = 1; nsfd >= 0 && i < hs->n; i++)
		if (vnic_netns_same(hs->h[i].nsfd, nsfd))
			break;
	if (nsfd < 0 || i < hs->n) {
		*idx = nsfd < 0 ? 0 : i;
		return 0;
	}
	if (hs->n == MAX_HOMES)
		return -E2BIG;
	h = &hs->h[hs->n];
	err = nl_open(&h->own, NETLINK_ROUTE, nsfd, hs->ctx->rcvbuf, hs->ctx->window,
		      &hs->ctx->stats, NULL);
	if (err)
		return err;
	h->nsfd = nsfd;
	h->s = &h->own;
	*idx = hs->n++;
	return 0;
}

int homes_linkcache(struct homes *hs, unsigned int idx, struct linkcache **out)
{
	struct home *h = &hs->h[idx];
	int err;

	if (h->lc) {
		*out = h->lc;
		return 0;
	}
	if (!idx) {
		err = vnic_ctx_linkcache(hs->ctx, &h->lc);
		if (!err)
			*out = h->lc;
		return err;
	}
	/* Another namespace: a table from one dump, valid for this call. */
	h->lc = linkcache_new(0);
	if (!h->lc)
		return -ENOMEM;
	h->own_lc = true;
	err = linkcache_rebuild(h->lc, h->s);
	if (!err)
		*out = h->lc;
	return err;
}

/* After an EEXIST the tables are stale: the context's catches up from its
 * event queue, a one-shot table is dumped again. */
int homes_refresh(struct homes *hs)
{
	unsigned int i;
	int err = 0;

	hs->h[0].lc = NULL;
	for (i = 1; i < hs->n && !err; i++)
		if (hs->h[i].lc)
			err = linkcache_rebuild(hs->h[i].lc, hs->h[i].s);
	return err;
}
