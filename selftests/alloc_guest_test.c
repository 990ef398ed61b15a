// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A guest's life: found again by a later context after its creator died
 * (list, adopt, collect), and all-or-nothing creation under every failure
 * the kernel or the fault injector can produce.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"
#include "lib/testing.h"

#define MAXN	8

FIXTURE(guest) {
	struct vnic_ctx *ctx;
};

FIXTURE_SETUP(guest)
{
	ST_SETUP_NETNS();
}

FIXTURE_TEARDOWN(guest)
{
	st_macvtaps_flush();
}

/* --- a guest left behind by a process that died --- */

/* What the dead creator saw of its NICs. */
struct report {
	int err;
	char msg[256];
	unsigned int n;
	struct vnic_nic_info info[MAXN];
};

/*
 * The NICs of the "full" guest the children make: every kind that outlives
 * its creator, and at index 1 a tap without PERSIST, which dies with the
 * creator's fds and so leaves a gap in the tag indexes.
 */
static void add_full(struct vnic_guest *g, const char *peer)
{
	VNIC_OPTS(vnic_nic_opts, mvt, .kind = VNIC_KIND_MACVTAP,
		  .lower = LOWER, .name = "mvt%d");
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "tp%d");
	VNIC_OPTS(vnic_nic_opts, mvl, .kind = VNIC_KIND_MACVLAN,
		  .lower = LOWER, .name = "mvl%d");
	VNIC_OPTS(vnic_nic_opts, vth, .kind = VNIC_KIND_VETH,
		  .name = "vth%d", .peer_name = peer);
	VNIC_OPTS(vnic_nic_opts, ptp, .kind = VNIC_KIND_TAP, .name = "tp%d",
		  .tap_flags = VNIC_TAP_PERSIST);

	vnic_guest_add_nic(g, &mvt, NULL);
	vnic_guest_add_nic(g, &tap, NULL);
	vnic_guest_add_nic(g, &mvl, NULL);
	vnic_guest_add_nic(g, &vth, NULL);
	vnic_guest_add_nic(g, &ptp, NULL);
}

/* Indexes in the full guest of the NICs that survive their creator. */
static const unsigned int survivors[] = { 0, 2, 3, 4 };
#define NSURV	4u
#define NFULL	5u

/*
 * In a child: create guest gname for owner with n macvlans (n == 0: the
 * full guest above), report, and exit without destroying or freeing
 * anything, like a crash.
 */
static void child_guest(const char *owner, const char *gname, unsigned int n,
			const char *peer, struct report *r)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = owner);
	VNIC_OPTS(vnic_nic_opts, mvl, .kind = VNIC_KIND_MACVLAN,
		  .lower = LOWER, .name = "mvl%d");
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	unsigned int i;

	r->err = vnic_ctx_new(&o, &ctx);
	if (r->err || (r->err = vnic_guest_new(ctx, gname, &g)))
		_exit(1);
	for (i = 0; i < n; i++)
		vnic_guest_add_nic(g, &mvl, NULL);
	if (!n)
		add_full(g, peer);
	r->n = vnic_guest_nic_count(g);
	r->err = vnic_guest_create(g);
	snprintf(r->msg, sizeof(r->msg), "%s", vnic_ctx_errmsg(ctx));
	for (i = 0; !r->err && i < r->n; i++) {
		r->info[i].sz = sizeof(r->info[i]);
		vnic_guest_nic_info(g, i, &r->info[i]);
	}
	_exit(r->err ? 1 : 0);
}

static struct report *run_child(struct __test_metadata *_metadata,
				const char *owner, const char *gname,
				unsigned int n, const char *peer)
{
	struct report *r;
	pid_t pid;
	int st;

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	memset(r, 0, sizeof(*r));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		child_guest(owner, gname, n, peer, r);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		TH_LOG("child %s/%s: %d %s", owner, gname, r->err, r->msg);
	return r;
}

static struct vnic_ctx *ctx_owner(struct __test_metadata *_metadata,
				  const char *owner)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = owner);
	struct vnic_ctx *ctx = NULL;

	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	return ctx;
}

/* Whether every NIC of r (the first n) is present in ip link. */
static int present(const struct report *r, unsigned int n)
{
	struct ip_link l;
	unsigned int i;
	int found = 0;
	json_t *links = st_ip_links(-1);

	if (!links)
		return -1;
	for (i = 0; i < n; i++)
		found += !st_ip_link_find(links, r->info[i].name, &l);
	json_decref(links);
	return found;
}

/* The adopted NIC is what its dead creator made. */
static void expect_same_nic(struct __test_metadata *_metadata,
			    const struct vnic_nic_info *was,
			    const struct vnic_nic_info *now)
{
	EXPECT_TRUE(now->created);
	EXPECT_EQ(was->kind, now->kind);
	EXPECT_STREQ(was->name, now->name);
	EXPECT_EQ(was->ifindex, now->ifindex);
	EXPECT_EQ(0, memcmp(was->mac, now->mac, 6)) TH_LOG("%s", now->name);
	EXPECT_STREQ(was->peer_name, now->peer_name);
	EXPECT_EQ(was->tag_index, now->tag_index);
}

