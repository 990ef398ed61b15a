// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The opt-in tcx mode (Linux 6.6): the same programs attached to each hook
 * with BPF_PROG_ATTACH and attach types BPF_TCX_INGRESS (46) and
 * BPF_TCX_EGRESS (47), which Debian 12's headers lack and libbpf 1.1.2
 * passes through.  No qdisc, no filter; but every attach and detach waits
 * an RCU grace period under RTNL (17-28 ms per NIC here, against tens of
 * microseconds for a pipelined cls_bpf), hence opt-in.
 *
 * Attached without a bpf_link: a link lives only as long as its fd or a
 * bpffs pin, and a handle must be able to go away and a new one adopt what
 * is installed without bpffs.  A program attached this way stays until
 * detached or the device goes, and tc(8) cannot see it.
 *
 * BPF_PROG_ATTACH, _DETACH and _QUERY name the device by ifindex, which the
 * kernel resolves in the calling thread's network namespace, not in the
 * context's (the cls_bpf path needs nothing: its netlink socket was opened
 * there).  Every call below that names an ifindex runs through in_ctx_ns():
 * in a helper thread that joined the context's namespace, one per batch of
 * hooks, or in the caller's thread when it is there already.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpf/internal.h"

#define ATTACH_TCX_INGRESS	46
#define ATTACH_TCX_EGRESS	47

static enum bpf_attach_type type_of(uint32_t hook)
{
	return (enum bpf_attach_type)(hook == HOOK_IN ? ATTACH_TCX_INGRESS
						      : ATTACH_TCX_EGRESS);
}

static int prog_of(const struct vnic_bpf *b, uint32_t hook)
{
	return hook == HOOK_IN ? b->prog_in : b->prog_eg;
}

/* Whether the running kernel has tcx: a query of lo's tcx ingress (lo is
 * ifindex 1 in every namespace).  0, -EOPNOTSUPP where the kernel does not
 * know the attach type (EINVAL), or what else the query met: EPERM
 * without permission is no answer about the kernel. */
int tcx_probe(void)
{
	uint32_t ids[4], cnt = 4, flags = 0;

	if (!bpf_prog_query(1, (enum bpf_attach_type)ATTACH_TCX_INGRESS, 0, &flags,
			    ids, &cnt))
		return 0;
	return errno == EINVAL ? -EOPNOTSUPP : -errno;
}

/* One batch of tcx work for in_ctx_ns(): fn with these arguments. */
struct tcx_call {
	struct vnic_bpf *b;
	int (*fn)(struct tcx_call *c);
	const int *ifindex;
	const uint32_t *want;
	uint32_t *have, *old;
	unsigned int n;
	struct tc_made *a;
	struct vnic_filter_result *res;
};

static int tcx_call_fn(void *arg)
{
	struct tcx_call *c = arg;

	return c->fn(c);
}

/* c->fn(c) in the context's namespace.  noted: a failure gets a message
 * (fn's own failure has its own, which is kept as the first); the best
 * effort detaches, which run in a change that succeeds, leave none. */
static int in_ctx_ns(struct tcx_call *c, bool noted)
{
	int err = vnic_in_netns(c->b->ctx->netns_fd, tcx_call_fn, c);

	if (err && noted)
		vnic_set_err(c->b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
			     "bpf: tcx in the context's network namespace");
	return err;
}

/* Whether a program of another set of ours, by name. */
static bool older_ours(uint32_t id, uint32_t hook)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);
	bool ours;

	if (fd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	ours = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
	       !strcmp(info.name, hook == HOOK_IN ? "vnic_in" : "vnic_eg");
	close(fd);
	return ours;
}

/* Whether our program is on the hook; *old: the id of an older program of
 * ours there (an earlier set, not adopted), else 0. */
static bool attached(const struct vnic_bpf *b, int ifindex, uint32_t hook, uint32_t *old)
{
	uint32_t ids[64], cnt = 64, flags = 0, want = hook == HOOK_IN ? b->id_in : b->id_eg;
	unsigned int i;
	bool have = false;

	*old = 0;
	if (bpf_prog_query(ifindex, type_of(hook), 0, &flags, ids, &cnt))
		return false;
	for (i = 0; i < cnt && i < 64; i++) {
		if (ids[i] == want)
			have = true;
		else if (!*old && older_ours(ids[i], hook))
			*old = ids[i];
	}
	if (have)
		*old = 0;	/* ours is there: an older one is left alone */
	return have;
}

static int check_here(struct tcx_call *c)
{
	unsigned int i;
	uint32_t h;

	for (i = 0; i < c->n; i++) {
		c->have[i] = 0;
		for (h = HOOK_IN; h <= HOOK_EG; h <<= 1)
			if ((c->want[i] & h) &&
			    attached(c->b, c->ifindex[i], h, &c->old[2 * i + (h == HOOK_EG)]))
				c->have[i] |= h;
	}
	return 0;
}

