/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tc eBPF backend: one pair of programs (vnic.bpf.c) shared by every
 * NIC, per-NIC state in maps keyed by ifindex, attached with clsact and a
 * direct-action cls_bpf filter named "vnic" at a fixed priority and handle.
 * See Documentation/bpf.rst.
 */
#ifndef VNIC_BPF_INTERNAL_H
#define VNIC_BPF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>
#include <vnic/filter.h>
#include <vnic/policy.h>

#include "bpf/maps.h"
#include "lib/testing.h"
#include "lib/internal.h"
#include "lib/strmap.h"
#include "policy/model.h"

#define BPF_FILTER_NAME	"vnic"
#define BPF_FILTER_PRIO	0x766e		/* "vn": ours, recognisably */
#define BPF_FILTER_HANDLE 1

/*
 * The version of what a policy renders into in the maps where the object's
 * hash (state.obj_hash) does not see it: the nics values, the addresses'
 * places, the guests entries (bpf_flags_of(), bpf_nic_value(), apply.c).
 * Each guest's digest covers it (bpf_digest()), so a guest a library of
 * another version wrote reads as changed, and an apply writes it again
 * instead of trusting its digest (a sync compares the maps anyway).  Bump
 * it with any change to those values for some policy.  0 is a library
 * before the version: its digests covered none.
 *   1: the version enters the digests.
 */
#define BPF_RENDER_VERSION 1

/* Test faults (lib/testing.h, vnic_bpf_set_fault()). */
enum bpf_fault {
	BPF_FAULT_NONE = 0,
	BPF_FAULT_MAP,		/* the nth map write */
	BPF_FAULT_QDISC,	/* the nth qdisc of an attach batch */
	BPF_FAULT_FILTER,	/* the nth filter of an attach batch */
	BPF_FAULT_DETACH,	/* the nth detach batch (step 5) */
	BPF_FAULT_SWAP_BACK,	/* the nth tcx swap back of an undo; armed
				 * beside the others (fault_back_nth), since
				 * only another fault makes an undo */
	BPF_FAULT__MAX,
};


/* Which hooks a NIC of a kind needs: from the guest, and to it. */
#define HOOK_IN		1u
#define HOOK_EG		2u

/* One installed NIC as the maps hold it. */
struct bnic {
	int ifindex;
	char ifname[IFNAMSIZ];
	uint32_t kind;
	uint32_t gen;
	uint32_t idx;
	struct in_addr *v4;
	unsigned int n4;
	struct in6_addr *v6;
	unsigned int n6;
	struct bpf_nic raw;	/* its nics value as read (not after our writes) */
	bool counted;		/* its drops entry is there */
};

/* Installed NIC ifindex is b->inst[gi].nics[k] (model.c's index). */
struct bnix {
	int ifindex;
	unsigned int gi, k;
};

struct binst {
	char name[POLICY_GUEST_MAX + 1];
	uint64_t digest;
	uint32_t rec_nics;	/* NICs its guests entry records */
	struct bnic *nics;
	unsigned int nn;
};

struct vnic_bpf {
	struct vnic_ctx *ctx;
	struct bpf_object *obj;		/* loaded by us; NULL when adopted */
	int prog_in, prog_eg, prog_nop;
	int map_nics, map_ip4, map_ip6, map_drops, map_guests, map_state;
	uint32_t id_in, id_eg;		/* program ids, what our filters carry */
	uint64_t cookie;
	struct bpf_state st;		/* as last written */
	struct binst *inst;
	unsigned int ni, capi;
	struct bnix *nix;		/* inst by ifindex; NULL: to build */
	unsigned int nnix;
	struct strmap names;		/* inst by name, when names_ok */
	bool names_ok;
	int ifsock;
	struct nl_sock chk;		/* the clsact checks' (tc.c) */
	uint32_t features;
	uint32_t capacity;
	uint32_t cap_asked;		/* vnic_bpf_opts.capacity, 0: default */
	struct bpf_a6 *stale[2];	/* ip4s, ip6s keys of no NIC's current
					 * gen, seen at open; dropped by the
					 * next change (bpf_drop_stale()) */
	unsigned int nstale[2];
	uint32_t *fdrops;		/* drops keys of no NIC in nics, seen
					 * when read; deleted by the next change
					 * (step 5) where still no NIC's */
	unsigned int nfdrops;
	int *orphans;			/* NICs of an older set of ours in this
					 * namespace that was not adopted */
	unsigned int norphans;
	bool adopted;
	bool fresh;			/* inst was read from the kernel and no
					 * change ran since: a sync need not
					 * read the maps again */
	bool tcx;			/* VNIC_BPF_TCX: tcx, not cls_bpf */
	bool no_take;			/* no BPF_MAP_LOOKUP_AND_DELETE_ELEM on
					 * hash maps (before 5.14) */
	uint32_t render_version;	/* BPF_RENDER_VERSION but in tests */
	struct vnic_bpf_tap tap;	/* vnic_bpf_set_tap() */
	int fault_what;
	unsigned int fault_nth, fault_back_nth, fault_seen[BPF_FAULT__MAX];
};

