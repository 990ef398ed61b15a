// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * STATUS: could an ADD succeed now?  Code 50 when dataDir cannot be used
 * (state_usable(): the network's directory is made, as ADD makes it), the
 * filter backend cannot be used (a table of that name libvnic did not make,
 * one another process owns, which refuses every write of ours, a damaged
 * one, nf_tables missing, no CAP_NET_ADMIN) or the IPAM plugin cannot be found.  It
 * writes no rule:
 * filter_usable() says how it sees an owned table without a claim.  An IPAM
 * plugin that speaks 1.1 is asked its STATUS and its error passed on, as
 * the spec asks of a plugin that delegates; the stock ones (1.0.0) know no
 * STATUS, so theirs is not asked.
 */
#include <limits.h>
#include <stdio.h>

#include "tools/cni/cni.h"

int cni_status(struct cni_run *r)
{
	struct vnic_ctx *ctx;
	int ret = 0;

	char path[PATH_MAX];

	if (state_usable(r))
		return -1;
	if (r->conf.ipam && ipam_path(r, path, sizeof(path))) {
		r->err.code = CNI_ERR_UNAVAILABLE;
		return -1;
	}
	if (r->conf.ipam) {
		int v11 = ipam_knows_gc(r);

		if (v11 < 0 || (v11 && ipam_exec(r, "STATUS", NULL)))
			return -1;
	}
	if (!r->conf.filter)
		return 0;
	if (attach_ctx(r, 0, &ctx))
		return -1;
	if (filter_usable(r, ctx)) {
		/* Keep the backend's reason, under the spec's code. */
		r->err.code = CNI_ERR_UNAVAILABLE;
		snprintf(r->err.msg, sizeof(r->err.msg), "plugin not available: "
			 "the %s filter backend cannot be used",
			 r->conf.backend == VNIC_BACKEND_BPF ? "bpf" : "nft");
		ret = -1;
	}
	vnic_ctx_free(ctx);
	return ret;
}
