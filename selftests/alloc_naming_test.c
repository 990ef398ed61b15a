// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Naming at scale and over time: an 82-NIC guest, lowest-compact names
 * without immediate reuse (quarantine), holes and look-alike names left by
 * others, four processes naming at once, and a link monitor that overflows.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "lib/testing.h"
#include "util.h"

#define OWNER	"nt"

FIXTURE(naming) {
	struct vnic_ctx *ctx;
};

FIXTURE_SETUP(naming)
{
	ST_SETUP_NETNS();
}

FIXTURE_TEARDOWN(naming)
{
	st_macvtaps_flush();
}

static struct vnic_ctx *ctx_new(struct __test_metadata *_metadata,
				const struct vnic_ctx_opts *o)
{
	struct vnic_ctx *ctx = NULL;
	int ret = vnic_ctx_new(o, &ctx);

	ASSERT_EQ(0, ret) TH_LOG("vnic_ctx_new: %s", vnic_strerror(ret));
	return ctx;
}

/* A created guest of n macvlans (cheap, no char device) named tmpl. */
static struct vnic_guest *guest_make(struct __test_metadata *_metadata,
				     struct vnic_ctx *ctx, const char *name,
				     enum vnic_kind kind, const char *tmpl,
				     enum vnic_naming naming, unsigned int n)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = kind, .lower = LOWER,
		  .name = tmpl, .naming = naming, .up = 1);
	struct vnic_guest *g = NULL;
	unsigned int i;
	int ret;

	ASSERT_EQ(0, vnic_guest_new(ctx, name, &g));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL))
			TH_LOG("%s", vnic_ctx_errmsg(ctx));
	}
	ret = vnic_guest_create(g);
	ASSERT_EQ(0, ret) TH_LOG("create %s: %s", name, vnic_ctx_errmsg(ctx));
	return g;
}

/* NIC i of g is named prefix + want[i], and ip agrees. */
static void expect_suffixes(struct __test_metadata *_metadata,
			    struct vnic_guest *g, const char *prefix,
			    const unsigned int *want, unsigned int n)
{
	struct ip_link l;
	unsigned int i;
	char name[IFNAMSIZ];

	ASSERT_EQ(n, vnic_guest_nic_count(g));
	for (i = 0; i < n; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		snprintf(name, sizeof(name), "%s%u", prefix, want[i]);
		EXPECT_STREQ(name, info.name) TH_LOG("nic %u", i);
		EXPECT_EQ(0, st_ip_link_get(info.name, &l))
			TH_LOG("%s not in ip link", info.name);
	}
}

/* --- the 82-NIC guest, under every naming path --- */

FIXTURE(big) {
	struct vnic_ctx *ctx;
};

FIXTURE_VARIANT(big) {
	uint32_t flags;
	enum vnic_naming naming;
};

#define NOECHO	VNIC_CTX_NO_ECHO

FIXTURE_VARIANT_ADD(big, cache_echo) { 0, VNIC_NAMING_CACHE };
FIXTURE_VARIANT_ADD(big, cache_noecho) { NOECHO, VNIC_NAMING_CACHE };
FIXTURE_VARIANT_ADD(big, kernel_echo) { 0, VNIC_NAMING_KERNEL };
FIXTURE_VARIANT_ADD(big, kernel_noecho) { NOECHO, VNIC_NAMING_KERNEL };
FIXTURE_VARIANT_ADD(big, auto_echo) { 0, VNIC_NAMING_AUTO };
FIXTURE_VARIANT_ADD(big, auto_noecho) { NOECHO, VNIC_NAMING_AUTO };

FIXTURE_SETUP(big)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);

	ST_SETUP_NETNS();
	self->ctx = ctx_new(_metadata, &o);
}

FIXTURE_TEARDOWN(big)
{
	st_macvtaps_flush();
}

/* Each of the 82 NICs, as ip shows it. */
static void big_check(struct __test_metadata *_metadata, struct vnic_guest *g,
		      unsigned int n)
{
	struct nic_expect exp = {
		.kind = VNIC_KIND_MACVTAP, .mode = "bridge", .up = true,
		.lower = LOWER, .mtu = 1500,
	};
	char why[256], alias[64], want[IFNAMSIZ];
	struct ip_link l;
	unsigned int i;
	json_t *links = st_ip_links(-1);

	ASSERT_NE(NULL, links);
	for (i = 0; i < n; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		/* A fresh namespace: lowest free is exactly mvt0..mvt81, and
		 * one pipelined request keeps the NIC order. */
		snprintf(want, sizeof(want), "mvt%u", i);
		EXPECT_STREQ(want, info.name);
		st_vnic_alias(alias, sizeof(alias), OWNER, "vm82", i);
		exp.alias = alias;
		ASSERT_EQ(0, st_ip_link_find(links, info.name, &l))
			TH_LOG("nic %u %s not in ip link", i, info.name);
		EXPECT_EQ(0, st_nic_check(&info, &l, &exp, why, sizeof(why)))
			TH_LOG("nic %u: %s", i, why);
	}
	/* Unique names: ip lists exactly n macvtaps with our tag. */
	EXPECT_EQ((int)n, st_ip_links_count(links, "vnic:" OWNER ":vm82:"));
	json_decref(links);
}