/* load.c: the programs and maps, loaded from the embedded object or adopted
 * from the kernel (the programs of this namespace's state). */
int bpf_load_or_adopt(struct vnic_bpf *b);
void bpf_unload(struct vnic_bpf *b);
/* The programs an adopted set lacks (no filter held them), loaded again
 * over its maps: before anything attaches or runs one. */
int bpf_progs_ready(struct vnic_bpf *b);
/* Read the installed guests from the maps into b->inst. */
int bpf_read_installed(struct vnic_bpf *b);
/* Delete the address keys read found stale that are still of no NIC's
 * current generation (step 5 of a change; opening writes nothing). */
void bpf_drop_stale(struct vnic_bpf *b);
void binst_free(struct binst *g);

/* The NICs (ifindex) an older set of ours lists, for bpf_drop_orphans(). */
void bpf_note_orphans(struct vnic_bpf *b, int nics_fd);
struct change;
/* Step 5 of the first sync after a reload: the NICs an older set listed
 * that the new policy (c) does not hold lose the filter of ours that still
 * runs an older program (else it would enforce the old policy for good).
 * An apply or a remove keeps them, and the list, for the next sync. */
void bpf_drop_orphans(struct vnic_bpf *b, const struct change *c,
		      struct vnic_filter_result *res);

/* tc.c: attach, verify, detach through the context's rtnetlink socket. */
uint32_t bpf_hooks_of(uint32_t kind);
/* For each of n NICs, which of its hooks (HOOK_*) hold our filter with our
 * program; old[2i] / old[2i+1] (ingress / egress): the program id of our
 * filter there when it runs another program (an older library's), else 0.
 * scan: one dump of the namespace's qdiscs first, and no get for a NIC
 * without a clsact (it holds no filter): cheaper when most NICs are new. */
int tc_check(struct vnic_bpf *b, const int *ifindex, const uint32_t *want,
	     uint32_t *have, uint32_t *old, unsigned int n, bool scan);
/* What an attach made, for tc_undo(). */
struct tc_made {
	int *ifi;		/* NICs that needed something */
	uint32_t *hooks;	/* hooks (re)attached */
	bool *made_q;		/* the qdisc is ours from this attach */
	unsigned int *req;	/* first request of each NIC's filters */
	uint32_t *old;		/* 2 per NIC: re-pointed from this program id */
	int *old_fd;		/* 2 per NIC: that program, held so that the
				 * undo can put it back (replaced, nothing
				 * else holds it) */
	unsigned int n;
};
/* Attach where want & ~have: every qdisc first, then every filter; on
 * failure, what this call made is removed again; on success *made says
 * what was made (free it with tc_made_free()). */
/* repoint: only the hooks whose filter of ours runs an older program
 * (old[] set), swapped in place; else only the others.  The undo of a
 * re-point puts the older program back in place. */
int tc_attach(struct vnic_bpf *b, const int *ifindex, const uint32_t *want,
		  const uint32_t *have, const uint32_t *old, unsigned int n,
		  bool repoint, struct tc_made *made, struct vnic_filter_result *res);
void tc_undo(struct vnic_bpf *b, const struct tc_made *made);
void tc_made_free(struct tc_made *made);
/* Remove our filters (and the clsact qdisc when nothing else is on it). */
int tc_detach(struct vnic_bpf *b, const int *ifindex, unsigned int n,
		  struct vnic_filter_result *res);

/* tcx.c: the same operations in tcx mode, each run in the context's
 * namespace (the kernel resolves a tcx ifindex in the caller's). */
int tcx_probe(void);
int tcx_check(struct vnic_bpf *b, const int *ifindex, const uint32_t *want,
	      uint32_t *have, uint32_t *old, unsigned int n);
int tcx_attach(struct vnic_bpf *b, struct tc_made *a, struct vnic_filter_result *res);
/* Both hooks of each of n NICs, best effort. */
void tcx_detach(struct vnic_bpf *b, const int *ifindex, unsigned int n);
void tcx_undo(struct vnic_bpf *b, const struct tc_made *a);

/* apply.c: a change.  CH_DIFF stops before the first write, after telling
 * fn what a sync would change; CH_SYNC tells fn the same, then commits. */
enum ch_mode { CH_APPLY, CH_SYNC, CH_DIFF };

int bpf_change(struct vnic_bpf *b, const struct vnic_policy *p,
	       const char *const *remove, unsigned int nremove, enum ch_mode mode,
	       vnic_filter_diff_fn fn, void *arg, struct vnic_filter_result *res);
/* model.c: guest g's digest as this handle records it (its policy and the
 * rendering version, BPF_RENDER_VERSION). */
uint64_t bpf_digest(const struct vnic_bpf *b, const struct pguest *g);
/* The program flags of a NIC of a kind with switches sw. */
uint16_t bpf_flags_of(uint32_t sw, uint32_t kind);
/* The nics value guest's NIC pn, idx-th of it, holds at generation gen. */
void bpf_nic_value(struct bpf_nic *v, const struct pnic *pn, const char *guest,
		   uint32_t gen, unsigned int idx);