/* The adopted guest's NICs: each is the dead creator's NIC of the same
 * tag index, and together they are the survivors. */
static void expect_adopted(struct __test_metadata *_metadata,
			   struct vnic_guest *g, const struct report *r)
{
	unsigned int i, seen = 0, want = 0;

	ASSERT_EQ(NSURV, vnic_guest_nic_count(g));
	for (i = 0; i < NSURV; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		want |= 1u << survivors[i];
		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		ASSERT_GT(NFULL, info.tag_index) TH_LOG("%s", info.name);
		seen |= 1u << info.tag_index;
		expect_same_nic(_metadata, &r->info[info.tag_index], &info);
	}
	EXPECT_EQ(want, seen);
}

/* A NIC added to an adopted guest is tagged past the highest index. */
static void expect_add_after_adopt(struct __test_metadata *_metadata,
				   struct vnic_ctx *ctx, struct vnic_guest *g)
{
	VNIC_OPTS(vnic_nic_opts, mvl, .kind = VNIC_KIND_MACVLAN,
		  .lower = LOWER, .name = "late0");
	VNIC_OPTS(vnic_nic_info, info);
	unsigned int idx;
	struct ip_link l;

	ASSERT_EQ(0, vnic_guest_add_nic(g, &mvl, &idx));
	ASSERT_EQ(NSURV, idx);
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(0, vnic_guest_nic_info(g, idx, &info));
	EXPECT_EQ(NFULL, info.tag_index);
	ASSERT_EQ(0, st_ip_link_get("late0", &l));
	EXPECT_STREQ("vnic:t:g1:5", l.alias);
}

TEST_F(guest, adopt_after_creator_died)
{
	struct report *mine, *theirs;
	struct vnic_guest *g = (void *)1;
	struct vnic_ctx *ctx;
	char **names = NULL;
	unsigned int count;

	mine = run_child(_metadata, "t", "g1", 0, "g1p0");
	/* Same guest name under owner "tt": a prefix of the tag "vnic:t"
	 * must not match it. */
	theirs = run_child(_metadata, "tt", "g1", 2, NULL);
	ASSERT_EQ((int)NSURV, present(mine, NFULL));
	ASSERT_EQ(2, present(theirs, 2));

	ctx = ctx_owner(_metadata, "t");
	ASSERT_EQ(0, vnic_guest_list(ctx, &names, &count));
	ASSERT_EQ(1u, count);
	EXPECT_STREQ("g1", names[0]);
	free(names);

	ASSERT_EQ(-ENOENT, vnic_guest_adopt(ctx, "nope", &g));
	EXPECT_EQ((void *)1, g);
	ASSERT_EQ(0, vnic_guest_adopt(ctx, "g1", &g))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_STREQ("g1", vnic_guest_name(g));
	expect_adopted(_metadata, g, mine);
	expect_add_after_adopt(_metadata, ctx, g);

	/* The adopted handle destroys like a created one, and only ours. */
	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(0, present(mine, NFULL));
	EXPECT_EQ(-ENOENT, st_ip_link_get("late0", &(struct ip_link){ 0 }));
	EXPECT_EQ(2, present(theirs, 2));
	EXPECT_EQ(-ENOENT, st_ip_link_get("g1p0", &(struct ip_link){ 0 }));
	vnic_ctx_free(ctx);
}

/*
 * Adopting by name reads only the links named: the guest's own come back
 * with their peers named (as a dump adopts them) and destroy like created
 * ones; a name no link has, a link that is not ours (no tag), and a NIC of
 * another guest of the same owner are skipped, and with nothing left the
 * answer is -ENOENT with nothing changed.  A bad name is -EINVAL.
 */