TEST_F(big, guest_82_macvtaps)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "mvt%d", .naming = variant->naming, .up = 1);
	struct vnic_ctx_stats before, after;
	struct vnic_guest *g;
	unsigned int i;
	long long t0;
	int ret;

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "vm82", &g));
	for (i = 0; i < 82; i++) {
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	}
	ST_STATS(self->ctx, &before);
	t0 = st_now_ms();
	ret = vnic_guest_create(g);
	ASSERT_EQ(0, ret) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	TH_LOG("82 macvtaps created in %lld ms", st_now_ms() - t0);
	ST_STATS(self->ctx, &after);
	/* macvtap creation is netlink only, and pipelined: far fewer
	 * sendmsg() calls than NICs (Documentation/allocator.rst, "What
	 * one create does"). */
	EXPECT_EQ(before.ioctls, after.ioctls);
	EXPECT_LT(after.sendmsg_calls - before.sendmsg_calls, 41ULL)
		TH_LOG("%llu sendmsg calls for 82 NICs",
		       (unsigned long long)(after.sendmsg_calls -
					    before.sendmsg_calls));
	big_check(_metadata, g, 82);

	t0 = st_now_ms();
	ASSERT_EQ(0, vnic_guest_destroy(g));
	TH_LOG("and destroyed in %lld ms", st_now_ms() - t0);
	EXPECT_EQ(0, st_vnic_links_count());
	EXPECT_EQ(0, st_prefixed_links_count("mvt"));
}

/* --- lowest-compact names and the quarantine --- */

static const unsigned int q0_3[] = { 0, 1, 2, 3 };
static const unsigned int q4_7[] = { 4, 5, 6, 7 };
static const unsigned int q8_11[] = { 8, 9, 10, 11 };

TEST_F(naming, quarantine_default_no_immediate_reuse)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx = ctx_new(_metadata, &o);
	struct vnic_guest *g;

	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "q%d",
		       VNIC_NAMING_CACHE, 4);
	expect_suffixes(_metadata, g, "q", q0_3, 4);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	ASSERT_EQ(0, st_prefixed_links_count("q"));
	/* The default quarantine (10 s) has not expired. */
	g = guest_make(_metadata, ctx, "g2", VNIC_KIND_MACVLAN, "q%d",
		       VNIC_NAMING_CACHE, 4);
	expect_suffixes(_metadata, g, "q", q4_7, 4);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	vnic_ctx_free(ctx);
}

#define QMS 1500

TEST_F(naming, quarantine_expires)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .quarantine_ms = QMS);
	struct vnic_ctx *ctx = ctx_new(_metadata, &o);
	struct vnic_guest *g1, *g2, *g3;
	long long freed, elapsed;

	g1 = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "q%d",
			VNIC_NAMING_CACHE, 4);
	expect_suffixes(_metadata, g1, "q", q0_3, 4);
	ASSERT_EQ(0, vnic_guest_destroy(g1));
	freed = st_now_ms();
	g2 = guest_make(_metadata, ctx, "g2", VNIC_KIND_MACVLAN, "q%d",
			VNIC_NAMING_CACHE, 4);
	elapsed = st_now_ms() - freed;
	if (elapsed >= QMS)
		SKIP({ vnic_guest_free(g2); vnic_ctx_free(ctx); return; },
		     "machine too slow: %lld ms >= quarantine", elapsed);
	expect_suffixes(_metadata, g2, "q", q4_7, 4);

	/* Past the quarantine q0..q3 are the lowest free again. */
	usleep((QMS - elapsed + 100) * 1000);
	g3 = guest_make(_metadata, ctx, "g3", VNIC_KIND_MACVLAN, "q%d",
			VNIC_NAMING_CACHE, 4);
	expect_suffixes(_metadata, g3, "q", q0_3, 4);

	/* q4..q7 just freed are quarantined in turn: next come q8..q11. */
	ASSERT_EQ(0, vnic_guest_destroy(g2));
	g2 = guest_make(_metadata, ctx, "g4", VNIC_KIND_MACVLAN, "q%d",
			VNIC_NAMING_CACHE, 4);
	expect_suffixes(_metadata, g2, "q", q8_11, 4);
	ASSERT_EQ(0, vnic_guest_destroy(g2));
	ASSERT_EQ(0, vnic_guest_destroy(g3));
	EXPECT_EQ(0, st_prefixed_links_count("q"));
	vnic_ctx_free(ctx);
}

/*
 * A template of 100 names (a 13-character prefix: two digits) whose every
 * free name is only quarantined: the quarantine is a preference, not a
 * reason to fail.  A runtime that restarts a guest at once gets names
 * back, the one freed longest ago first, where the kernel's "%d" would
 * give them too.
 */
#define Q13 "qqqqqqqqqqqqq"

