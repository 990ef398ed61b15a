// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Bad input, one case each: a clear errno, a non-empty vnic_ctx_errmsg()
 * and no device created.  Where a boundary exists the valid side of it is
 * tested too, so that a library rejecting everything does not pass.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
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

FIXTURE(input) {
	struct vnic_ctx *ctx;
};

FIXTURE_SETUP(input)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "it");

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
}

FIXTURE_TEARDOWN(input)
{
	st_macvtaps_flush();
}

/*
 * One NIC, rejected with err either when added (checked and copied) or,
 * failing that, when created; nothing may appear in the namespace.
 */
static void expect_bad_nic(struct __test_metadata *_metadata,
			   struct vnic_ctx *ctx,
			   const struct vnic_nic_opts *nic, int err)
{
	char *before = st_ip_link_snapshot(), *after;
	struct vnic_guest *g;
	int ret;

	ASSERT_NE(NULL, before);
	ASSERT_EQ(0, vnic_guest_new(ctx, "gbad", &g));
	ret = vnic_guest_add_nic(g, nic, NULL);
	if (!ret)
		ret = vnic_guest_create(g);
	TH_LOG("errmsg: %s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(err, ret) TH_LOG("got %s", vnic_strerror(ret));
	EXPECT_NE(0, vnic_ctx_errmsg(ctx)[0]);
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	free(before);
	free(after);
}

/* The same NIC shape must work with good values: the control. */
static void expect_good_nic(struct __test_metadata *_metadata,
			    struct vnic_ctx *ctx,
			    const struct vnic_nic_opts *nic)
{
	struct vnic_guest *g;

	ASSERT_EQ(0, vnic_guest_new(ctx, "ggood", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, nic, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(1, st_vnic_links_count());
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

#define MVT	.kind = VNIC_KIND_MACVTAP, .lower = LOWER
#define VETH	.kind = VNIC_KIND_VETH

/* A NIC with a bad field: each its own test case. */
#define BAD_NIC(tname, err, ...)					\
	TEST_F(input, tname)						\
	{								\
		VNIC_OPTS(vnic_nic_opts, nic, __VA_ARGS__);		\
		expect_bad_nic(_metadata, self->ctx, &nic, err);	\
	}

#define GOOD_NIC(tname, ...)						\
	TEST_F(input, tname)						\
	{								\
		VNIC_OPTS(vnic_nic_opts, nic, __VA_ARGS__);		\
		expect_good_nic(_metadata, self->ctx, &nic);		\
	}

/* Names: the kernel's dev_valid_name() rules, and one "%d" at most. */
BAD_NIC(name_empty, -EINVAL, MVT, .name = "")
BAD_NIC(name_16_chars, -EINVAL, MVT, .name = "abcdefghijklmnop")
GOOD_NIC(name_15_chars, MVT, .name = "abcdefghijklmno")
BAD_NIC(template_no_room_for_digit, -EINVAL, MVT, .name = "abcdefghijklmno%d")
BAD_NIC(template_two_d, -EINVAL, MVT, .name = "a%db%d")
BAD_NIC(template_percent_s, -EINVAL, MVT, .name = "a%s")
BAD_NIC(template_percent_x, -EINVAL, MVT, .name = "a%x")
BAD_NIC(template_percent_u, -EINVAL, MVT, .name = "a%u")
BAD_NIC(template_percent_percent, -EINVAL, MVT, .name = "a%%d")
BAD_NIC(template_trailing_percent, -EINVAL, MVT, .name = "a%")
BAD_NIC(template_width, -EINVAL, MVT, .name = "a%3d")
BAD_NIC(name_slash, -EINVAL, MVT, .name = "a/b")
BAD_NIC(name_colon, -EINVAL, MVT, .name = "a:b")
BAD_NIC(name_space, -EINVAL, MVT, .name = "a b")
BAD_NIC(name_tab, -EINVAL, MVT, .name = "a\tb")
BAD_NIC(name_newline, -EINVAL, MVT, .name = "ab\n")
BAD_NIC(name_dot, -EINVAL, MVT, .name = ".")
BAD_NIC(name_dotdot, -EINVAL, MVT, .name = "..")
GOOD_NIC(name_dots_inside, MVT, .name = "a..b")
BAD_NIC(template_in_explicit, -EINVAL, MVT, .name = "a%d",
	.naming = VNIC_NAMING_EXPLICIT)
BAD_NIC(template_with_slash, -EINVAL, MVT, .name = "a/%d")
BAD_NIC(naming_out_of_range, -EINVAL, MVT, .naming = 99)

/* The lower device. */
BAD_NIC(lower_missing, -EINVAL, .kind = VNIC_KIND_MACVTAP)
BAD_NIC(lower_missing_macvlan, -EINVAL, .kind = VNIC_KIND_MACVLAN)
BAD_NIC(lower_unknown_name, -ENODEV, .kind = VNIC_KIND_MACVTAP,
	.lower = "nosuch0")
BAD_NIC(lower_unknown_ifindex, -ENODEV, .kind = VNIC_KIND_MACVTAP,
	.lower_ifindex = 9999)

/* MACs: well formed, unicast, not zero. */
BAD_NIC(mac_short, -EINVAL, MVT, .mac = "02:00:00:00:00")
BAD_NIC(mac_long, -EINVAL, MVT, .mac = "02:00:00:00:00:01:02")
BAD_NIC(mac_not_hex, -EINVAL, MVT, .mac = "02:00:00:00:00:zz")
BAD_NIC(mac_trailing, -EINVAL, MVT, .mac = "02:00:00:00:00:01x")
BAD_NIC(mac_empty, -EINVAL, MVT, .mac = "")
BAD_NIC(mac_multicast, -EINVAL, MVT, .mac = "01:00:5e:00:00:01")
BAD_NIC(mac_broadcast, -EINVAL, MVT, .mac = "ff:ff:ff:ff:ff:ff")
BAD_NIC(mac_zero, -EINVAL, MVT, .mac = "00:00:00:00:00:00")
GOOD_NIC(mac_upper_case, MVT, .mac = "02:AB:CD:EF:00:01")
BAD_NIC(peer_mac_multicast, -EINVAL, VETH, .peer_name = "p0",
	.peer_mac = "03:00:00:00:00:01")

/* MTU: below ETH_MIN_MTU, above what any device takes. */
BAD_NIC(mtu_1, -EINVAL, MVT, .mtu = 1)
BAD_NIC(mtu_67, -EINVAL, MVT, .mtu = 67)
GOOD_NIC(mtu_68, MVT, .mtu = 68)
BAD_NIC(mtu_70000, -EINVAL, MVT, .mtu = 70000)
BAD_NIC(tap_mtu_70000, -EINVAL, .kind = VNIC_KIND_TAP, .mtu = 70000)
GOOD_NIC(mtu_equal_to_lower, MVT, .mtu = 1500)

/*
 * Above the lower's MTU (1500): the kernel says only EINVAL; the library
 * names the limit, before anything is created.
 */
TEST_F(input, mtu_above_lower_named)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .mtu = 1501);
	char *before = st_ip_link_snapshot(), *after;
	struct vnic_guest *g;

	ASSERT_NE(NULL, before);
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gbad", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	EXPECT_EQ(-EINVAL, vnic_guest_create(g));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx),
			       "MTU 1501 above the 1500 of lower device '" LOWER "'"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ((int)VNIC_STEP_VALIDATE, (int)vnic_ctx_errstep(self->ctx));
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	vnic_guest_free(g);
	free(before);
	free(after);
}

/* Kind-specific. */
BAD_NIC(kind_zero, -EINVAL, .kind = 0, .lower = LOWER)
BAD_NIC(kind_unknown, -EINVAL, .kind = VNIC_KIND__MAX, .lower = LOWER)
BAD_NIC(mode_unknown, -EINVAL, MVT, .mode = 99)
BAD_NIC(veth_no_peer, -EINVAL, VETH)
BAD_NIC(veth_peer_empty, -EINVAL, VETH, .peer_name = "")
BAD_NIC(veth_peer_template, -EINVAL, VETH, .peer_name = "p%d")
BAD_NIC(veth_peer_slash, -EINVAL, VETH, .peer_name = "p/0")
BAD_NIC(veth_peer_16_chars, -EINVAL, VETH, .peer_name = "abcdefghijklmnop")
BAD_NIC(tap_flags_unknown, -EINVAL, .kind = VNIC_KIND_TAP,
	.tap_flags = 1u << 20)

/* A namespace fd that is no namespace. */
TEST_F(input, netns_fd_not_a_namespace)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .netns_fd = fd);

	ASSERT_LE(0, fd);
	expect_bad_nic(_metadata, self->ctx, &nic, -EINVAL);
	close(fd);
}

