// SPDX-License-Identifier: LGPL-2.1-or-later
/* The context: sockets, probed features, link cache, last error. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/internal.h"
#include "lib/linkcache.h"
#include "lib/testing.h"

#define DEFAULT_OWNER		"vnic"
#define DEFAULT_QUARANTINE_MS	10000
#define DEFAULT_RCVBUF		(4u << 20)
#define DEFAULT_MONITOR_RCVBUF	(8u << 20)
#define DEFAULT_NAME_TIMEOUT_MS	10000
#define CTX_FLAGS		(VNIC_CTX_NO_ECHO | VNIC_CTX_NO_MONITOR)

/* Owners and guests end up in a ':'-separated alias tag: keep them simple. */
int vnic_valid_tag(const char *s, size_t max)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; s[n]; n++) {
		char c = s[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return 0;
	}
	return n >= 1 && n <= max;
}

static int ctx_apply_opts(struct vnic_ctx *ctx, const struct vnic_ctx_opts *o)
{
	const char *owner = o->owner ? o->owner : DEFAULT_OWNER;

	if (!vnic_valid_tag(owner, sizeof(ctx->owner) - 1))
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "owner '%s' must be 1..32 of [A-Za-z0-9_.-]",
				    owner);
	/* A newer caller's flag this library lacks: not silently ignored. */
	if (o->flags & ~(uint32_t)CTX_FLAGS)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_ctx_opts: unknown flags 0x%x",
				    o->flags & ~(uint32_t)CTX_FLAGS);
	strcpy(ctx->owner, owner);
	ctx->flags = o->flags;
	ctx->quarantine_ms = o->quarantine_ms ? o->quarantine_ms : DEFAULT_QUARANTINE_MS;
	ctx->rcvbuf = o->rcvbuf ? o->rcvbuf : DEFAULT_RCVBUF;
	ctx->monitor_rcvbuf = o->monitor_rcvbuf ? o->monitor_rcvbuf : DEFAULT_MONITOR_RCVBUF;
	ctx->window = o->window;
	ctx->name_timeout_ms = o->name_timeout_ms ? o->name_timeout_ms :
			       DEFAULT_NAME_TIMEOUT_MS;
	if (o->netns_fd) {
		const char *why = NULL;
		int err = vnic_netns_check(o->netns_fd, &why);

		/* Negative is no default: refused like any non-namespace. */
		if (err)
			return vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL,
					    "netns fd %d is %s", o->netns_fd, why);
		ctx->netns_fd = fcntl(o->netns_fd, F_DUPFD_CLOEXEC, 3);
		if (ctx->netns_fd < 0)
			return vnic_set_err(ctx, -errno, VNIC_STEP_SOCKET, -1, NULL,
					    "netns fd %d", o->netns_fd);
	} else {
		/* The caller's own namespace is the one it is in now: held,
		 * so that a later call from a thread that has joined another
		 * (setns()) still works here (lib/netns.c).  Without /proc,
		 * the calling thread's, as it stands at each call. */
		ctx->netns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	}
	return 0;
}

static int ctx_init(struct vnic_ctx *ctx, const struct vnic_ctx_opts *opts)
{
	struct vnic_ctx_opts o;
	int err;

	err = vnic_opts_copy(&o, sizeof(o), opts);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_ctx_opts");
	err = ctx_apply_opts(ctx, &o);
	if (err)
		return err;
	err = vnic_fault(ctx, VNIC_STEP_SOCKET, 0);
	if (!err)
		err = nl_open(&ctx->nl, NETLINK_ROUTE, ctx->netns_fd, ctx->rcvbuf,
			      ctx->window, &ctx->stats, &ctx->features);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "rtnetlink socket");
	err = vnic_probe_features(ctx, &ctx->features);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "probing the kernel's features");
	return 0;
}

/* The fault is armed before the first socket opens (lib/testing.h). */
static int ctx_new(const struct vnic_ctx_opts *opts, int fault_step,
		   uint32_t fault_nth, struct vnic_ctx **out)
{
	struct vnic_ctx *ctx;
	int err;

	if (!out)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->netns_fd = -1;
	ctx->fault_step = fault_step;
	ctx->fault_nth = fault_nth;
	ctx->stats.sz = sizeof(ctx->stats);
	vnic_clear_err(ctx);
	err = ctx_init(ctx, opts);
	if (err) {
		vnic_ctx_free(ctx);
		return err;
	}
	*out = ctx;
	return 0;
}

VNIC_EXPORT int vnic_ctx_new(const struct vnic_ctx_opts *opts, struct vnic_ctx **out)
{
	return ctx_new(opts, 0, 0, out);
}

VNIC_EXPORT int vnic_ctx_set_old_peer_lookup(struct vnic_ctx *ctx, bool on)
{
	if (!ctx)
		return -EINVAL;
	ctx->old_peer_lookup = on;
	return 0;
}

VNIC_EXPORT int vnic_ctx_set_seq(struct vnic_ctx *ctx, uint32_t seq)
{
	if (!ctx)
		return -EINVAL;
	ctx->nl.seq = seq;
	return 0;
}

VNIC_EXPORT int vnic_ctx_set_lost_events(struct vnic_ctx *ctx, unsigned int n)
{
	if (!ctx)
		return -EINVAL;
	ctx->lost_events = n;
	return 0;
}

VNIC_EXPORT int vnic_ctx_new_faulty(const struct vnic_ctx_opts *opts, int fault_step,
				    uint32_t fault_nth, struct vnic_ctx **out)
{
	if (fault_step < 0 || fault_step >= VNIC_STEP__MAX)
		return -EINVAL;
	return ctx_new(opts, fault_step, fault_nth, out);
}

VNIC_EXPORT void vnic_ctx_free(struct vnic_ctx *ctx)
{
	if (!ctx)
		return;
	linkcache_free(ctx->cache);
	nl_close(&ctx->nl);
	if (ctx->netns_fd >= 0)
		close(ctx->netns_fd);
	free(ctx);
}

VNIC_EXPORT int vnic_ctx_refresh(struct vnic_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	vnic_clear_err(ctx);
	return vnic_err_fallback(ctx, linkcache_resync(ctx), VNIC_STEP_DUMP,
				 "building the link table");
}

VNIC_EXPORT uint64_t vnic_ctx_features(const struct vnic_ctx *ctx)
{
	/* tun is asked on first need (lib/probe.c): a const view of a
	 * context the caller owns, whose features it only completes. */
	return ctx ? vnic_probe_tun((struct vnic_ctx *)ctx) : 0;
}

VNIC_EXPORT int vnic_ctx_stats(const struct vnic_ctx *ctx, struct vnic_ctx_stats *st)
{
	int err;

	if (!ctx)
		return -EINVAL;
	/* A query leaves the last failure alone, but its own replaces it.
	 * The context itself is allocated mutable, so the cast is sound. */
	if (!st) {
		vnic_clear_err((struct vnic_ctx *)ctx);
		return vnic_null_arg((struct vnic_ctx *)ctx, __func__, "st");
	}
	err = vnic_out_check((struct vnic_ctx *)ctx, st,
			     VNIC_SZ_0_1(vnic_ctx_stats, dumps_interrupted),
			     "vnic_ctx_stats");
	if (!err)
		vnic_out_copy(st, &ctx->stats, sizeof(ctx->stats));
	return err;
}
