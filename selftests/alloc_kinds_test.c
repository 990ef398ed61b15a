// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every NIC kind (and every macvlan/macvtap mode) under every naming
 * strategy, with and without NLM_F_ECHO: what ip(8) shows must be what was
 * asked for, and vnic_guest_nic_info() must agree with ip.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The harness keeps a local across its own setjmp(); once gcc inlines a
 * short test into the wrapper, -Wextra flags it.  Harmless here: after a
 * failed ASSERT the test is reported failed whichever way that goes. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"

#define OWNER	"kt"
#define GUEST	"g-kinds"
#define MAXNICS	8

FIXTURE(kinds) {
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
	/* Names handed to the library must outlive vnic_guest_add_nic only,
	 * but keeping them here makes the expectations easy to build. */
	char names[MAXNICS][IFNAMSIZ];
	char peers[MAXNICS][IFNAMSIZ];
	char want[MAXNICS][IFNAMSIZ];
	char alias[MAXNICS][64];
};

FIXTURE_VARIANT(kinds) {
	uint32_t flags;
	enum vnic_naming naming;
	bool templ;		/* ask "pfx%d" rather than an exact name */
};

#define KINDS_VARIANT(vname, fl, nm, tp)				\
	FIXTURE_VARIANT_ADD(kinds, vname) {				\
		.flags = fl, .naming = nm, .templ = tp,			\
	}

KINDS_VARIANT(kernel_echo, 0, VNIC_NAMING_KERNEL, true);
KINDS_VARIANT(kernel_noecho, VNIC_CTX_NO_ECHO, VNIC_NAMING_KERNEL, true);
KINDS_VARIANT(cache_echo, 0, VNIC_NAMING_CACHE, true);
KINDS_VARIANT(cache_noecho, VNIC_CTX_NO_ECHO, VNIC_NAMING_CACHE, true);
KINDS_VARIANT(explicit_echo, 0, VNIC_NAMING_EXPLICIT, false);
KINDS_VARIANT(explicit_noecho, VNIC_CTX_NO_ECHO, VNIC_NAMING_EXPLICIT, false);
KINDS_VARIANT(auto_template_echo, 0, VNIC_NAMING_AUTO, true);
KINDS_VARIANT(auto_template_noecho, VNIC_CTX_NO_ECHO, VNIC_NAMING_AUTO, true);
KINDS_VARIANT(auto_exact_echo, 0, VNIC_NAMING_AUTO, false);
KINDS_VARIANT(auto_exact_noecho, VNIC_CTX_NO_ECHO, VNIC_NAMING_AUTO, false);

FIXTURE_SETUP(kinds)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	ASSERT_EQ(0, vnic_guest_new(self->ctx, GUEST, &self->g));
}

FIXTURE_TEARDOWN(kinds)
{
	st_macvtaps_flush();
}

/*
 * Name NIC idx (the slot-th of its prefix) per the variant: the template
 * "pfx%d", which on a fresh namespace must resolve to pfxSLOT, or the exact
 * name "pfxxSLOT".
 */
static struct vnic_nic_opts *name_nic(FIXTURE_DATA(kinds) *self,
				      const FIXTURE_VARIANT(kinds) *variant,
				      struct vnic_nic_opts *nic, unsigned int idx,
				      const char *pfx, unsigned int slot)
{
	if (variant->templ)
		snprintf(self->names[idx], IFNAMSIZ, "%s%%d", pfx);
	else
		snprintf(self->names[idx], IFNAMSIZ, "%sx%u", pfx, slot);
	snprintf(self->want[idx], IFNAMSIZ, variant->templ ? "%s%u" : "%sx%u",
		 pfx, slot);
	st_vnic_alias(self->alias[idx], sizeof(self->alias[idx]), OWNER, GUEST, idx);
	nic->name = self->names[idx];
	nic->naming = variant->naming;
	return nic;
}