/* No such process: -ESRCH, or -ENOENT from its missing /proc entry. */
TEST_F(input, netns_pid_unknown)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .netns_pid = 0x3ffffff0);
	struct vnic_guest *g;
	int ret;

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gbad", &g));
	ret = vnic_guest_add_nic(g, &nic, NULL);
	if (!ret)
		ret = vnic_guest_create(g);
	EXPECT_TRUE(ret == -ESRCH || ret == -ENOENT) TH_LOG("got %d", ret);
	EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0]);
	EXPECT_EQ(0, st_vnic_links_count());
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

/* Two NICs asking for one explicit name: the second is refused when added
 * (guest.h: -EEXIST, nothing added), the first is created. */
TEST_F(input, duplicate_explicit_names)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .name = "dup0");
	VNIC_OPTS(vnic_nic_opts, veth, VETH, .name = "dup0", .peer_name = "dupp");
	struct vnic_nic_info info = { .sz = sizeof(info) };
	char *before = st_ip_link_snapshot(), *after;
	struct vnic_guest *g;
	unsigned int idx = 7;
	int ret;

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gdup", &g));
	ret = vnic_guest_add_nic(g, &nic, NULL);
	ASSERT_EQ(0, ret);
	ret = vnic_guest_add_nic(g, &nic, &idx);
	EXPECT_EQ(-EEXIST, ret) TH_LOG("got %d: %s", ret, vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ((int)VNIC_STEP_VALIDATE, (int)vnic_ctx_errstep(self->ctx));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "dup0"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(-EEXIST, vnic_guest_add_nic(g, &veth, &idx));
	EXPECT_EQ(7u, idx);
	EXPECT_EQ(1u, vnic_guest_nic_count(g));
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	free(after);
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, vnic_guest_nic_info(g, 0, &info));
	EXPECT_STREQ("dup0", info.name);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	free(before);
	free(after);
}

