/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvnic filters: the policy (policy.h) enforced by one of two backends
 * behind one contract.
 *
 *   VNIC_BACKEND_NFT  one libvnic-owned netdev table, per-guest state in set
 *                     elements, every change one atomic NFNL batch
 *                     (Documentation/filters.rst)
 *   VNIC_BACKEND_BPF  two tc programs shared by every NIC, per-NIC state in
 *                     BPF maps, attached with clsact + cls_bpf or tcx
 *                     (Documentation/bpf.rst)
 *
 *	struct vnic_filter *f;
 *	VNIC_OPTS(vnic_filter_opts, o, .backend = VNIC_BACKEND_BPF);
 *	vnic_filter_open(ctx, &o, &f);
 *	vnic_filter_sync(f, policy, NULL);
 *
 * Both: open (create or adopt what is installed), apply/sync (only the
 * difference; nothing written when unchanged), remove, read back the
 * installed guests and their drop counters, features.  A change either
 * completes or leaves the installed state as it was.
 *
 * Thread safety: as the context (context.h).  An nft handle keeps the
 * nfnetlink socket that owns the table: keep it open while the table must
 * stay protected.
 */
#ifndef VNIC_FILTER_H
#define VNIC_FILTER_H

#include <stdint.h>
#include <vnic/common.h>
#include <vnic/context.h>
#include <vnic/policy.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vnic_filter;

enum vnic_backend {
	VNIC_BACKEND_NFT	= 0,	/* the default */
	VNIC_BACKEND_BPF	= 1,
};

enum vnic_filter_flags {
	/* nft: do not claim the table.  Others may then write it: apply and
	 * remove read it again if anyone committed since the handle read it,
	 * and a commit by anyone between that read and theirs fails them
	 * with -EAGAIN (retry; the handle has read the table again) */
	VNIC_FILTER_NO_OWNER	= 1u << 0,
	/* nft: the table goes with its owner */
	VNIC_FILTER_NO_PERSIST	= 1u << 1,
	/* nft: inspect only: nothing is written, not even a claim; a missing
	 * table reads as no guests; changes fail with -EROFS.  Works on a
	 * table another process owns. */
	VNIC_FILTER_READ_ONLY	= 1u << 2,
	/* bpf: attach with tcx (Linux 6.6) instead of clsact + cls_bpf: no
	 * qdisc, but an RCU grace period per attach and detach
	 * (Documentation/bpf.rst); -EOPNOTSUPP where the kernel lacks it */
	VNIC_FILTER_TCX		= 1u << 3,
	/* nft: claim an existing table with the first commit that writes (in
	 * its batch), not at open: for a process that exits right after, as
	 * vnicctl.  A sync that changes nothing then writes nothing at all.
	 * Until that commit the table is not protected from other processes,
	 * as with VNIC_FILTER_NO_OWNER; a table another process owns, or one
	 * that cannot be claimed, is refused at open all the same.  The claim
	 * is a batch of its own: a change the kernel refuses after it leaves
	 * the claim committed (Documentation/filters.rst, "Claims and the
	 * generation") */
	VNIC_FILTER_CLAIM_AT_COMMIT = 1u << 4,
};