/* The veth peer of exp, as ip shows it. */
static void check_peer(struct __test_metadata *_metadata, json_t *links,
		       const struct nic_expect *exp, const char *peer_mac,
		       bool peer_up)
{
	struct ip_link p;

	ASSERT_EQ(0, st_ip_link_find(links, exp->peer, &p))
		TH_LOG("veth peer %s not found", exp->peer);
	EXPECT_STREQ("veth", p.kind);
	EXPECT_STREQ(exp->name, p.link);
	EXPECT_EQ(peer_up, p.up);
	if (peer_mac)
		EXPECT_STREQ(peer_mac, p.address);
	/* A peer is the guest's own end, not a NIC of its own. */
	EXPECT_STRNE(exp->alias, p.alias);
}

/* Create the guest and compare every NIC with ip's view of it. */
static void create_and_check(struct __test_metadata *_metadata,
			     FIXTURE_DATA(kinds) *self,
			     const struct vnic_nic_opts *nics,
			     struct nic_expect *exp, unsigned int n)
{
	struct vnic_nic_info info;
	struct ip_link l;
	unsigned int i, idx;
	char why[256];
	json_t *links;
	int ret;

	for (i = 0; i < n; i++) {
		ret = vnic_guest_add_nic(self->g, &nics[i], &idx);
		ASSERT_EQ(0, ret) TH_LOG("add nic %u: %s", i,
					 vnic_ctx_errmsg(self->ctx));
		ASSERT_EQ(i, idx);
		exp[i].name = self->want[i];
		exp[i].alias = self->alias[i];
	}
	ASSERT_EQ(n, vnic_guest_nic_count(self->g));
	ASSERT_STREQ(GUEST, vnic_guest_name(self->g));
	ret = vnic_guest_create(self->g);
	ASSERT_EQ(0, ret) TH_LOG("create: %s", vnic_ctx_errmsg(self->ctx));

	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	for (i = 0; i < n; i++) {
		VNIC_OPTS(vnic_nic_info, tmp);

		info = tmp;
		ASSERT_EQ(0, vnic_guest_nic_info(self->g, i, &info));
		ASSERT_EQ(0, st_ip_link_find(links, info.name, &l))
			TH_LOG("nic %u '%s' not in ip link", i, info.name);
		EXPECT_EQ(0, st_nic_check(&info, &l, &exp[i], why, sizeof(why)))
			TH_LOG("nic %u: %s", i, why);
		if (exp[i].kind == VNIC_KIND_VETH)
			check_peer(_metadata, links, &exp[i], nics[i].peer_mac,
				   nics[i].peer_up);
	}
	json_decref(links);
}

/* Destroying the guest removes every NIC (and veth peer) it made. */
static void destroy_and_check(struct __test_metadata *_metadata,
			      FIXTURE_DATA(kinds) *self,
			      const struct nic_expect *exp, unsigned int n)
{
	struct ip_link l;
	unsigned int i;
	json_t *links;

	ASSERT_EQ(0, vnic_guest_destroy(self->g));
	self->g = NULL;
	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(-ENOENT, st_ip_link_find(links, exp[i].name, &l))
			TH_LOG("%s survived destroy", exp[i].name);
		if (exp[i].peer)
			EXPECT_EQ(-ENOENT, st_ip_link_find(links, exp[i].peer, &l))
				TH_LOG("peer %s survived destroy", exp[i].peer);
	}
	EXPECT_EQ(0, st_ip_links_count(links, "vnic:"));
	json_decref(links);
}

/*
 * Two macvlan or macvtap NICs in one mode: the first with a given MAC, an
 * MTU below the lower's and up; the second all defaults and down.
 */
static void macv_two(struct __test_metadata *_metadata,
		     FIXTURE_DATA(kinds) *self,
		     const FIXTURE_VARIANT(kinds) *variant, enum vnic_kind kind,
		     enum vnic_macvlan_mode mode, const char *mode_name)
{
	const char *pfx = kind == VNIC_KIND_MACVTAP ? "mvt" : "mvl";
	struct nic_expect exp[2] = {
		{ .kind = kind, .mode = mode_name, .mac = "02:11:22:33:44:01",
		  .mtu = 1400, .up = true, .lower = LOWER },
		{ .kind = kind, .mode = mode_name, .mtu = 1500, .lower = LOWER },
	};
	VNIC_OPTS(vnic_nic_opts, a, .kind = kind, .lower = LOWER, .mode = mode,
		  .mac = exp[0].mac, .mtu = 1400, .up = 1);
	VNIC_OPTS(vnic_nic_opts, b, .kind = kind, .lower = LOWER, .mode = mode);
	struct vnic_nic_opts nics[2];