/*
 * A refused add takes no tag index: guest.h says a guest built here has
 * tag_index equal to each NIC's position, and the alias carries it.
 */
TEST_F(input, refused_add_takes_no_tag_index)
{
	VNIC_OPTS(vnic_nic_opts, bad, MVT, .mtu = 1);
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .name = "tgi%d");
	struct vnic_nic_info info = { .sz = sizeof(info) };
	struct vnic_guest *g;
	struct ip_link l;
	char alias[128];
	unsigned int i;

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gtag", &g));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(-EINVAL, vnic_guest_add_nic(g, &bad, NULL));
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	}
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		EXPECT_EQ(i, info.tag_index);
		ASSERT_EQ(0, st_ip_link_get(info.name, &l));
		st_vnic_alias(alias, sizeof(alias), "it", "gtag", i);
		EXPECT_STREQ(alias, l.alias);
	}
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

/* --- suffix space exhausted --- */

/*
 * A template must fit IFLA_IFNAME itself (15 characters, as the kernel's
 * own "%d" requires), so a 13-character prefix is the longest: two digits
 * are left, a hundred names.
 */
#define P13	"abcdefghijklm"
#define P13_NAMES 100

BAD_NIC(template_16_chars, -EINVAL, MVT, .name = "abcdefghijklmn%d")

static struct vnic_guest *fill_p13(struct __test_metadata *_metadata,
				   struct vnic_ctx *ctx, const char *gname,
				   enum vnic_naming naming, unsigned int n)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = P13 "%d", .naming = naming);
	struct vnic_guest *g;
	unsigned int i;

	ASSERT_EQ(0, vnic_guest_new(ctx, gname, &g));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL))
			TH_LOG("%s", vnic_ctx_errmsg(ctx));
	}
	return g;
}

