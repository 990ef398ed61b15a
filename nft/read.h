/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading the installed table back (see read.c). */
#ifndef VNIC_NFT_READ_H
#define VNIC_NFT_READ_H

#include "nft/internal.h"

struct relem;

struct table_info {
	bool exists, has_digest;
	bool ours;			/* has libvnic's sets */
	uint32_t flags;
	uint32_t owner;			/* NFT_TABLE_F_OWNER's portid */
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
	       int (*fn)(const struct relem *e, void *data), void *data);
/*
 * An element of a set-element message (a dump's reply, or a batch of ours)
 * as its attributes, pointing into the message: read without libnftnl,
 * whose objects cost more than the rest of a sync's work on them.
 */
struct relem {
	const struct nlattr *nest;	/* the whole element */
	const uint8_t *key, *data, *ud;
	uint32_t klen, dlen, udlen;
	const char *objref, *chain;
	uint32_t verdict;		/* with has_verdict */
	bool has_verdict;
};
/* Each element of the message through fn; -EBADMSG: one is malformed. */
int relems_each(const struct nlmsghdr *nlh,
		int (*fn)(const struct relem *e, void *data), void *data);

/* The comment in an element's userdata (NULL: none): nft(8)'s TLVs. */
const char *ud_comment(const uint8_t *ud, uint32_t len);
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