	nics[0] = *name_nic(self, variant, &a, 0, pfx, 0);
	nics[1] = *name_nic(self, variant, &b, 1, pfx, 1);
	create_and_check(_metadata, self, nics, exp, 2);
	destroy_and_check(_metadata, self, exp, 2);
}

/*
 * Passthru allows a single macvlan on the lower, and the kernel gives it the
 * lower's MAC whatever was asked: vnic_nic_info must report the MAC the
 * device really has.
 */
static void macv_passthru(struct __test_metadata *_metadata,
			  FIXTURE_DATA(kinds) *self,
			  const FIXTURE_VARIANT(kinds) *variant,
			  enum vnic_kind kind)
{
	const char *pfx = kind == VNIC_KIND_MACVTAP ? "mvt" : "mvl";
	struct nic_expect exp = {
		.kind = kind, .mode = "passthru", .mtu = 1400, .up = true,
		.lower = LOWER,
	};
	VNIC_OPTS(vnic_nic_opts, a, .kind = kind, .lower = LOWER,
		  .mode = VNIC_MACVLAN_PASSTHRU, .mtu = 1400, .up = 1);
	struct ip_link lower;

	ASSERT_EQ(0, st_ip_link_get(LOWER, &lower));
	exp.mac = lower.address;
	create_and_check(_metadata, self, name_nic(self, variant, &a, 0, pfx, 0),
			 &exp, 1);
	destroy_and_check(_metadata, self, &exp, 1);
}

TEST_F(kinds, macvtap_bridge)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVTAP,
		 VNIC_MACVLAN_BRIDGE, "bridge");
}

TEST_F(kinds, macvtap_private)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVTAP,
		 VNIC_MACVLAN_PRIVATE, "private");
}

TEST_F(kinds, macvtap_vepa)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVTAP,
		 VNIC_MACVLAN_VEPA, "vepa");
}

/* The library's default is bridge, not the kernel's default (vepa). */
TEST_F(kinds, macvtap_default_mode)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVTAP,
		 VNIC_MACVLAN_DEFAULT, "bridge");
}

TEST_F(kinds, macvtap_passthru)
{
	macv_passthru(_metadata, self, variant, VNIC_KIND_MACVTAP);
}

TEST_F(kinds, macvlan_bridge)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVLAN,
		 VNIC_MACVLAN_BRIDGE, "bridge");
}

TEST_F(kinds, macvlan_private)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVLAN,
		 VNIC_MACVLAN_PRIVATE, "private");
}

TEST_F(kinds, macvlan_vepa)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVLAN,
		 VNIC_MACVLAN_VEPA, "vepa");
}

TEST_F(kinds, macvlan_default_mode)
{
	macv_two(_metadata, self, variant, VNIC_KIND_MACVLAN,
		 VNIC_MACVLAN_DEFAULT, "bridge");
}

TEST_F(kinds, macvlan_passthru)
{
	macv_passthru(_metadata, self, variant, VNIC_KIND_MACVLAN);
}

/* The lower given by ifindex instead of by name. */
TEST_F(kinds, macvtap_lower_ifindex)
{
	struct nic_expect exp = {
		.kind = VNIC_KIND_MACVTAP, .mode = "bridge", .up = true,
		.lower = LOWER, .mtu = 1500,
	};
	VNIC_OPTS(vnic_nic_opts, a, .kind = VNIC_KIND_MACVTAP, .up = 1);
	struct ip_link lower;

	ASSERT_EQ(0, st_ip_link_get(LOWER, &lower));
	a.lower_ifindex = lower.ifindex;
	create_and_check(_metadata, self,
			 name_nic(self, variant, &a, 0, "mvt", 0), &exp, 1);
	destroy_and_check(_metadata, self, &exp, 1);
}

