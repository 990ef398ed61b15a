// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every failure says what is wrong.
 *
 * faults.every_step_and_unit: a fault is injected at every step of every
 * operation that has a context (refresh, create of a guest of every kind
 * and naming, queue fds, list, adopt, gc, destroy), one (step, unit) at a
 * time; each call that fails must leave a message, and a failed create
 * must leave nothing behind.
 *
 * kernel.*: the kernel's own refusals, the same claims.
 *
 * nomem.*: the n-th allocation inside a call fails, for every n until the
 * call no longer allocates that often: the same claims again.  This binary
 * interposes malloc(), calloc() and realloc() for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"
#include "lib/testing.h"

#define OWNER	"em"
#define NICS	4	/* of the guest below */

/* Allocation failure injection: when armed, the countdown-th allocation
 * fails (once).  Not under the address sanitizer, whose allocator must
 * see every block that free() is given. */
#if defined(__SANITIZE_ADDRESS__)
#define NOMEM_HOOK 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NOMEM_HOOK 0
#endif
#endif
#ifndef NOMEM_HOOK
#define NOMEM_HOOK 1
#endif

static struct {
	bool armed;
	long countdown;
	bool hit;
} nomem;

#if NOMEM_HOOK
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t sz);
extern void *__libc_realloc(void *p, size_t n);

static bool nomem_now(void)
{
	if (!nomem.armed || --nomem.countdown)
		return false;
	nomem.armed = false;
	nomem.hit = true;
	return true;
}

void *malloc(size_t n)
{
	return nomem_now() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t sz)
{
	return nomem_now() ? NULL : __libc_calloc(n, sz);
}

void *realloc(void *p, size_t n)
{
	return nomem_now() ? NULL : __libc_realloc(p, n);
}
#endif

static void nomem_arm(long nth)
{
	nomem.hit = false;
	nomem.countdown = nth;
	nomem.armed = true;
}

/* Whether the armed failure happened; disarms. */
static bool nomem_disarm(void)
{
	nomem.armed = false;
	return nomem.hit;
}

/* A failed call has a message; returns the call's result. */
#define CHECKED(ctx, call) ({						\
	int ret_ = (call);						\
	EXPECT_TRUE(ret_ >= 0 || vnic_ctx_errmsg(ctx)[0])		\
		TH_LOG("%s returned %d without a message", #call, ret_); \
	if (ret_ < 0)							\
		fails++;						\
	ret_;								\
})

/* Devices in the namespace besides lo and the lower pair. */
static int extra_links(void)
{
	json_t *links = st_ip_links(-1);
	int n;

	if (!links)
		return -1;
	n = (int)json_array_size(links) - 3;
	json_decref(links);
	return n;
}

static int guest_build(struct vnic_ctx *ctx, struct vnic_guest **out)
{
	VNIC_OPTS(vnic_nic_opts, mvt, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "mv%d", .naming = VNIC_NAMING_CACHE);
	VNIC_OPTS(vnic_nic_opts, mvl, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "ml%d", .naming = VNIC_NAMING_KERNEL);
	VNIC_OPTS(vnic_nic_opts, veth, .kind = VNIC_KIND_VETH, .name = "ve0",
		  .peer_name = "ve0p");
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "tp%d",
		  .naming = VNIC_NAMING_CACHE, .tap_flags = VNIC_TAP_PERSIST);
	struct vnic_guest *g;
	int err;

	err = vnic_guest_new(ctx, "g1", &g);
	if (err)
		return err;
	err = vnic_guest_add_nic(g, &mvt, NULL);
	if (!err)
		err = vnic_guest_add_nic(g, &mvl, NULL);
	if (!err)
		err = vnic_guest_add_nic(g, &veth, NULL);
	if (!err)
		err = vnic_guest_add_nic(g, &tap, NULL);
	if (err) {
		vnic_guest_free(g);
		return err;
	}
	*out = g;
	return 0;
}