struct vnic_filter_opts {
	size_t sz;
	enum vnic_backend backend;
	const char *table;		/* nft: default "vnic" */
	uint32_t flags;			/* enum vnic_filter_flags */
	/*
	 * nft: NULL-terminated name prefixes ("mvt", "vnet") to hook by prefix
	 * (NFTA_DEVICE_PREFIX, Linux 6.17): one chain per prefix and hook
	 * filters every device whose name starts with it, including devices
	 * made later, so a guest whose NICs all match costs set elements only
	 * (no per-device hook, whose cost grows with the namespace's devices).
	 * Each is 1..14 of [A-Za-z0-9_.-], at most VNIC_FILTER_PREFIXES, none a
	 * prefix of another.  One a prefix the table hooks already covers is
	 * not made; one that covers an installed prefix is -EINVAL at open
	 * (the devices both cover would be hooked twice).  Other NICs are
	 * hooked by name as without it.
	 * Where the kernel refuses prefix hooks, every NIC is hooked by name
	 * and vnic_filter_features() lacks VNIC_FILTER_FEAT_PREFIX_HOOK.
	 * Caveat: nft(8) built on libnftnl older than 1.3 cannot list a
	 * ruleset that holds such a chain (Documentation/filters.rst).
	 */
	const char *const *hook_prefixes;
	/*
	 * NICs the backend's state is sized for (0: 4096).  nft: the sets of a
	 * new table are fixed-size hashes raised in a commit of their own when
	 * outgrown (Linux 6.5; a table made earlier keeps its sizes).  bpf:
	 * the maps, fixed once made; a change that would overfill one fails
	 * with -ENOSPC.
	 */
	uint32_t capacity;
	/*
	 * nft: the VNIC_FILTER_FEAT_* bits vnic_filter_features() returned
	 * for an earlier handle on this nf_tables module since it was loaded
	 * (0: probe).  Probing is a checked batch the kernel aborts, and an
	 * abort waits for an RCU grace period (5 to 15 ms on a busy host): a
	 * short-lived process that opens once per run (vnic-cni) keeps the
	 * bits across runs instead.  The features are the module's, the probe
	 * runs in ctx's namespace.  Bits outside the nft features: -EINVAL.
	 * Other bits are trusted, not checked: bits the module lacks (it was
	 * replaced, or the bits came from another host) are the caller's
	 * fault and fail later, safely (EOPNOTSUPP or EINVAL at the first
	 * commit, nothing half-written); a caller that gets those from a
	 * change on a handle opened with features reopens with 0.
	 */
	uint32_t features;
};

#define VNIC_FILTER_PREFIXES 16

/* Features of the running kernel, probed at open. */
enum vnic_filter_feature {
	/* nft */
	VNIC_FILTER_FEAT_GENID		= 1u << 0,	/* NFNL_BATCH_GENID (4.11) */
	VNIC_FILTER_FEAT_OWNER		= 1u << 1,	/* NFT_TABLE_F_OWNER (5.12) */
	VNIC_FILTER_FEAT_PERSIST	= 1u << 2,	/* NFT_TABLE_F_PERSIST (6.9) */
	VNIC_FILTER_FEAT_EGRESS		= 1u << 3,	/* netdev egress hook (5.16) */
	VNIC_FILTER_FEAT_HOOK_UPDATE	= 1u << 4,	/* devices added to a chain (6.4) */
	VNIC_FILTER_FEAT_PREFIX_HOOK	= 1u << 5,	/* NFTA_DEVICE_PREFIX (6.17) */
	VNIC_FILTER_FEAT_SET_SIZE	= 1u << 6,	/* set sizes raised in place (6.5) */
	/* bpf */
	VNIC_FILTER_FEAT_TCX		= 1u << 16,	/* tcx (6.6) */
	VNIC_FILTER_FEAT_NETNS_COOKIE	= 1u << 17,	/* SO_NETNS_COOKIE (5.14) */
};

/*
 * Open the backend's state, adopting what an earlier handle (of this or
 * another process) installed; nothing is written.  nft: the table is
 * checked and read, and claimed (owner flag) unless VNIC_FILTER_NO_OWNER
 * (with VNIC_FILTER_CLAIM_AT_COMMIT: by the first commit that writes); a
 * claim of a table as libvnic's last commit left it records the generation
 * it makes, so the next process need not read the table back;
 * a missing table is made by the first commit that writes; a table named
 * like ours that libvnic did not make (or whose sets were replaced by
 * others of another type) is refused with -EUCLEAN (-EPERM if a live
 * process owns it); a damaged table of libvnic's opens, and apply, remove
 * and guests refuse it with -EUCLEAN until a sync repairs it; one made with
 * VNIC_FILTER_NO_OWNER cannot be claimed (-EOPNOTSUPP); -EAGAIN when other
 * processes committed during each of its reads of the table (try again;
 * apply, remove, sync and guests, which read it again, say the same).  bpf: the programs
 * and maps serving the context's namespace are found through the kernel
 * (no bpffs), or loaded.  Returns 0 with *out set, or a negative errno:
 * those, -EINVAL (an unknown backend or flag, an option of the other
 * backend, an invalid table name, prefix or capacity), -E2BIG (common.h), -ENOMEM,
 * bpf: -EBUSY (the namespace's filters are attached in the other mode,
 * tcx or not) and -ENOSPC (a capacity above that of the maps in use), or
 * the kernel's (e.g. -EPERM without CAP_NET_ADMIN or CAP_BPF; bpf: also
 * without CAP_SYS_ADMIN, which finding the programs in use by id needs).
 */