TEST_F(kinds, veth)
{
	struct nic_expect exp[2] = {
		{ .kind = VNIC_KIND_VETH, .mac = "02:11:22:33:44:03",
		  .mtu = 1400, .up = true, .peer = "vthp0" },
		{ .kind = VNIC_KIND_VETH, .mtu = 1500, .peer = "vthp1" },
	};
	VNIC_OPTS(vnic_nic_opts, a, .kind = VNIC_KIND_VETH, .mac = exp[0].mac,
		  .mtu = 1400, .up = 1, .peer_name = "vthp0",
		  .peer_mac = "02:11:22:33:44:04", .peer_up = 1);
	VNIC_OPTS(vnic_nic_opts, b, .kind = VNIC_KIND_VETH,
		  .peer_name = "vthp1");
	struct vnic_nic_opts nics[2];

	nics[0] = *name_nic(self, variant, &a, 0, "vth", 0);
	nics[1] = *name_nic(self, variant, &b, 1, "vth", 1);
	create_and_check(_metadata, self, nics, exp, 2);
	destroy_and_check(_metadata, self, exp, 2);
}

TEST_F(kinds, tap)
{
	struct nic_expect exp[2] = {
		{ .kind = VNIC_KIND_TAP, .mac = "02:11:22:33:44:05",
		  .mtu = 1400, .up = true },
		{ .kind = VNIC_KIND_TAP, .mtu = 1500 },
	};
	VNIC_OPTS(vnic_nic_opts, a, .kind = VNIC_KIND_TAP, .mac = exp[0].mac,
		  .mtu = 1400, .up = 1,
		  .tap_flags = VNIC_TAP_VNET_HDR | VNIC_TAP_NO_PI);
	VNIC_OPTS(vnic_nic_opts, b, .kind = VNIC_KIND_TAP);
	struct vnic_nic_opts nics[2];
	struct ip_link l;

	nics[0] = *name_nic(self, variant, &a, 0, "tp", 0);
	nics[1] = *name_nic(self, variant, &b, 1, "tp", 1);
	create_and_check(_metadata, self, nics, exp, 2);
	/* The tap flags reached the device; without PERSIST the device
	 * lives only as long as the library holds its fds. */
	ASSERT_EQ(0, st_ip_link_get(self->want[0], &l));
	EXPECT_TRUE(l.vnet_hdr);
	EXPECT_FALSE(l.persist);
	ASSERT_EQ(0, st_ip_link_get(self->want[1], &l));
	EXPECT_FALSE(l.vnet_hdr);
	destroy_and_check(_metadata, self, exp, 2);
}

TEST_F(kinds, tap_persist)
{
	struct nic_expect exp = { .kind = VNIC_KIND_TAP, .up = true };
	VNIC_OPTS(vnic_nic_opts, a, .kind = VNIC_KIND_TAP, .up = 1,
		  .tap_flags = VNIC_TAP_PERSIST);
	struct ip_link l;

	create_and_check(_metadata, self,
			 name_nic(self, variant, &a, 0, "tp", 0), &exp, 1);
	ASSERT_EQ(0, st_ip_link_get(self->want[0], &l));
	EXPECT_TRUE(l.persist);
	/* Persistent or not, destroy deletes it. */
	destroy_and_check(_metadata, self, &exp, 1);
}

TEST_F(kinds, tun)
{
	struct nic_expect exp[2] = {
		{ .kind = VNIC_KIND_TUN, .mtu = 1400, .up = true },
		{ .kind = VNIC_KIND_TUN, .mtu = 1500 },
	};
	VNIC_OPTS(vnic_nic_opts, a, .kind = VNIC_KIND_TUN, .mtu = 1400, .up = 1,
		  .tap_flags = VNIC_TAP_NO_PI);
	VNIC_OPTS(vnic_nic_opts, b, .kind = VNIC_KIND_TUN);
	struct vnic_nic_opts nics[2];

	nics[0] = *name_nic(self, variant, &a, 0, "tn", 0);
	nics[1] = *name_nic(self, variant, &b, 1, "tn", 1);
	create_and_check(_metadata, self, nics, exp, 2);
	destroy_and_check(_metadata, self, exp, 2);
}

