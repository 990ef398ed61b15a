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
	bool comment_ours;		/* the table says "managed by libvnic" */
	bool state_bad;			/* a key-0 element we cannot read */
	uint32_t state_gen;		/* its g=: the generation it was written
					 * in (0: unknown) */
};

int read_table(struct vnic_nft *n, struct table_info *ti);
/* The state element: ti->has_digest and ti->digest. */
int read_state(struct vnic_nft *n, struct table_info *ti);
/* Which base chains (shards) exist, and their devices; every chain's name
 * into names. */
int read_chains(struct vnic_nft *n, struct devlist *names);
/* Every element of a set, one call of fn each. */
int read_elems(struct vnic_nft *n, enum nset set,
	       int (*fn)(struct nftnl_set_elem *e, void *data), void *data);
/* Each element of a set-element message (a dump's reply or a batch's),
 * parsed into s (the caller's: the elements live as long as it), through
 * fn.  A message libnftnl cannot parse has no elements, or with strict is
 * -EPROTO; a failed allocation is -ENOMEM, never an empty set. */
struct nftnl_set;
int elems_each(struct nftnl_set *s, const struct nlmsghdr *nlh, bool strict,
	       int (*fn)(struct nftnl_set_elem *e, void *data), void *data);
/* An element's comment, NUL-ended, or NULL. */
const char *elem_comment(const struct nftnl_set_elem *e);
int read_counter(struct vnic_nft *n, const char *name, uint64_t *pkts,
		 uint64_t *bytes);

/* check.c: a table named like ours, checked (-EUCLEAN: made by hand or
 * damaged, with a message saying what and how to recover). */
bool check_table_comment(const uint8_t *ud, uint32_t len);
/* Every set of the layout, of its type; sets ti->ours. */
int check_sets(struct vnic_nft *n, struct table_info *ti);
/* The chains the sets and prefix chains read imply, among names. */
int check_chains(struct vnic_nft *n, const struct devlist *names);
/* An element of the guests set; parsed: its comment read as NAME DIGEST. */
int check_guest_elem(struct vnic_nft *n, uint32_t key, const char *name,
		     bool parsed);
/* The state element against the guests read (XOR of their parts). */
int check_state(struct vnic_nft *n, const struct table_info *ti,
		uint64_t digest, unsigned int nguests);

#endif /* VNIC_NFT_READ_H */
