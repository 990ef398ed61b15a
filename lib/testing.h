/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test hooks: exported under the LIBVNIC_PRIVATE version node
 * (lib/libvnic.map), never installed, never part of the ABI.  The selftests
 * include this header; installed programs (vnicctl) must not.  vnic-bench,
 * never installed and always built from the same tree, uses the batch tap
 * for its floor rows.  A hook may change or go in any release.
 */
#ifndef VNIC_LIB_TESTING_H
#define VNIC_LIB_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vnic/context.h>
#include <stddef.h>
#include <vnic/filter.h>
#include <vnic/policy.h>

/*
 * vnic_ctx_new(), with a fault armed from the start: the fault_nth
 * (1-based) unit of work at step fault_step fails with -EIO (for per-NIC
 * steps the unit is the NIC index + 1; the context's own socket is unit 1
 * of VNIC_STEP_SOCKET; unit 1 of VNIC_STEP_DUMP is before the link table's
 * dump, unit k + 1 that dump's reply callback for its k-th link, which
 * then returns -EIO to the netlink engine).  fault_step 0 arms nothing.  Returns what
 * vnic_ctx_new() returns, or -EINVAL (with a message, no context) for a
 * fault_step outside enum vnic_step.
 */
int vnic_ctx_new_faulty(const struct vnic_ctx_opts *opts, int fault_step,
			uint32_t fault_nth, struct vnic_ctx **out);

/*
 * Answer a veth's peer-outside create (allocator/create.c) as kernels
 * before 6.15 do: EEXIST when the caller's namespace has a device of the
 * peer's name (the kernel's own answer to a lookup there), so the fallback
 * to the nested layout runs on newer kernels too.  -EINVAL for NULL.
 */
int vnic_ctx_set_old_peer_lookup(struct vnic_ctx *ctx, bool on);

/*
 * The sequence number of the context's last rtnetlink request: the next
 * one is seq + 1, so seq close to UINT32_MAX makes the 32-bit counter wrap
 * within the next batch, as it does once every 2^32 requests of a
 * long-lived context.  -EINVAL for NULL.
 */
int vnic_ctx_set_seq(struct vnic_ctx *ctx, uint32_t seq);

/*
 * The next n reads of the link table's monitor report ENOBUFS, as the
 * kernel does when the socket overflowed and events were lost (the events
 * queued stay queued), so that a rebuild gives up after its
 * LC_REBUILD_TRIES dumps without a burst timed to land inside each.
 * -EINVAL for NULL.
 */
int vnic_ctx_set_lost_events(struct vnic_ctx *ctx, unsigned int n);

/*
 * Call fn(arg) after each change has read the ruleset generation and built
 * its batch, right before sending it (NULL: no hook).  A ruleset change made
 * there makes the commit fail with -EAGAIN.  Returns 0, or -EINVAL for a
 * NULL handle.
 */
int vnic_filter_set_before_commit(struct vnic_filter *f, void (*fn)(void *arg),
				  void *arg);

/*
 * The tc eBPF backend (bpf/), with the operations of the nft backend's
 * contract (filter.h): same returns, same vnic_filter_result.  Private until the
 * public filter API dispatches to it.
 */
struct vnic_bpf;

struct vnic_bpf_opts {
	size_t sz;
	/* NICs the maps are sized for (0: 4096): nics, drops and guests hold
	 * that many entries, ip4s twice, ip6s three times.  Fixed once the
	 * maps exist; a change that would overfill one fails with -ENOSPC. */
	uint32_t capacity;
	uint32_t flags;			/* VNIC_BPF_TCX */
};

/* Attach with tcx (Linux 6.6) instead of clsact + cls_bpf: no qdisc, but
 * an RCU grace period per attach and detach (Documentation/bpf.rst). */
#define VNIC_BPF_TCX		1u
/* vnic_bpf_features() bits. */
#define VNIC_BPF_FEAT_TCX	1u	/* tcx (6.6) */
#define VNIC_BPF_FEAT_COOKIE	2u	/* SO_NETNS_COOKIE (5.14) */

int vnic_bpf_open(struct vnic_ctx *ctx, const struct vnic_bpf_opts *opts,
		  struct vnic_bpf **out);
void vnic_bpf_close(struct vnic_bpf *b);
uint32_t vnic_bpf_features(const struct vnic_bpf *b);
int vnic_bpf_apply(struct vnic_bpf *b, const struct vnic_policy *p,
		   struct vnic_filter_result *res);