TEST_F(guest, adopt_named_reads_only_named_links)
{
	VNIC_OPTS(vnic_nic_opts, a, .kind = VNIC_KIND_VETH, .name = "na%d",
		  .peer_name = "napeer");
	VNIC_OPTS(vnic_nic_opts, b, .kind = VNIC_KIND_VETH, .name = "nb%d",
		  .peer_name = "nbpeer");
	VNIC_OPTS(vnic_nic_opts, o, .kind = VNIC_KIND_VETH, .name = "no%d",
		  .peer_name = "nopeer");
	VNIC_OPTS(vnic_nic_info, i0);
	VNIC_OPTS(vnic_nic_info, i1);
	VNIC_OPTS(vnic_nic_info, got);
	const char *names[] = { "na0", "nb0" };
	const char *dups[] = { "na0", "na0", "nb0", "napeer", "na0" };
	const char *wrong[] = { "nothere", "dum0", "no0" };
	const char *bad[] = { "0123456789abcdefX" };
	struct vnic_guest *g, *other, *ad = (void *)1;
	struct vnic_ctx *ctx = ctx_owner(_metadata, "t");
	struct ip_link l;

	ASSERT_EQ(0, st_run_cmd("ip link add dum0 type veth peer name dum1"));
	ASSERT_EQ(0, vnic_guest_new(ctx, "g1", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &a, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &b, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(0, vnic_guest_nic_info(g, 0, &i0));
	ASSERT_EQ(0, vnic_guest_nic_info(g, 1, &i1));
	ASSERT_EQ(0, vnic_guest_new(ctx, "g2", &other));
	ASSERT_EQ(0, vnic_guest_add_nic(other, &o, NULL));
	ASSERT_EQ(0, vnic_guest_create(other));
	vnic_guest_free(g);
	vnic_guest_free(other);

	EXPECT_EQ(-ENOENT, vnic_guest_adopt_named(ctx, "g1", wrong, 3, &ad));
	EXPECT_EQ((void *)1, ad);
	/* Its message is its own, not the -ENOENT's just before. */
	EXPECT_EQ(-EINVAL, vnic_guest_adopt_named(ctx, "g1", bad, 1, &ad));
	EXPECT_EQ((void *)1, ad);
	EXPECT_EQ((int)VNIC_STEP_VALIDATE, (int)vnic_ctx_errstep(ctx));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(ctx), "interface name 0"))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	/* One link is one NIC: named twice, or named and also a named
	 * link's peer. */
	ASSERT_EQ(0, vnic_guest_adopt_named(ctx, "g1", dups, 5, &ad))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(2u, vnic_guest_nic_count(ad));
	vnic_guest_free(ad);
	ad = (void *)1;
	ASSERT_EQ(0, vnic_guest_adopt_named(ctx, "g1", names, 2, &ad))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(2u, vnic_guest_nic_count(ad));
	ASSERT_EQ(0, vnic_guest_nic_info(ad, 0, &got));
	EXPECT_STREQ(i0.name, got.name);
	EXPECT_STREQ("napeer", got.peer_name);
	EXPECT_EQ(i0.ifindex, got.ifindex);
	ASSERT_EQ(0, vnic_guest_nic_info(ad, 1, &got));
	EXPECT_STREQ(i1.name, got.name);
	EXPECT_STREQ("nbpeer", got.peer_name);
	ASSERT_EQ(0, vnic_guest_destroy(ad));
	EXPECT_EQ(-ENOENT, st_ip_link_get("na0", &l));
	EXPECT_EQ(-ENOENT, st_ip_link_get("nb0", &l));
	EXPECT_EQ(0, st_ip_link_get("no0", &l));
	EXPECT_EQ(0, st_ip_link_get("dum0", &l));
	vnic_ctx_free(ctx);
}

/* Two strings arrays equal as sets. */
static bool same_set(char **a, unsigned int n, const char *const *b,
		     unsigned int m)
{
	unsigned int i, j;

	if (n != m)
		return false;
	for (i = 0; i < n; i++) {
		for (j = 0; j < m && strcmp(a[i], b[j]); j++)
			;
		if (j == m)
			return false;
	}
	return true;
}

TEST_F(guest, collect_orphans_keep_and_owner)
{
	static const char *const both[] = { "g1", "g2" };
	static const char *const keep[] = { "g2" };
	struct report *g1, *g2, *other;
	struct vnic_ctx *ctx, *octx;
	unsigned int count, deleted = 99;
	char **names = NULL;

	g1 = run_child(_metadata, "t", "g1", 0, "g1p0");
	g2 = run_child(_metadata, "t", "g2", 2, NULL);
	other = run_child(_metadata, "tt", "g1", 3, NULL);
	ctx = ctx_owner(_metadata, "t");
	ASSERT_EQ(0, vnic_guest_list(ctx, &names, &count));
	EXPECT_TRUE(same_set(names, count, both, 2))
		TH_LOG("%u guests listed", count);
	free(names);

	/* Keep g2: only g1's four surviving NICs go (the veth counts once). */
	ASSERT_EQ(0, vnic_collect_orphans(ctx, keep, 1, &deleted))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(4u, deleted);
	EXPECT_EQ(0, present(g1, NFULL));
	EXPECT_EQ(-ENOENT, st_ip_link_get("g1p0", &(struct ip_link){ 0 }));
	EXPECT_EQ(2, present(g2, 2));
	EXPECT_EQ(3, present(other, 3));

	/* Nothing kept: g2 goes too, owner "tt" still untouched. */
	ASSERT_EQ(0, vnic_collect_orphans(ctx, NULL, 0, &deleted));
	EXPECT_EQ(2u, deleted);
	EXPECT_EQ(0, present(g2, 2));
	EXPECT_EQ(3, present(other, 3));
	ASSERT_EQ(0, vnic_collect_orphans(ctx, NULL, 0, NULL));
	ASSERT_EQ(0, vnic_guest_list(ctx, &names, &count));
	EXPECT_EQ(0u, count);
	free(names);

	octx = ctx_owner(_metadata, "tt");
	ASSERT_EQ(0, vnic_collect_orphans(octx, NULL, 0, &deleted));
	EXPECT_EQ(3u, deleted);
	EXPECT_EQ(0, st_vnic_links_count());
	vnic_ctx_free(octx);
	vnic_ctx_free(ctx);
}