TEST_F(naming, quarantine_yields_when_every_free_name_is_quarantined)
{
	static const unsigned int two[] = { 30, 70 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx = ctx_new(_metadata, &o);
	unsigned int all[100], i;
	struct vnic_guest *g;

	for (i = 0; i < 100; i++)
		all[i] = i;
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, Q13 "%d",
		       VNIC_NAMING_CACHE, 100);
	expect_suffixes(_metadata, g, Q13, all, 100);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	g = guest_make(_metadata, ctx, "g2", VNIC_KIND_MACVLAN, Q13 "%d",
		       VNIC_NAMING_CACHE, 100);
	/* 30 freed before 70, both after every other. */
	ASSERT_EQ(0, st_run_cmd("ip link del " Q13 "30"));
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	ASSERT_EQ(0, st_run_cmd("ip link del " Q13 "70"));
	vnic_guest_free(g);
	g = guest_make(_metadata, ctx, "g3", VNIC_KIND_MACVLAN, Q13 "%d",
		       VNIC_NAMING_CACHE, 2);
	expect_suffixes(_metadata, g, Q13, two, 2);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * A name freed by someone else while this context watched: vnic/context.h
 * quarantines any name freed less than quarantine_ms ago, so it too waits
 * before it is handed out again.
 */
TEST_F(naming, outside_free_quarantined_then_reused)
{
	static const unsigned int two[] = { 2, 3 }, four[] = { 4 };
	static const unsigned int zero[] = { 0 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .quarantine_ms = QMS);
	struct vnic_guest *g1, *g2, *g3;
	struct vnic_ctx *ctx;
	long long freed;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name q0 type macvlan && "
				"ip link add link %s name q1 type macvlan",
				LOWER, LOWER));
	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	g1 = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "q%d",
			VNIC_NAMING_CACHE, 2);
	expect_suffixes(_metadata, g1, "q", two, 2);
	ASSERT_EQ(0, st_run_cmd("ip link del q0"));
	freed = st_now_ms();
	g2 = guest_make(_metadata, ctx, "g2", VNIC_KIND_MACVLAN, "q%d",
			VNIC_NAMING_CACHE, 1);
	if (st_now_ms() - freed >= QMS)
		SKIP({ vnic_guest_free(g1); vnic_guest_free(g2);
		       vnic_ctx_free(ctx); return; },
		     "machine too slow for a %d ms quarantine", QMS);
	expect_suffixes(_metadata, g2, "q", four, 1);
	usleep((QMS + 100) * 1000);
	g3 = guest_make(_metadata, ctx, "g3", VNIC_KIND_MACVLAN, "q%d",
			VNIC_NAMING_CACHE, 1);
	expect_suffixes(_metadata, g3, "q", zero, 1);
	vnic_guest_free(g1);
	vnic_guest_free(g2);
	vnic_guest_free(g3);
	vnic_ctx_free(ctx);
}

/*
 * The monotonic clock as the library reads it, moved on by clock_skip_ms:
 * this definition takes the place of libc's for the whole process.
 */
static long long clock_skip_ms;

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int ret = (int)syscall(SYS_clock_gettime, id, ts);

	if (!ret && id == CLOCK_MONOTONIC) {
		ts->tv_sec += clock_skip_ms / 1000;
		ts->tv_nsec += (clock_skip_ms % 1000) * 1000000;
	}
	return ret;
}

/*
 * A runtime that neither frees nor picks a name for 25 days, and then does:
 * the names freed before the pause (w0, w1) are long out of quarantine.  The times
 * were 32-bit milliseconds, so after 24.8 days they read as in the future
 * and the names stayed held for up to 24.8 days more.
 */
TEST_F(naming, quarantine_outlives_no_32_bit_clock)
{
	static const unsigned int zero[] = { 0 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .quarantine_ms = 60000);
	struct vnic_ctx *ctx = ctx_new(_metadata, &o);
	struct vnic_guest *g;

	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "w%d",
		       VNIC_NAMING_CACHE, 1);
	expect_suffixes(_metadata, g, "w", zero, 1);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	/* The table learns of the delete from its monitor at its next use:
	 * w0's quarantine starts here, before the pause. */
	g = guest_make(_metadata, ctx, "g0", VNIC_KIND_MACVLAN, "w%d",
		       VNIC_NAMING_CACHE, 1);
	expect_suffixes(_metadata, g, "w", (const unsigned int[]){ 1 }, 1);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	clock_skip_ms = 25LL * 24 * 3600 * 1000;
	g = guest_make(_metadata, ctx, "g2", VNIC_KIND_MACVLAN, "w%d",
		       VNIC_NAMING_CACHE, 1);
	expect_suffixes(_metadata, g, "w", zero, 1);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	vnic_ctx_free(ctx);
}

/*
 * A guest whose template NICs come before an explicit NIC, a veth peer
 * and a tap named like the template's names: those names are the caller's,
 * free, and the create must not take them for the template and then fail
 * the NIC that asked for them with EEXIST.  Under either strategy that
 * resolves "%d" (the kernel's, too).
 */
static void template_then_explicit(struct __test_metadata *_metadata,
				   enum vnic_naming naming, uint32_t flags)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = flags);
	VNIC_OPTS(vnic_nic_opts, tmpl, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "xe%d", .naming = naming);
	VNIC_OPTS(vnic_nic_opts, exact, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "xe1");
	VNIC_OPTS(vnic_nic_opts, veth, .kind = VNIC_KIND_VETH, .name = "xv0",
		  .peer_name = "xe3");
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "xe5");
	static const char *const want[] = {
		"xe0", "xe2", "xe1", "xe4", "xv0", "xe6", "xe5", "xe7",
	};
	struct vnic_ctx_stats st;
	struct vnic_ctx *ctx = ctx_new(_metadata, &o);
	struct vnic_guest *g;
	unsigned int i;

	ASSERT_EQ(0, vnic_guest_new(ctx, "g1", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tmpl, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tmpl, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &exact, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tmpl, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &veth, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tmpl, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tap, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tmpl, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ST_STATS(ctx, &st);
	EXPECT_EQ(0ULL, st.name_retries);
	for (i = 0; i < 8; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		EXPECT_STREQ(want[i], info.name) TH_LOG("nic %u", i);
	}
	EXPECT_EQ(0, vnic_guest_destroy(g));
	vnic_ctx_free(ctx);
}

TEST_F(naming, template_leaves_explicit_names_of_the_guest_cache)
{
	template_then_explicit(_metadata, VNIC_NAMING_CACHE, 0);
}

TEST_F(naming, template_leaves_explicit_names_of_the_guest_kernel)
{
	template_then_explicit(_metadata, VNIC_NAMING_KERNEL, 0);
}

TEST_F(naming, template_leaves_explicit_names_of_the_guest_kernel_noecho)
{
	template_then_explicit(_metadata, VNIC_NAMING_KERNEL, VNIC_CTX_NO_ECHO);
}

/* Holes left by others are filled lowest first. */
TEST_F(naming, cache_fills_holes)
{
	static const unsigned int want[] = { 0, 2, 4 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name q1 type macvlan && "
			     "ip link add link %s name q3 type macvlan",
			     LOWER, LOWER));
	ctx = ctx_new(_metadata, &o);
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "q%d",
		       VNIC_NAMING_CACHE, 3);
	expect_suffixes(_metadata, g, "q", want, 3);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * "n01", "n1x" and "n+2" are not suffixes 1 and 2 of "n%d" (the kernel's
 * own rule: a name is in use only if printf gives it back exactly), so
 * n1 and n2 are free and lowest.
 */
