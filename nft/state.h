/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The table as objects, by name: what the kernel has (installed.c, read
 * back once) or what a policy wants (want.c, built as a clean apply would
 * build it).  diff.c compares the two and writes the difference.
 */
#ifndef VNIC_NFT_STATE_H
#define VNIC_NFT_STATE_H

#include "nft/read.h"

struct nftnl_chain;
struct nftnl_set;
struct nftnl_set_elem;

/* The longest key of libvnic's sets (ifindex . IPv6): a set of ours is
 * read only when it has the layout's key (readback.c). */
#define KEY_MAX 24

struct st_elem {
	uint8_t key[KEY_MAX];
	uint32_t klen;
	uint32_t voff, vlen;		/* all but the key, in its set's vbuf */
	const struct nlattr *raw;	/* wanted: the element to add, in one of
					 * its set's msgs */
};

/* Every named thing starts with its name: the map borrows it. */
struct st_set {
	char *name;
	bool ours;			/* a name of libvnic's layout */
	bool shape_ok;			/* installed: of the layout's type */
	bool readable;			/* installed: its elements were read */
	uint32_t size;
	struct st_elem *el;
	unsigned int n, cap;
	uint32_t *kslot, kcap;		/* key -> index in el (state.c) */
	char *vbuf;			/* the elements' values, one after
					 * another (no allocation each) */
	size_t vused, vcap;
	struct nlmsghdr *msg, *msg2;	/* wanted: NEWSET (and constant elements) */
	struct nlmsghdr **msgs;		/* wanted: the elements' messages */
	unsigned int nmsgs;
};

struct st_rule {
	uint64_t tag;
	bool tagged;
	uint64_t handle;
	struct nlmsghdr *msg;		/* wanted: NEWRULE */
};

struct st_chain {
	char *name;
	bool base;			/* has a hook */
	/* installed: a guest's chain of a vouched table, whose rules were
	 * not read (readback.c): as libvnic wrote them for its guest. */
	bool rules_unread;
	uint32_t policy;		/* a base chain's: NF_ACCEPT or NF_DROP */
	/* A base chain's hook and priority, where libnftnl could parse
	 * them (hooked; not a prefix hook on libnftnl 1.2). */
	bool hooked;
	uint32_t hooknum;
	int32_t prio;
	char **devs;			/* hooked by name, sorted */
	unsigned int ndevs;
	struct st_rule *rules;
	unsigned int nrules, caprules;
	struct nlmsghdr *msg;		/* wanted: NEWCHAIN */
};

struct st_obj {
	char *name;
	uint32_t type;
	struct nlmsghdr *msg;		/* wanted: NEWOBJ */
};

/* Named things in the order they were found, each allocated once. */
struct ntab {
	void **v;
	unsigned int n, cap;
	struct strmap idx;
};

struct tstate {
	bool exists;
	bool comment_ours;
	uint32_t tflags, towner;	/* towner: NFT_TABLE_F_OWNER's portid */
	struct ntab sets, chains, objs;
	/* The guests set: guests by name, with their digests. */
	struct strmap guests;		/* name -> index in gname */
	char **gname;
	uint64_t *gdigest;
	unsigned int ng, capg;
	/* The state element. */
	bool has_state, state_ok;
	uint64_t state_digest;
	uint32_t state_gen;		/* g=: 0 unknown */
	char *state_comment;
	uint32_t genid;			/* the generation it was read at */
	bool vouched;			/* read at the vouched generation */
	bool torn;			/* every try saw a commit (readback.c) */
};

void *ntab_get(struct ntab *t, const char *name);
void *ntab_add(struct ntab *t, const char *name, size_t size);
void tstate_free(struct tstate *t);
/* Element e of s (its key, and its value: data, object, verdict and
 * userdata); a key already there keeps its first value. */
int st_elem_add(struct st_set *s, const uint8_t *key, uint32_t klen,
		const struct relem *e, const struct nlattr *raw);
struct st_elem *st_elem_find(const struct st_set *s, const uint8_t *key,
			     uint32_t klen);
/* x of set a and y of set b have the same value (false if either is NULL). */
bool st_elem_same(const struct st_set *a, const struct st_elem *x,
		  const struct st_set *b, const struct st_elem *y);
/* The object an element refers to ("" if none). */
const char *st_elem_objref(const struct st_set *s, const struct st_elem *e);
int st_rule_add(struct st_chain *c, uint64_t handle, const uint8_t *ud,
		uint32_t udlen, const struct nlmsghdr *msg);
int st_guest_add(struct tstate *t, const char *name, uint64_t digest);
/* c's hook and priority from its parsed message ch. */
void st_chain_hook(struct st_chain *c, const struct nftnl_chain *ch);
struct nlmsghdr *msg_dup(const struct nlmsghdr *nlh);
/* A name of libvnic's sets (fixed or a switch mask's); its index or -1. */
int st_set_index(const char *name);

/* readback.c: the table as the kernel has it, in a bounded number of
 * dumps (each set, the chains, the rules, the objects once), read again
 * while the generation moves.  vouched (NULL: none): a generation at
 * which the table is as libvnic's last commit left it; a read that begins
 * there skips the rules of the guests' chains (have->vouched). */
int installed_read(struct vnic_nft *n, struct tstate *have,
		   const uint32_t *vouched);
/* The rules of every chain, in one dump (after a vouched read). */
int installed_read_rules(struct vnic_nft *n, struct tstate *have);
/* The guest of a per-guest chain or counter ("g_NAME", "to_NAME",
 * "c_NAME"), or NULL. */
const char *st_obj_guest(const char *name);
/* The same read without the chains, rules and objects (purge.c). */
int installed_read_elems(struct vnic_nft *n, struct tstate *have);

/* want.c: the table a clean apply of p builds (r: its NICs' ifindexes). */
int want_build(struct vnic_nft *n, const struct vnic_policy *p,
	       const struct resolved *r, struct tstate *want);

/* "libvnic-state DIGEST n=COUNTS g=GEN": parsed (0) or -1. */
int state_comment_parse(const char *c, uint64_t *digest, uint32_t *gen);

#endif /* VNIC_NFT_STATE_H */