/* Devices someone else tagged by hand in a foreign format stay. */
TEST_F(guest, collect_ignores_foreign_aliases)
{
	struct vnic_ctx *ctx;
	unsigned int deleted = 99;
	struct ip_link l;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name f0 type macvlan && "
				"ip link set f0 alias 'vnic:tt:g1:0' && "
				"ip link add link %s name f1 type macvlan && "
				"ip link set f1 alias 'not-vnic:t:g1:0'",
				LOWER, LOWER));
	ctx = ctx_owner(_metadata, "t");
	ASSERT_EQ(0, vnic_collect_orphans(ctx, NULL, 0, &deleted));
	EXPECT_EQ(0u, deleted);
	EXPECT_EQ(0, st_ip_link_get("f0", &l));
	EXPECT_EQ(0, st_ip_link_get("f1", &l));
	vnic_ctx_free(ctx);
}

/* --- a filter policy from an allocator guest --- */

static void policy_nic_of(struct vnic_guest *g, unsigned int i, char *mac,
			  struct vnic_nic_policy *np, struct vnic_nic_info *info)
{
	vnic_guest_nic_info(g, i, info);
	snprintf(mac, 18, "%02x:%02x:%02x:%02x:%02x:%02x", info->mac[0],
		 info->mac[1], info->mac[2], info->mac[3], info->mac[4],
		 info->mac[5]);
	memset(np, 0, sizeof(*np));
	np->sz = sizeof(*np);
	np->ifname = info->name;
	np->kind = info->kind;
	np->mac = mac;
}

/*
 * vnic_policy_add_nics_of() adds all of the guest's NICs or none
 * (policy.h): NIC 1 claimed by another guest leaves NIC 0 unclaimed, and
 * a NIC of g not created is -EINVAL, not skipped.
 */
