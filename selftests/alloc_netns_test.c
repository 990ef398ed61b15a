// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * NICs and veth peers created directly in another network namespace (one
 * held by a child process): they appear there under their final name and
 * never in the context's namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/syscall.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"
#include "lib/testing.h"

#define OWNER	"nst"

/*
 * setns() as the library's helper threads call it: each records the
 * signals it blocks (SigBlk of /proc/thread-self/status), so that a test can
 * check that no process-directed signal is ever handled in a thread that
 * sits in another network namespace.  The main thread's own calls are not
 * recorded.
 */
static struct {
	int calls;
	unsigned long long sigblk_and;	/* bits blocked in every helper */
} helper;

int setns(int fd, int nstype)
{
	char line[128];
	FILE *f;

	if (gettid() != getpid()) {
		f = fopen("/proc/thread-self/status", "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "SigBlk:", 7)) {
				helper.sigblk_and &= strtoull(line + 7, NULL, 16);
				helper.calls++;
			}
		if (f)
			fclose(f);
	}
	return (int)syscall(SYS_setns, fd, nstype);
}

FIXTURE(netns) {
	struct vnic_ctx *ctx;
	struct netns_holder h;
};

FIXTURE_VARIANT(netns) {
	uint32_t flags;
	bool by_pid;		/* name the target by pid instead of fd */
};

FIXTURE_VARIANT_ADD(netns, fd_echo) { 0, false };
FIXTURE_VARIANT_ADD(netns, fd_noecho) { VNIC_CTX_NO_ECHO, false };
FIXTURE_VARIANT_ADD(netns, pid_echo) { 0, true };
FIXTURE_VARIANT_ADD(netns, pid_noecho) { VNIC_CTX_NO_ECHO, true };

FIXTURE_SETUP(netns)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);

	ST_SETUP_NETNS();
	self->h.fd = -1;
	ASSERT_EQ(0, st_netns_holder_start(&self->h));
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
}

FIXTURE_TEARDOWN(netns)
{
	st_macvtaps_flush();
	st_netns_holder_stop(&self->h);
}

/* Point a NIC, or its peer, at the holder's namespace. */
static void target(const FIXTURE_VARIANT(netns) *variant,
		   const struct netns_holder *h, int *fd, pid_t *pid)
{
	if (variant->by_pid)
		*pid = h->pid;
	else
		*fd = h->fd;
}

static struct vnic_guest *create_one(struct __test_metadata *_metadata,
				     struct vnic_ctx *ctx,
				     const struct vnic_nic_opts *nic,
				     struct vnic_nic_info *info)
{
	struct vnic_guest *g;
	int ret;