TEST_F(naming, cache_ignores_lookalikes)
{
	static const unsigned int want[] = { 0, 1, 2 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name n01 type macvlan && "
			     "ip link add link %s name n1x type macvlan && "
			     "ip link add link %s name n+2 type macvlan",
			     LOWER, LOWER, LOWER));
	ctx = ctx_new(_metadata, &o);
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "n%d",
		       VNIC_NAMING_CACHE, 3);
	expect_suffixes(_metadata, g, "n", want, 3);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/* --- template prefixes that end in a digit, or are digits only --- */

/* A created guest of macvlans, NIC i named by tmpls[i] (cache naming). */
static struct vnic_guest *guest_tmpls(struct __test_metadata *_metadata,
				      struct vnic_ctx *ctx, const char *name,
				      const char *const *tmpls, unsigned int n)
{
	struct vnic_guest *g = NULL;
	unsigned int i;
	int ret;

	ASSERT_EQ(0, vnic_guest_new(ctx, name, &g));
	for (i = 0; i < n; i++) {
		VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN,
			  .lower = LOWER, .name = tmpls[i],
			  .naming = VNIC_NAMING_CACHE);

		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL))
			TH_LOG("%s", vnic_ctx_errmsg(ctx));
	}
	ret = vnic_guest_create(g);
	ASSERT_EQ(0, ret) TH_LOG("create %s: %s", name, vnic_ctx_errmsg(ctx));
	return g;
}

/* NIC i of g is named want[i], and no name was retried. */
static void expect_names(struct __test_metadata *_metadata,
			 struct vnic_ctx *ctx, struct vnic_guest *g,
			 const char *const *want, unsigned int n)
{
	struct vnic_ctx_stats st;
	struct ip_link l;
	unsigned int i;

	ASSERT_EQ(n, vnic_guest_nic_count(g));
	for (i = 0; i < n; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		EXPECT_STREQ(want[i], info.name) TH_LOG("nic %u", i);
		EXPECT_EQ(0, st_ip_link_get(info.name, &l))
			TH_LOG("%s not in ip link", info.name);
	}
	ST_STATS(ctx, &st);
	EXPECT_EQ(0ULL, st.name_retries);
}

/*
 * "ab10" is "ab" + 10 and also "ab1" + 0: with ab10..ab1299 present, every
 * name "ab1%d" can make up to ab1299 (suffixes 0..299) is taken.  The table
 * filed each link under its longest split only, so "ab1%d" learned them one
 * EEXIST at a time: 300 retries and over a second for this one NIC; next to
 * 3,000 such names it failed with -EEXIST at the 10 s name timeout.
 */