FIXTURE(faults) {
	int unused;
};

FIXTURE_VARIANT(faults) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(faults, echo) { 0 };
FIXTURE_VARIANT_ADD(faults, noecho) { VNIC_CTX_NO_ECHO };

FIXTURE_SETUP(faults)
{
	ST_SETUP_NETNS();
}

FIXTURE_TEARDOWN(faults)
{
	st_macvtaps_flush();
}

/* One (step, unit): every operation once, in the order a runtime would. */
static int run_faulty(struct __test_metadata *_metadata, uint32_t flags,
		      int step, uint32_t nth)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = flags);
	struct vnic_guest *g = NULL, *a = NULL;
	struct vnic_ctx *ctx;
	unsigned int count, deleted;
	int fds[2], fails = 0, k;
	char **names;

	/* A context that cannot be made is not returned: nothing to ask. */
	if (vnic_ctx_new_faulty(&o, step, nth, &ctx))
		return 1;
	CHECKED(ctx, vnic_ctx_refresh(ctx));
	if (CHECKED(ctx, guest_build(ctx, &g)) == 0 &&
	    CHECKED(ctx, vnic_guest_create(g)) < 0) {
		EXPECT_EQ(0, extra_links())
			TH_LOG("step %s unit %u: a failed create left links",
			       vnic_step_name(step), nth);
	}
	for (k = 0; g && k < NICS; k++) {
		VNIC_OPTS(vnic_nic_info, info);

		if (vnic_guest_nic_info(g, k, &info) || !info.created ||
		    (info.kind != VNIC_KIND_MACVTAP && info.kind != VNIC_KIND_TAP))
			continue;
		if (CHECKED(ctx, vnic_guest_nic_open_queues(g, k, fds, 1)) == 0)
			close(fds[0]);
	}
	vnic_guest_free(g);
	if (CHECKED(ctx, vnic_guest_list(ctx, &names, &count)) == 0)
		free(names);
	if (CHECKED(ctx, vnic_guest_adopt(ctx, "g1", &a)) == 0)
		CHECKED(ctx, vnic_guest_destroy(a));
	CHECKED(ctx, vnic_collect_orphans(ctx, NULL, 0, &deleted));
	vnic_ctx_free(ctx);
	return fails;
}

/* Steps whose units are NICs: each NIC in turn (and one past the last);
 * the others have one unit. */
static uint32_t units_of(int step)
{
	switch (step) {
	case VNIC_STEP_NAME:
	case VNIC_STEP_CREATE:
	case VNIC_STEP_RESOLVE:
	case VNIC_STEP_CONFIGURE:
	case VNIC_STEP_OPEN:
	case VNIC_STEP_DELETE:
		return NICS + 1;
	default:
		return 1;
	}
}

TEST_F_TIMEOUT(faults, every_step_and_unit, 120)
{
	VNIC_OPTS(vnic_ctx_opts, clean, .owner = OWNER);
	int step, fails = 0, tries = 0;
	struct vnic_ctx *ctx;
	uint32_t nth;

	for (step = VNIC_STEP_NONE + 1; step < VNIC_STEP__MAX; step++) {
		for (nth = 1; nth <= units_of(step); nth++) {
			fails += run_faulty(_metadata, variant->flags, step, nth);
			tries++;
			/* Whatever the faults left (a gc that failed), a clean
			 * context collects; then the namespace is as before. */
			ASSERT_EQ(0, vnic_ctx_new(&clean, &ctx));
			ASSERT_EQ(0, vnic_collect_orphans(ctx, NULL, 0, NULL))
				TH_LOG("%s", vnic_ctx_errmsg(ctx));
			vnic_ctx_free(ctx);
			ASSERT_EQ(0, extra_links())
				TH_LOG("step %s unit %u left links", vnic_step_name(step), nth);
			ASSERT_EQ(0, _metadata->exit_code);
		}
	}
	TH_LOG("%d runs, %d failed calls, each with a message", tries, fails);
	/* The faults did fail calls: the test is not vacuous. */
	EXPECT_LT(tries, fails);
}

