/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading the installed table back (see read.c). */
#ifndef VNIC_NFT_READ_H
#define VNIC_NFT_READ_H

#include "nft/internal.h"

struct nftnl_set_elem;

struct table_info {
	bool exists, has_digest;
	bool ours;			/* has libvnic's sets */
	uint32_t flags;
	uint64_t digest;
	bool has_counts;		/* the state element's n= */
	uint32_t nelem[STATE_COUNTS];
};

int read_table(struct vnic_nft *n, struct table_info *ti);
/* The state element: ti->has_digest and ti->digest. */
int read_state(struct vnic_nft *n, struct table_info *ti);
/* Every set's size (n->size). */
int read_sizes(struct vnic_nft *n);
/* Which base chains exist, and their devices (devs[C__MAX]). */
/* Which base chains (shards) exist, and their devices. */
int read_chains(struct vnic_nft *n);
/* Every element of a set, one call of fn each. */
int read_elems(struct vnic_nft *n, enum nset set,
	       int (*fn)(struct nftnl_set_elem *e, void *data), void *data);
/* An element's comment, NUL-ended, or NULL. */
const char *elem_comment(const struct nftnl_set_elem *e);
int read_counter(struct vnic_nft *n, const char *name, uint64_t *pkts,
		 uint64_t *bytes);

#endif /* VNIC_NFT_READ_H */