TEST_F(naming, prefix_ending_in_digit_sees_taken_names)
{
	static const char *const tmpls[] = { "ab1%d", "ab%d" };
	static const char *const want[] = { "ab1300", "ab0" };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
	long long t0;

	ASSERT_EQ(0, st_run_cmd("for i in $(seq 10 1299); do "
			     "echo link add link %s name ab$i type macvlan; "
			     "done | ip -batch -", LOWER));
	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	t0 = st_now_ms();
	g = guest_tmpls(_metadata, ctx, "g1", tmpls, 2);
	TH_LOG("named in %lld ms", st_now_ms() - t0);
	expect_names(_metadata, ctx, g, want, 2);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * Names picked in one batch are known to every template they match,
 * whichever template was used first: "ab1%d" must not get ab10, picked
 * just before by "ab%d", and "ab%d" then not ab11, picked by "ab1%d".
 */
TEST_F(naming, picks_seen_by_every_template)
{
	static const char *const tmpls[] = {
		"ab%d", "ab%d", "ab%d", "ab%d", "ab%d", "ab%d", "ab%d", "ab%d",
		"ab%d", "ab%d", "ab%d", "ab1%d", "ab%d", "ab1%d",
	};
	static const char *const want[] = {
		"ab0", "ab1", "ab2", "ab3", "ab4", "ab5", "ab6", "ab7", "ab8",
		"ab9", "ab10", "ab11", "ab12", "ab13",
	};
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx = ctx_new(_metadata, &o);
	struct vnic_guest *g;

	g = guest_tmpls(_metadata, ctx, "g1", tmpls, 14);
	expect_names(_metadata, ctx, g, want, 14);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * The kernel's %d makes no leading zero, so "ab00" and "ab0100" are no
 * names of "ab%d" (ab0 is free), but they are "ab0" + 0 and "ab010" + 0:
 * taken for those templates.  The table did not track them at all.
 */
TEST_F(naming, leading_zero_names_taken_for_their_templates)
{
	static const char *const tmpls[] = {
		"ab0%d", "ab0%d", "ab010%d", "ab%d",
	};
	static const char *const want[] = { "ab02", "ab03", "ab0102", "ab0" };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ASSERT_EQ(0, st_run_cmd("for i in 00 01 0100 0101; do "
			     "echo link add link %s name ab$i type macvlan; "
			     "done | ip -batch -", LOWER));
	ctx = ctx_new(_metadata, &o);
	g = guest_tmpls(_metadata, ctx, "g1", tmpls, 4);
	expect_names(_metadata, ctx, g, want, 4);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/* A prefix of digits only ("1%d": "10" is "1" + 0) or none at all ("%d"). */
TEST_F(naming, digit_and_empty_prefixes)
{
	static const char *const tmpls[] = { "1%d", "%d", "%d" };
	static const char *const want[] = { "12", "0", "3" };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ASSERT_EQ(0, st_run_cmd("for i in 10 11 1 2; do "
			     "echo link add link %s name $i type macvlan; "
			     "done | ip -batch -", LOWER));
	ctx = ctx_new(_metadata, &o);
	g = guest_tmpls(_metadata, ctx, "g1", tmpls, 3);
	expect_names(_metadata, ctx, g, want, 3);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * Renames reach every template the names match: a link renamed to ab11
 * takes "ab1" + 1, and ab12 renamed away frees "ab1" + 2 into the
 * quarantine (default 10 s), as a delete would.
 */
TEST_F(naming, renames_seen_by_every_template)
{
	static const char *const first[] = { "ab1%d" }, *const ab10[] = { "ab10" };
	static const char *const tmpls[] = { "ab1%d", "ab1%d", "ab%d" };
	static const char *const want[] = { "ab13", "ab14", "ab0" };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx = ctx_new(_metadata, &o);
	struct vnic_guest *g1, *g2;

	g1 = guest_tmpls(_metadata, ctx, "g1", first, 1);
	expect_names(_metadata, ctx, g1, ab10, 1);
	ASSERT_EQ(0, st_run_cmd("ip link add link %s name t1 type macvlan && "
			     "ip link set t1 name ab11 && "
			     "ip link add link %s name ab12 type macvlan && "
			     "ip link set ab12 name t2", LOWER, LOWER));
	g2 = guest_tmpls(_metadata, ctx, "g2", tmpls, 3);
	expect_names(_metadata, ctx, g2, want, 3);
	vnic_guest_free(g1);
	vnic_guest_free(g2);
	vnic_ctx_free(ctx);
}

/* An alternative name occupies the name space as much as a name does. */
TEST_F(naming, cache_respects_altnames)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
	unsigned int i;

	if (st_run_cmd("ip link add link %s name alt type macvlan && "
		    "ip link property add dev alt altname n0", LOWER))
		SKIP(return, "ip cannot add an altname");
	ctx = ctx_new(_metadata, &o);
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "n%d",
		       VNIC_NAMING_CACHE, 2);
	for (i = 0; i < 2; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		EXPECT_STRNE("n0", info.name);
	}
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/* The kernel strategy also takes the lowest free, and the library learns
 * which one (from the echo, or by its fallback). */
TEST_F(naming, kernel_fills_holes_echo)
{
	static const unsigned int want[] = { 0, 2 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name k1 type macvlan", LOWER));
	ctx = ctx_new(_metadata, &o);
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "k%d",
		       VNIC_NAMING_KERNEL, 2);
	expect_suffixes(_metadata, g, "k", want, 2);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

TEST_F(naming, kernel_fills_holes_noecho)
{
	static const unsigned int want[] = { 0, 2 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = VNIC_CTX_NO_ECHO);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name k1 type macvlan", LOWER));
	ctx = ctx_new(_metadata, &o);
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "k%d",
		       VNIC_NAMING_KERNEL, 2);
	expect_suffixes(_metadata, g, "k", want, 2);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/* --- the cached table against others' changes --- */

/* Bytes allocated on the heap now (the sanitizer's own count under it,
 * whose allocator mallinfo2() does not see). */
#if defined(__SANITIZE_ADDRESS__)
#define HEAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_ASAN 1
#endif
#endif
#ifdef HEAP_ASAN
/* The sanitizer runtime's (GCC ships no header for it). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

static size_t heap_in_use(void)
{
#ifdef HEAP_ASAN
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#endif
}

/*
 * What the heap grew by since @before, 0 if it shrank: a context may free
 * a buffer it held at @before (a resync after a monitor overflow on a busy
 * machine), and an unsigned difference then wrapped to 16 EiB.
 */
static size_t heap_growth(size_t before)
{
	size_t now = heap_in_use();

	return now > before ? now - before : 0;
}

/*
 * A link named with a large number under a prefix of its own (container
 * runtimes name veths "veth" + 7 hex digits, e.g. veth0a12345) must cost
 * little, also to a template that matches it, and when it is freed into
 * the quarantine: it cost bitmaps and quarantine times for every suffix
 * from 0 up to its number, 4 MiB for l00x1000000, so these 80 links took
 * 340 MiB.  Here each of 40 templates "lNNx%d" learns its l..x1000000,
 * then quarantines it when it goes.
 */
TEST_F(naming, large_suffixes_cost_little)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	char tmpl[40][IFNAMSIZ];
	const char *tmpls[40];
	struct vnic_guest *g, *g2;
	struct vnic_ctx *ctx;
	size_t before, grown;
	unsigned int i;

	ASSERT_EQ(0, st_run_cmd("for i in $(seq -w 0 39); do "
			     "echo link add l${i}x1000000 type veth peer name r${i}x1000000; "
			     "done | ip -batch -"));
	for (i = 0; i < 40; i++) {
		snprintf(tmpl[i], sizeof(tmpl[i]), "l%02ux%%d", i);
		tmpls[i] = tmpl[i];
	}
	before = heap_in_use();
	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	g = guest_tmpls(_metadata, ctx, "g1", tmpls, 40);
	ASSERT_EQ(0, st_run_cmd("for i in $(seq -w 0 39); do "
			     "echo link del l${i}x1000000; done | ip -batch -"));
	/* The next pick applies the deletes. */
	g2 = guest_tmpls(_metadata, ctx, "g2", tmpls, 1);
	grown = heap_growth(before);
	TH_LOG("context, guests and table: %zu KiB", grown / 1024);
	EXPECT_GT(4u << 20, grown);
	vnic_guest_free(g);
	vnic_guest_free(g2);
	vnic_ctx_free(ctx);
}

/*
 * A runtime that names each guest's NICs by a template of its own
 * ("vm17n%d") keeps one context for days: a template whose names are all
 * gone and out of quarantine must cost nothing.  Each kept a prefix with
 * its bitmaps and 16 KiB of quarantine times for good, 7 MiB for these 400
 * guests, and every new template walked all the old ones.
 */
TEST_F(naming, templates_come_and_go_cost_nothing)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .quarantine_ms = 1);
	char tmpl[IFNAMSIZ], gname[16], want[IFNAMSIZ];
	const char *tmpls[1] = { tmpl };
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
	size_t before = 0, grown;
	unsigned int i;

	ctx = ctx_new(_metadata, &o);
	for (i = 0; i < 420; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		/* The first 20 grow what a context keeps anyway. */
		if (i == 20)
			before = heap_in_use();
		snprintf(tmpl, sizeof(tmpl), "t%ux%%d", i);
		snprintf(gname, sizeof(gname), "g%u", i);
		g = guest_tmpls(_metadata, ctx, gname, tmpls, 1);
		ASSERT_EQ(0, vnic_guest_nic_info(g, 0, &info));
		snprintf(want, sizeof(want), "t%ux0", i);
		EXPECT_STREQ(want, info.name);
		ASSERT_EQ(0, vnic_guest_destroy(g));
		usleep(2000);	/* past the quarantine */
	}
	grown = heap_growth(before);
	TH_LOG("400 templates used and gone: %zu KiB", grown / 1024);
	EXPECT_GT(512u << 10, grown);
	EXPECT_EQ(0, st_prefixed_links_count("t"));
	vnic_ctx_free(ctx);
}

/* Outside creates after the table was built reach it through the monitor:
 * the next names are right the first time, no retry. */
TEST_F(naming, monitor_sees_outside_creates)
{
	static const unsigned int want[] = { 10, 11, 12 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx_stats st;
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	ASSERT_EQ(0, st_run_cmd("for i in 0 1 2 3 4 5 6 7 8 9; do "
			     "echo link add link %s name c$i type macvlan; "
			     "done | ip -batch -", LOWER));
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "c%d",
		       VNIC_NAMING_CACHE, 3);
	expect_suffixes(_metadata, g, "c", want, 3);
	ST_STATS(ctx, &st);
	EXPECT_EQ(0ULL, st.name_retries);
	EXPECT_EQ(0ULL, st.resyncs);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * A bridge port's own notifications (family AF_BRIDGE: enslaved, port
 * state, released) carry its name but no IFLA_LINKINFO, and a release is
 * an RTM_DELLINK of a link that stays.  The table took them for the
 * link's: a veth or a tap in a bridge (a VM's tap in virbr0) lost its
 * kind, so a policy declaring it a macvtap (hooked on egress: its guest's
 * spoofed frames pass) was taken as given where the exact table should
 * refuse it (filter/devices: the kind decides the hooks).
 */
