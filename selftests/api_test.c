// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The public API as a runtime author reads it (include/vnic/common.h):
 * every struct that carries sz, from a caller built against an older,
 * smaller copy and from one built against a newer, larger copy; the
 * filter calls on both backends.  Each struct's two copies are declared
 * here, apart from the library's own sizes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "util.h"

#define GUARD 0xa5

/* Whether p[0..n-1] are all GUARD: bytes the library must not write. */
static bool untouched(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++ != GUARD)
			return false;
	return true;
}

/* The end of a field: the size of a struct whose last field it is. */
#define END(TYPE, FIELD) \
	(offsetof(struct TYPE, FIELD) + sizeof(((struct TYPE *)0)->FIELD))

/* vnic_filter_result of libvnic 0.1: up to 'writes'. */
#define RESULT_0_1	END(vnic_filter_result, writes)

/* A caller built against a newer header: one more field, set or not. */
#define NEWER(TYPE)			\
	struct TYPE##_next {		\
		struct TYPE o;		\
		uint64_t added;		\
	}

NEWER(vnic_filter_opts);
NEWER(vnic_guest_policy);
NEWER(vnic_nic_policy);
NEWER(vnic_rule);

FIXTURE(api) {
	struct vnic_ctx *ctx;
	struct vnic_guest *g;		/* one macvlan, "api0" */
	struct vnic_policy *p;		/* guest "g" with that NIC */
	struct vnic_filter *f;
	char mac[18];
};

FIXTURE_VARIANT(api) {
	enum vnic_backend backend;
};

FIXTURE_VARIANT_ADD(api, nft) { VNIC_BACKEND_NFT };
FIXTURE_VARIANT_ADD(api, bpf) { VNIC_BACKEND_BPF };