static void exhaust(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
		    enum vnic_naming naming)
{
	struct vnic_guest *g, *all;
	char *before, *after;
	int ret;

	all = fill_p13(_metadata, ctx, "gall", naming, P13_NAMES);
	ASSERT_EQ(0, vnic_guest_create(all)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(P13_NAMES, st_prefixed_links_count(P13));

	before = st_ip_link_snapshot();
	g = fill_p13(_metadata, ctx, "gone", naming, 1);
	ret = vnic_guest_create(g);
	TH_LOG("one more: %d %s", ret, vnic_ctx_errmsg(ctx));
	/*
	 * Which errno is the library's choice.  The cache knows the space is
	 * full, and a retry loop giving up with -EEXIST would not say so.
	 * The kernel's "%d" does not: it prints suffix 100, which IFNAMSIZ
	 * truncates to the existing "...m10", and registering that fails
	 * with -EEXIST (__dev_alloc_name, Linux 6.x).
	 */
	EXPECT_GT(0, ret);
	if (naming == VNIC_NAMING_CACHE)
		EXPECT_NE(-EEXIST, ret);
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(ctx), P13))
		TH_LOG("errmsg does not name the template");
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(0, vnic_guest_destroy(all));
	free(before);
	free(after);
}

TEST_F(input, suffix_space_exhausted_cache)
{
	exhaust(_metadata, self->ctx, VNIC_NAMING_CACHE);
}

TEST_F(input, suffix_space_exhausted_kernel)
{
	exhaust(_metadata, self->ctx, VNIC_NAMING_KERNEL);
}

/* One NIC too many in one guest: the last fails, the rest are undone. */
TEST_F(input, suffix_space_exhausted_one_guest)
{
	char *before = st_ip_link_snapshot(), *after;
	struct vnic_guest *g;
	int ret;

	g = fill_p13(_metadata, self->ctx, "gall", VNIC_NAMING_CACHE,
		     P13_NAMES + 1);
	ret = vnic_guest_create(g);
	EXPECT_GT(0, ret);
	EXPECT_NE(-EEXIST, ret);
	EXPECT_EQ(P13_NAMES, vnic_ctx_errnic(self->ctx))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	free(before);
	free(after);
}

/* --- guest and owner names --- */

static void expect_bad_guest(struct __test_metadata *_metadata,
			     struct vnic_ctx *ctx, const char *name)
{
	struct vnic_guest *g = (void *)1;

	EXPECT_EQ(-EINVAL, vnic_guest_new(ctx, name, &g));
	EXPECT_EQ((void *)1, g);
	EXPECT_NE(0, vnic_ctx_errmsg(ctx)[0]);
}

#define BAD_GUEST(tname, gname)						\
	TEST_F(input, tname)						\
	{								\
		expect_bad_guest(_metadata, self->ctx, gname);		\
	}

BAD_GUEST(guest_null, NULL)
BAD_GUEST(guest_empty, "")
/* ':' separates the fields of the alias tag. */
BAD_GUEST(guest_colon, "a:b")
BAD_GUEST(guest_space, "a b")
BAD_GUEST(guest_slash, "a/b")
TEST_F(input, guest_65_chars)
{
	char name[66];

	memset(name, 'a', 65);
	name[65] = '\0';
	expect_bad_guest(_metadata, self->ctx, name);
}

TEST_F(input, guest_64_chars)
{
	struct vnic_guest *g;
	char name[65];

	memset(name, 'a', 64);
	name[64] = '\0';
	ASSERT_EQ(0, vnic_guest_new(self->ctx, name, &g));
	vnic_guest_free(g);
}

/* A bad owner: no context, so only the errno speaks. */
static void expect_bad_owner(struct __test_metadata *_metadata,
			     const char *owner)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = owner);
	struct vnic_ctx *ctx = (void *)1;
	int fds = st_count_fds();

	EXPECT_EQ(-EINVAL, vnic_ctx_new(&o, &ctx));
	EXPECT_EQ((void *)1, ctx);
	EXPECT_EQ(fds, st_count_fds());
}