static void expect_kind_refused(struct __test_metadata *_metadata,
				struct vnic_ctx *ctx, const char *ifname,
				const char *kind)
{
	VNIC_OPTS(vnic_nic_policy, nic, .ifname = ifname,
		  .kind = VNIC_KIND_MACVTAP, .mac = "02:00:00:00:00:01");
	VNIC_OPTS(vnic_filter_result, res);
	struct vnic_filter *f = NULL;
	struct vnic_policy *p = NULL;
	char want[96];

	ASSERT_EQ(0, vnic_policy_new(ctx, &p));
	ASSERT_EQ(0, vnic_policy_add_guest(p, "g1", NULL));
	ASSERT_EQ(0, vnic_policy_add_nic(p, "g1", &nic));
	ASSERT_EQ(0, vnic_filter_open(ctx, NULL, &f)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	snprintf(want, sizeof(want), "NIC %s is declared macvtap, but the device is a %s",
		 ifname, kind);
	EXPECT_EQ(-EINVAL, vnic_filter_sync(f, p, &res));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(ctx), want))
		TH_LOG("%s: %s", ifname, vnic_ctx_errmsg(ctx));
	vnic_filter_close(f);
	vnic_policy_free(p);
}

TEST_F(naming, monitor_keeps_kind_of_bridge_ports)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx;

	if (st_run_cmd("ip link add br0 type bridge"))
		SKIP(return, "no bridge link kind");
	ASSERT_EQ(0, st_run_cmd("ip link add bv0 type veth peer name bv1 && "
				"ip tuntap add dev bt0 mode tap && "
				"ip link add bv2 type veth peer name bv3"));
	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	/* bv2 joins and leaves: released, it is still there. */
	ASSERT_EQ(0, st_run_cmd("ip link set bv0 master br0 && ip link set bt0 "
				"master br0 && ip link set bv2 master br0 && "
				"ip link set br0 up && ip link set bv0 up && "
				"ip link set bv2 nomaster"));
	expect_kind_refused(_metadata, ctx, "bv0", "veth");
	expect_kind_refused(_metadata, ctx, "bt0", "tap");
	expect_kind_refused(_metadata, ctx, "bv2", "veth");
	vnic_ctx_free(ctx);
}