FIXTURE_SETUP(api)
{
	VNIC_OPTS(vnic_ctx_opts, co, .owner = "api");
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "api0", .up = 1);
	VNIC_OPTS(vnic_filter_opts, fo, .backend = variant->backend);
	VNIC_OPTS(vnic_nic_info, info);
	int err;

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&co, &self->ctx));
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "g", &self->g));
	ASSERT_EQ(0, vnic_guest_add_nic(self->g, &nic, NULL));
	ASSERT_EQ(0, vnic_guest_create(self->g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, vnic_guest_nic_info(self->g, 0, &info));
	st_mac_format(info.mac, self->mac);
	ASSERT_EQ(0, vnic_policy_new(self->ctx, &self->p));
	ASSERT_EQ(0, vnic_policy_add_guest(self->p, "g", NULL));
	ASSERT_EQ(0, vnic_policy_add_nics_of(self->p, "g", self->g));
	err = vnic_filter_open(self->ctx, &fo, &self->f);
	if (err == -EOPNOTSUPP)
		SKIP(return, "%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, err) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
}

FIXTURE_TEARDOWN(api)
{
	vnic_filter_close(self->f);
	vnic_policy_free(self->p);
	vnic_guest_free(self->g);
	vnic_ctx_free(self->ctx);
}

/* --- vnic_filter_opts ------------------------------------------------------ */

/* An older caller that knew no capacity: the default, not its stack. */
TEST_F(api, filter_opts_smaller_ok)
{
	VNIC_OPTS(vnic_filter_opts, o, .backend = variant->backend,
		  .capacity = 1u << 30);
	struct vnic_filter *f = NULL;

	/* Past sz: a capacity over every backend's limit, never read. */
	o.sz = offsetof(struct vnic_filter_opts, capacity);
	vnic_filter_close(self->f);
	self->f = NULL;
	ASSERT_EQ(0, vnic_filter_open(self->ctx, &o, &f)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(variant->backend, vnic_filter_backend(f));
	EXPECT_EQ(0, vnic_filter_sync(f, self->p, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	vnic_filter_close(f);
}

TEST_F(api, filter_opts_larger)
{
	struct vnic_filter_opts_next next;
	struct vnic_filter *f = (void *)1;

	memset(&next, 0, sizeof(next));
	next.o.sz = sizeof(next);
	next.o.backend = variant->backend;
	next.added = 1;
	EXPECT_EQ(-E2BIG, vnic_filter_open(self->ctx, &next.o, &f));
	EXPECT_EQ((void *)1, f);
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "vnic_filter_opts"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));

	next.added = 0;
	ASSERT_EQ(0, vnic_filter_open(self->ctx, &next.o, &f))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(variant->backend, vnic_filter_backend(f));
	vnic_filter_close(f);
}

/* --- vnic_filter_result, through every call that fills one ----------------- */

enum call { APPLY, SYNC, SYNC_DIFF, DIFF, DIFF_NULL, REMOVE, CALLS };

static const char *const call_names[CALLS] = {
	"apply", "sync", "sync_diff", "diff", "diff (no policy)", "remove",
};

static int run(struct vnic_filter *f, const struct vnic_policy *p, enum call c,
	       struct vnic_filter_result *res)
{
	static const char *const g[] = { "g" };

	switch (c) {
	case APPLY:	return vnic_filter_apply(f, p, res);
	case SYNC:	return vnic_filter_sync(f, p, res);
	case SYNC_DIFF:	return vnic_filter_sync_diff(f, p, NULL, NULL, res);
	case DIFF:	return vnic_filter_diff(f, p, NULL, NULL, res);
	case DIFF_NULL:	return vnic_filter_diff(f, NULL, NULL, NULL, res);
	case REMOVE:	return vnic_filter_remove(f, g, 1, res);
	default:	return -EINVAL;
	}
}

/*
 * Below the 0.1 struct: -EINVAL with a message, not a byte written, nothing
 * done; at it (the oldest caller): exactly its bytes; larger (a newer
 * caller): ours, its tail untouched, and sz says how much was written.
 * The guest is installed before each call but remove's.
 */
TEST_F(api, filter_result_sz_every_call)
{
	struct {
		struct vnic_filter_result r;
		unsigned char guard[32];
	} b;
	char **names;
	unsigned int n;
	enum call c;

	for (c = 0; c < CALLS; c++) {
		ASSERT_EQ(0, vnic_filter_sync(self->f, self->p, NULL))
			TH_LOG("%s", vnic_ctx_errmsg(self->ctx));

		memset(&b, GUARD, sizeof(b));
		b.r.sz = RESULT_0_1 - 1;
		EXPECT_EQ(-EINVAL, run(self->f, self->p, c, &b.r)) TH_LOG("%s", call_names[c]);
		EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "vnic_filter_result"))
			TH_LOG("%s: %s", call_names[c], vnic_ctx_errmsg(self->ctx));
		EXPECT_EQ(RESULT_0_1 - 1, b.r.sz);
		EXPECT_TRUE(untouched((char *)&b + sizeof(size_t), sizeof(b) - sizeof(size_t)))
			TH_LOG("%s", call_names[c]);
		ASSERT_EQ(0, vnic_filter_guests(self->f, &names, &n));
		EXPECT_EQ(1u, n) TH_LOG("%s: refused, yet it acted", call_names[c]);
		free(names);

		memset(&b, GUARD, sizeof(b));
		b.r.sz = RESULT_0_1;
		ASSERT_EQ(0, run(self->f, self->p, c, &b.r))
			TH_LOG("%s: %s", call_names[c], vnic_ctx_errmsg(self->ctx));
		EXPECT_EQ(RESULT_0_1, b.r.sz);
		EXPECT_TRUE(untouched((char *)&b + RESULT_0_1, sizeof(b) - RESULT_0_1))
			TH_LOG("%s", call_names[c]);
		if (c == REMOVE)
			EXPECT_EQ(1u, b.r.guests_removed);

		ASSERT_EQ(0, vnic_filter_sync(self->f, self->p, NULL));
		memset(&b, 0, sizeof(b));
		memset(b.guard, GUARD, sizeof(b.guard));
		b.r.sz = sizeof(b);
		ASSERT_EQ(0, run(self->f, self->p, c, &b.r))
			TH_LOG("%s: %s", call_names[c], vnic_ctx_errmsg(self->ctx));
		EXPECT_EQ(sizeof(struct vnic_filter_result), b.r.sz);
		EXPECT_TRUE(untouched(b.guard, sizeof(b.guard))) TH_LOG("%s", call_names[c]);
	}
}

/* A failed change writes no result at all (filter.h: success only). */
TEST_F(api, filter_result_untouched_on_failure)
{
	static const char *const nope[] = { "nope" };
	struct vnic_filter_result r;

	memset(&r, GUARD, sizeof(r));
	r.sz = sizeof(r);
	EXPECT_EQ(-ENOENT, vnic_filter_remove(self->f, nope, 1, &r));
	EXPECT_EQ(sizeof(r), r.sz);
	EXPECT_TRUE(untouched((char *)&r + sizeof(size_t), sizeof(r) - sizeof(size_t)));
}