#define BAD_OWNER(tname, oname)						\
	TEST_F(input, tname)						\
	{								\
		expect_bad_owner(_metadata, oname);			\
	}

BAD_OWNER(owner_empty, "")
BAD_OWNER(owner_colon, "a:b")
BAD_OWNER(owner_space, "a b")
BAD_OWNER(owner_33_chars, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")

TEST_F(input, owner_32_chars)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	struct vnic_ctx *ctx;

	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	vnic_ctx_free(ctx);
}

TEST_F(input, ctx_fault_step_out_of_range)
{
	VNIC_OPTS(vnic_ctx_opts, o);
	struct vnic_ctx *ctx = (void *)1;

	EXPECT_EQ(-EINVAL, vnic_ctx_new_faulty(&o, VNIC_STEP__MAX, 1, &ctx));
	EXPECT_EQ((void *)1, ctx);
	EXPECT_EQ(-EINVAL, vnic_ctx_new_faulty(&o, -1, 1, &ctx));
	EXPECT_EQ((void *)1, ctx);
}

/* --- the sz convention of common.h --- */

/* A caller compiled against a newer, larger struct. */
struct nic_opts_next {
	struct vnic_nic_opts o;
	uint64_t added;
};

TEST_F(input, opts_larger_nonzero_tail_e2big)
{
	struct nic_opts_next next;
	struct vnic_guest *g;

	memset(&next, 0, sizeof(next));
	next.o.sz = sizeof(next);
	next.o.kind = VNIC_KIND_MACVTAP;
	next.o.lower = LOWER;
	next.added = 1;
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gsz", &g));
	EXPECT_EQ(-E2BIG, vnic_guest_add_nic(g, &next.o, NULL));
	EXPECT_EQ(0u, vnic_guest_nic_count(g));
	vnic_guest_free(g);
}

TEST_F(input, opts_larger_zero_tail_ok)
{
	struct nic_opts_next next;
	struct vnic_guest *g;

	memset(&next, 0, sizeof(next));
	next.o.sz = sizeof(next);
	next.o.kind = VNIC_KIND_MACVTAP;
	next.o.lower = LOWER;
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gsz", &g));
	EXPECT_EQ(0, vnic_guest_add_nic(g, &next.o, NULL));
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

/* An older caller knows only the fields up to 'mtu'. */
TEST_F(input, opts_smaller_ok)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .up = 1);
	struct vnic_guest *g;

	nic.sz = offsetof(struct vnic_nic_opts, up);
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gsz", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(1, st_vnic_links_count());
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

struct ctx_opts_next {
	struct vnic_ctx_opts o;
	uint64_t added;
};

TEST_F(input, ctx_opts_larger_nonzero_tail_e2big)
{
	struct ctx_opts_next next;
	struct vnic_ctx *ctx = (void *)1;

	memset(&next, 0, sizeof(next));
	next.o.sz = sizeof(next);
	next.added = 1;
	EXPECT_EQ(-E2BIG, vnic_ctx_new(&next.o, &ctx));
	EXPECT_EQ((void *)1, ctx);
}

/* --- structs the library fills carry sz too (lib/opts.c) --- */

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

/* Sizes spelled here, apart from the library's VNIC_SZ_0_1(). */
#define STATS_0_1 (offsetof(struct vnic_ctx_stats, dumps_interrupted) + \
		   sizeof(uint64_t))
#define INFO_0_1 (offsetof(struct vnic_nic_info, tag_index) + \
		  sizeof(unsigned int))

/* Below the 0.1 struct: -EINVAL with a message, not a byte written; at
 * it (the oldest caller): exactly its bytes; larger (a newer caller): ours,
 * its tail untouched, and sz says how much was written. */