TEST_F(guest, policy_add_nics_of_all_or_nothing)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "pn%d");
	struct vnic_nic_info info0 = { .sz = sizeof(info0) }, info1 = info0;
	struct vnic_ctx *ctx = ctx_owner(_metadata, "po");
	struct vnic_nic_policy n0, n1;
	char mac0[18], mac1[18];
	struct vnic_policy *p;
	struct vnic_guest *g;

	ASSERT_EQ(0, vnic_guest_new(ctx, "gpol", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	policy_nic_of(g, 0, mac0, &n0, &info0);
	policy_nic_of(g, 1, mac1, &n1, &info1);

	ASSERT_EQ(0, vnic_policy_new(NULL, &p));
	ASSERT_EQ(0, vnic_policy_add_guest(p, "a", NULL));
	ASSERT_EQ(0, vnic_policy_add_guest(p, "b", NULL));
	ASSERT_EQ(0, vnic_policy_add_nic(p, "b", &n1));
	EXPECT_EQ(-EEXIST, vnic_policy_add_nics_of(p, "a", g));
	EXPECT_NE(NULL, strstr(vnic_policy_errmsg(p), info1.name))
		TH_LOG("%s", vnic_policy_errmsg(p));
	/* NIC 0 went nowhere: b may have it, and a has none. */
	EXPECT_EQ(0, vnic_policy_add_nic(p, "b", &n0)) TH_LOG("%s", vnic_policy_errmsg(p));
	EXPECT_EQ(-EINVAL, vnic_policy_check(p));
	EXPECT_NE(NULL, strstr(vnic_policy_errmsg(p), "guest a"))
		TH_LOG("%s", vnic_policy_errmsg(p));
	vnic_policy_free(p);

	/* A third NIC, not created. */
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, vnic_policy_new(NULL, &p));
	ASSERT_EQ(0, vnic_policy_add_guest(p, "c", NULL));
	EXPECT_EQ(-EINVAL, vnic_policy_add_nics_of(p, "c", g));
	EXPECT_NE(0, vnic_policy_errmsg(p)[0]);
	EXPECT_EQ(-EINVAL, vnic_policy_check(p)) TH_LOG("NICs were added");
	/* The control: the created ones alone go in whole. */
	ASSERT_EQ(0, vnic_guest_destroy(g));
	ASSERT_EQ(0, vnic_guest_new(ctx, "gpol", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(0, vnic_policy_add_nics_of(p, "c", g)) TH_LOG("%s", vnic_policy_errmsg(p));
	EXPECT_EQ(0, vnic_policy_check(p));
	vnic_policy_free(p);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	vnic_ctx_free(ctx);
}

/* A NULL rule is no rule at all: -EINVAL, not a drop-everything rule
 * read from zeroes; the guest's 64 rules are then all still free. */
TEST(policy_null_rule_refused)
{
	VNIC_OPTS(vnic_rule, rule, .l4proto = 6, .dport_min = 22);
	struct vnic_policy *p;
	unsigned int i;

	ASSERT_EQ(0, vnic_policy_new(NULL, &p));
	ASSERT_EQ(0, vnic_policy_add_guest(p, "g", NULL));
	EXPECT_EQ(-EINVAL, vnic_policy_add_rule(p, "g", NULL));
	EXPECT_NE(0, vnic_policy_errmsg(p)[0]);
	for (i = 0; i < 64; i++)
		EXPECT_EQ(0, vnic_policy_add_rule(p, "g", &rule)) TH_LOG("rule %u: %s",
			  i, vnic_policy_errmsg(p));
	EXPECT_EQ(-E2BIG, vnic_policy_add_rule(p, "g", &rule));
	vnic_policy_free(p);
}

/* A NULL allocator guest says so: the message is not the one an earlier
 * call on the policy left (policy.h: why the last call failed). */
TEST(policy_nics_of_null_guest_has_its_own_message)
{
	struct vnic_policy *p;

	ASSERT_EQ(0, vnic_policy_new(NULL, &p));
	ASSERT_EQ(0, vnic_policy_add_guest(p, "g", NULL));
	EXPECT_EQ(-EEXIST, vnic_policy_add_guest(p, "g", NULL));
	EXPECT_EQ(-EINVAL, vnic_policy_add_nics_of(p, "g", NULL));
	EXPECT_EQ(NULL, strstr(vnic_policy_errmsg(p), "already"))
		TH_LOG("the earlier failure's: %s", vnic_policy_errmsg(p));
	EXPECT_NE(NULL, strstr(vnic_policy_errmsg(p), "guest g: no allocator guest"))
		TH_LOG("%s", vnic_policy_errmsg(p));
	EXPECT_EQ(-EINVAL, vnic_policy_check(p)) TH_LOG("a NIC was added");
	vnic_policy_free(p);
}

/* --- all or nothing: the kernel rejects NIC k --- */

FIXTURE(faults) {
	char names[MAXN][IFNAMSIZ];
};

FIXTURE_VARIANT(faults) {
	uint32_t flags;
	enum vnic_naming naming;
};

#define NOECHO	VNIC_CTX_NO_ECHO

FIXTURE_VARIANT_ADD(faults, cache_echo) { 0, VNIC_NAMING_CACHE };
FIXTURE_VARIANT_ADD(faults, cache_noecho) { NOECHO, VNIC_NAMING_CACHE };
FIXTURE_VARIANT_ADD(faults, kernel_echo) { 0, VNIC_NAMING_KERNEL };
FIXTURE_VARIANT_ADD(faults, kernel_noecho) { NOECHO, VNIC_NAMING_KERNEL };
FIXTURE_VARIANT_ADD(faults, explicit_echo) { 0, VNIC_NAMING_EXPLICIT };
FIXTURE_VARIANT_ADD(faults, explicit_noecho) { NOECHO, VNIC_NAMING_EXPLICIT };

FIXTURE_SETUP(faults)
{
	ST_SETUP_NETNS();
}

FIXTURE_TEARDOWN(faults)
{
	st_macvtaps_flush();
}

#define NFAULT	6

/*
 * The guest of the fault tests: every kind, netlink and /dev/net/tun ones
 * interleaved, so that a failure anywhere has both kinds to undo.  The tap
 * has two queues so that it opens more than one fd.
 */
static void fault_nics(FIXTURE_DATA(faults) *self,
		       const FIXTURE_VARIANT(faults) *variant,
		       struct vnic_nic_opts *nics)
{
	static const char *const pfx[NFAULT] = {
		"mvt", "mvl", "vth", "tp", "tn", "mvt",
	};
	static const enum vnic_kind kinds[NFAULT] = {
		VNIC_KIND_MACVTAP, VNIC_KIND_MACVLAN, VNIC_KIND_VETH,
		VNIC_KIND_TAP, VNIC_KIND_TUN, VNIC_KIND_MACVTAP,
	};
	unsigned int i;

	for (i = 0; i < NFAULT; i++) {
		if (variant->naming == VNIC_NAMING_EXPLICIT)
			snprintf(self->names[i], IFNAMSIZ, "%sx%u", pfx[i], i);
		else
			snprintf(self->names[i], IFNAMSIZ, "%s%%d", pfx[i]);
		memset(&nics[i], 0, sizeof(nics[i]));
		nics[i].sz = sizeof(nics[i]);
		nics[i].kind = kinds[i];
		nics[i].name = self->names[i];
		nics[i].naming = variant->naming;
		nics[i].up = 1;
		if (kinds[i] == VNIC_KIND_MACVTAP || kinds[i] == VNIC_KIND_MACVLAN)
			nics[i].lower = LOWER;
		if (kinds[i] == VNIC_KIND_VETH)
			nics[i].peer_name = "vthpeer";
	}
	nics[3].tap_flags = VNIC_TAP_MULTI_QUEUE;
	nics[3].queues = 2;
}

/*
 * What the kernel says when a macvlan's MTU exceeds its lower's, learned
 * from ip(8): "Error: TEXT." is the extended ack; "RTNETLINK answers" means
 * none.  The library must pass on exactly that.
 */
static void reference_extack(struct __test_metadata *_metadata,
			     const char *cmd, char *ext, size_t len)
{
	char err[256];
	size_t n;

	ASSERT_NE(0, st_run_cmd_err(err, sizeof(err), "%s", cmd));
	ext[0] = '\0';
	if (strncmp(err, "Error: ", 7))
		return;
	snprintf(ext, len, "%s", err + 7);
	n = strlen(ext);
	if (n && ext[n - 1] == '.')
		ext[n - 1] = '\0';
}

#define ANY_NIC	INT_MIN

/* Create must fail at NIC bad (ANY_NIC: not checked) with err at step,
 * leaving nothing behind; extack (NULL: not checked) is the kernel's. */
static void expect_clean_failure(struct __test_metadata *_metadata,
				 struct vnic_ctx *ctx, struct vnic_guest *g,
				 int err, enum vnic_step step, int bad,
				 const char *extack)
{
	int fds = st_count_fds(), ret;
	char *before = st_ip_link_snapshot(), *after;

	ASSERT_NE(NULL, before);
	ret = vnic_guest_create(g);
	after = st_ip_link_snapshot();
	TH_LOG("errmsg: %s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(err, ret) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(step, vnic_ctx_errstep(ctx));
	if (bad != ANY_NIC)
		EXPECT_EQ(bad, vnic_ctx_errnic(ctx));
	EXPECT_NE(0, vnic_ctx_errmsg(ctx)[0]);
	if (extack) {
		EXPECT_STREQ(extack, vnic_ctx_extack(ctx));
		if (extack[0])
			EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(ctx), extack));
	}
	EXPECT_STREQ(before, after);
	EXPECT_EQ(fds, st_count_fds());
	free(before);
	free(after);
}

/* Every position k of the guest in turn holds a macvlan whose MTU exceeds
 * its lower's: the kernel refuses it (macvlan_common_newlink).  The lower
 * given by ifindex, so that the library, which checks the MTU of a lower it
 * looks up by name, lets the kernel be the one to refuse. */
TEST_F(faults, kernel_rejects_nic_k)
{
	VNIC_OPTS(vnic_nic_opts, bad, .kind = VNIC_KIND_MACVLAN,
		  .lower_ifindex = (int)if_nametoindex(LOWER),
		  .mtu = 9000, .name = "bad%d", .naming = variant->naming);
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags);
	struct vnic_nic_opts nics[NFAULT];
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	char ext[256];
	unsigned int k, i;

	reference_extack(_metadata, "ip link add link " LOWER
			 " name refx mtu 9000 type macvlan", ext, sizeof(ext));
	TH_LOG("kernel extack for this rejection: '%s'", ext);
	if (variant->naming == VNIC_NAMING_EXPLICIT)
		bad.name = "badx";
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	/* The table and its monitor socket now, not inside the fd count. */
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	for (k = 1; k <= NFAULT; k++) {
		fault_nics(self, variant, nics);
		nics[k - 1] = bad;
		ASSERT_EQ(0, vnic_guest_new(ctx, "gk", &g));
		for (i = 0; i < NFAULT; i++) {
			ASSERT_EQ(0, vnic_guest_add_nic(g, &nics[i], NULL))
				TH_LOG("%s", vnic_ctx_errmsg(ctx));
		}
		expect_clean_failure(_metadata, ctx, g, -EINVAL,
				     VNIC_STEP_CREATE, k - 1, ext);
		/* Nothing to delete: destroying is fine. */
		EXPECT_EQ(0, vnic_guest_destroy(g));
		EXPECT_EQ(0, st_vnic_links_count());
	}
	vnic_ctx_free(ctx);
}