	ASSERT_EQ(0, vnic_guest_new(ctx, "gns", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, nic, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ret = vnic_guest_create(g);
	ASSERT_EQ(0, ret) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	memset(info, 0, sizeof(*info));
	info->sz = sizeof(*info);
	ASSERT_EQ(0, vnic_guest_nic_info(g, 0, info));
	return g;
}

/* name is present in the namespace nsfd (-1: ours); *l filled if so. */
static int find_in(int nsfd, const char *name, struct ip_link *l)
{
	json_t *links = st_ip_links(nsfd);
	int ret;

	if (!links)
		return -EIO;
	ret = st_ip_link_find(links, name, l);
	json_decref(links);
	return ret;
}

/*
 * A context made with netns_fd 0 works in the namespace its creator was in
 * then, whatever thread calls it later: a runtime's thread that has joined
 * a container's namespace (setns) creates and opens in the context's, not
 * its own.  The tap, the link table (its monitor is opened on first use:
 * tz0 is taken here, free there) and the macvtap's queue device must all be
 * the context's namespace's.
 */
TEST_F(netns, caller_thread_in_another_namespace)
{
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "tz%d");
	VNIC_OPTS(vnic_nic_opts, mvt, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "mz%d");
	struct vnic_nic_info info = { .sz = sizeof(info) };
	struct vnic_ctx_stats st = { .sz = sizeof(st) };
	struct vnic_guest *g;
	struct ip_link l;
	int home, ret, qfd = -1;

	if (variant->flags || variant->by_pid)
		SKIP(return, "one variant is enough");
	ASSERT_EQ(0, st_run_cmd("ip tuntap add dev tz0 mode tap"));
	home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, home);
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gthr", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tap, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &mvt, NULL));
	ASSERT_EQ(0, setns(self->h.fd, CLONE_NEWNET));
	ret = vnic_guest_create(g);
	if (!ret)
		ret = vnic_guest_nic_open_queues(g, 1, &qfd, 1);
	ASSERT_EQ(0, setns(home, CLONE_NEWNET));
	close(home);
	EXPECT_EQ(0, ret) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	if (qfd >= 0)
		close(qfd);
	ASSERT_EQ(0, vnic_guest_nic_info(g, 0, &info));
	EXPECT_STREQ("tz1", info.name);
	EXPECT_EQ(0, find_in(-1, info.name, &l));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, info.name, &l));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, "tz0", &l));
	ASSERT_EQ(0, vnic_ctx_stats(self->ctx, &st));
	EXPECT_EQ(0u, st.name_retries);
	EXPECT_EQ(0, vnic_guest_destroy(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(-ENOENT, find_in(-1, "tz1", &l));
}

TEST_F(netns, veth_peer_in_target)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vh%d",
		  .up = 1, .peer_name = "vp0", .peer_up = 1,
		  .peer_mac = "02:00:00:00:aa:01");
	struct vnic_nic_info info;
	struct vnic_guest *g;
	struct ip_link l, p;

	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ("vp0", info.peer_name);

	ASSERT_EQ(0, find_in(-1, info.name, &l)) TH_LOG("%s", info.name);
	EXPECT_STREQ("veth", l.kind);
	EXPECT_EQ(info.ifindex, l.ifindex);
	EXPECT_LE(0, l.link_netnsid) TH_LOG("peer not in another namespace");
	EXPECT_TRUE(l.up);
	EXPECT_STREQ("vnic:" OWNER ":gns:0", l.alias);
	EXPECT_EQ(-ENOENT, find_in(-1, "vp0", &p));

	ASSERT_EQ(0, find_in(self->h.fd, "vp0", &p));
	EXPECT_STREQ("veth", p.kind);
	EXPECT_TRUE(p.up);
	EXPECT_STREQ("02:00:00:00:aa:01", p.address);
	EXPECT_LE(0, p.link_netnsid);

	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, "vp0", &p));
	EXPECT_EQ(-ENOENT, find_in(-1, info.name, &l));
}

/*
 * The peer that comes up in another namespace is the create message's outer
 * device (allocator/msg.c): the NIC here is then learned, tagged and brought
 * up afterwards.  Each way of learning it (name, or the MAC for a kernel
 * name) and a MAC the caller gave still reach the right end.
 */
static void expect_pair_up(struct __test_metadata *_metadata, int nsfd,
			   const struct vnic_nic_info *info, const char *peer,
			   const char *mac)
{
	struct ip_link l, p;

	ASSERT_EQ(0, find_in(-1, info->name, &l)) TH_LOG("%s", info->name);
	EXPECT_EQ(info->ifindex, l.ifindex);
	EXPECT_TRUE(l.up);
	EXPECT_STREQ("vnic:" OWNER ":gns:0", l.alias);
	if (mac)
		EXPECT_STREQ(mac, l.address);
	ASSERT_EQ(0, find_in(nsfd, peer, &p));
	EXPECT_TRUE(p.up);
	EXPECT_STREQ("", p.alias);
	EXPECT_LE(0, p.link_netnsid);
}

TEST_F(netns, veth_peer_up_kernel_named_here)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vk%d",
		  .naming = VNIC_NAMING_KERNEL, .up = 1, .peer_name = "vkp0",
		  .peer_up = 1);
	struct vnic_nic_info info;
	struct vnic_guest *g;

	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ("vk0", info.name);
	expect_pair_up(_metadata, self->h.fd, &info, "vkp0", NULL);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(0, st_vnic_links_count());
}

TEST_F(netns, veth_peer_up_mac_given_here)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vm0",
		  .mac = "02:00:00:00:bb:01", .up = 1, .peer_name = "vmp0",
		  .peer_up = 1);
	struct vnic_nic_info info;
	struct vnic_guest *g;

	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	expect_pair_up(_metadata, self->h.fd, &info, "vmp0", "02:00:00:00:bb:01");
	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(0, st_vnic_links_count());
}