int vnic_filter_open(struct vnic_ctx *ctx, const struct vnic_filter_opts *opts,
		     struct vnic_filter **out);
/* Close the handle; what is installed stays (nft: if the table persists or
 * was not owned).  NULL: nothing. */
void vnic_filter_close(struct vnic_filter *f);
/* The VNIC_FILTER_FEAT_* bits; 0 for a NULL f. */
uint32_t vnic_filter_features(const struct vnic_filter *f);
/* The handle's backend; VNIC_BACKEND_NFT for a NULL f. */
enum vnic_backend vnic_filter_backend(const struct vnic_filter *f);

/* What a change did: written on success only, the bytes its sz covers (sz
 * set to the count written; common.h).  Pass NULL when not wanted. */
struct vnic_filter_result {
	size_t sz;
	uint32_t guests_added, guests_changed, guests_removed, guests_unchanged;
	uint32_t messages;		/* requests sent (nft: batch messages) */
	uint32_t batches;		/* sendmsg() of batches */
	uint32_t genid;			/* nft: the ruleset generation after it */
	int writes;			/* 0: nothing was written */
	/* Objects of libvnic's that differed from what it wrote though
	 * no guest change explains it (restored), and objects it did not
	 * make (removed); vnic_filter_diff() counts what a sync would. */
	uint32_t repaired;
};

/*
 * Install or replace the guests of p (others stay).  apply, remove and
 * sync return 0, or a negative errno with the installed state as it was:
 * -EINVAL (NULL, res->sz below the 0.1 struct, a policy that fails
 * vnic_policy_check()), -EOPNOTSUPP (bpf: custom rules), -EROFS (nft: read
 * only), -EEXIST (a NIC of p belongs to an installed guest p does not
 * replace), -E2BIG (nft: a guest with over 255 veth and tap NICs with
 * no-promisc hooked by name), -ENODEV (a NIC of p does not exist), -EAGAIN (someone else
 * changed the ruleset or the maps meanwhile: build the change again; bpf:
 * the handle keeps what it read, so every later call on it says -EAGAIN
 * again: close it and open a new one), -ENOSPC
 * (bpf: a map is full), -EBUSY (bpf: a NIC holds another tool's qdisc
 * where clsact goes, e.g. "ingress"), -ENOMEM, or the kernel's.
 */
int vnic_filter_apply(struct vnic_filter *f, const struct vnic_policy *p,
		      struct vnic_filter_result *res);
/* Remove guests; unknown names are -ENOENT, nothing done. */
int vnic_filter_remove(struct vnic_filter *f, const char *const *guests,
		       unsigned int count, struct vnic_filter_result *res);
/* Make the installed state equal p: only the difference is written, and
 * nothing when it matches; what another process changed (bpf: a deleted
 * filter or qdisc, a foreign filter in our slot, a map entry deleted,
 * changed or added, a NIC made again under its name) is repaired and
 * counted in res->repaired. */
int vnic_filter_sync(struct vnic_filter *f, const struct vnic_policy *p,
		     struct vnic_filter_result *res);

/* One difference between the installed state and a policy, as reported to
 * a vnic_filter_diff_fn: the struct and its strings are libvnic's, valid
 * during the call; fields at or past sz are not there. */
enum vnic_filter_diff_kind {
	VNIC_FILTER_DIFF_GUEST_ADD = 1,		/* in the policy, not installed */
	VNIC_FILTER_DIFF_GUEST_CHANGE = 2,	/* installed otherwise */
	VNIC_FILTER_DIFF_GUEST_REMOVE = 3,	/* installed, not in the policy */
	VNIC_FILTER_DIFF_REPAIR = 4,		/* libvnic's object differs from
						 * what it wrote: restored by a sync */
	VNIC_FILTER_DIFF_FOREIGN = 5,		/* not libvnic's: removed by a sync */
};

