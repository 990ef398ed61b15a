// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bpf backend's handle: the operations of the backend contract (open,
 * apply, sync, remove, guests, counter, features) over load.c (programs and
 * maps), tc.c (attach) and apply.c (the change).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/internal.h"
#include "lib/testing.h"

#define BPF_CAPACITY_DEFAULT	4096
#define BPF_CAPACITY_MAX	(1u << 20)

static int result_check(struct vnic_bpf *b, const struct vnic_filter_result *res)
{
	return res ? vnic_out_check(b->ctx, res, VNIC_SZ_0_1(vnic_filter_result, writes),
				    "vnic_filter_result") : 0;
}

VNIC_EXPORT void vnic_bpf_close(struct vnic_bpf *b)
{
	unsigned int i;

	if (!b)
		return;
	bpf_unload(b);
	bpf_index_drop(b);
	for (i = 0; i < b->ni; i++)
		binst_free(&b->inst[i]);
	free(b->inst);
	free(b->stale[0]);
	free(b->stale[1]);
	free(b->fdrops);
	free(b->orphans);
	if (b->ifsock >= 0)
		close(b->ifsock);
	nl_close(&b->chk);
	free(b);
}

VNIC_EXPORT int vnic_bpf_open(struct vnic_ctx *ctx, const struct vnic_bpf_opts *opts,
		  struct vnic_bpf **out)
{
	struct vnic_bpf_opts o;
	struct vnic_bpf *b;
	int err;

	if (!ctx)
		return -EINVAL;
	vnic_clear_err(ctx);
	if (!out)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_bpf_open: NULL out");
	err = vnic_opts_copy(&o, sizeof(o), opts);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL, "vnic_bpf_opts");
	if (o.capacity > BPF_CAPACITY_MAX)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_bpf_opts: capacity %u over %u", o.capacity,
				    BPF_CAPACITY_MAX);
	b = calloc(1, sizeof(*b));
	if (!b)
		return vnic_set_err(ctx, -ENOMEM, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: out of memory (the handle)");
	b->ctx = ctx;
	b->ifsock = -1;
	b->prog_in = b->prog_eg = b->prog_nop = -1;
	b->map_nics = b->map_ip4 = b->map_ip6 = -1;
	b->map_drops = b->map_guests = b->map_state = -1;
	b->capacity = o.capacity ? o.capacity : BPF_CAPACITY_DEFAULT;
	b->cap_asked = o.capacity;
	b->render_version = BPF_RENDER_VERSION;
	err = tcx_probe();
	if (!err)
		b->features |= VNIC_BPF_FEAT_TCX;
	if (o.flags & ~VNIC_BPF_TCX) {
		free(b);
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_bpf_opts: unknown flags 0x%x", o.flags & ~VNIC_BPF_TCX);
	}
	if ((o.flags & VNIC_BPF_TCX) && err) {
		free(b);
		return vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL, "bpf: %s",
				    err == -EOPNOTSUPP ? "tcx needs Linux 6.6 (BPF_TCX_INGRESS)"
				    : "probing tcx (a query of lo's tcx ingress)");
	}
	b->tcx = o.flags & VNIC_BPF_TCX;
	err = bpf_load_or_adopt(b);
	if (!err && b->adopted)
		err = bpf_read_installed(b);
	b->fresh = true;
	if (err) {
		vnic_bpf_close(b);
		return err;
	}
	*out = b;
	return 0;
}

VNIC_EXPORT uint32_t vnic_bpf_features(const struct vnic_bpf *b)
{
	return b ? b->features : 0;
}

static int change(struct vnic_bpf *b, const struct vnic_policy *p,
		  const char *const *names, unsigned int n, enum ch_mode mode,
		  vnic_filter_diff_fn fn, void *arg, struct vnic_filter_result *res)
{
	struct vnic_filter_result r;
	int err;

	if (!b)
		return -EINVAL;
	vnic_clear_err(b->ctx);
	if (!p && !names)
		return vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: NULL policy");
	err = result_check(b, res);
	if (err)
		return err;
	memset(&r, 0, sizeof(r));
	r.sz = sizeof(r);
	err = bpf_change(b, p, names, n, mode, fn, arg, &r);
	if (!err && res)
		vnic_out_copy(res, &r, sizeof(r));
	return err;
}

VNIC_EXPORT int vnic_bpf_apply(struct vnic_bpf *b, const struct vnic_policy *p,
		   struct vnic_filter_result *res)
{
	if (b && !p)
		return vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: NULL policy");
	return change(b, p, NULL, 0, CH_APPLY, NULL, NULL, res);
}

VNIC_EXPORT int vnic_bpf_sync(struct vnic_bpf *b, const struct vnic_policy *p,
		  struct vnic_filter_result *res)
{
	if (b && !p)
		return vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: NULL policy");
	return change(b, p, NULL, 0, CH_SYNC, NULL, NULL, res);
}

VNIC_EXPORT int vnic_bpf_remove(struct vnic_bpf *b, const char *const *guests, unsigned int count,
		    struct vnic_filter_result *res)
{
	if (b && !guests && count)
		return vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: NULL guest list");
	return change(b, NULL, guests ? guests : (const char *const[]){ NULL }, count,
		      CH_APPLY, NULL, NULL, res);
}

/* A diff is a sync planned in full (maps read again, hooks read back)
 * that stops before its first write. */