/* The NIC here is not brought up when not asked, even if its peer is. */
TEST_F(netns, veth_peer_up_nic_left_down)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vd0",
		  .peer_name = "vdp0", .peer_up = 1);
	struct vnic_nic_info info;
	struct vnic_guest *g;
	struct ip_link l, p;

	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	ASSERT_EQ(0, find_in(-1, "vd0", &l));
	EXPECT_FALSE(l.up);
	EXPECT_STREQ("vnic:" OWNER ":gns:0", l.alias);
	ASSERT_EQ(0, find_in(self->h.fd, "vdp0", &p));
	EXPECT_TRUE(p.up);
	ASSERT_EQ(0, vnic_guest_destroy(g));
}

/* A peer name taken in the target is reported as such, and nothing is left
 * on either side. */
TEST_F(netns, veth_peer_name_taken_in_target)
{
	VNIC_OPTS(vnic_nic_opts, first, .kind = VNIC_KIND_VETH, .name = "vf0",
		  .peer_name = "vtk0", .peer_up = 1);
	VNIC_OPTS(vnic_nic_opts, second, .kind = VNIC_KIND_VETH, .name = "vs0",
		  .up = 1, .peer_name = "vtk0", .peer_up = 1);
	struct vnic_nic_info info;
	struct vnic_guest *g, *g2;
	char *before, *after;
	struct ip_link l, was;

	target(variant, &self->h, &first.peer_netns_fd, &first.peer_netns_pid);
	target(variant, &self->h, &second.peer_netns_fd, &second.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &first, &info);
	ASSERT_EQ(0, find_in(self->h.fd, "vtk0", &was));
	before = st_ip_link_snapshot();
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gtk", &g2));
	ASSERT_EQ(0, vnic_guest_add_nic(g2, &second, NULL));
	EXPECT_EQ(-EEXIST, vnic_guest_create(g2));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "peer name 'vtk0' is taken"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	ASSERT_EQ(0, find_in(self->h.fd, "vtk0", &l));
	EXPECT_EQ(was.ifindex, l.ifindex);
	EXPECT_EQ(0, vnic_guest_destroy(g2));
	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, "vtk0", &l));
	free(before);
	free(after);
}

/* A failure after the pair exists deletes both ends, the one there too. */
TEST_F(netns, veth_peer_up_rollback_at_each_step)
{
	static const int steps[] = { VNIC_STEP_RESOLVE, VNIC_STEP_CONFIGURE };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vr0",
		  .up = 1, .peer_name = "vrp0", .peer_up = 1);
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	char *before, *after;
	struct ip_link l;
	unsigned int s;

	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		before = st_ip_link_snapshot();
		ASSERT_EQ(0, vnic_ctx_new_faulty(&o, steps[s], 1, &ctx));
		ASSERT_EQ(0, vnic_guest_new(ctx, "grs", &g));
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
		EXPECT_EQ(-EIO, vnic_guest_create(g)) TH_LOG("step %d", steps[s]);
		after = st_ip_link_snapshot();
		EXPECT_STREQ(before, after);
		EXPECT_EQ(-ENOENT, find_in(self->h.fd, "vrp0", &l));
		EXPECT_EQ(0, vnic_guest_destroy(g));
		vnic_ctx_free(ctx);
		free(before);
		free(after);
	}
}

/*
 * All or nothing with a veth whose peer comes up in the target, beside a
 * macvlan and a two-queue tap: a fault at every step and NIC position
 * leaves both namespaces as they were and no fd open, for each naming.
 */
