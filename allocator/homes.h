/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The namespaces one call touches.  NICs are created through the context's
 * socket (their lower devices live there), but what is learned or changed
 * afterwards goes through a socket in the namespace the NIC lives in.
 */
#ifndef VNIC_ALLOC_HOMES_H
#define VNIC_ALLOC_HOMES_H

#include "allocator/nic.h"

#define MAX_HOMES 16
#define NO_HOME UINT32_MAX

struct linkcache;

struct home {
	int nsfd;			/* -1: the context's namespace */
	struct nl_sock own;		/* a socket there, if foreign */
	struct nl_sock *s;
	struct linkcache *lc;		/* its link table, when needed */
	bool own_lc;
};

struct homes {
	struct vnic_ctx *ctx;
	struct home h[MAX_HOMES];
	unsigned int n;
};

void homes_init(struct homes *hs, struct vnic_ctx *ctx);
void homes_fini(struct homes *hs);
/* Index of nsfd's home (0 for -1), opening a socket there if new. */
int homes_get(struct homes *hs, int nsfd, unsigned int *idx);
/* The home's link table: the context's own, or a one-shot dump. */
int homes_linkcache(struct homes *hs, unsigned int idx, struct linkcache **out);
/* Bring the link tables up to date (after EEXIST). */
int homes_refresh(struct homes *hs);

#endif /* VNIC_ALLOC_HOMES_H */