int vnic_bpf_sync(struct vnic_bpf *b, const struct vnic_policy *p,
		  struct vnic_filter_result *res);
/* vnic_filter_diff() and vnic_filter_sync_diff() of the bpf backend
 * (diff: p NULL checks the damage against what the backend recorded). */
int vnic_bpf_diff(struct vnic_bpf *b, const struct vnic_policy *p,
		  vnic_filter_diff_fn fn, void *arg, struct vnic_filter_result *res);
int vnic_bpf_sync_diff(struct vnic_bpf *b, const struct vnic_policy *p,
		       vnic_filter_diff_fn fn, void *arg,
		       struct vnic_filter_result *res);
int vnic_bpf_remove(struct vnic_bpf *b, const char *const *guests,
		    unsigned int count, struct vnic_filter_result *res);
int vnic_bpf_guests(struct vnic_bpf *b, char ***names, unsigned int *count);
int vnic_bpf_counter(struct vnic_bpf *b, const char *guest, uint64_t *packets,
		     uint64_t *bytes);

/*
 * bpf: what a change writes, as it writes it -- each rtnetlink batch of tc
 * requests (clsact qdiscs, cls_bpf filters, their deletions: the bytes as
 * sent) and each map write (val NULL: a delete) -- for vnic-bench's bpf
 * floor rows (bench/floor_bpf.c), which replay them.  The map fds and the
 * program fds in the filter requests are the handle's: valid while it is
 * open.  NULL tap (or NULL members): none.  vnic_filter_set_bpf_tap():
 * -EOPNOTSUPP on an nft handle.
 */
struct vnic_bpf_tap {
	void (*nl)(void *arg, const void *buf, size_t len);
	void (*map)(void *arg, int fd, const void *key, size_t klen, const void *val,
		    size_t vlen);
	void *arg;
};
int vnic_bpf_set_tap(struct vnic_bpf *b, const struct vnic_bpf_tap *tap);
int vnic_filter_set_bpf_tap(struct vnic_filter *f, const struct vnic_bpf_tap *tap);

/* The nth (1-based) unit of what fails with -EIO in the next changes:
 * 1 map write, 2 clsact qdisc, 3 cls_bpf filter (or tcx attach), 4 the
 * detach batch of a change's clean-up (step 5, which fails nothing);
 * 0 disarms (5 too).  5, the tcx swap back of an older program in an
 * undo, is armed beside the others: one of them makes the undo. */
int vnic_bpf_set_fault(struct vnic_bpf *b, int what, unsigned int nth);

/* Digest guests as a library of rendering version version does
 * (bpf/internal.h, BPF_RENDER_VERSION; 0: a library before the version),
 * so that a test can make the maps an older library leaves.  0, or
 * -EINVAL for a NULL handle.  vnic_filter_set_render_version() too. */
int vnic_bpf_set_render_version(struct vnic_bpf *b, uint32_t version);

/* BPF_PROG_TEST_RUN of prog (0 vnic_in, 1 vnic_eg, 2 the empty vnic_nop)
 * on frame as if on ifindex, repeat times: the verdict (-1 pass, 2 drop)
 * and the mean ns per run. */
int vnic_bpf_test_run(struct vnic_bpf *b, int prog, int ifindex, const void *frame,
		      size_t len, unsigned int repeat, int *verdict, uint32_t *ns);

/*
 * Call fn(arg, buf, len) with each nf_tables batch (BEGIN to END, as sent)
 * right before its sendmsg(), and with each request that is not a batch (a
 * get or a dump: its first message type is not NFNL_MSG_BATCH_BEGIN)
 * before it is sent (NULL: no hook; nft backend only).  vnic-bench keeps
 * the bytes to time the kernel's own cost of the very batch or read (its
 * floor rows).
 * Returns 0, -EINVAL for a NULL handle, or -EOPNOTSUPP for bpf.
 */
int vnic_filter_set_batch_tap(struct vnic_filter *f,
			      void (*fn)(void *arg, const void *buf, size_t len),
			      void *arg);

/*
 * Digest guests as a library of rendering version version does
 * (nft/internal.h, NFT_RENDER_VERSION, or bpf/internal.h,
 * BPF_RENDER_VERSION, each backend its own; 0: a library before the
 * version, whose digests covered none), so that a test can make the table
 * or maps an older library leaves.  Returns 0, or -EINVAL for a NULL
 * handle.
 */
int vnic_filter_set_render_version(struct vnic_filter *f, uint32_t version);

#endif /* VNIC_LIB_TESTING_H */