struct vnic_filter_diff {
	size_t sz;
	uint32_t kind;			/* enum vnic_filter_diff_kind */
	const char *guest;		/* guest entries: its name; else NULL */
	/* Repair and foreign entries.  nft: "set ip4s", "map drops",
	 * "chain eg0", "counter c_vm1", "hooks of chain eg0", "state
	 * element".  bpf: "map nics", "map ip4s", "map ip6s", "map guests",
	 * "map drops", "qdisc clsact on vm1h0", "filter vnic on vm1h0 ingress", "filter
	 * pref 30318 on vm1h0 egress" (foreign, in our slot).  NULL for a
	 * guest entry. */
	const char *object;
	uint32_t added, removed;	/* its elements, rules or devices */
};

/* Called once per difference, guests first, then objects.  Return 0 to go
 * on; anything else stops the call, which returns it (nothing written). */
typedef int (*vnic_filter_diff_fn)(const struct vnic_filter_diff *d, void *arg);

/*
 * What vnic_filter_sync(f, p) would change, without writing anything (nft:
 * works on a handle opened VNIC_FILTER_READ_ONLY): fn (may be NULL) sees
 * each difference; res (may be NULL) gets the guests' counts, repaired,
 * and writes set when a sync would write.  Returns 0 (the state differs
 * when res->writes), -EINVAL, -ENODEV (a NIC of p does not exist),
 * -EUCLEAN (nft: a table libvnic did not make), -EAGAIN (nft: other
 * processes committed during each read of the table: retry; bpf: another
 * handle changed the maps since this one read them; permanent for this
 * handle: open a new one), -ENOMEM, fn's
 * non-zero return, or the kernel's.  bpf: the maps are read again and
 * every hook of p's NICs read back, so what another process changed is
 * found; messages is what the sync would send.  p NULL: the damage
 * against what the backend recorded (nft: its state element; bpf: the
 * guests entries, each NIC's counter and hooks; messages an estimate).
 */
int vnic_filter_diff(struct vnic_filter *f, const struct vnic_policy *p,
		     vnic_filter_diff_fn fn, void *arg, struct vnic_filter_result *res);
/* vnic_filter_sync() that reports each difference through fn (NULL: none)
 * before it commits them; a sync fn stops writes nothing (nft: not even
 * the larger size of a set the policy outgrows). */
int vnic_filter_sync_diff(struct vnic_filter *f, const struct vnic_policy *p,
			  vnic_filter_diff_fn fn, void *arg,
			  struct vnic_filter_result *res);

/* Installed guests (malloc'd block like vnic_guest_list()).  Returns 0,
 * -EINVAL, -ENOMEM, -EUCLEAN (nft: a damaged table), -EAGAIN (nft: other
 * processes committed during each read of it: retry), or the kernel's (nft:
 * the table is read again first when what the handle knew went stale, and
 * on a handle that does not own it, VNIC_FILTER_READ_ONLY or
 * VNIC_FILTER_NO_OWNER, when anyone committed since it was read). */
int vnic_filter_guests(struct vnic_filter *f, char ***names, unsigned int *count);
/* A guest's drop counter (bpf: the sum over its NICs and CPUs; a NIC made
 * again under its name keeps counting into it).  Returns 0
 * with both set, -EINVAL, or a negative errno (-ENOENT: no such guest
 * installed). */
int vnic_filter_counter(struct vnic_filter *f, const char *guest,
			uint64_t *packets, uint64_t *bytes);
/* nft: the ruleset for p as nft(8) text (malloc'd), what apply would
 * install on an empty table, loadable with nft -f.  Returns 0 with *text
 * set, -EINVAL (NULL, a policy that fails vnic_policy_check()), -ENODEV (a
 * NIC of p does not exist), -EOPNOTSUPP (bpf: no text form) or -ENOMEM. */
int vnic_filter_render(struct vnic_filter *f, const struct vnic_policy *p,
		       char **text);

#ifdef __cplusplus
}
#endif

#endif /* VNIC_FILTER_H */
