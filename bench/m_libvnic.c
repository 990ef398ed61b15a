// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The methods under test: one guest of N NICs by vnic_guest_create, with
 * each naming strategy.  The context is opened before the clock starts, as
 * a runtime opens it once at start-up; for the cache strategy the one-time
 * link table build (vnic_ctx_refresh) is timed on its own.
 */
#include <string.h>

#include "bench.h"

#define BENCH_OWNER	"vnicbench"
#define BENCH_GUEST	"bench"

void libvnic_nic_opts(const struct guest_env *e, unsigned int i,
		      enum vnic_naming naming, char *name, char *peer,
		      struct vnic_nic_opts *nic)
{
	const struct bench_opts *o = e->o;

	memset(nic, 0, sizeof(*nic));
	nic->sz = sizeof(*nic);
	nic->kind = o->kind;
	nic->naming = naming;
	if (naming == VNIC_NAMING_EXPLICIT)
		env_nic_name(o, i, name);
	else
		snprintf(name, 16, "%s%%d", env_prefix(o->kind));
	nic->name = name;
	nic->up = o->up;
	switch (o->kind) {
	case VNIC_KIND_VETH:
		env_peer_name(o, i, peer);
		nic->peer_name = peer;
		break;
	case VNIC_KIND_TAP:
		/* As the tap floor: what a VM runtime asks for. */
		nic->tap_flags = VNIC_TAP_NO_PI | VNIC_TAP_VNET_HDR;
		break;
	default:
		nic->lower = ENV_LOWER;
		nic->mode = VNIC_MACVLAN_BRIDGE;
	}
}

static int open_ctx(struct guest_env *e, enum vnic_naming naming,
		    struct sample *s, char *err, size_t errlen)
{
	VNIC_OPTS(vnic_ctx_opts, opts, .owner = BENCH_OWNER);
	uint64_t t0;
	int ret;

	ret = vnic_ctx_new(&opts, &e->ctx);
	if (ret) {
		e->ctx = NULL;
		return bench_lib_fail(e->ctx, "vnic_ctx_new", ret, err, errlen);
	}
	if (naming != VNIC_NAMING_CACHE)
		return 0;
	t0 = now_ns();
	ret = vnic_ctx_refresh(e->ctx);
	s->table_ms = ms_since(t0);
	return ret ? bench_lib_fail(e->ctx, "vnic_ctx_refresh", ret, err, errlen) : 0;
}

static int build_and_create(struct guest_env *e, enum vnic_naming naming,
			    char *err, size_t errlen)
{
	char name[16], peer[16];
	struct vnic_nic_opts nic;
	unsigned int i;
	int ret;

	ret = vnic_guest_new(e->ctx, BENCH_GUEST, &e->guest);
	if (ret) {
		e->guest = NULL;
		return bench_lib_fail(e->ctx, "vnic_guest_new", ret, err, errlen);
	}
	for (i = 0; i < e->o->nics; i++) {
		libvnic_nic_opts(e, i, naming, name, peer, &nic);
		ret = vnic_guest_add_nic(e->guest, &nic, NULL);
		if (ret)
			return bench_lib_fail(e->ctx, "vnic_guest_add_nic", ret, err, errlen);
	}
	ret = vnic_guest_create(e->guest);
	return ret ? bench_lib_fail(e->ctx, "vnic_guest_create", ret, err, errlen) : 0;
}

static void stats_delta(const struct vnic_ctx_stats *a,
			const struct vnic_ctx_stats *b, struct sample *s)
{
	/* One guest per run: the deltas are the per-guest figures. */
	s->sendmsg = (double)(b->sendmsg_calls - a->sendmsg_calls);
	s->requests = (double)(b->requests - a->requests);
	s->ioctls = (double)(b->ioctls - a->ioctls);
	s->retries = (double)(b->name_retries - a->name_retries);
}

static int libvnic_run(struct guest_env *e, enum vnic_naming naming,
		       struct sample *s, char *err, size_t errlen)
{
	struct vnic_ctx_stats before, after;
	uint64_t t0;
	int ret, have;

	ret = open_ctx(e, naming, s, err, errlen);
	if (ret)
		return ret;
	memset(&before, 0, sizeof(before));
	before.sz = sizeof(before);
	after = before;
	have = vnic_ctx_stats(e->ctx, &before) == 0;
	t0 = now_ns();
	ret = build_and_create(e, naming, err, errlen);
	s->ms = ms_since(t0);
	if (have && vnic_ctx_stats(e->ctx, &after) == 0)
		stats_delta(&before, &after, s);
	return ret;
}

#define RUN(fn, naming)							\
static int fn(struct guest_env *e, struct sample *s, char *err,		\
	      size_t errlen)						\
{									\
	return libvnic_run(e, naming, s, err, errlen);			\
}
RUN(run_kernel, VNIC_NAMING_KERNEL)
RUN(run_cache, VNIC_NAMING_CACHE)
RUN(run_explicit, VNIC_NAMING_EXPLICIT)

/*
 * vnic_guest_destroy is timed on each method's first run only, for the
 * record: later runs free the handle and leave the deleting to the
 * bench's cleanup, which deletes by group in one unregister batch (one by
 * one, each deletion waits for RCU: seconds per guest on this machine).
 */
static void release(struct guest_env *e)
{
	uint64_t t0 = now_ns();
	int ret;

	if (e->guest && e->run == 0) {
		ret = vnic_guest_destroy(e->guest);
		e->destroy_ms = ms_since(t0);
		if (ret)
			fprintf(stderr, "vnic-bench: vnic_guest_destroy: %s\n",
				vnic_strerror(ret));
	} else if (e->guest) {
		vnic_guest_free(e->guest);
	}
	e->guest = NULL;
	if (e->ctx)
		vnic_ctx_free(e->ctx);
	e->ctx = NULL;
}

#define LIBVNIC_METHOD(n, r)	\
	{ .name = n, .libvnic = true, .run = r, .release = release }
const struct method method_libvnic_kernel =
	LIBVNIC_METHOD("libvnic-kernel", run_kernel);
const struct method method_libvnic_cache =
	LIBVNIC_METHOD("libvnic-cache", run_cache);
const struct method method_libvnic_explicit =
	LIBVNIC_METHOD("libvnic-explicit", run_explicit);
