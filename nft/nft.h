/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The nftables backend's operations, as the filter layer (filter/) calls
 * them; internal since the public filter API (include/vnic/filter.h)
 * dispatches to this backend and to bpf/.  The nftables backend: the policy (policy.h) enforced by one
 * libvnic-owned netdev table, per-guest state in set elements, every change
 * one atomic NFNL batch.  See Documentation/filters.rst.
 *
 * Thread safety: as the context (context.h).  The handle keeps the
 * nfnetlink socket that owns the table: keep it open while the table must
 * stay protected.
 */
#ifndef VNIC_NFT_NFT_H
#define VNIC_NFT_NFT_H

#include <stdint.h>
#include <vnic/common.h>
#include <vnic/context.h>
#include <vnic/policy.h>

struct vnic_nft;

enum vnic_nft_flags {
	VNIC_NFT_NO_OWNER	= 1u << 0,	/* do not claim the table */
	VNIC_NFT_NO_PERSIST	= 1u << 1,	/* table goes with its owner */
	/* Inspect only: nothing is written, not even a claim; a missing table
	 * reads as no guests; changes fail with -EROFS.  Works on a table
	 * another process owns. */
	VNIC_NFT_READ_ONLY	= 1u << 2,
	/* Claim an existing table with the first commit that writes, in its
	 * batch, not at open (VNIC_FILTER_CLAIM_AT_COMMIT). */
	VNIC_NFT_CLAIM_AT_COMMIT = 1u << 4,
};

struct vnic_nft_opts {
	size_t sz;
	const char *table;		/* default "vnic" */
	uint32_t flags;			/* enum vnic_nft_flags */
	/*
	 * NULL-terminated name prefixes ("mvt", "vnet") to hook by prefix
	 * (NFTA_DEVICE_PREFIX, Linux 6.17): one chain per prefix and hook
	 * filters every device whose name starts with it, including devices
	 * made later, so a guest whose NICs all match costs set elements only
	 * (no per-device hook, whose cost grows with the namespace's devices).
	 * Each is 1..14 of [A-Za-z0-9_.-], at most VNIC_NFT_PREFIXES, none a
	 * prefix of another.  One a prefix the table hooks already covers is
	 * not made; one that covers an installed prefix is -EINVAL at open
	 * (the devices both cover would be hooked twice).  Other NICs are
	 * hooked by name as without it.
	 * Where the kernel refuses prefix hooks, every NIC is hooked by name
	 * and vnic_nft_features() lacks VNIC_NFT_FEAT_PREFIX_HOOK.  Caveat:
	 * nft(8) built on libnftnl older than 1.3 cannot list a ruleset that
	 * holds such a chain (Documentation/filters.rst).
	 */
	const char *const *hook_prefixes;
	/*
	 * NICs the sets of a new table are sized for (0: 4096).  A set with a
	 * size is a fixed-size hash the kernel fills without resizing, which
	 * makes large batches cheaper.  When the NICs outgrow it, libvnic
	 * raises the sets' sizes in a commit of its own before the change
	 * (Linux 6.5); the hashes keep their buckets, so lookups walk longer
	 * chains.  Kernels before 6.5 get unsized, resizable sets instead
	 * (VNIC_NFT_FEAT_SET_SIZE unset).  A table made earlier keeps its sizes.
	 */
	uint32_t capacity;
	/* Features known from an earlier handle on this boot (0: probe). */
	uint32_t features;
};

#define VNIC_NFT_PREFIXES 16

/* Features of the running kernel's nf_tables, probed at open. */
enum vnic_nft_feature {
	VNIC_NFT_FEAT_GENID	= 1u << 0,	/* NFNL_BATCH_GENID (4.11) */
	VNIC_NFT_FEAT_OWNER	= 1u << 1,	/* NFT_TABLE_F_OWNER (5.12) */
	VNIC_NFT_FEAT_PERSIST	= 1u << 2,	/* NFT_TABLE_F_PERSIST (6.9) */
	VNIC_NFT_FEAT_EGRESS	= 1u << 3,	/* netdev egress hook (5.16) */
	VNIC_NFT_FEAT_HOOK_UPDATE = 1u << 4,	/* devices added to a chain (6.4) */
	VNIC_NFT_FEAT_PREFIX_HOOK = 1u << 5,	/* NFTA_DEVICE_PREFIX (6.17) */
	VNIC_NFT_FEAT_SET_SIZE	= 1u << 6,	/* set sizes raised in place (6.5) */
};