TEST_F_TIMEOUT(netns, peer_elsewhere_fault_at_every_step, 120)
{
	static const int steps[] = {
		VNIC_STEP_NAME, VNIC_STEP_CREATE, VNIC_STEP_RESOLVE,
		VNIC_STEP_CONFIGURE, VNIC_STEP_OPEN,
	};
	static const enum vnic_naming namings[] = {
		VNIC_NAMING_CACHE, VNIC_NAMING_KERNEL,
	};
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);
	VNIC_OPTS(vnic_nic_opts, mvl, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "fl%d", .up = 1);
	VNIC_OPTS(vnic_nic_opts, vth, .kind = VNIC_KIND_VETH, .name = "fv%d",
		  .up = 1, .peer_name = "fvp0", .peer_up = 1);
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "ft%d",
		  .up = 1, .queues = 2);
	char *here, *there, *here2, *there2;
	unsigned int s, n, k, fired = 0;
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	int fds, ret;

	target(variant, &self->h, &vth.peer_netns_fd, &vth.peer_netns_pid);
	for (k = 0; k < 2; k++) {
		mvl.naming = vth.naming = tap.naming = namings[k];
		for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			for (n = 1; n <= 3; n++) {
				here = st_ip_link_snapshot();
				there = st_ip_link_snapshot_ns(self->h.fd);
				fds = st_count_fds();
				ASSERT_EQ(0, vnic_ctx_new_faulty(&o, steps[s], n, &ctx));
				ASSERT_EQ(0, vnic_guest_new(ctx, "gpf", &g));
				ASSERT_EQ(0, vnic_guest_add_nic(g, &mvl, NULL));
				ASSERT_EQ(0, vnic_guest_add_nic(g, &vth, NULL));
				ASSERT_EQ(0, vnic_guest_add_nic(g, &tap, NULL));
				ret = vnic_guest_create(g);
				if (ret) {
					fired++;
					EXPECT_EQ(-EIO, ret) TH_LOG("%s", vnic_ctx_errmsg(ctx));
					EXPECT_EQ(steps[s], (int)vnic_ctx_errstep(ctx))
						TH_LOG("%s", vnic_ctx_errmsg(ctx));
					here2 = st_ip_link_snapshot();
					there2 = st_ip_link_snapshot_ns(self->h.fd);
					EXPECT_STREQ(here, here2) TH_LOG("step %d nic %u", steps[s], n);
					EXPECT_STREQ(there, there2) TH_LOG("step %d nic %u", steps[s], n);
					free(here2);
					free(there2);
				}
				EXPECT_EQ(0, vnic_guest_destroy(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
				vnic_ctx_free(ctx);
				EXPECT_EQ(fds, st_count_fds()) TH_LOG("step %d nic %u", steps[s], n);
				here2 = st_ip_link_snapshot();
				there2 = st_ip_link_snapshot_ns(self->h.fd);
				EXPECT_STREQ(here, here2);
				EXPECT_STREQ(there, there2);
				free(here);
				free(there);
				free(here2);
				free(there2);
			}
		}
	}
	/* Not a test that cannot fail: most of these faults fire. */
	EXPECT_LE(16u, fired);
}

/*
 * The library's short-lived threads (a socket or a tap opened in another
 * namespace, a macvtap's queues in a private mount namespace) block every
 * signal: a process-directed one is never run by the application's handler
 * in a thread that is in another namespace, with /dev a private tmpfs.
 */
TEST_F(netns, helper_threads_block_signals)
{
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "hs%d");
	VNIC_OPTS(vnic_nic_opts, mvt, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "hm%d");
	unsigned long long want = (1ull << (SIGUSR1 - 1)) | (1ull << (SIGTERM - 1)) |
				  (1ull << (SIGCHLD - 1)) | (1ull << (SIGINT - 1)) |
				  (1ull << (SIGALRM - 1));
	struct vnic_guest *g;
	int qfd = -1;

	if (variant->flags || variant->by_pid)
		SKIP(return, "one variant is enough");
	target(variant, &self->h, &tap.netns_fd, &tap.netns_pid);
	helper.calls = 0;
	helper.sigblk_and = ~0ull;
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gsig", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tap, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &mvt, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, vnic_guest_nic_open_queues(g, 1, &qfd, 1))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	close(qfd);
	EXPECT_LE(2, helper.calls);
	EXPECT_EQ(want, helper.sigblk_and & want)
		TH_LOG("blocked in every helper: %llx", helper.sigblk_and);
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

/*
 * A guest whose NICs live in more namespaces than one call opens sockets
 * in at once (16), made by two creates: destroy deletes every one of them
 * (vnic_collect_orphans() sees the context's namespace only, so a NIC
 * left elsewhere would have no handle left).
 */
#define MANY_NS 20