/* Every kind in one guest, one request. */
TEST_F(kinds, mixed)
{
	struct nic_expect exp[5] = {
		{ .kind = VNIC_KIND_MACVTAP, .mode = "private", .up = true,
		  .mac = "02:11:22:33:44:06", .lower = LOWER },
		{ .kind = VNIC_KIND_MACVLAN, .mode = "vepa", .mtu = 1300,
		  .lower = LOWER },
		{ .kind = VNIC_KIND_VETH, .up = true, .peer = "mxp0" },
		{ .kind = VNIC_KIND_TAP, .mac = "02:11:22:33:44:07", .up = true },
		{ .kind = VNIC_KIND_TUN, .mtu = 9000 },
	};
	VNIC_OPTS(vnic_nic_opts, a, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .mode = VNIC_MACVLAN_PRIVATE, .mac = exp[0].mac, .up = 1);
	VNIC_OPTS(vnic_nic_opts, b, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .mode = VNIC_MACVLAN_VEPA, .mtu = 1300);
	VNIC_OPTS(vnic_nic_opts, c, .kind = VNIC_KIND_VETH, .up = 1,
		  .peer_name = "mxp0");
	VNIC_OPTS(vnic_nic_opts, d, .kind = VNIC_KIND_TAP, .mac = exp[3].mac,
		  .up = 1);
	VNIC_OPTS(vnic_nic_opts, e, .kind = VNIC_KIND_TUN, .mtu = 9000);
	struct vnic_nic_opts nics[5];

	nics[0] = *name_nic(self, variant, &a, 0, "mvt", 0);
	nics[1] = *name_nic(self, variant, &b, 1, "mvl", 0);
	nics[2] = *name_nic(self, variant, &c, 2, "vth", 0);
	nics[3] = *name_nic(self, variant, &d, 3, "tp", 0);
	nics[4] = *name_nic(self, variant, &e, 4, "tn", 0);
	create_and_check(_metadata, self, nics, exp, 5);
	destroy_and_check(_metadata, self, exp, 5);
}

/* name NULL: each kind's documented default template. */
FIXTURE(defaults) {
	struct vnic_ctx *ctx;
};

FIXTURE_VARIANT(defaults) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(defaults, echo) { .flags = 0 };
FIXTURE_VARIANT_ADD(defaults, noecho) { .flags = VNIC_CTX_NO_ECHO };

FIXTURE_SETUP(defaults)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
}

FIXTURE_TEARDOWN(defaults)
{
	st_macvtaps_flush();
}

TEST_F(defaults, templates)
{
	static const struct {
		enum vnic_kind kind;
		const char *want;
	} k[] = {
		{ VNIC_KIND_MACVTAP, "macvtap0" },
		{ VNIC_KIND_MACVLAN, "macvlan0" },
		{ VNIC_KIND_VETH, "veth0" },
		{ VNIC_KIND_TAP, "tap0" },
		{ VNIC_KIND_TUN, "tun0" },
	};
	struct vnic_nic_info info;
	struct vnic_guest *g;
	struct ip_link l;
	unsigned int i;

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "g-defaults", &g));
	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		VNIC_OPTS(vnic_nic_opts, n, .kind = k[i].kind);

		/* Only what the kind takes: the library rejects the rest. */
		if (k[i].kind == VNIC_KIND_VETH)
			n.peer_name = "dpeer0";
		if (k[i].kind == VNIC_KIND_MACVTAP ||
		    k[i].kind == VNIC_KIND_MACVLAN)
			n.lower = LOWER;
		ASSERT_EQ(0, vnic_guest_add_nic(g, &n, NULL))
			TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	}
	ASSERT_EQ(0, vnic_guest_create(g))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		VNIC_OPTS(vnic_nic_info, tmp);

		info = tmp;
		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		EXPECT_STREQ(k[i].want, info.name);
		ASSERT_EQ(0, st_ip_link_get(k[i].want, &l))
			TH_LOG("%s missing", k[i].want);
		EXPECT_EQ(info.ifindex, l.ifindex);
	}
	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(0, st_vnic_links_count());
}

TEST_HARNESS_MAIN