/* Open the table: check and read what it holds, and claim it (owner flag)
 * unless VNIC_NFT_NO_OWNER; nothing else is written.  A missing table is
 * made by the first commit that writes, in its batch.  A table named like
 * ours that libvnic did not make is refused with -EUCLEAN (-EPERM if a live
 * process owns it) and a message saying what is wrong; one of libvnic's
 * that was damaged opens unclaimed, and apply, remove and vnic_nft_guests()
 * refuse it with -EUCLEAN and that message until vnic_nft_sync() repairs
 * it; one made with VNIC_NFT_NO_OWNER cannot be claimed (-EOPNOTSUPP).
 * Returns 0 with *out set, or a negative errno with nothing written: those,
 * -EINVAL (an invalid table name, prefix or capacity), -E2BIG (common.h),
 * -ENOMEM, or the kernel's (e.g. -EPERM without CAP_NET_ADMIN). */
int vnic_nft_open(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
		  struct vnic_nft **out);
/* Close the socket.  The table stays if it persists (or was not owned). */
void vnic_nft_close(struct vnic_nft *n);
/* The VNIC_NFT_FEAT_* bits; 0 for a NULL n. */
uint32_t vnic_nft_features(const struct vnic_nft *n);

/* What a commit did: written on success only, the bytes its sz covers (sz
 * set to the count written; common.h).  Pass NULL when not wanted. */
struct vnic_nft_result {
	size_t sz;
	uint32_t guests_added, guests_changed, guests_removed, guests_unchanged;
	uint32_t messages;		/* batch messages sent */
	uint32_t batches;		/* sendmsg() of batch pages */
	uint32_t genid;			/* the ruleset generation after it */
	int writes;			/* 0: nothing was written */
	/* Since 0.1 too, after writes: objects of libvnic's that differed
	 * from what it wrote though no guest change explains it (restored),
	 * and objects it did not make (removed): vnic_nft_sync() repairs
	 * both; vnic_nft_diff() counts what a sync would. */
	uint32_t repaired;
};

/*
 * Install or replace the guests of p (others stay), one atomic batch.
 * apply, remove and sync return 0, or a negative errno with the installed
 * state as it was: -EINVAL (NULL, res->sz below the 0.1 struct, a policy
 * that fails vnic_policy_check()), -EROFS (opened VNIC_NFT_READ_ONLY),
 * -EEXIST (a NIC of p belongs to an installed guest p does not replace),
 * -ENODEV (a NIC of p does not exist), -EAGAIN (someone else changed the
 * ruleset meanwhile: build the change again), -ENOMEM, or the kernel's.
 */
int vnic_nft_apply(struct vnic_nft *n, const struct vnic_policy *p,
		   struct vnic_nft_result *res);
/* Remove guests, one atomic batch; unknown names are -ENOENT, nothing
 * done. */
int vnic_nft_remove(struct vnic_nft *n, const char *const *guests,
		    unsigned int count, struct vnic_nft_result *res);
/*
 * Make the table exactly what a clean apply of p into an empty table makes,
 * whatever another process did to it, in one atomic batch of the
 * difference.  Nothing is read back when the kernel proves the table is as
 * libvnic's last commit left it (the ruleset generation stored with the
 * state is the current one) and p is what it holds; otherwise the table is
 * read once (a bounded number of dumps, whatever the number of guests) and
 * compared object by object: missing or changed elements, rules, chains,
 * counters, sets and hooks of libvnic's are restored, objects it did not
 * make are removed (Documentation/filters.rst, "Repair").  Returns as
 * vnic_nft_apply(), and -EUCLEAN for a table libvnic did not make (or one
 * whose sets were replaced by others of another type): nothing is written.
 */
int vnic_nft_sync(struct vnic_nft *n, const struct vnic_policy *p,
		  struct vnic_nft_result *res);