/* Without the monitor the table is dumped again before each use. */
TEST_F(naming, no_monitor_dumps_before_use)
{
	static const unsigned int want[] = { 10, 11, 12 };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = VNIC_CTX_NO_MONITOR);
	struct vnic_ctx_stats before, after;
	struct vnic_ctx *ctx;
	struct vnic_guest *g;

	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	ASSERT_EQ(0, st_run_cmd("for i in 0 1 2 3 4 5 6 7 8 9; do "
			     "echo link add link %s name c$i type macvlan; "
			     "done | ip -batch -", LOWER));
	ST_STATS(ctx, &before);
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "c%d",
		       VNIC_NAMING_CACHE, 3);
	ST_STATS(ctx, &after);
	expect_suffixes(_metadata, g, "c", want, 3);
	EXPECT_LT(before.dumps, after.dumps);
	EXPECT_EQ(0ULL, after.name_retries);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * A monitor socket with a tiny receive buffer overflows (ENOBUFS) under a
 * burst of outside creates; the library must notice, rebuild its table and
 * still name right.
 */
TEST_F(naming, monitor_overflow_resyncs)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .monitor_rcvbuf = 1);
	struct vnic_ctx_stats st;
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
	unsigned int i, n;
	int ret;

	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	/* 300 new links: hundreds of KiB of notifications against a
	 * buffer the kernel rounds up to a few KiB. */
	ASSERT_EQ(0, st_run_cmd("for i in $(seq 0 299); do "
			     "echo link add link %s name o$i type macvlan; "
			     "done | ip -batch -", LOWER));
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "o%d",
		       VNIC_NAMING_CACHE, 10);
	for (i = 0; i < 10; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		ret = st_name_suffix(info.name, "o", &n);
		ASSERT_TRUE(ret) TH_LOG("%s", info.name);
		EXPECT_EQ(300 + i, n) TH_LOG("%s", info.name);
	}
	ST_STATS(ctx, &st);
	EXPECT_LT(0ULL, st.resyncs);
	TH_LOG("resyncs %llu, retries %llu", (unsigned long long)st.resyncs,
	       (unsigned long long)st.name_retries);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/*
 * A rebuild whose monitor overflows in each of its 4 dumps keeps the table
 * as a hint; the next use must rebuild it (a dump more), and the use after
 * that must not.  It stayed a hint for good: no dump was made again until
 * another overflow, and the filters, which read only an exact table, asked
 * the kernel NIC by NIC.
 */
TEST_F(naming, table_given_up_is_rebuilt_by_the_next_use)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx_stats a, b;
	struct vnic_guest *g;
	struct vnic_ctx *ctx;

	ctx = ctx_new(_metadata, &o);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	ASSERT_EQ(0, vnic_ctx_set_lost_events(ctx, 4));
	ST_STATS(ctx, &a);
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	ST_STATS(ctx, &b);
	ASSERT_EQ(a.dumps + 4, b.dumps);	/* gave up: a hint */
	g = guest_make(_metadata, ctx, "g1", VNIC_KIND_MACVLAN, "q%d",
		       VNIC_NAMING_CACHE, 1);
	ST_STATS(ctx, &a);
	EXPECT_EQ(b.dumps + 1, a.dumps) TH_LOG("the table given up was not rebuilt");
	expect_suffixes(_metadata, g, "q", (const unsigned int[]){ 0 }, 1);
	vnic_guest_free(g);
	g = guest_make(_metadata, ctx, "g2", VNIC_KIND_MACVLAN, "q%d",
		       VNIC_NAMING_CACHE, 1);
	ST_STATS(ctx, &b);
	EXPECT_EQ(a.dumps, b.dumps) TH_LOG("an exact table was dumped again");
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/* --- four processes, each its own context, naming at once --- */

#define PROCS	4
#define PER	50

struct procs_shared {
	int err[PROCS];
	char msg[PROCS][256];
	char names[PROCS][PER][IFNAMSIZ];
};