TEST_F(netns, destroy_across_many_namespaces)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "mn0",
		  .peer_name = "mnp0");
	struct netns_holder h[MANY_NS];
	char peers[MANY_NS][IFNAMSIZ];
	struct vnic_guest *g;
	struct ip_link l;
	unsigned int i;

	if (variant->flags || variant->by_pid)
		SKIP(return, "one variant is enough");
	for (i = 0; i < MANY_NS; i++)
		ASSERT_EQ(0, st_netns_holder_start(&h[i]));
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gmany", &g));
	for (i = 0; i < MANY_NS; i++) {
		nic.netns_fd = h[i].fd;
		snprintf(peers[i], IFNAMSIZ, "mnp%u", i);
		nic.peer_name = peers[i];
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
		/* Two creates of ten: each within the limit. */
		if (i == MANY_NS / 2 - 1 || i == MANY_NS - 1)
			ASSERT_EQ(0, vnic_guest_create(g))
				TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	}
	for (i = 0; i < MANY_NS; i++)
		ASSERT_EQ(0, find_in(h[i].fd, "mn0", &l)) TH_LOG("namespace %u", i);
	EXPECT_EQ(0, vnic_guest_destroy(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(0, st_prefixed_links_count("mnp"));
	for (i = 0; i < MANY_NS; i++) {
		EXPECT_EQ(-ENOENT, find_in(h[i].fd, "mn0", &l)) TH_LOG("namespace %u", i);
		st_netns_holder_stop(&h[i]);
	}
}

/*
 * A macvtap whose lower is here but which lives in the target.  "mvt0"
 * exists here already: the name is resolved in the target namespace, where
 * it is free (AUTO picks the kernel's "%d" for another namespace).
 */
TEST_F(netns, macvtap_in_target)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "mvt%d", .up = 1, .mtu = 1400);
	struct vnic_nic_info info;
	struct vnic_guest *g;
	struct ip_link l, here;
	char alias[64];

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name mvt0 type macvlan",
				LOWER));
	ASSERT_EQ(0, find_in(-1, "mvt0", &here));
	target(variant, &self->h, &nic.netns_fd, &nic.netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ("mvt0", info.name);
	ASSERT_EQ(0, find_in(self->h.fd, info.name, &l));
	EXPECT_STREQ("macvtap", l.kind);
	EXPECT_EQ(info.ifindex, l.ifindex);
	EXPECT_EQ(1400u, l.mtu);
	EXPECT_TRUE(l.up);
	st_vnic_alias(alias, sizeof(alias), OWNER, "gns", 0);
	EXPECT_STREQ(alias, l.alias);
	/* Ours is untouched, and no macvtap appeared here. */
	ASSERT_EQ(0, find_in(-1, "mvt0", &l));
	EXPECT_EQ(here.ifindex, l.ifindex);
	EXPECT_STREQ("macvlan", l.kind);

	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, "mvt0", &l));
}

/* A whole veth pair in the target; the cache would know nothing there. */
TEST_F(netns, veth_both_in_target)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vt%d",
		  .peer_name = "vtp0");
	struct vnic_nic_info info;
	struct vnic_guest *g;
	struct ip_link l;

	target(variant, &self->h, &nic.netns_fd, &nic.netns_pid);
	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ("vt0", info.name);
	ASSERT_EQ(0, find_in(self->h.fd, "vt0", &l));
	EXPECT_EQ(info.ifindex, l.ifindex);
	EXPECT_STREQ("vtp0", l.link);
	ASSERT_EQ(0, find_in(self->h.fd, "vtp0", &l));
	EXPECT_EQ(-ENOENT, find_in(-1, "vt0", &l));
	EXPECT_EQ(-ENOENT, find_in(-1, "vtp0", &l));
	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, "vt0", &l));
}

/*
 * Documentation/allocator.rst, "Device kinds": some kernels check a new
 * name against the caller's namespace even when IFLA_NET_NS_FD names
 * another.  This kernel (checked on 6.18, and with plain `ip link add ...
 * netns`) checks it in the target only: a peer named like our "lower0p" is
 * created there, and ours is untouched.  Should a kernel answer -EEXIST
 * here, the library is to cope (same place), so the create must succeed
 * either way.
 */
TEST_F(netns, peer_named_like_local_device)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vx0",
		  .peer_name = LOWER_PEER);
	struct ip_link before, l;
	struct vnic_nic_info info;
	struct vnic_guest *g;

	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &before));
	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ(LOWER_PEER, info.peer_name);
	ASSERT_EQ(0, find_in(self->h.fd, LOWER_PEER, &l));
	EXPECT_STREQ("veth", l.kind);
	EXPECT_LE(0, l.link_netnsid);
	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &l));
	EXPECT_EQ(before.ifindex, l.ifindex);
	EXPECT_STREQ(LOWER, l.link);

	/* Destroy must not take our lower0p for the peer. */
	ASSERT_EQ(0, vnic_guest_destroy(g));
	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &l));
	EXPECT_EQ(before.ifindex, l.ifindex);
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, LOWER_PEER, &l));
}

