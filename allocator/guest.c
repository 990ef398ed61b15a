// SPDX-License-Identifier: LGPL-2.1-or-later
/* Guest handles: building the NIC list, reading results, freeing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "allocator/nic.h"

struct vnic_guest *guest_alloc(struct vnic_ctx *ctx, const char *name)
{
	struct vnic_guest *g = calloc(1, sizeof(*g));

	if (g) {
		g->ctx = ctx;
		snprintf(g->name, sizeof(g->name), "%s", name);
	}
	return g;
}

int guest_push_nic(struct vnic_guest *g, struct vnic_nic **out)
{
	struct vnic_nic *nic;

	if (g->n == g->cap) {
		unsigned int cap = g->cap ? g->cap * 2 : 8;

		nic = realloc(g->nics, cap * sizeof(*nic));
		if (!nic)
			return -ENOMEM;
		g->nics = nic;
		g->cap = cap;
	}
	nic = &g->nics[g->n++];
	memset(nic, 0, sizeof(*nic));
	nic->netns_fd = -1;
	nic->peer_netns_fd = -1;
	nic->tag = g->next_tag++;
	nic->group = mark_group(g->ctx->owner);
	*out = nic;
	return 0;
}

void nic_release(struct vnic_nic *nic)
{
	unsigned int i;

	for (i = 0; i < nic->nfds; i++)
		close(nic->fds[i]);
	free(nic->fds);
	nic->fds = NULL;
	nic->nfds = 0;
	if (nic->netns_fd >= 0)
		close(nic->netns_fd);
	if (nic->peer_netns_fd >= 0)
		close(nic->peer_netns_fd);
	nic->netns_fd = nic->peer_netns_fd = -1;
}

VNIC_EXPORT int vnic_guest_new(struct vnic_ctx *ctx, const char *name,
			       struct vnic_guest **out)
{
	struct vnic_guest *g;

	if (!ctx)
		return -EINVAL;
	vnic_clear_err(ctx);
	if (!out)
		return vnic_null_arg(ctx, __func__, "out");
	if (!vnic_valid_tag(name, GUEST_NAME_MAX))
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "guest name '%s' must be 1..64 of [A-Za-z0-9_.-]",
				    name ? name : "(null)");
	g = guest_alloc(ctx, name);
	if (!g)
		return vnic_err_fallback(ctx, -ENOMEM, VNIC_STEP_VALIDATE,
					 "guest handle");
	*out = g;
	return 0;
}

VNIC_EXPORT void vnic_guest_free(struct vnic_guest *g)
{
	unsigned int i;

	if (!g)
		return;
	for (i = 0; i < g->n; i++)
		nic_release(&g->nics[i]);
	free(g->nics);
	free(g);
}

VNIC_EXPORT int vnic_guest_destroy(struct vnic_guest *g)
{
	unsigned int *idx, i, n = 0;
	struct vnic_ctx *ctx;
	int err;

	if (!g)
		return -EINVAL;
	ctx = g->ctx;
	vnic_clear_err(ctx);
	idx = calloc(g->n + 1, sizeof(*idx));
	if (!idx) {
		vnic_guest_free(g);
		return vnic_err_fallback(ctx, -ENOMEM, VNIC_STEP_DELETE, "guest");
	}
	for (i = 0; i < g->n; i++)
		if (g->nics[i].created)
			idx[n++] = i;
	err = nics_delete(g, idx, n);
	free(idx);
	vnic_guest_free(g);
	return vnic_err_fallback(ctx, err, VNIC_STEP_DELETE, "deleting the guest's NICs");
}

VNIC_EXPORT const char *vnic_guest_name(const struct vnic_guest *g)
{
	return g ? g->name : NULL;
}

VNIC_EXPORT unsigned int vnic_guest_nic_count(const struct vnic_guest *g)
{
	return g ? g->n : 0;
}

VNIC_EXPORT int vnic_guest_nic_info(const struct vnic_guest *g, unsigned int idx,
				    struct vnic_nic_info *info)
{
	struct vnic_nic_info out;
	const struct vnic_nic *nic;
	int err;

	if (!g)
		return -EINVAL;
	/* A query leaves the last failure alone, but its own replaces it. */
	if (!info) {
		vnic_clear_err(g->ctx);
		return vnic_null_arg(g->ctx, __func__, "info");
	}
	if (idx >= g->n) {
		vnic_clear_err(g->ctx);
		return vnic_set_err(g->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "no nic %u: the guest has %u", idx, g->n);
	}
	err = vnic_out_check(g->ctx, info, VNIC_SZ_0_1(vnic_nic_info, tag_index),
			     "vnic_nic_info");
	if (err)
		return err;
	nic = &g->nics[idx];
	memset(&out, 0, sizeof(out));
	out.kind = nic->kind;
	out.ifindex = nic->ifindex;
	out.created = nic->created;
	out.tag_index = nic->tag;
	memcpy(out.mac, nic->mac, sizeof(out.mac));
	snprintf(out.name, sizeof(out.name), "%s", nic->created ? nic->name : "");
	snprintf(out.peer_name, sizeof(out.peer_name), "%s", nic->peer_name);
	out.sz = sizeof(out);
	vnic_out_copy(info, &out, sizeof(out));
	return 0;
}