int tcx_check(struct vnic_bpf *b, const int *ifindex, const uint32_t *want,
	      uint32_t *have, uint32_t *old, unsigned int n)
{
	struct tcx_call c = { .b = b, .fn = check_here, .ifindex = ifindex,
			      .want = want, .have = have, .old = old, .n = n };

	return in_ctx_ns(&c, true);
}

/* Swap the program on a hook for another, in place (BPF_F_REPLACE). */
static int swap(int ifindex, uint32_t hook, int to_fd, int from_fd)
{
	LIBBPF_OPTS(bpf_prog_attach_opts, o, .flags = BPF_F_REPLACE,
		    .replace_prog_fd = from_fd);

	return bpf_prog_attach_opts(to_fd, ifindex, type_of(hook), &o) ? -errno : 0;
}

/*
 * Undo one hook of an attach: ours off, or the older program back in its
 * place when ours replaced it.  Where the swap back fails (ours is no
 * longer there to replace: detached by someone meanwhile), the older
 * program is attached beside it before ours goes: detaching ours alone
 * left the hook without either, its NIC unfiltered until the next sync.
 */
static void undo_hook(struct vnic_bpf *b, const struct tc_made *a, unsigned int i,
		      uint32_t h)
{
	int fd = a->old_fd ? a->old_fd[2 * i + (h == HOOK_EG)] : -1, err;

	if (fd >= 0) {
		err = bpf_fault(b, BPF_FAULT_SWAP_BACK);
		if (!err && !swap(a->ifi[i], h, fd, prog_of(b, h)))
			return;
		bpf_prog_attach(fd, a->ifi[i], type_of(h), 0);
	}
	bpf_prog_detach2(prog_of(b, h), a->ifi[i], type_of(h));
}

static int undo_here(struct tcx_call *c)
{
	unsigned int i;
	uint32_t h;

	for (i = 0; i < c->a->n; i++)
		for (h = HOOK_IN; h <= HOOK_EG; h <<= 1)
			if (c->a->hooks[i] & h)
				undo_hook(c->b, c->a, i, h);
	return 0;
}

void tcx_undo(struct vnic_bpf *b, const struct tc_made *a)
{
	struct tcx_call c = { .b = b, .fn = undo_here, .a = (struct tc_made *)a };

	in_ctx_ns(&c, false);
}

static int detach_here(struct tcx_call *c)
{
	unsigned int i;
	uint32_t h;

	for (i = 0; i < c->n; i++)
		for (h = HOOK_IN; h <= HOOK_EG; h <<= 1)
			bpf_prog_detach2(prog_of(c->b, h), c->ifindex[i], type_of(h));
	return 0;
}

void tcx_detach(struct vnic_bpf *b, const int *ifindex, unsigned int n)
{
	struct tcx_call c = { .b = b, .fn = detach_here, .ifindex = ifindex, .n = n };

	in_ctx_ns(&c, false);
}

static int attach_here(struct tcx_call *c)
{
	struct vnic_bpf *b = c->b;
	struct tc_made *a = c->a;
	struct vnic_filter_result *res = c->res;
	unsigned int i;
	uint32_t h;
	int err = 0;

	for (i = 0; i < a->n && !err; i++) {
		for (h = HOOK_IN; h <= HOOK_EG && !err; h <<= 1) {
			if (!(a->hooks[i] & h))
				continue;
			uint32_t id = a->old ? a->old[2 * i + (h == HOOK_EG)] : 0;
			int fd = a->old_fd ? a->old_fd[2 * i + (h == HOOK_EG)] : -1;

			err = bpf_fault(b, BPF_FAULT_FILTER);
			if (!err && id) {
				/* an older program of ours: swapped in place */
				err = fd < 0 ? -ENOENT : swap(a->ifi[i], h, prog_of(b, h), fd);
			} else if (!err && bpf_prog_attach(prog_of(b, h), a->ifi[i],
							   type_of(h), 0)) {
				err = -errno;
			}
			res->messages++;
			res->writes = 1;
			if (err) {
				vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
					     "bpf: tcx attach on ifindex %d%s", a->ifi[i],
					     err == -EIO ? " (injected)" : "");
				/* what this NIC got so far goes with the rest */
				for (uint32_t u = HOOK_IN; u < h; u <<= 1)
					if (a->hooks[i] & u)
						undo_hook(b, a, i, u);
			}
		}
	}
	if (err) {
		unsigned int failed = i - 1, k;	/* the loop stepped past it */

		for (k = 0; k < failed; k++)
			for (h = HOOK_IN; h <= HOOK_EG; h <<= 1)
				if (a->hooks[k] & h)
					undo_hook(b, a, k, h);
	}
	return err;
}

int tcx_attach(struct vnic_bpf *b, struct tc_made *a, struct vnic_filter_result *res)
{
	struct tcx_call c = { .b = b, .fn = attach_here, .a = a, .res = res };

	return in_ctx_ns(&c, true);
}