VNIC_EXPORT int vnic_bpf_diff(struct vnic_bpf *b, const struct vnic_policy *p,
		  vnic_filter_diff_fn fn, void *arg, struct vnic_filter_result *res)
{
	struct vnic_filter_result r;
	int err;

	if (!b || p)
		return change(b, p, NULL, 0, CH_DIFF, fn, arg, res);
	/* no policy: the damage against what the backend recorded */
	vnic_clear_err(b->ctx);
	err = result_check(b, res);
	if (err)
		return err;
	memset(&r, 0, sizeof(r));
	r.sz = sizeof(r);
	err = bpf_damage(b, fn, arg, &r);
	if (!err && res)
		vnic_out_copy(res, &r, sizeof(r));
	return err;
}

VNIC_EXPORT int vnic_bpf_sync_diff(struct vnic_bpf *b, const struct vnic_policy *p,
		       vnic_filter_diff_fn fn, void *arg,
		       struct vnic_filter_result *res)
{
	if (b && !p)
		return vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: NULL policy");
	return change(b, p, NULL, 0, CH_SYNC, fn, arg, res);
}

VNIC_EXPORT int vnic_bpf_guests(struct vnic_bpf *b, char ***names, unsigned int *count)
{
	size_t bytes = 0;
	unsigned int i;
	char **v, *s;

	if (!b || !names || !count)
		return b ? vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
					"vnic_bpf_guests: NULL out") : -EINVAL;
	for (i = 0; i < b->ni; i++)
		bytes += strlen(b->inst[i].name) + 1;
	v = malloc((b->ni + 1) * sizeof(*v) + bytes);
	if (!v)
		return vnic_set_err(b->ctx, -ENOMEM, VNIC_STEP_DUMP, -1, NULL,
				    "bpf: out of memory (the guest names)");
	s = (char *)(v + b->ni + 1);
	for (i = 0; i < b->ni; i++) {
		v[i] = s;
		s = stpcpy(s, b->inst[i].name) + 1;
	}
	v[b->ni] = NULL;
	*names = v;
	*count = b->ni;
	return 0;
}

VNIC_EXPORT int vnic_bpf_counter(struct vnic_bpf *b, const char *guest, uint64_t *packets,
		     uint64_t *bytes)
{
	uint64_t pk = 0, by = 0;
	struct bpf_drop *v;
	unsigned int i, k;
	int c, ncpu;

	if (!b || !guest || !packets || !bytes)
		return b ? vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
					"vnic_bpf_counter: NULL argument") : -EINVAL;
	for (i = 0; i < b->ni; i++)
		if (!strcmp(b->inst[i].name, guest))
			break;
	if (i == b->ni)
		return vnic_set_err(b->ctx, -ENOENT, VNIC_STEP_VALIDATE, -1, NULL,
				    "guest %s is not installed", guest);
	ncpu = bpf_ncpu(b);
	if (ncpu < 0)
		return ncpu;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return vnic_set_err(b->ctx, -ENOMEM, VNIC_STEP_DUMP, -1, NULL,
				    "bpf: out of memory (the per-CPU counters)");
	for (k = 0; k < b->inst[i].nn; k++) {
		uint32_t key = (uint32_t)b->inst[i].nics[k].ifindex;

		if (bpf_map_lookup_elem(b->map_drops, &key, v))
			continue;
		for (c = 0; c < ncpu; c++) {
			pk += v[c].packets;
			by += v[c].bytes;
		}
	}
	free(v);
	*packets = pk;
	*bytes = by;
	return 0;
}

/* --- test hooks (lib/testing.h) ------------------------------------------ */

VNIC_EXPORT int vnic_bpf_set_tap(struct vnic_bpf *b, const struct vnic_bpf_tap *tap)
{
	if (!b)
		return -EINVAL;
	memset(&b->tap, 0, sizeof(b->tap));
	if (tap)
		b->tap = *tap;
	return 0;
}

VNIC_EXPORT int vnic_bpf_set_fault(struct vnic_bpf *b, int what, unsigned int nth)
{
	if (!b || what < 0 || what >= BPF_FAULT__MAX)
		return -EINVAL;
	if (what == BPF_FAULT_SWAP_BACK) {
		b->fault_back_nth = nth;
		return 0;
	}
	b->fault_what = what;
	b->fault_nth = nth;
	if (!what)
		b->fault_back_nth = 0;
	return 0;
}

VNIC_EXPORT int vnic_bpf_set_render_version(struct vnic_bpf *b, uint32_t version)
{
	if (!b)
		return -EINVAL;
	b->render_version = version;
	return 0;
}

VNIC_EXPORT int vnic_bpf_test_run(struct vnic_bpf *b, int prog, int ifindex, const void *frame,
		      size_t len, unsigned int repeat, int *verdict, uint32_t *ns)
{
	struct __sk_buff skb = { .ifindex = (uint32_t)ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = frame, .data_size_in = (uint32_t)len,
		    .ctx_in = &skb, .ctx_size_in = sizeof(skb), .repeat = repeat);
	int fds[3];

	if (!b || prog < 0 || prog > 2 || !frame || !verdict)
		return -EINVAL;
	if (bpf_progs_ready(b))
		return -ENOENT;
	fds[0] = b->prog_in;
	fds[1] = b->prog_eg;
	fds[2] = b->prog_nop;
	if (fds[prog] < 0)
		return -ENOENT;
	if (bpf_prog_test_run_opts(fds[prog], &t))
		return -errno;
	*verdict = (int)t.retval;
	if (ns)
		*ns = t.duration;
	return 0;
}