/* --- the kernel's refusals ---------------------------------------------- */

FIXTURE(kernel) {
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
};

FIXTURE_SETUP(kernel)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "g1", &self->g));
}

FIXTURE_TEARDOWN(kernel)
{
	vnic_guest_free(self->g);
	vnic_ctx_free(self->ctx);
	st_macvtaps_flush();
}

struct refusal {
	const char *what;
	struct vnic_nic_opts nic;
	const char *before;	/* shell command run first, or NULL */
};

static const struct refusal refusals[] = {
	{ "name exists", { .kind = VNIC_KIND_MACVLAN, .lower = LOWER, .name = LOWER }, NULL },
	{ "lower missing", { .kind = VNIC_KIND_MACVTAP, .lower = "nosuch0", .name = "m%d" }, NULL },
	{ "lower missing, kernel naming", { .kind = VNIC_KIND_MACVLAN, .lower = "nosuch0",
	  .name = "m%d", .naming = VNIC_NAMING_KERNEL }, NULL },
	{ "MTU above the lower's", { .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
	  .name = "m%d", .mtu = 65000 }, NULL },
	{ "MTU below minimum", { .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
	  .name = "m%d", .mtu = 10 }, NULL },
	{ "veth peer name exists", { .kind = VNIC_KIND_VETH, .name = "ve0",
	  .peer_name = LOWER_PEER }, NULL },
	{ "veth MTU too big", { .kind = VNIC_KIND_VETH, .name = "ve0",
	  .peer_name = "ve0p", .mtu = 1u << 20 }, NULL },
	{ "tap name exists", { .kind = VNIC_KIND_TAP, .name = "tp0",
	  .tap_flags = VNIC_TAP_PERSIST }, "ip tuntap add dev tp0 mode tap" },
	{ "second passthru on one lower", { .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
	  .name = "m%d", .mode = VNIC_MACVLAN_PASSTHRU },
	  "ip link add link " LOWER " name pt0 type macvlan mode passthru" },
};

TEST_F(kernel, every_refusal_has_a_message)
{
	unsigned int i, n = ARRAY_SIZE(refusals);
	int base, ret;

	for (i = 0; i < n; i++) {
		struct vnic_nic_opts nic = refusals[i].nic;
		struct vnic_guest *g;

		nic.sz = sizeof(nic);
		if (refusals[i].before)
			ASSERT_EQ(0, st_run_cmd("%s", refusals[i].before));
		base = extra_links();
		ASSERT_EQ(0, vnic_guest_new(self->ctx, "g2", &g));
		ret = vnic_guest_add_nic(g, &nic, NULL);
		if (!ret)
			ret = vnic_guest_create(g);
		EXPECT_GT(0, ret) TH_LOG("%s: accepted", refusals[i].what);
		EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0])
			TH_LOG("%s: %d without a message", refusals[i].what, ret);
		TH_LOG("%s: %s", refusals[i].what, vnic_ctx_errmsg(self->ctx));
		EXPECT_EQ(base, extra_links()) TH_LOG("%s left links", refusals[i].what);
		EXPECT_EQ(0, st_vnic_links_count());
		vnic_guest_free(g);
		st_run_cmd("ip link del pt0 2>/dev/null; ip link del tp0 2>/dev/null");
	}
}