/* The same with an extended ack: a tap's MTU above the tun driver's
 * maximum is refused when the library configures it. */
TEST_F(faults, kernel_rejects_tap_mtu_k)
{
	VNIC_OPTS(vnic_nic_opts, bad, .kind = VNIC_KIND_TAP, .mtu = 65530,
		  .name = "badt%d", .naming = variant->naming);
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags);
	struct vnic_nic_opts nics[NFAULT];
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	char ext[256];
	unsigned int k, i;

	reference_extack(_metadata, "ip tuntap add reft mode tap && "
			 "ip link set reft mtu 65530", ext, sizeof(ext));
	ASSERT_EQ(0, st_run_cmd("ip link del reft"));
	TH_LOG("kernel extack for this rejection: '%s'", ext);
	if (variant->naming == VNIC_NAMING_EXPLICIT)
		bad.name = "badtx";
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	/* The table and its monitor socket now, not inside the fd count. */
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	for (k = 1; k <= NFAULT; k++) {
		fault_nics(self, variant, nics);
		nics[k - 1] = bad;
		ASSERT_EQ(0, vnic_guest_new(ctx, "gk", &g));
		for (i = 0; i < NFAULT; i++) {
			ASSERT_EQ(0, vnic_guest_add_nic(g, &nics[i], NULL))
				TH_LOG("%s", vnic_ctx_errmsg(ctx));
		}
		expect_clean_failure(_metadata, ctx, g, -EINVAL,
				     VNIC_STEP_CONFIGURE, k - 1, ext);
		EXPECT_EQ(0, vnic_guest_destroy(g));
	}
	vnic_ctx_free(ctx);
}

/* A name already taken in the namespace: the NICs made before it go,
 * and the device that owned the name is not "rolled back" with them. */