/*
 * The same peer-outside (.peer_up): the peer is the create message's outer
 * device (allocator/msg.c), whose name this kernel looks up in the target.
 * A cache-named NIC keeps its first name (no retry).
 */
TEST_F(netns, peer_named_like_local_device_peer_up)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vy%d",
		  .up = 1, .peer_name = LOWER_PEER, .peer_up = 1);
	struct vnic_ctx_stats st;
	struct ip_link before, l;
	struct vnic_nic_info info;
	struct vnic_guest *g;

	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &before));
	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ("vy0", info.name);
	expect_pair_up(_metadata, self->h.fd, &info, LOWER_PEER, NULL);
	ST_STATS(self->ctx, &st);
	EXPECT_EQ(0ULL, st.name_retries);
	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &l));
	EXPECT_EQ(before.ifindex, l.ifindex);
	EXPECT_STREQ(before.alias, l.alias);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &l));
	EXPECT_EQ(before.ifindex, l.ifindex);
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, LOWER_PEER, &l));
}

/*
 * Kernels before 6.15 look the outer name up in the caller's namespace and
 * refuse the peer-outside create with EEXIST; vnic_ctx_set_old_peer_lookup()
 * has this kernel give that answer.  The NIC is retried once, under the same
 * name and not counted as a name retry, with its peer nested (brought up
 * through a socket there); a failure after the fallback leaves nothing.
 */
TEST_F(netns, peer_named_like_local_device_old_lookup)
{
	static const int steps[] = { VNIC_STEP_CREATE, VNIC_STEP_RESOLVE,
				     VNIC_STEP_CONFIGURE };
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vo%d",
		  .up = 1, .peer_name = LOWER_PEER, .peer_up = 1);
	char *snap, *snap2;
	struct vnic_ctx_stats st;
	struct ip_link before, l;
	struct vnic_nic_info info;
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	unsigned int s;

	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &before));
	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	ASSERT_EQ(0, vnic_ctx_set_old_peer_lookup(self->ctx, true));
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ("vo0", info.name);
	expect_pair_up(_metadata, self->h.fd, &info, LOWER_PEER, NULL);
	ST_STATS(self->ctx, &st);
	EXPECT_EQ(0ULL, st.name_retries);
	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &l));
	EXPECT_EQ(before.ifindex, l.ifindex);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, LOWER_PEER, &l));
	EXPECT_EQ(-ENOENT, find_in(-1, "vo0", &l));

	/* The fault fires in the nested retry (create) or after it. */
	for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		snap = st_ip_link_snapshot();
		ASSERT_EQ(0, vnic_ctx_new_faulty(&o, steps[s], 1, &ctx));
		ASSERT_EQ(0, vnic_ctx_set_old_peer_lookup(ctx, true));
		ASSERT_EQ(0, vnic_guest_new(ctx, "gol", &g));
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
		EXPECT_EQ(-EIO, vnic_guest_create(g)) TH_LOG("step %d", steps[s]);
		EXPECT_EQ(steps[s], (int)vnic_ctx_errstep(ctx))
			TH_LOG("%s", vnic_ctx_errmsg(ctx));
		snap2 = st_ip_link_snapshot();
		EXPECT_STREQ(snap, snap2);
		EXPECT_EQ(-ENOENT, find_in(self->h.fd, LOWER_PEER, &l));
		ASSERT_EQ(0, find_in(-1, LOWER_PEER, &l));
		EXPECT_EQ(before.ifindex, l.ifindex);
		EXPECT_EQ(0, vnic_guest_destroy(g));
		vnic_ctx_free(ctx);
		free(snap);
		free(snap2);
	}
}

/*
 * With the old lookup too, a peer name taken in the target is the peer's
 * collision: reported at once, naming the peer (no fallback, no renaming of
 * a cache-named NIC), and nothing is left on either side.
 */