TEST_F(input, out_struct_sz_stats)
{
	struct {
		struct vnic_ctx_stats st;
		unsigned char guard[32];
	} b;

	memset(&b, GUARD, sizeof(b));
	b.st.sz = STATS_0_1 - 1;
	EXPECT_EQ(-EINVAL, vnic_ctx_stats(self->ctx, &b.st));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "vnic_ctx_stats"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(STATS_0_1 - 1, b.st.sz);
	EXPECT_TRUE(untouched((char *)&b + sizeof(size_t),
			      sizeof(b) - sizeof(size_t)));

	memset(&b, GUARD, sizeof(b));
	b.st.sz = STATS_0_1;
	ASSERT_EQ(0, vnic_ctx_stats(self->ctx, &b.st));
	EXPECT_EQ(STATS_0_1, b.st.sz);
	EXPECT_LE(1u, b.st.sendmsg_calls) TH_LOG("the probes sent requests");
	EXPECT_TRUE(untouched((char *)&b + STATS_0_1, sizeof(b) - STATS_0_1));

	memset(&b, 0, sizeof(b));
	b.st.sz = sizeof(b);
	ASSERT_EQ(0, vnic_ctx_stats(self->ctx, &b.st));
	EXPECT_EQ(sizeof(struct vnic_ctx_stats), b.st.sz);
	EXPECT_LE(1u, b.st.sendmsg_calls);
	memset(&b.guard, GUARD, sizeof(b.guard));
	ASSERT_EQ(0, vnic_ctx_stats(self->ctx, &b.st));
	EXPECT_TRUE(untouched(b.guard, sizeof(b.guard)));
}

TEST_F(input, out_struct_sz_nic_info)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .name = "osz0");
	struct {
		struct vnic_nic_info info;
		unsigned char guard[32];
	} b;
	struct vnic_guest *g;

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gosz", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));

	memset(&b, GUARD, sizeof(b));
	b.info.sz = sizeof(size_t);
	EXPECT_EQ(-EINVAL, vnic_guest_nic_info(g, 0, &b.info));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "vnic_nic_info"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_TRUE(untouched((char *)&b + sizeof(size_t),
			      sizeof(b) - sizeof(size_t)));

	memset(&b, GUARD, sizeof(b));
	b.info.sz = INFO_0_1;
	ASSERT_EQ(0, vnic_guest_nic_info(g, 0, &b.info));
	EXPECT_EQ(INFO_0_1, b.info.sz);
	EXPECT_STREQ("osz0", b.info.name);
	EXPECT_TRUE(untouched((char *)&b + INFO_0_1, sizeof(b) - INFO_0_1));

	memset(&b, 0, sizeof(b));
	memset(&b.guard, GUARD, sizeof(b.guard));
	b.info.sz = sizeof(b);
	ASSERT_EQ(0, vnic_guest_nic_info(g, 0, &b.info));
	EXPECT_EQ(sizeof(struct vnic_nic_info), b.info.sz);
	EXPECT_STREQ("osz0", b.info.name);
	EXPECT_NE(0, b.info.ifindex);
	EXPECT_TRUE(untouched(b.guard, sizeof(b.guard)));
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

/*
 * An index the guest has no NIC for is refused with a message of its own
 * (common.h: every failure with a context says why), not with the one the
 * previous failure left, nor an empty one; and nothing is written.
 */
TEST_F(input, nic_info_bad_index_says_so)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .name = "nib0");
	struct {
		struct vnic_nic_info info;
		unsigned char guard[32];
	} b;
	struct vnic_guest *g, *bad;

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gnib", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	/* A failure before: its message must not stand for the next one. */
	ASSERT_EQ(-EINVAL, vnic_guest_new(self->ctx, "bad name", &bad));
	memset(&b, GUARD, sizeof(b));
	b.info.sz = sizeof(b.info);
	EXPECT_EQ(-EINVAL, vnic_guest_nic_info(g, 1, &b.info));
	EXPECT_EQ((int)VNIC_STEP_VALIDATE, (int)vnic_ctx_errstep(self->ctx));
	EXPECT_EQ(NULL, strstr(vnic_ctx_errmsg(self->ctx), "guest name"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "nic 1"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_TRUE(untouched((char *)&b + sizeof(size_t),
			      sizeof(b) - sizeof(size_t)));
	vnic_guest_free(g);
}

TEST_HARNESS_MAIN