/* The diff struct the library hands to a callback says its own size. */
static int diff_sz_cb(const struct vnic_filter_diff *d, void *arg)
{
	size_t *sz = arg;

	*sz = d->sz;
	return 0;
}

TEST_F(api, filter_diff_sz)
{
	size_t sz = 0;

	ASSERT_EQ(0, vnic_filter_diff(self->f, self->p, diff_sz_cb, &sz, NULL));
	EXPECT_EQ(sizeof(struct vnic_filter_diff), sz);
}

/* --- the policy's structs ---------------------------------------------------- */

/* An older caller without the switch fields: stack bytes past its sz
 * (switches_set 1, unknown switches) are not read. */
TEST_F(api, guest_policy_sz)
{
	VNIC_OPTS(vnic_guest_policy, gp, .switches = 0xffffffff, .switches_set = 1);
	struct vnic_guest_policy_next next;

	EXPECT_EQ(-EINVAL, vnic_policy_add_guest(self->p, "old", &gp));	/* control */
	gp.sz = offsetof(struct vnic_guest_policy, switches);
	ASSERT_EQ(0, vnic_policy_add_guest(self->p, "old", &gp))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));

	memset(&next, 0, sizeof(next));
	next.o.sz = sizeof(next);
	next.added = 1;
	EXPECT_EQ(-E2BIG, vnic_policy_add_guest(self->p, "new", &next.o));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "vnic_guest_policy"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	next.added = 0;
	EXPECT_EQ(0, vnic_policy_add_guest(self->p, "new", &next.o));
	EXPECT_EQ(3u, vnic_policy_guest_count(self->p));
}

/* An older caller without the switch fields: stack bytes past its sz
 * (switches_set 1, unknown switches) are not read. */
TEST_F(api, nic_policy_sz)
{
	VNIC_OPTS(vnic_nic_policy, np, .ifname = "api0", .kind = VNIC_KIND_MACVLAN,
		  .mac = self->mac, .switches = 0xffffffff, .switches_set = 1);
	struct vnic_nic_policy_next next;

	ASSERT_EQ(0, vnic_policy_add_guest(self->p, "h", NULL));
	/* The whole struct: the unknown switches are refused (the control). */
	EXPECT_EQ(-EINVAL, vnic_policy_add_nic(self->p, "h", &np));
	memset(&next, 0, sizeof(next));
	memcpy(&next.o, &np, sizeof(np));
	next.o.sz = sizeof(next);
	next.o.switches_set = 0;
	next.added = 1;
	EXPECT_EQ(-E2BIG, vnic_policy_add_nic(self->p, "h", &next.o));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "vnic_nic_policy"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));

	/* api0 is guest g's: the older struct goes to a new policy. */
	vnic_policy_free(self->p);
	ASSERT_EQ(0, vnic_policy_new(self->ctx, &self->p));
	ASSERT_EQ(0, vnic_policy_add_guest(self->p, "h", NULL));
	np.sz = offsetof(struct vnic_nic_policy, switches);
	ASSERT_EQ(0, vnic_policy_add_nic(self->p, "h", &np)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(0, vnic_filter_sync(self->f, self->p, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
}

/* An older caller without 'action': a drop (0), not its stack's value. */
TEST_F(api, rule_sz)
{
	VNIC_OPTS(vnic_rule, r, .l4proto = 6, .dport_min = 22, .action = 77);
	struct vnic_rule_next next;

	EXPECT_EQ(-EINVAL, vnic_policy_add_rule(self->p, "g", &r));	/* control */
	r.sz = offsetof(struct vnic_rule, action);
	EXPECT_EQ(0, vnic_policy_add_rule(self->p, "g", &r)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));

	memset(&next, 0, sizeof(next));
	next.o.sz = sizeof(next);
	next.o.l4proto = 6;
	next.added = 1;
	EXPECT_EQ(-E2BIG, vnic_policy_add_rule(self->p, "g", &next.o));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "vnic_rule"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	next.added = 0;
	EXPECT_EQ(0, vnic_policy_add_rule(self->p, "g", &next.o));
}

/* --- flags: a bit this library does not know is refused, not ignored ------- */

/*
 * A caller built against a newer header may set a flag this library lacks;
 * ignoring it would do something else than asked (a read-only open that
 * claims the table, say).  -EINVAL, as for tap flags and switches.
 */
TEST_F(api, ctx_opts_unknown_flag)
{
	VNIC_OPTS(vnic_ctx_opts, o, .flags = VNIC_CTX_NO_ECHO | VNIC_CTX_NO_MONITOR);
	struct vnic_ctx *ctx = (void *)1;

	if (variant->backend != VNIC_BACKEND_NFT)
		SKIP(return, "no filter in it: run once");
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));		/* the control */
	vnic_ctx_free(ctx);
	ctx = (void *)1;
	o.flags |= 1u << 31;
	EXPECT_EQ(-EINVAL, vnic_ctx_new(&o, &ctx));
	EXPECT_EQ((void *)1, ctx);
	if (ctx != (void *)1)
		vnic_ctx_free(ctx);
}