/* One child: build its table, wait for the start, create, report. */
static int proc_child(int k, int go, struct procs_shared *sh)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP,
		  .lower = LOWER, .name = "mq%d", .naming = VNIC_NAMING_CACHE);
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	char gname[8], c;
	int i;

	snprintf(gname, sizeof(gname), "g%d", k);
	if (vnic_ctx_new(&o, &ctx) || vnic_guest_new(ctx, gname, &g))
		return 1;
	for (i = 0; i < PER; i++)
		if (vnic_guest_add_nic(g, &nic, NULL))
			return 1;
	/* Every context sees the same empty table: the worst case. */
	if (vnic_ctx_refresh(ctx))
		return 1;
	if (read(go, &c, 1) < 0)
		return 1;
	sh->err[k] = vnic_guest_create(g);
	snprintf(sh->msg[k], sizeof(sh->msg[k]), "%s", vnic_ctx_errmsg(ctx));
	for (i = 0; !sh->err[k] && i < PER; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		if (vnic_guest_nic_info(g, i, &info))
			return 1;
		memcpy(sh->names[k][i], info.name, IFNAMSIZ);
	}
	/* Leave the NICs for the parent to inspect. */
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
	return 0;
}

static void procs_run(struct __test_metadata *_metadata,
		      struct procs_shared *sh)
{
	pid_t pids[PROCS];
	int go[2], k, st;

	ASSERT_EQ(0, pipe(go));
	for (k = 0; k < PROCS; k++) {
		pids[k] = fork();
		ASSERT_LE(0, pids[k]);
		if (pids[k] == 0) {
			close(go[1]);
			_exit(proc_child(k, go[0], sh));
		}
	}
	close(go[0]);
	/* Give each child time to build its table, then start all four at
	 * once: closing the pipe wakes every reader. */
	usleep(200 * 1000);
	close(go[1]);
	for (k = 0; k < PROCS; k++) {
		ASSERT_EQ(pids[k], waitpid(pids[k], &st, 0));
		ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("child %d setup failed", k);
	}
}

TEST_F(naming, four_processes_50_each)
{
	struct procs_shared *sh;
	char alias[64];
	struct ip_link l;
	json_t *links;
	int k, i;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	procs_run(_metadata, sh);
	for (k = 0; k < PROCS; k++)
		EXPECT_EQ(0, sh->err[k]) TH_LOG("child %d: %s", k, sh->msg[k]);
	ASSERT_EQ(0, _metadata->exit_code);

	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	/* Each reported name is a distinct macvtap carrying its child's tag:
	 * 200 tags, so 200 names, none reported twice. */
	for (k = 0; k < PROCS; k++) {
		for (i = 0; i < PER; i++) {
			snprintf(alias, sizeof(alias), "vnic:%s:g%d:%d", OWNER,
				 k, i);
			ASSERT_EQ(0, st_ip_link_find(links, sh->names[k][i], &l))
				TH_LOG("%s missing", sh->names[k][i]);
			EXPECT_STREQ(alias, l.alias);
			EXPECT_STREQ("macvtap", l.kind);
		}
	}
	EXPECT_EQ(PROCS * PER, st_ip_links_count(links, "vnic:" OWNER ":"));
	json_decref(links);
	munmap(sh, sizeof(*sh));
}

/*
 * context.h: distinct contexts share no state and may be used at once
 * from different threads.  4 threads of one process, a context each, make
 * and destroy guests of cache-named macvtaps and taps and open their
 * queue fds (each open a thread of its own in a private mount namespace),
 * 10 times: every call succeeds, the names are distinct while they live,
 * and afterwards no link and no fd is left.
 */
#define THREADS	4
#define ROUNDS	10

struct thr {
	int k, err;
	char msg[256];
};

static int thr_round(struct vnic_ctx *ctx, struct thr *t, int r)
{
	VNIC_OPTS(vnic_nic_opts, mvt, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "th%d", .up = 1);
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "tt%d",
		  .queues = 2);
	struct vnic_guest *g = NULL;
	char name[32];
	int err, fds[2], i;

	snprintf(name, sizeof(name), "t%dr%d", t->k, r);
	err = vnic_guest_new(ctx, name, &g);
	for (i = 0; !err && i < 6; i++)
		err = vnic_guest_add_nic(g, i < 4 ? &mvt : &tap, NULL);
	if (!err)
		err = vnic_guest_create(g);
	for (i = 0; !err && i < 6; i++) {
		err = vnic_guest_nic_open_queues(g, (unsigned int)i, fds, i < 4 ? 1 : 2);
		if (!err) {
			close(fds[0]);
			if (i >= 4)
				close(fds[1]);
		}
	}
	if (err)
		snprintf(t->msg, sizeof(t->msg), "%s: %s", name, vnic_ctx_errmsg(ctx));
	if (g)
		err = vnic_guest_destroy(g) ?: err;
	return err;
}

static void *thr_main(void *arg)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx = NULL;
	struct thr *t = arg;
	int r;

	t->err = vnic_ctx_new(&o, &ctx);
	for (r = 0; !t->err && r < ROUNDS; r++)
		t->err = thr_round(ctx, t, r);
	vnic_ctx_free(ctx);
	return NULL;
}

TEST_F(naming, four_threads_own_contexts)
{
	struct thr t[THREADS] = { 0 };
	pthread_t tid[THREADS];
	int k, fds0 = st_count_fds();

	for (k = 0; k < THREADS; k++) {
		t[k].k = k;
		ASSERT_EQ(0, pthread_create(&tid[k], NULL, thr_main, &t[k]));
	}
	for (k = 0; k < THREADS; k++)
		pthread_join(tid[k], NULL);
	for (k = 0; k < THREADS; k++)
		EXPECT_EQ(0, t[k].err) TH_LOG("thread %d: %s", k, t[k].msg);
	EXPECT_EQ(0, st_prefixed_links_count("th"));
	EXPECT_EQ(0, st_prefixed_links_count("tt"));
	EXPECT_EQ(fds0, st_count_fds());
}

TEST_HARNESS_MAIN