TEST_F(netns, peer_name_taken_in_target_old_lookup)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "vq%d",
		  .up = 1, .peer_name = LOWER_PEER, .peer_up = 1);
	struct vnic_ctx_stats st;
	struct ip_link was, l;
	struct vnic_guest *g;
	char *snap, *snap2;

	ASSERT_EQ(0, st_run_cmd("nsenter --net=/proc/%d/ns/net ip link add %s "
				"type veth peer name vqk0", (int)self->h.pid,
				LOWER_PEER));
	ASSERT_EQ(0, find_in(self->h.fd, LOWER_PEER, &was));
	target(variant, &self->h, &nic.peer_netns_fd, &nic.peer_netns_pid);
	ASSERT_EQ(0, vnic_ctx_set_old_peer_lookup(self->ctx, true));
	snap = st_ip_link_snapshot();
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gqt", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	EXPECT_EQ(-EEXIST, vnic_guest_create(g));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "peer name '" LOWER_PEER
			       "' is taken")) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ST_STATS(self->ctx, &st);
	EXPECT_EQ(0ULL, st.name_retries);
	snap2 = st_ip_link_snapshot();
	EXPECT_STREQ(snap, snap2);
	ASSERT_EQ(0, find_in(self->h.fd, LOWER_PEER, &l));
	EXPECT_EQ(was.ifindex, l.ifindex);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	free(snap);
	free(snap2);
}

/* The same for the NIC itself: an explicit name taken here, free there. */
TEST_F(netns, nic_named_like_local_device)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = LOWER_PEER);
	struct ip_link before, l;
	struct vnic_nic_info info;
	struct vnic_guest *g;

	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &before));
	target(variant, &self->h, &nic.netns_fd, &nic.netns_pid);
	g = create_one(_metadata, self->ctx, &nic, &info);
	EXPECT_STREQ(LOWER_PEER, info.name);
	ASSERT_EQ(0, find_in(self->h.fd, LOWER_PEER, &l));
	EXPECT_STREQ("macvlan", l.kind);
	EXPECT_EQ(info.ifindex, l.ifindex);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	ASSERT_EQ(0, find_in(-1, LOWER_PEER, &l));
	EXPECT_EQ(before.ifindex, l.ifindex);
	EXPECT_STREQ("veth", l.kind);
}

/* A failure in the target undoes what was made there too. */
TEST_F(netns, rollback_reaches_target)
{
	VNIC_OPTS(vnic_nic_opts, there, .kind = VNIC_KIND_MACVLAN,
		  .lower = LOWER, .name = "mt0");
	VNIC_OPTS(vnic_nic_opts, bad, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "mt1", .mtu = 9000);
	char *before, *after;
	struct vnic_guest *g;
	struct ip_link l;

	target(variant, &self->h, &there.netns_fd, &there.netns_pid);
	before = st_ip_link_snapshot();
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "grb", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &there, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &bad, NULL));
	EXPECT_EQ(-EINVAL, vnic_guest_create(g));
	EXPECT_EQ(1, vnic_ctx_errnic(self->ctx));
	EXPECT_EQ(-ENOENT, find_in(self->h.fd, "mt0", &l));
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	free(before);
	free(after);
}

/* A context working in another namespace leaves the caller where it was. */
TEST_F(netns, context_in_other_namespace)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .netns_fd = self->h.fd,
		  .flags = variant->flags);
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_VETH, .name = "co%d",
		  .peer_name = "cop0");
	char ns_before[64] = "", ns_after[64] = "";
	struct vnic_nic_info info;
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	struct ip_link l;
	char **names;
	unsigned int n;

	ASSERT_LT(0, readlink("/proc/thread-self/ns/net", ns_before,
			      sizeof(ns_before) - 1));
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	g = create_one(_metadata, ctx, &nic, &info);
	ASSERT_LT(0, readlink("/proc/thread-self/ns/net", ns_after,
			      sizeof(ns_after) - 1));
	EXPECT_STREQ(ns_before, ns_after);
	EXPECT_STREQ("co0", info.name);
	ASSERT_EQ(0, find_in(self->h.fd, "co0", &l));
	EXPECT_EQ(info.ifindex, l.ifindex);
	EXPECT_EQ(-ENOENT, find_in(-1, "co0", &l));

	/* Tags are looked for in the context's namespace: there. */
	ASSERT_EQ(0, vnic_guest_list(ctx, &names, &n));
	EXPECT_EQ(1u, n);
	free(names);
	ASSERT_EQ(0, vnic_guest_list(self->ctx, &names, &n));
	EXPECT_EQ(0u, n);
	free(names);
	ASSERT_EQ(0, vnic_guest_destroy(g));
	vnic_ctx_free(ctx);
}

TEST_HARNESS_MAIN