/* The installed guest of NIC ifindex; the installed NIC ifindex; whether
 * it has its drops entry (false: not installed).  O(log n) through an
 * index of b->inst by ifindex, built on the first call after
 * bpf_index_drop(), which whatever changes b->inst calls. */
const struct binst *bpf_owner_of(struct vnic_bpf *b, int ifindex);
struct bnic *bpf_nic_of(struct vnic_bpf *b, int ifindex);
bool bpf_nic_counted(struct vnic_bpf *b, int ifindex);
/* Whether NIC ifindex has its counter, installed for guest: one counting
 * another guest's drops is not the guest's (a fresh one is written). */
bool bpf_nic_counted_for(struct vnic_bpf *b, int ifindex, const char *guest);
/* The installed guest name, or NULL: O(1) through an index of b->inst by
 * name, built on the first call after bpf_index_drop(). */
struct binst *bpf_inst_of(struct vnic_bpf *b, const char *name);
/* Both indexes go: b->inst moved, shrank or was replaced. */
void bpf_index_drop(struct vnic_bpf *b);
/* The NIC index goes: a guest's NICs were added, removed or reordered. */
void bpf_index_nics_moved(struct vnic_bpf *b);
/* b->inst[b->ni - 1] was appended, b->inst not moved: the name index
 * learns it (the NIC index needs nothing: it has no NICs yet). */
void bpf_index_guest_added(struct vnic_bpf *b);

/* A change as planned (apply.c), what diff.c reports from. */
struct change {
	const struct vnic_policy *p;
	enum ch_mode mode;
	int *ifi;
	unsigned int *off;
	bool *same;		/* per guest of p: unchanged, nothing to write */
	bool *fix;		/* per guest of p: its policy is installed, but
				 * the maps differ from it: rewritten */
	bool *gone;		/* per installed guest: removed or replaced */
	bool *drop;		/* per installed guest: removed (not replaced) */
	uint32_t *gen;		/* per NIC of p: its generation after */
	uint32_t *want, *have;	/* per NIC of p: hooks needed, ours already */
	uint32_t *old;		/* 2 per NIC of p: our filter's older program */
	int *kept;		/* the NICs of p sorted (NULL: ifi scanned) */
	struct bpf_drop **carry; /* per guest of p: the per-CPU counts of
				 * its NICs that leave, for its new counter */
	struct ulog *log;
};

/* Whether NIC ifindex is one of the change's policy's NICs. */
bool change_keeps(const struct change *c, int ifindex);
void change_index_kept(struct vnic_bpf *b, struct change *c);

/* diff.c: tell fn each difference between the kernel and the change (guests
 * first, then objects); res gets repaired and, in a diff, an estimate of
 * the messages a sync sends.  fn's non-zero return is returned. */
int bpf_report(struct vnic_bpf *b, const struct change *c, vnic_filter_diff_fn fn,
	       void *arg, struct vnic_filter_result *res);
/* The damage the maps and hooks show against what the backend recorded
 * itself, without a policy (vnicctl filter show): the maps read again. */
int bpf_damage(struct vnic_bpf *b, vnic_filter_diff_fn fn, void *arg,
	       struct vnic_filter_result *res);
/* The socket for interface lookups in the handle's namespace (lib/). */
static inline int bpf_ifsock(struct vnic_bpf *b)
{
	return vnic_ifsock(b->ctx, &b->ifsock);
}
/* What is on a damaged hook (no filter of ours there): DMG_*. */
enum { DMG_NOQDISC = 1, DMG_NOFILTER, DMG_FOREIGN };
int tc_damage(struct vnic_bpf *b, int ifindex, uint32_t hook);
/* Filters on a NIC's clsact besides ours, which are not counted (0:
 * detaching ours deletes the qdisc, and ours with it). */
unsigned int tc_filters_left(struct vnic_bpf *b, int ifindex);
/* read.c: the maps read again (a sync's truth, not this handle's memory). */
int bpf_reread(struct vnic_bpf *b);
/* The possible CPUs, each a copy of a drop counter's per-CPU value (what
 * the kernel reads or writes for one), or a negative errno with a message
 * (libbpf reads sysfs: a buffer sized without it would be overrun). */
int bpf_ncpu(struct vnic_bpf *b);
/* An installed "guest" that only another process's map entries make: a
 * guests entry without NICs, or NICs naming a guest with no entry. */
bool bpf_inst_foreign(const struct binst *g);

/* fault.c: the tap's view of a batch sent and of a map write. */
void bpf_tap_nl(struct vnic_bpf *b, const void *buf, size_t len);
void bpf_tap_map(struct vnic_bpf *b, int fd, const void *key, size_t klen,
		 const void *val);

/* A test fault: -EIO when armed for this unit of what. */
int bpf_fault(struct vnic_bpf *b, enum bpf_fault what);

#endif /* VNIC_BPF_INTERNAL_H */