/* The other calls' refusals. */
TEST_F(kernel, other_calls_refusals_have_a_message)
{
	VNIC_OPTS(vnic_nic_opts, veth, .kind = VNIC_KIND_VETH, .name = "ve0",
		  .peer_name = "ve0p");
	VNIC_OPTS(vnic_nic_opts, notns, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "m%d");
	struct vnic_guest *a, *b;
	int fd, fds[1], ret;

	EXPECT_EQ(-ENOENT, vnic_guest_adopt(self->ctx, "nosuch", &a));
	EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0]);
	EXPECT_EQ(-EINVAL, vnic_guest_new(self->ctx, "bad name", &a));
	EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0]);

	/* A namespace fd that is no namespace: refused when used. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	notns.netns_fd = fd;
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "g3", &b));
	ret = vnic_guest_add_nic(b, &notns, NULL);
	if (!ret)
		ret = vnic_guest_create(b);
	EXPECT_GT(0, ret);
	EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0]);
	TH_LOG("netns fd of /dev/null: %s", vnic_ctx_errmsg(self->ctx));
	vnic_guest_free(b);
	close(fd);
	EXPECT_EQ(0, extra_links());

	/* Queue fds of a NIC that has none, and of one not created. */
	ASSERT_EQ(0, vnic_guest_add_nic(self->g, &veth, NULL));
	EXPECT_GT(0, vnic_guest_nic_open_queues(self->g, 0, fds, 1));
	EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0]);
	ASSERT_EQ(0, vnic_guest_create(self->g));
	EXPECT_EQ(-EOPNOTSUPP, vnic_guest_nic_open_queues(self->g, 0, fds, 1));
	EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0]);
	ASSERT_EQ(0, vnic_guest_destroy(self->g));
	self->g = NULL;
	EXPECT_EQ(0, extra_links());
}

/* --- allocation failures ------------------------------------------------ */

FIXTURE(nomem) {
	struct vnic_ctx *ctx;
};

FIXTURE_SETUP(nomem)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
}

FIXTURE_TEARDOWN(nomem)
{
	nomem.armed = false;
	vnic_ctx_free(self->ctx);
	st_macvtaps_flush();
}

/* Create, then list, adopt, and gc, each with its n-th allocation failing. */
TEST_F_TIMEOUT(nomem, every_allocation_of_every_call, 120)
{
	struct vnic_guest *g, *a;
	unsigned int count, deleted;
	int fails = 0, ret, call;
	char **names;
	long nth;

	if (!NOMEM_HOOK)
		SKIP(return, "allocation hooks conflict with the address sanitizer");
	for (call = 0; call < 4; call++) {
		for (nth = 1;; nth++) {
			ASSERT_EQ(0, guest_build(self->ctx, &g));
			if (call)
				ASSERT_EQ(0, vnic_guest_create(g));
			nomem_arm(nth);
			switch (call) {
			case 0:
				ret = vnic_guest_create(g);
				break;
			case 1:
				ret = vnic_guest_list(self->ctx, &names, &count);
				if (!ret)
					free(names);
				break;
			case 2:
				ret = vnic_guest_adopt(self->ctx, "g1", &a);
				if (!ret)
					vnic_guest_free(a);
				break;
			default:
				ret = vnic_collect_orphans(self->ctx, NULL, 0, &deleted);
				break;
			}
			if (!nomem_disarm())
				break;	/* the call allocates less than nth times */
			fails += ret < 0;
			EXPECT_TRUE(ret >= 0 || vnic_ctx_errmsg(self->ctx)[0])
				TH_LOG("call %d, allocation %ld: %d without a message",
				       call, nth, ret);
			if (call == 0 && ret < 0)
				EXPECT_EQ(0, extra_links())
					TH_LOG("allocation %ld: a failed create left links", nth);
			vnic_guest_free(g);
			ASSERT_EQ(0, vnic_collect_orphans(self->ctx, NULL, 0, NULL));
			ASSERT_EQ(0, extra_links());
			ASSERT_EQ(0, _metadata->exit_code);
		}
		vnic_guest_free(g);
		ASSERT_EQ(0, vnic_collect_orphans(self->ctx, NULL, 0, NULL));
		TH_LOG("call %d: %ld allocations", call, nth - 1);
	}
	EXPECT_LT(0, fails);
}

