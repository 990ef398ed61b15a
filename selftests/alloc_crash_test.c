// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A crash at any instant, and whom gc may touch.
 *
 * marks: gc (vnic_collect_orphans), list and adopt act only where two
 * independent marks agree (the owner's tag and link group, or, for a NIC
 * whose creator died before tagging it, the owner's group and MAC check).
 * A forged alias, a copied MAC, another owner's NICs and other tools' links
 * are left alone; a NIC in the crash window is collected.
 *
 * kill: a child creates and destroys guests in a loop and is SIGKILLed at a
 * random instant, again and again, for every kind and naming strategy;
 * then gc must leave no link of the owner, and every other link intact.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"

#define OWNER	"crash"

static struct vnic_ctx *ctx_owner(struct __test_metadata *_metadata,
				  const char *owner)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = owner);
	struct vnic_ctx *ctx = NULL;

	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	return ctx;
}

/* vnic_collect_orphans(ctx, nothing kept): how many it deleted. */
static int gc(struct vnic_ctx *ctx, const char *keep)
{
	unsigned int deleted = 0;
	int err = vnic_collect_orphans(ctx, keep ? &keep : NULL, keep ? 1 : 0,
				       &deleted);

	return err ? err : (int)deleted;
}

static bool exists(const char *name)
{
	struct ip_link l;

	return !st_ip_link_get(name, &l);
}