TEST_F(api, filter_opts_unknown_flag)
{
	VNIC_OPTS(vnic_filter_opts, o, .backend = variant->backend,
		  .flags = variant->backend == VNIC_BACKEND_NFT ?
			   VNIC_FILTER_NO_PERSIST : 0);
	struct vnic_filter *f = NULL;

	vnic_filter_close(self->f);
	self->f = NULL;
	ASSERT_EQ(0, vnic_filter_open(self->ctx, &o, &f))	/* the control */
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	vnic_filter_close(f);
	f = (void *)1;
	o.flags |= 1u << 31;
	EXPECT_EQ(-EINVAL, vnic_filter_open(self->ctx, &o, &f));
	EXPECT_EQ((void *)1, f);
	if (f != (void *)1)
		vnic_filter_close(f);
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "unknown flags 0x80000000"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
}

/* --- NULL arguments: -EINVAL, a message of the call's own --------------- */

/* A failure before the call: its message must not stand for the call's. */
#define STALE	"stale-failure"

static void fail_before(struct vnic_ctx *ctx)
{
	struct vnic_guest *g;

	vnic_guest_new(ctx, STALE "!", &g);
}

/* call (with a NULL it needs) is -EINVAL, and the context then says so,
 * naming the function, not the failure before it. */
#define EXPECT_NULL_REFUSED(ctx, fn, call) do {				\
	const char *m_;							\
									\
	fail_before(ctx);						\
	EXPECT_EQ(-EINVAL, (call)) TH_LOG("%s", #call);			\
	m_ = vnic_ctx_errmsg(ctx);					\
	EXPECT_EQ(NULL, strstr(m_, STALE)) TH_LOG("%s: %s", #call, m_);	\
	EXPECT_NE(NULL, strstr(m_, fn)) TH_LOG("%s: %s", #call, m_);	\
	EXPECT_EQ((int)VNIC_STEP_VALIDATE, (int)vnic_ctx_errstep(ctx));\
} while (0)

TEST_F(api, filter_null_args)
{
	struct vnic_ctx *ctx = self->ctx;
	struct vnic_filter *f = self->f;
	char **names = (void *)1, *text = (void *)1;
	unsigned int n = 7;
	uint64_t pk = 7, by = 7;

	EXPECT_NULL_REFUSED(ctx, "vnic_filter_apply", vnic_filter_apply(f, NULL, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_sync", vnic_filter_sync(f, NULL, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_sync_diff",
			    vnic_filter_sync_diff(f, NULL, NULL, NULL, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_remove", vnic_filter_remove(f, NULL, 1, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_guests", vnic_filter_guests(f, NULL, &n));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_guests", vnic_filter_guests(f, &names, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_counter", vnic_filter_counter(f, NULL, &pk, &by));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_counter", vnic_filter_counter(f, "g", NULL, &by));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_counter", vnic_filter_counter(f, "g", &pk, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_render", vnic_filter_render(f, NULL, &text));
	EXPECT_NULL_REFUSED(ctx, "vnic_filter_render", vnic_filter_render(f, self->p, NULL));
	/* Out-parameters written on success only. */
	EXPECT_EQ((void *)1, names);
	EXPECT_EQ(7u, n);
	EXPECT_EQ(7u, pk);
	EXPECT_EQ(7u, by);
	EXPECT_EQ((void *)1, text);
	/* The control: the same handle works, and success leaves "". */
	fail_before(ctx);
	EXPECT_EQ(0, vnic_filter_sync(f, self->p, NULL)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_STREQ("", vnic_ctx_errmsg(ctx));
}

/* The same for every allocator call and the policy's, on a context. */
TEST_F(api, alloc_null_args)
{
	static const char *const ifnames[] = { "api0" };
	struct vnic_ctx *ctx = self->ctx;
	struct vnic_guest *g = (void *)1;
	struct vnic_policy *p = (void *)1;
	char **names = (void *)1;
	unsigned int n = 7;

	if (variant->backend != VNIC_BACKEND_NFT)
		SKIP(return, "no filter in it: run once");
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_new", vnic_guest_new(ctx, "x", NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_add_nic", vnic_guest_add_nic(self->g, NULL, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_nic_info", vnic_guest_nic_info(self->g, 0, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_list", vnic_guest_list(ctx, NULL, &n));
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_list", vnic_guest_list(ctx, &names, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_adopt", vnic_guest_adopt(ctx, "g", NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_adopt_named",
			    vnic_guest_adopt_named(ctx, "g", NULL, 1, &g));
	EXPECT_NULL_REFUSED(ctx, "vnic_guest_adopt_named",
			    vnic_guest_adopt_named(ctx, "g", ifnames, 1, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_collect_orphans", vnic_collect_orphans(ctx, NULL, 1, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_ctx_stats", vnic_ctx_stats(ctx, NULL));
	EXPECT_NULL_REFUSED(ctx, "vnic_policy_new", vnic_policy_new(ctx, NULL));
	EXPECT_EQ((void *)1, g);
	EXPECT_EQ((void *)1, p);
	EXPECT_EQ((void *)1, names);
	EXPECT_EQ(7u, n);
	EXPECT_EQ(1u, vnic_guest_nic_count(self->g));
	/* Nothing was collected or deleted. */
	EXPECT_EQ(1, st_vnic_links_count());
}

/* --- thread safety (context.h): distinct contexts share no state --------- */

#define THREADS	2
#define ROUNDS	15
#define NICS	4

struct worker {
	unsigned int id;
	int failures;		/* calls that failed (0 expected) */
	int foreign_msgs;	/* messages that were not this thread's */
	char why[256];
};

static void worker_fail(struct worker *w, const char *what, struct vnic_ctx *ctx)
{
	if (!w->failures++)
		snprintf(w->why, sizeof(w->why), "%s: %s", what, vnic_ctx_errmsg(ctx));
}

/* Its own context: guests of NICS macvlans named from one template that
 * every thread uses (the names race), and a failure of its own whose
 * message must be its own, between each. */
static void *worker_run(void *arg)
{
	struct worker *w = arg;
	VNIC_OPTS(vnic_ctx_opts, co, .owner = "thr");
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "thr%d", .naming = VNIC_NAMING_CACHE);
	struct vnic_ctx *ctx;
	char name[32], bad[32];
	unsigned int r, i;

	if (vnic_ctx_new(&co, &ctx)) {
		w->failures++;
		return NULL;
	}
	for (r = 0; r < ROUNDS; r++) {
		struct vnic_guest *g;

		snprintf(bad, sizeof(bad), "bad name %u.%u", w->id, r);
		if (vnic_guest_new(ctx, bad, &g) != -EINVAL ||
		    !strstr(vnic_ctx_errmsg(ctx), bad))
			w->foreign_msgs++;
		snprintf(name, sizeof(name), "t%u-%u", w->id, r);
		if (vnic_guest_new(ctx, name, &g)) {
			worker_fail(w, "new", ctx);
			continue;
		}
		for (i = 0; i < NICS; i++)
			if (vnic_guest_add_nic(g, &nic, NULL))
				worker_fail(w, "add", ctx);
		if (vnic_guest_create(g))
			worker_fail(w, "create", ctx);
		else if (vnic_ctx_errmsg(ctx)[0])
			w->foreign_msgs++;
		if (vnic_guest_destroy(g))
			worker_fail(w, "destroy", ctx);
	}
	vnic_ctx_free(ctx);
	return NULL;
}

TEST_F(api, contexts_in_threads)
{
	struct worker w[THREADS];
	pthread_t t[THREADS];
	unsigned int i;

	if (variant->backend != VNIC_BACKEND_NFT)
		SKIP(return, "no filter in it: run once");
	memset(w, 0, sizeof(w));
	for (i = 0; i < THREADS; i++) {
		w[i].id = i;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_run, &w[i]));
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < THREADS; i++) {
		EXPECT_EQ(0, w[i].failures) TH_LOG("thread %u: %s", i, w[i].why);
		EXPECT_EQ(0, w[i].foreign_msgs) TH_LOG("thread %u", i);
	}
	EXPECT_EQ(0, st_prefixed_links_count("thr"));
	EXPECT_EQ(1, st_vnic_links_count());	/* the fixture's api0 */
}

TEST_HARNESS_MAIN
