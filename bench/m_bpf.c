// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The libvnic-bpf rows of the filter scenarios: the same policies through
 * vnic_filter_open with VNIC_BACKEND_BPF.  The nft rows end each run with
 * a ruleset flush; the bpf backend's state lives on the NICs (clsact
 * qdiscs, cls_bpf filters holding the programs and their maps), so these
 * rows end theirs by removing every guest through the library (untimed),
 * which takes the qdiscs off again: every run starts from bare NICs.
 * Their floor rows are floor_bpf.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filters.h"

int bpf_open(struct filt_env *e, struct vnic_filter **h, char *err,
	     size_t errlen)
{
	/* 0: the backend's default capacity (4096 NICs). */
	VNIC_OPTS(vnic_filter_opts, opts, .backend = VNIC_BACKEND_BPF,
		  .capacity = e->nnics > 4096 ? e->nnics : 0);
	int ret = vnic_filter_open(e->ctx, &opts, h);

	if (ret) {
		*h = NULL;
		return bench_lib_fail(e->ctx, "vnic_filter_open (bpf)", ret,
				      err, errlen);
	}
	return 0;
}

int bpf_apply_row(struct filt_env *e, const struct vnic_policy *p,
		  unsigned int guests, bool time_remove, struct sample *s,
		  char *err, size_t errlen)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	struct sample scratch;
	struct vnic_filter *h;
	uint64_t t0;
	int ret, rret;

	ret = bpf_open(e, &h, err, errlen);
	if (ret)
		return ret;
	t0 = now_ns();
	ret = vnic_filter_apply(h, p, &res);
	if (!time_remove) {
		s->ms = ms_since(t0);
		if (!ret)
			filt_take(s, &res);
	}
	if (ret)
		bench_lib_fail(e->ctx, "vnic_filter_apply (bpf)", ret, err,
			       errlen);
	/* Bare NICs again (a failed apply left nothing): timed or not. */
	rret = ret ? 0 : filt_remove(e, h, 0, guests,
				       time_remove ? s : &scratch, err, errlen);
	vnic_filter_close(h);
	return ret ?: rret;
}