TEST_F(faults, explicit_name_taken)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags);
	VNIC_OPTS(vnic_nic_opts, ok, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "okx0");
	VNIC_OPTS(vnic_nic_opts, dup, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = LOWER_PEER);
	struct vnic_guest *g;
	struct vnic_ctx *ctx;

	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	ASSERT_EQ(0, vnic_guest_new(ctx, "gd", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &ok, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &dup, NULL));
	expect_clean_failure(_metadata, ctx, g, -EEXIST, VNIC_STEP_CREATE, 1,
			     NULL);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	vnic_ctx_free(ctx);
}

/* --- all or nothing: injected faults at every step and position --- */

/*
 * Positions (bit i: NIC i) where a fault at this step must fire on the
 * fault guest.  Elsewhere the step may not exist for that NIC (e.g. no
 * CONFIGURE for a macvtap): then the create must simply succeed.
 */
static unsigned int must_fire(enum vnic_step step, bool noecho)
{
	switch (step) {
	case VNIC_STEP_CREATE:
		return 0x3f;
	case VNIC_STEP_NAME:
		return 0;	/* per template: see fault_at_every_step */
	case VNIC_STEP_RESOLVE:
		/* Without the echo every netlink NIC needs a look-up. */
		return noecho ? 0x27 : 0;
	case VNIC_STEP_CONFIGURE:
		return 0x18;	/* the tap and the tun */
	case VNIC_STEP_OPEN:
		return 0x08;	/* the two-queue tap */
	default:
		return 0;
	}
}

static void fault_one(struct __test_metadata *_metadata,
		      FIXTURE_DATA(faults) *self,
		      const FIXTURE_VARIANT(faults) *variant,
		      enum vnic_step step, unsigned int nth, bool *fired)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags);
	struct vnic_nic_opts nics[NFAULT];
	char *before, *after;
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	unsigned int i;
	int fds, ret;

	fds = st_count_fds();
	before = st_ip_link_snapshot();
	ASSERT_NE(NULL, before);
	ASSERT_EQ(0, vnic_ctx_new_faulty(&o, step, nth, &ctx));
	fault_nics(self, variant, nics);
	ASSERT_EQ(0, vnic_guest_new(ctx, "gf", &g));
	for (i = 0; i < NFAULT; i++) {
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nics[i], NULL));
	}
	ret = vnic_guest_create(g);
	*fired = ret != 0;
	if (ret) {
		ASSERT_EQ(-EIO, ret) TH_LOG("%s", vnic_ctx_errmsg(ctx));
		EXPECT_EQ(step, vnic_ctx_errstep(ctx))
			TH_LOG("fault %s nth %u: %s", vnic_step_name(step), nth,
			       vnic_ctx_errmsg(ctx));
		EXPECT_EQ((int)nth - 1, vnic_ctx_errnic(ctx))
			TH_LOG("fault %s nth %u: %s", vnic_step_name(step), nth,
			       vnic_ctx_errmsg(ctx));
		EXPECT_NE(0, vnic_ctx_errmsg(ctx)[0]);
	}
	EXPECT_EQ(0, vnic_guest_destroy(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	vnic_ctx_free(ctx);
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after) TH_LOG("step %s nth %u",
					   vnic_step_name(step), nth);
	EXPECT_EQ(fds, st_count_fds()) TH_LOG("step %s nth %u",
					      vnic_step_name(step), nth);
	free(before);
	free(after);
}

TEST_F_TIMEOUT(faults, fault_at_every_step, 60)
{
	static const enum vnic_step steps[] = {
		VNIC_STEP_NAME, VNIC_STEP_CREATE, VNIC_STEP_RESOLVE,
		VNIC_STEP_CONFIGURE, VNIC_STEP_OPEN,
	};
	bool noecho = variant->flags & VNIC_CTX_NO_ECHO;
	unsigned int s, nth, need, seen;
	bool fired;

	for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		need = must_fire(steps[s], noecho);
		/* Names are chosen only for templates the cache resolves. */
		if (steps[s] == VNIC_STEP_NAME &&
		    variant->naming == VNIC_NAMING_CACHE)
			need = 0x3f;
		seen = 0;
		for (nth = 1; nth <= NFAULT; nth++) {
			fault_one(_metadata, self, variant, steps[s], nth, &fired);
			if (fired)
				seen |= 1u << (nth - 1);
		}
		EXPECT_EQ(need, seen & need)
			TH_LOG("step %s fired at %#x, must at %#x",
			       vnic_step_name(steps[s]), seen, need);
	}
}

/* A fault past the last NIC fires nowhere. */
TEST_F(faults, fault_beyond_last_nic)
{
	bool fired;

	fault_one(_metadata, self, variant, VNIC_STEP_CREATE, NFAULT + 1,
		  &fired);
	EXPECT_FALSE(fired);
}

/* The context's own sockets fail to open: no context, no fd left. */
TEST_F(faults, fault_socket)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags);
	struct vnic_ctx *ctx = (void *)1;
	int fds = st_count_fds();

	EXPECT_EQ(-EIO, vnic_ctx_new_faulty(&o, VNIC_STEP_SOCKET, 1, &ctx));
	EXPECT_EQ((void *)1, ctx);
	EXPECT_EQ(fds, st_count_fds());
}