/* A guest of owner: a macvlan, a veth (peer beside it) and a macvtap. */
static void make_guest(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
		       const char *guest, const char *prefix)
{
	char mvl[IFNAMSIZ], vth[IFNAMSIZ], peer[IFNAMSIZ], mvt[IFNAMSIZ];
	VNIC_OPTS(vnic_nic_opts, o1, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = mvl);
	VNIC_OPTS(vnic_nic_opts, o2, .kind = VNIC_KIND_VETH, .name = vth,
		  .peer_name = peer);
	VNIC_OPTS(vnic_nic_opts, o3, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = mvt);
	struct vnic_guest *g;

	snprintf(mvl, sizeof(mvl), "%smvl", prefix);
	snprintf(vth, sizeof(vth), "%svth", prefix);
	snprintf(peer, sizeof(peer), "%speer", prefix);
	snprintf(mvt, sizeof(mvt), "%smvt", prefix);
	ASSERT_EQ(0, vnic_guest_new(ctx, guest, &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &o1, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &o2, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &o3, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	vnic_guest_free(g);
}

FIXTURE(marks) {
	struct vnic_ctx *ctx;
};

FIXTURE_SETUP(marks)
{
	ST_SETUP_NETNS();
	self->ctx = ctx_owner(_metadata, OWNER);
}

FIXTURE_TEARDOWN(marks)
{
	vnic_ctx_free(self->ctx);
	st_macvtaps_flush();
}

/* The reproducer: one `ip link set DEV alias vnic:OWNER:victim:0`
 * must not get DEV (nor the other end of its veth) deleted, listed or
 * adopted; neither are untagged links of other tools. */
TEST_F(marks, forged_alias_alone_is_left)
{
	struct vnic_guest *g = (void *)1;
	unsigned int count = 99;
	char **names = NULL;

	ASSERT_EQ(0, st_run_cmd("ip link add fv0 type veth peer name fv0p && "
				"ip link set fv0 alias vnic:" OWNER ":victim:0 && "
				"ip link add link %s name fm0 type macvlan && "
				"ip link set fm0 alias vnic:" OWNER ":victim:1 && "
				"ip link add link %s name fmt0 type macvtap && "
				"ip link set fmt0 alias vnic:" OWNER ":victim:2 && "
				"ip tuntap add mode tap name ft0 && "
				"ip link set ft0 alias vnic:" OWNER ":victim:3 && "
				"ip link add ov0 type veth peer name ov0p && "
				"ip link add link %s name om0 type macvlan && "
				"ip tuntap add mode tap name ot0",
				LOWER, LOWER, LOWER));
	EXPECT_EQ(0, gc(self->ctx, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, vnic_guest_list(self->ctx, &names, &count));
	EXPECT_EQ(0u, count);
	free(names);
	EXPECT_EQ(-ENOENT, vnic_guest_adopt(self->ctx, "victim", &g));
	EXPECT_EQ((void *)1, g);
	EXPECT_TRUE(exists("fv0"));
	EXPECT_TRUE(exists("fv0p"));
	EXPECT_TRUE(exists("fm0"));
	EXPECT_TRUE(exists("fmt0"));
	EXPECT_TRUE(exists("ft0"));
	EXPECT_TRUE(exists("ov0"));
	EXPECT_TRUE(exists("ov0p"));
	EXPECT_TRUE(exists("om0"));
	EXPECT_TRUE(exists("ot0"));
}

/* A MAC copied from one of ours (its owner check included) on a link of
 * another tool, untagged or with our tag: still one mark only. */
TEST_F(marks, copied_mac_is_left)
{
	struct ip_link l;

	make_guest(_metadata, self->ctx, "g1", "a");
	ASSERT_EQ(0, st_ip_link_get("amvl", &l));
	/* Same first octets (the check), another tail. */
	memcpy(l.address + 6, "00:00:00:01", 11);
	ASSERT_EQ(0, st_run_cmd("ip link add link %s name cm0 address %s type macvlan && "
				"ip link add link %s name cm1 type macvlan && "
				"ip link set cm1 address %.6s00:00:00:02 alias vnic:" OWNER ":g9:0",
				LOWER, l.address, LOWER, l.address));
	EXPECT_EQ(3, gc(self->ctx, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_FALSE(exists("amvl"));
	EXPECT_FALSE(exists("avth"));
	EXPECT_FALSE(exists("apeer"));
	EXPECT_FALSE(exists("amvt"));
	EXPECT_TRUE(exists("cm0"));
	EXPECT_TRUE(exists("cm1"));
}

/* Another owner's NICs, tagged or in their crash window, are not ours;
 * and ours stay theirs only with our tag. */
TEST_F(marks, other_owner_untouched)
{
	struct vnic_ctx *u = ctx_owner(_metadata, "u");

	make_guest(_metadata, u, "g1", "u");
	make_guest(_metadata, self->ctx, "g2", "c");
	/* u's macvlan in its crash window (no alias); our macvtap under u's
	 * tag: group and tag disagree, so neither owner takes it. */
	ASSERT_EQ(0, st_run_cmd("ip link set umvl alias '' && "
				"ip link set cmvt alias vnic:u:g2:2"));
	EXPECT_EQ(2, gc(self->ctx, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_FALSE(exists("cmvl"));
	EXPECT_FALSE(exists("cvth"));
	EXPECT_FALSE(exists("cpeer"));
	EXPECT_TRUE(exists("cmvt"));
	EXPECT_TRUE(exists("umvl"));
	EXPECT_TRUE(exists("uvth"));
	EXPECT_TRUE(exists("upeer"));
	EXPECT_TRUE(exists("umvt"));
	/* u collects its own three, the untagged one included, not cmvt. */
	EXPECT_EQ(3, gc(u, NULL)) TH_LOG("%s", vnic_ctx_errmsg(u));
	EXPECT_TRUE(exists("cmvt"));
	EXPECT_FALSE(exists("umvl"));
	vnic_ctx_free(u);
}

/*
 * The crash window: NICs created, not tagged yet (their alias removed by
 * hand makes the same state: group and MAC check, no alias).  They belong
 * to no guest, so gc collects them even with their guest kept; a veth goes
 * with both ends.  A link whose MAC was changed, or whose alias is foreign,
 * keeps one mark only and stays.
 */
TEST_F(marks, crash_window_nic_is_collected)
{
	struct ip_link l;
	unsigned int count = 99;
	char **names = NULL;

	make_guest(_metadata, self->ctx, "g1", "w");
	make_guest(_metadata, self->ctx, "g2", "x");
	ASSERT_EQ(0, st_run_cmd("ip link set wmvl alias '' && ip link set wvth alias '' && "
				"ip link set wmvt alias '' && "
				"ip link set xmvl alias '' && ip link set xmvl address 02:00:00:00:00:07 && "
				"ip link set xmvt alias 'hand-written'"));
	ASSERT_EQ(0, st_ip_link_get("wmvl", &l));
	EXPECT_STREQ("", l.alias);
	ASSERT_EQ(0, vnic_guest_list(self->ctx, &names, &count));
	ASSERT_EQ(1u, count);
	EXPECT_STREQ("g2", names[0]);
	free(names);
	/* g1 kept, yet its untagged NICs go; g2's tagged veth goes. */
	EXPECT_EQ(4, gc(self->ctx, "g1")) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_FALSE(exists("wmvl"));
	EXPECT_FALSE(exists("wvth"));
	EXPECT_FALSE(exists("wpeer"));
	EXPECT_FALSE(exists("wmvt"));
	EXPECT_FALSE(exists("xvth"));
	EXPECT_FALSE(exists("xpeer"));
	/* One mark each: left. */
	EXPECT_TRUE(exists("xmvl"));
	EXPECT_TRUE(exists("xmvt"));
	EXPECT_EQ(0, gc(self->ctx, NULL));
	EXPECT_TRUE(exists("xmvl"));
	EXPECT_TRUE(exists("xmvt"));
}

/* RTM_NEWLINK setting a link's group by raw netlink (ip refuses groups
 * above INT_MAX, which is where ours live); 0 or the kernel's errno. */
static int set_group(const char *name, uint32_t group)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;
	int ret = -EIO;

	if (!nl)
		return -errno;
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = 1;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	mnl_attr_put_u32(nlh, IFLA_GROUP, group);
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == 0 &&
	    mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) >= 0 &&
	    mnl_socket_recvfrom(nl, buf, sizeof(buf)) > 0)
		ret = mnl_cb_run(buf, sizeof(buf), 1, mnl_socket_get_portid(nl),
				 NULL, NULL) < 0 ? -errno : 0;
	mnl_socket_close(nl);
	return ret;
}

/* ip -j prints a group above INT_MAX as a negative number. */
static uint32_t group_of(const char *name)
{
	json_t *links = st_ip_links(-1), *l;
	uint32_t grp = 0;
	size_t i;

	json_array_foreach(links, i, l)
		if (!strcmp(json_string_value(json_object_get(l, "ifname")) ?: "", name))
			grp = (uint32_t)strtoll(json_string_value(json_object_get(l, "group")) ?: "0",
						NULL, 10);
	json_decref(links);
	return grp;
}

/*
 * A destroy killed between moving NICs into the owner's dying group (the
 * live group with its low bit set) and deleting that group: tagged or not,
 * they are still the owner's.  Another value of the low 31 bits is not.
 */
TEST_F(marks, dying_group_is_collected)
{
	uint32_t grp;

	make_guest(_metadata, self->ctx, "g1", "d");
	grp = group_of("dmvl");
	ASSERT_EQ(0x80000000u, grp & 0x80000001u) TH_LOG("group %#x", grp);
	/* Set at creation for every kind, the veth peer included. */
	EXPECT_EQ(grp, group_of("dvth"));
	EXPECT_EQ(grp, group_of("dpeer"));
	EXPECT_EQ(grp, group_of("dmvt"));
	ASSERT_EQ(0, set_group("dmvl", grp | 1));
	ASSERT_EQ(0, set_group("dvth", grp | 1));
	ASSERT_EQ(0, st_run_cmd("ip link set dvth alias ''"));
	ASSERT_EQ(0, set_group("dmvt", grp ^ 2));
	ASSERT_EQ(grp | 1, group_of("dmvl"));
	EXPECT_EQ(2, gc(self->ctx, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_FALSE(exists("dmvl"));
	EXPECT_FALSE(exists("dvth"));
	EXPECT_FALSE(exists("dpeer"));
	EXPECT_TRUE(exists("dmvt"));
}

/*
 * When gc finds nothing but stale NICs (and their veth peers) in the
 * owner's live group, it deletes that group as it is (allocator/delete.c).
 * A link of anyone else put in that group, tagged by no one, is never part
 * of it: the NICs go by moves then, and that link stays.
 */
TEST_F(marks, foreign_link_in_live_group_is_left)
{
	uint32_t grp;

	make_guest(_metadata, self->ctx, "g1", "f");
	grp = group_of("fmvl");
	ASSERT_EQ(0, st_run_cmd("ip link add fx0 type veth peer name fx0p && "
				"ip link add link %s name fxm type macvlan", LOWER));
	ASSERT_EQ(0, set_group("fx0", grp));
	ASSERT_EQ(0, set_group("fxm", grp));
	EXPECT_EQ(3, gc(self->ctx, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_FALSE(exists("fmvl"));
	EXPECT_FALSE(exists("fvth"));
	EXPECT_FALSE(exists("fpeer"));
	EXPECT_FALSE(exists("fmvt"));
	EXPECT_TRUE(exists("fx0"));
	EXPECT_TRUE(exists("fx0p"));
	EXPECT_TRUE(exists("fxm"));
	EXPECT_EQ(grp, group_of("fxm"));
}

/* A kept guest keeps the live group from going whole; once nothing is
 * kept, everything of the owner goes in one group delete, peers too. */
TEST_F(marks, whole_live_group_goes_once_nothing_kept)
{
	make_guest(_metadata, self->ctx, "g1", "w");
	make_guest(_metadata, self->ctx, "g2", "k");
	EXPECT_EQ(3, gc(self->ctx, "g2")) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_FALSE(exists("wmvl"));
	EXPECT_FALSE(exists("wpeer"));
	EXPECT_TRUE(exists("kmvl"));
	EXPECT_TRUE(exists("kvth"));
	EXPECT_TRUE(exists("kpeer"));
	EXPECT_TRUE(exists("kmvt"));
	EXPECT_EQ(3, gc(self->ctx, NULL)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_FALSE(exists("kmvl"));
	EXPECT_FALSE(exists("kvth"));
	EXPECT_FALSE(exists("kpeer"));
	EXPECT_FALSE(exists("kmvt"));
	EXPECT_EQ(0, st_vnic_links_count());
	EXPECT_EQ(0, gc(self->ctx, NULL));
}

/*
 * A caller's MAC is set with the tag (the NIC is born with a marked one):
 * one that an up macvlan of the lower already has is refused there, and
 * the rollback leaves nothing, up or not.
 */
TEST_F(marks, given_mac_in_use_refused)
{
	VNIC_OPTS(vnic_nic_opts, o, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "gm0", .mac = "02:42:00:00:00:05");
	char *before, *after;
	struct vnic_guest *g;
	int up;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name taken0 address "
				"02:42:00:00:00:05 type macvlan && ip link set taken0 up",
				LOWER));
	before = st_ip_link_snapshot();
	for (up = 0; up <= 1; up++) {
		o.up = up;
		ASSERT_EQ(0, vnic_guest_new(self->ctx, "g1", &g));
		ASSERT_EQ(0, vnic_guest_add_nic(g, &o, NULL));
		EXPECT_EQ(-EADDRINUSE, vnic_guest_create(g));
		EXPECT_EQ((int)VNIC_STEP_CONFIGURE, (int)vnic_ctx_errstep(self->ctx))
			TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
		vnic_guest_free(g);
		after = st_ip_link_snapshot();
		EXPECT_STREQ(before, after);
		free(after);
	}
	free(before);
}

/* A keep list with a name no guest can have is refused, nothing deleted. */
TEST_F(marks, bad_keep_name_refused)
{
	static const char *const bad[] = { "g1", "bad name" };
	static const char *const empty[] = { "" };
	unsigned int deleted = 99;

	make_guest(_metadata, self->ctx, "g1", "k");
	EXPECT_EQ(-EINVAL, vnic_collect_orphans(self->ctx, bad, 2, &deleted));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "bad name"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(-EINVAL, vnic_collect_orphans(self->ctx, empty, 1, &deleted));
	EXPECT_EQ(99u, deleted);
	EXPECT_TRUE(exists("kmvl"));
	EXPECT_TRUE(exists("kvth"));
	EXPECT_TRUE(exists("kmvt"));
}

/* --- SIGKILL at random instants --- */

#define KILL_NICS	3
/* Destroy: more NICs and a small window, so that a destroy spans several
 * sendmsg() calls (moves into the dying group, then the group delete) and a
 * kill can fall between them. */
#define KILL_NICS_DESTROY	8
#define KILL_WINDOW_DESTROY	4

FIXTURE(kill) {
	char before[4096];	/* the links before the kills */
	char lower_mac[32];
};

FIXTURE_VARIANT(kill) {
	enum vnic_kind kind;
	enum vnic_naming naming;
	bool destroy;		/* kill during destroy rather than anywhere */
	unsigned int kills;
	bool given_mac;		/* the caller chooses the MACs */
};

#define KV(k, n, d, c) { VNIC_KIND_##k, VNIC_NAMING_##n, d, c, false }
#define KVM(k, n, c) { VNIC_KIND_##k, VNIC_NAMING_##n, false, c, true }
FIXTURE_VARIANT_ADD(kill, macvtap_kernel)	KV(MACVTAP, KERNEL, false, 15);
FIXTURE_VARIANT_ADD(kill, macvtap_cache)	KV(MACVTAP, CACHE, false, 15);
FIXTURE_VARIANT_ADD(kill, macvtap_explicit)	KV(MACVTAP, EXPLICIT, false, 15);
FIXTURE_VARIANT_ADD(kill, macvlan_kernel)	KV(MACVLAN, KERNEL, false, 15);
FIXTURE_VARIANT_ADD(kill, macvlan_cache)	KV(MACVLAN, CACHE, false, 15);
FIXTURE_VARIANT_ADD(kill, macvlan_explicit)	KV(MACVLAN, EXPLICIT, false, 15);
FIXTURE_VARIANT_ADD(kill, veth_kernel)		KV(VETH, KERNEL, false, 15);
FIXTURE_VARIANT_ADD(kill, veth_cache)		KV(VETH, CACHE, false, 15);
FIXTURE_VARIANT_ADD(kill, veth_explicit)	KV(VETH, EXPLICIT, false, 15);
FIXTURE_VARIANT_ADD(kill, tap_persist_kernel)	KV(TAP, KERNEL, false, 15);
FIXTURE_VARIANT_ADD(kill, tap_persist_cache)	KV(TAP, CACHE, false, 15);
FIXTURE_VARIANT_ADD(kill, tap_persist_explicit)	KV(TAP, EXPLICIT, false, 15);
FIXTURE_VARIANT_ADD(kill, macvlan_given_mac)	KVM(MACVLAN, CACHE, 15);
FIXTURE_VARIANT_ADD(kill, veth_given_mac)	KVM(VETH, EXPLICIT, 15);
FIXTURE_VARIANT_ADD(kill, destroy_macvtap)	KV(MACVTAP, CACHE, true, 15);
FIXTURE_VARIANT_ADD(kill, destroy_macvlan)	KV(MACVLAN, KERNEL, true, 15);
FIXTURE_VARIANT_ADD(kill, destroy_veth)		KV(VETH, EXPLICIT, true, 15);
FIXTURE_VARIANT_ADD(kill, destroy_tap_persist)	KV(TAP, CACHE, true, 15);

/* "IFINDEX:NAME " of every link, in ifindex order. */
static void snapshot(char *buf, size_t len)
{
	char *s = st_ip_link_snapshot();

	/* A space after each, so that ":NAME " finds a name. */
	snprintf(buf, len, "%s ", s ? s : "(none)");
	free(s);
}

FIXTURE_SETUP(kill)
{
	struct ip_link l;

	ST_SETUP_NETNS();
	/* Other tools' links, which must come through intact. */
	ASSERT_EQ(0, st_run_cmd("ip link add link %s name other0 type macvlan && "
				"ip link add ov0 type veth peer name ov0p && "
				"ip tuntap add mode tap name otap0 && "
				"ip link add link %s name forged0 type macvlan && "
				"ip link set forged0 alias vnic:" OWNER ":victim:0",
				LOWER, LOWER));
	snapshot(self->before, sizeof(self->before));
	ASSERT_EQ(0, st_ip_link_get(LOWER, &l));
	snprintf(self->lower_mac, sizeof(self->lower_mac), "%s", l.address);
}

FIXTURE_TEARDOWN(kill)
{
	st_macvtaps_flush();
}

static void add_kill_nic(struct vnic_guest *g, const FIXTURE_VARIANT(kill) *v,
			 unsigned int run, unsigned int loop, unsigned int i)
{
	static const char *const tmpl[VNIC_KIND__MAX] = {
		[VNIC_KIND_MACVTAP] = "kmt%d", [VNIC_KIND_MACVLAN] = "kml%d",
		[VNIC_KIND_VETH] = "kve%d", [VNIC_KIND_TAP] = "kta%d",
	};
	char name[32], peer[32];	/* "e999_99999_9": fits IFNAMSIZ */
	char mac[18];
	bool macv = v->kind == VNIC_KIND_MACVTAP || v->kind == VNIC_KIND_MACVLAN;
	VNIC_OPTS(vnic_nic_opts, o, .kind = v->kind, .naming = v->naming,
		  .name = tmpl[v->kind], .up = v->kind != VNIC_KIND_VETH);

	/* Names unique across runs: a killed run's NICs keep theirs. */
	if (v->naming == VNIC_NAMING_EXPLICIT) {
		snprintf(name, sizeof(name), "e%u_%u_%u", run, loop % 100000, i);
		o.name = name;
	}
	if (macv)
		o.lower = LOWER;
	if (v->kind == VNIC_KIND_VETH) {
		snprintf(peer, sizeof(peer), "p%u_%u_%u", run, loop % 100000, i);
		o.peer_name = peer;
	}
	if (v->kind == VNIC_KIND_TAP)
		o.tap_flags = VNIC_TAP_PERSIST;
	if (v->given_mac) {
		snprintf(mac, sizeof(mac), "02:42:%02x:%02x:%02x:%02x", run & 0xff,
			 (loop >> 8) & 0xff, loop & 0xff, i & 0xff);
		o.mac = mac;
	}
	vnic_guest_add_nic(g, &o, NULL);
}

/*
 * The child: its own context, then guests created and destroyed until it is
 * killed.  It writes one byte to ready when the parent may start its clock:
 * at once, or (destroy) just before its first destroy.
 */
static void __attribute__((noreturn))
kill_child(const FIXTURE_VARIANT(kill) *v, unsigned int run, int ready)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER,
		  .window = v->destroy ? KILL_WINDOW_DESTROY : 0);
	unsigned int loop, i, n = v->destroy ? KILL_NICS_DESTROY : KILL_NICS;
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
	bool told = false;
	char gname[32];

	if (vnic_ctx_new(&o, &ctx))
		_exit(1);
	if (!v->destroy && write(ready, "r", 1) != 1)
		_exit(1);
	for (loop = 0;; loop++) {
		snprintf(gname, sizeof(gname), "g%u_%u", run, loop);
		if (vnic_guest_new(ctx, gname, &g))
			_exit(1);
		for (i = 0; i < n; i++)
			add_kill_nic(g, v, run, loop, i);
		if (vnic_guest_create(g)) {
			vnic_guest_free(g);
			continue;
		}
		if (v->destroy && !told) {
			told = write(ready, "r", 1) == 1;
			if (!told)
				_exit(1);
		}
		vnic_guest_destroy(g);
	}
}

/* Finer than usleep()'s timer slack, and yielding: on a loaded machine the
 * child may need this CPU. */
static void spin_us(uint32_t us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* Links now but not before the kills; how many carry our tag; how many
 * are in a "dying" group (odd, with the high bit: a destroy was killed
 * between its moves and its group delete). */
static void count_left(json_t *links, const char *before, unsigned int *left,
		       unsigned int *tagged, unsigned int *dying)
{
	json_t *l;
	size_t i;

	*left = *tagged = *dying = 0;
	json_array_foreach(links, i, l) {
		const char *name = json_string_value(json_object_get(l, "ifname"));
		const char *alias = json_string_value(json_object_get(l, "ifalias"));
		const char *group = json_string_value(json_object_get(l, "group"));
		char key[IFNAMSIZ + 2];
		long long grp;

		if (!name)
			continue;
		snprintf(key, sizeof(key), ":%s ", name);
		if (strstr(before, key))
			continue;
		(*left)++;
		*tagged += alias && !strncmp(alias, "vnic:" OWNER ":", 6 + strlen(OWNER));
		grp = group ? strtoll(group, NULL, 10) : 0;
		*dying += grp < 0 && (grp & 1);
	}
}

TEST_F_TIMEOUT(kill, sigkill_at_random_then_gc_leaves_nothing, 120)
{
	unsigned int run, landed = 0, left, tagged, dying;
	struct vnic_ctx *ctx;
	char after[4096];
	struct ip_link l;
	json_t *links;
	int deleted;

	for (run = 0; run < variant->kills; run++) {
		int p[2], st;
		uint32_t us;
		char c;
		pid_t pid;

		ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(p[0]);
			kill_child(variant, run, p[1]);
		}
		close(p[1]);
		ASSERT_EQ(1, read(p[0], &c, 1)) TH_LOG("child %u died early", run);
		close(p[0]);
		/* 0..4 ms (destroy: 0..2), spun rather than slept for a finer
		 * grain: a create of three NICs takes ~1..10 ms. */
		ASSERT_EQ((ssize_t)sizeof(us), getrandom(&us, sizeof(us), 0));
		spin_us(us % (variant->destroy ? 2000 : 4000));
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		landed += WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	}
	EXPECT_EQ(variant->kills, landed);

	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	count_left(links, self->before, &left, &tagged, &dying);
	json_decref(links);

	ctx = ctx_owner(_metadata, OWNER);
	deleted = gc(ctx, NULL);
	ASSERT_LE(0, deleted) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	vnic_ctx_free(ctx);
	TH_LOG("%u kills: %u links left (%u tagged, %u untagged, %u in the "
	       "dying group), gc deleted %d NICs", landed, left, tagged,
	       left - tagged, dying, deleted);

	/* Exactly the links of before: ours all gone, the others intact. */
	snapshot(after, sizeof(after));
	EXPECT_STREQ(self->before, after);
	ASSERT_EQ(0, st_ip_link_get(LOWER, &l));
	EXPECT_STREQ(self->lower_mac, l.address);
	EXPECT_TRUE(l.up);
	ASSERT_EQ(0, st_ip_link_get("forged0", &l));
	EXPECT_STREQ("vnic:" OWNER ":victim:0", l.alias);
}

TEST_HARNESS_MAIN