/* One difference between the table and a policy, as reported to a
 * vnic_nft_diff_fn: the struct and its strings are libvnic's, valid during
 * the call; fields at or past sz are not there. */
enum vnic_nft_diff_kind {
	VNIC_NFT_DIFF_GUEST_ADD = 1,	/* in the policy, not installed */
	VNIC_NFT_DIFF_GUEST_CHANGE = 2,	/* installed otherwise */
	VNIC_NFT_DIFF_GUEST_REMOVE = 3,	/* installed, not in the policy */
	VNIC_NFT_DIFF_REPAIR = 4,	/* libvnic's object differs from what
					 * it wrote: restored by a sync */
	VNIC_NFT_DIFF_FOREIGN = 5,	/* not libvnic's: removed by a sync */
};

struct vnic_nft_diff {
	size_t sz;
	uint32_t kind;			/* enum vnic_nft_diff_kind */
	const char *guest;		/* guest entries: its name; else NULL */
	/* Repair and foreign entries: "set ip4s", "map drops", "chain eg0",
	 * "counter c_vm1", "hooks of chain eg0", "state element"; NULL for a
	 * guest entry. */
	const char *object;
	uint32_t added, removed;	/* its elements, rules or devices */
};

/* Called once per difference, guests first, then objects.  Return 0 to go
 * on; anything else stops the call, which returns it (nothing written). */
typedef int (*vnic_nft_diff_fn)(const struct vnic_nft_diff *d, void *arg);

/*
 * What vnic_nft_sync(n, p) would change, without writing anything (works
 * on a handle opened VNIC_NFT_READ_ONLY): fn (may be NULL) sees each
 * difference; res (may be NULL) gets the guests' counts, repaired, and
 * writes set when a sync would write (messages: how many).  Returns 0 (the
 * table differs when res->writes), -EINVAL, -ENODEV (a NIC of p does not
 * exist), -EUCLEAN (a table libvnic did not make), -ENOMEM, fn's non-zero
 * return, or the kernel's.
 */
int vnic_nft_diff(struct vnic_nft *n, const struct vnic_policy *p,
		  vnic_nft_diff_fn fn, void *arg, struct vnic_nft_result *res);
/* vnic_nft_sync() that reports each difference through fn (NULL: none)
 * before it commits them. */
int vnic_nft_sync_diff(struct vnic_nft *n, const struct vnic_policy *p,
		       vnic_nft_diff_fn fn, void *arg, struct vnic_nft_result *res);

/* Installed guests (malloc'd block like vnic_guest_list()).  Returns 0,
 * -EINVAL, -ENOMEM, or -EUCLEAN on a damaged table (vnic_nft_open()). */
int vnic_nft_guests(struct vnic_nft *n, char ***names, unsigned int *count);
/* A guest's drop counter.  Returns 0 with both set, -EINVAL, or the read's
 * negative errno (-ENOENT: no such guest installed). */
int vnic_nft_counter(struct vnic_nft *n, const char *guest, uint64_t *packets,
		     uint64_t *bytes);
/* The ruleset for p as nft(8) text (malloc'd): what apply would install on
 * an empty table, loadable with nft -f.  Returns 0 with *text set, -EINVAL
 * (NULL, a policy that fails vnic_policy_check()), -ENODEV (a NIC of p does
 * not exist) or -ENOMEM. */
int vnic_nft_render(struct vnic_nft *n, const struct vnic_policy *p, char **text);

/* Test hook behind vnic_filter_set_before_commit() (lib/testing.h). */
int vnic_nft_set_before_commit(struct vnic_nft *n, void (*fn)(void *arg), void *arg);
/* Test hook behind vnic_filter_set_batch_tap() (lib/testing.h). */
int vnic_nft_set_batch_tap(struct vnic_nft *n,
			   void (*fn)(void *arg, const void *buf, size_t len),
			   void *arg);
/* Test hook behind vnic_filter_set_render_version() (lib/testing.h). */
int vnic_nft_set_render_version(struct vnic_nft *n, uint32_t version);

#endif /* VNIC_NFT_NFT_H */