/* The table dump fails: the cache cannot name, nothing is created. */
TEST_F(faults, fault_dump)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags);
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "dm%d", .naming = VNIC_NAMING_CACHE);
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	int fds = st_count_fds();

	/* A context may dump while it is made; then that is what fails. */
	if (vnic_ctx_new_faulty(&o, VNIC_STEP_DUMP, 1, &ctx) == -EIO) {
		EXPECT_EQ(fds, st_count_fds());
		return;
	}
	ASSERT_EQ(0, vnic_guest_new(ctx, "gd", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	/* A dump is about no NIC, or about the one being named. */
	expect_clean_failure(_metadata, ctx, g, -EIO, VNIC_STEP_DUMP, ANY_NIC,
			     NULL);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	vnic_ctx_free(ctx);
}

/*
 * A receive buffer too small for a window's replies: the kernel does every
 * request of a window but drops the acks (and echoes) that do not fit, and
 * the read fails with ENOBUFS.  The window is cut to what the buffer holds
 * (6000: the extra macvlans and the wide window asked for would overflow
 * it with acks alone).  Where one reply alone overflows it (1000: an echo;
 * veths, since a lower device's lookup would fail first), a NIC whose ack
 * was lost may exist: the failed create finds it by the MAC and group it was
 * born with (never by a name someone else may hold) and deletes it.  Either
 * way: created, or nothing left.
 */
#define NLOST	16

static void acks_lost(struct __test_metadata *_metadata,
		      FIXTURE_DATA(faults) *self,
		      const FIXTURE_VARIANT(faults) *variant, uint32_t rcvbuf,
		      bool lowers)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags,
		  .rcvbuf = rcvbuf, .window = 64);
	struct vnic_nic_opts nics[NFAULT];
	VNIC_OPTS(vnic_nic_opts, mvl, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .naming = variant->naming);
	VNIC_OPTS(vnic_nic_opts, vth, .kind = VNIC_KIND_VETH, .up = 1,
		  .naming = variant->naming);
	char names[NLOST][IFNAMSIZ], peers[NLOST][IFNAMSIZ], *before, *after;
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	unsigned int i;
	int fds, ret;

	fds = st_count_fds();
	before = st_ip_link_snapshot();
	ASSERT_NE(NULL, before);
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	fault_nics(self, variant, nics);
	ASSERT_EQ(0, vnic_guest_new(ctx, "gl", &g));
	for (i = 0; lowers && i < NFAULT; i++) {
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nics[i], NULL));
	}
	for (i = 0; i < NLOST; i++) {
		if (variant->naming == VNIC_NAMING_EXPLICIT)
			snprintf(names[i], IFNAMSIZ, "lost%u", i);
		else
			snprintf(names[i], IFNAMSIZ, "lost%%d");
		snprintf(peers[i], IFNAMSIZ, "lostp%u", i);
		mvl.name = vth.name = names[i];
		vth.peer_name = peers[i];
		ASSERT_EQ(0, vnic_guest_add_nic(g, lowers ? &mvl : &vth, NULL));
	}
	ret = vnic_guest_create(g);
	TH_LOG("rcvbuf %u: create %d %s", rcvbuf, ret, vnic_ctx_errmsg(ctx));
	if (ret) {
		EXPECT_NE(0, vnic_ctx_errmsg(ctx)[0]);
		after = st_ip_link_snapshot();
		EXPECT_STREQ(before, after);
		free(after);
	}
	EXPECT_EQ(0, vnic_guest_destroy(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	vnic_ctx_free(ctx);
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	EXPECT_EQ(fds, st_count_fds());
	free(before);
	free(after);
}

TEST_F(faults, acks_lost_to_small_rcvbuf)
{
	acks_lost(_metadata, self, variant, 6000, true);
	acks_lost(_metadata, self, variant, 1000, false);
}

/* Deleting NIC 2 of 3 fails: destroy says so, and what it could not
 * delete is still tagged, so a later collect finds it. */
TEST_F(faults, fault_delete)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "ft", .flags = variant->flags);
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "de%d");
	struct vnic_ctx *ctx, *ctx2;
	struct vnic_guest *g;
	unsigned int i, deleted = 0;

	ASSERT_EQ(0, vnic_ctx_new_faulty(&o, VNIC_STEP_DELETE, 2, &ctx));
	ASSERT_EQ(0, vnic_guest_new(ctx, "gdel", &g));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	}
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(-EIO, vnic_guest_destroy(g));
	EXPECT_EQ((int)VNIC_STEP_DELETE, (int)vnic_ctx_errstep(ctx));
	EXPECT_EQ(1, vnic_ctx_errnic(ctx));
	EXPECT_LE(1, st_vnic_links_count());

	ctx2 = NULL;
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx2));
	ASSERT_EQ(0, vnic_collect_orphans(ctx2, NULL, 0, &deleted));
	EXPECT_LE(1u, deleted);
	EXPECT_EQ(0, st_vnic_links_count());
	vnic_ctx_free(ctx2);
	vnic_ctx_free(ctx);
}

TEST_HARNESS_MAIN