/*
 * The policy calls and the allocator's add, each with its n-th allocation
 * failing: a failure has a message (policy.h: "the error is in the
 * context"), and the policy is as before the call (check() still fails
 * for guest g2 only when the failed call was about g2).
 */
static int policy_call(struct vnic_ctx *ctx, struct vnic_policy *p,
		       struct vnic_guest *g, struct vnic_guest *macv, int call)
{
	static const char *const v4[] = { "192.0.2.1", "192.0.2.2" };
	static const char *const v6[] = { "2001:db8::1", "2001:db8::2" };
	VNIC_OPTS(vnic_nic_policy, nic, .ifname = "pnic0", .kind = VNIC_KIND_VETH,
		  .mac = "02:00:00:00:00:01", .ipv4 = v4, .n_ipv4 = 2, .ipv6 = v6,
		  .n_ipv6 = 2);
	VNIC_OPTS(vnic_rule, rule, .l4proto = 6, .dport_min = 22,
		  .daddr = "198.51.100.0/24");
	VNIC_OPTS(vnic_nic_opts, veth, .kind = VNIC_KIND_VETH, .name = "pv0",
		  .peer_name = "pv0p");
	struct vnic_guest *ng;
	int ret;

	switch (call) {
	case 0:
		return vnic_policy_add_guest(p, "g2", NULL);
	case 1:
		return vnic_policy_add_nic(p, "g0", &nic);
	case 2:
		return vnic_policy_add_rule(p, "g0", &rule);
	case 3:
		return vnic_policy_add_nics_of(p, "g0", macv);
	case 4:
		return vnic_guest_add_nic(g, &veth, NULL);
	default:
		ret = vnic_guest_new(ctx, "g3", &ng);
		if (!ret)
			vnic_guest_free(ng);
		return ret;
	}
}

TEST_F_TIMEOUT(nomem, every_allocation_of_policy_calls, 60)
{
	VNIC_OPTS(vnic_nic_opts, mvt, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "pm%d");
	struct vnic_guest *g, *macv;
	struct vnic_policy *p;
	int ret, call;
	long nth;

	if (!NOMEM_HOOK)
		SKIP(return, "allocation hooks conflict with the address sanitizer");
	ASSERT_EQ(0, guest_build(self->ctx, &g));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	/* vnic_policy_add_nics_of() takes macvtaps and macvlans only. */
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "g4", &macv));
	ASSERT_EQ(0, vnic_guest_add_nic(macv, &mvt, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(macv, &mvt, NULL));
	ASSERT_EQ(0, vnic_guest_create(macv)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	for (call = 0; call < 6; call++) {
		for (nth = 1;; nth++) {
			ASSERT_EQ(0, vnic_policy_new(self->ctx, &p));
			ASSERT_EQ(0, vnic_policy_add_guest(p, "g0", NULL));
			nomem_arm(nth);
			ret = policy_call(self->ctx, p, g, macv, call);
			if (!nomem_disarm()) {
				EXPECT_EQ(0, ret) TH_LOG("call %d: %s", call,
							 vnic_policy_errmsg(p));
				vnic_policy_free(p);
				break;
			}
			EXPECT_TRUE(ret >= 0 || vnic_policy_errmsg(p)[0])
				TH_LOG("call %d, allocation %ld: %d without a message",
				       call, nth, ret);
			/* Nothing added: g0 still has no NIC, g2 is not there. */
			if (ret < 0 && call != 2 && call < 4)
				EXPECT_EQ(-EINVAL, vnic_policy_check(p));
			if (ret < 0 && call == 0)
				EXPECT_EQ(1u, vnic_policy_guest_count(p));
			vnic_policy_free(p);
		}
		TH_LOG("call %d: %ld allocations", call, nth - 1);
	}
	EXPECT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(0, vnic_guest_destroy(macv));
}

TEST_HARNESS_MAIN
