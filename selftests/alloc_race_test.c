// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Another process grabs the names the cache just chose.  To make the race
 * certain rather than likely, this binary interposes sendto()/sendmsg():
 * when armed, it reads each RTM_NEWLINK the library is about to send and
 * has ip(8) create a device of that name first.  The kernel then answers
 * -EEXIST exactly where a real race would, and the library must retry.
 * A second test races a real concurrent process.
 */
#include <errno.h>
#include <stdarg.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"

#define OWNER	"rt"

static struct {
	bool armed;
	const char *prefix;	/* grab explicit names starting with it */
	int grabs_left;		/* -1: every one */
	int grabbed;
	int newlinks;		/* RTM_NEWLINK requests seen */
	char names[512][IFNAMSIZ];
} hook;

/* The name a new link is requested under, or NULL. */
static const char *newlink_name(const struct nlmsghdr *nlh)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(nlh);
	const struct rtattr *rta = IFLA_RTA(ifi);
	int len = IFLA_PAYLOAD(nlh);

	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == IFLA_IFNAME)
			return RTA_DATA(rta);
	return NULL;
}

/* Take the name first, from another process, as a racing tool would. */
static void grab(const char *name)
{
	if (hook.grabbed >= 512 || !hook.grabs_left)
		return;
	if (strncmp(name, hook.prefix, strlen(hook.prefix)) || strchr(name, '%'))
		return;
	if (st_run_cmd("ip link add link %s name %s type macvlan", LOWER, name))
		return;
	snprintf(hook.names[hook.grabbed++], IFNAMSIZ, "%s", name);
	if (hook.grabs_left > 0)
		hook.grabs_left--;
}

static void hook_scan(int fd, const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	int dom = 0, rem = len;
	socklen_t sl = sizeof(dom);
	const char *name;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &sl) ||
	    dom != AF_NETLINK)
		return;
	for (; NLMSG_OK(nlh, rem); nlh = NLMSG_NEXT(nlh, rem)) {
		if (nlh->nlmsg_type != RTM_NEWLINK ||
		    !(nlh->nlmsg_flags & NLM_F_CREATE))
			continue;
		hook.newlinks++;
		name = newlink_name(nlh);
		if (name)
			grab(name);
	}
}

/* The interposers: the executable's definitions win over libc's, for the
 * static libvnic and for libmnl alike. */
ssize_t sendto(int fd, const void *buf, size_t len, int flags,
	       __CONST_SOCKADDR_ARG addr, socklen_t alen)
{
	if (hook.armed)
		hook_scan(fd, buf, len);
	return syscall(SYS_sendto, fd, buf, len, flags, addr.__sockaddr__, alen);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	size_t i;

	if (hook.armed)
		for (i = 0; i < msg->msg_iovlen; i++)
			hook_scan(fd, msg->msg_iov[i].iov_base,
				  msg->msg_iov[i].iov_len);
	return syscall(SYS_sendmsg, fd, msg, flags);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	if (hook.armed)
		hook_scan(fd, buf, len);
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

/* A tap is named by TUNSETIFF, not by a message: grab its name there. */
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (hook.armed && req == TUNSETIFF) {
		hook.newlinks++;
		grab(((struct ifreq *)arg)->ifr_name);
	}
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

FIXTURE(race) {
	struct vnic_ctx *ctx;
};

FIXTURE_VARIANT(race) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(race, echo) { 0 };
FIXTURE_VARIANT_ADD(race, noecho) { VNIC_CTX_NO_ECHO };

FIXTURE_SETUP(race)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	/* The table is built before anyone races. */
	ASSERT_EQ(0, vnic_ctx_refresh(self->ctx));
}

FIXTURE_TEARDOWN(race)
{
	hook.armed = false;
}

static struct vnic_guest *guest_of(struct __test_metadata *_metadata,
				   struct vnic_ctx *ctx, const char *name,
				   unsigned int n)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "c%d", .naming = VNIC_NAMING_CACHE);
	struct vnic_guest *g;
	unsigned int i;

	ASSERT_EQ(0, vnic_guest_new(ctx, name, &g));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	}
	return g;
}

/* Every NIC of g is in ip under its reported name, with its own tag. */
static void expect_tagged(struct __test_metadata *_metadata,
			  struct vnic_guest *g, json_t *links)
{
	unsigned int i, n = vnic_guest_nic_count(g);
	char alias[64];
	struct ip_link l;

	for (i = 0; i < n; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		ASSERT_EQ(0, st_ip_link_find(links, info.name, &l))
			TH_LOG("%s missing", info.name);
		st_vnic_alias(alias, sizeof(alias), OWNER, vnic_guest_name(g), i);
		EXPECT_STREQ(alias, l.alias) TH_LOG("%s", info.name);
		EXPECT_EQ(info.ifindex, l.ifindex);
	}
}

/*
 * The first two names of a five-NIC create are taken between the choice
 * and the request: the create still succeeds, on the next lowest free
 * names (c2..c4 went through, c0 and c1 are lost, so c5 and c6).
 */
TEST_F(race, names_grabbed_before_create)
{
	struct vnic_ctx_stats st;
	struct vnic_guest *g;
	unsigned int i, n, seen = 0;
	json_t *links;
	int ret;

	g = guest_of(_metadata, self->ctx, "g1", 5);
	hook = (typeof(hook)){ .armed = true, .prefix = "c", .grabs_left = 2 };
	ret = vnic_guest_create(g);
	hook.armed = false;
	/* Only a create that worked unseen means the hooks miss its sends;
	 * one that failed before sending is a failure. */
	if (!hook.newlinks && !ret)
		SKIP(return, "RTM_NEWLINK not sent by sendto/sendmsg/send");
	ASSERT_EQ(2, hook.grabbed) TH_LOG("create: %d %s", ret,
					  vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, ret) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));

	ST_STATS(self->ctx, &st);
	EXPECT_LE(1ULL, st.name_retries);
	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	expect_tagged(_metadata, g, links);
	json_decref(links);
	for (i = 0; i < 5; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		ASSERT_TRUE(st_name_suffix(info.name, "c", &n));
		ASSERT_TRUE(n >= 2 && n <= 6) TH_LOG("%s", info.name);
		seen |= 1u << n;
	}
	EXPECT_EQ(0x7cu, seen);
	/* The grabbed devices are not ours. */
	EXPECT_EQ(5, st_vnic_links_count());
}

/* Every name it picks is taken: retries are bounded (by the name timeout,
 * here 100 ms, after at least 8 rounds) and end in a clean, explained
 * failure. */
TEST_F(race, every_name_grabbed)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags,
		  .name_timeout_ms = 100);
	struct vnic_ctx_stats st;
	struct vnic_guest *g;
	int ret;

	vnic_ctx_free(self->ctx);
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	g = guest_of(_metadata, self->ctx, "g1", 2);
	hook = (typeof(hook)){ .armed = true, .prefix = "c", .grabs_left = -1 };
	ret = vnic_guest_create(g);
	hook.armed = false;
	/* A create that failed before sending is not a missing hook. */
	if (!hook.newlinks && !ret)
		SKIP(return, "RTM_NEWLINK not sent by sendto/sendmsg/send");
	TH_LOG("gave up after %d grabbed names: %s", hook.grabbed,
	       vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(-EEXIST, ret);
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "kept being taken"));
	/* At least 8 rounds of two names, and the grabber never ran dry. */
	EXPECT_LE(16, hook.grabbed);
	EXPECT_GT(512, hook.grabbed);
	EXPECT_EQ(0, st_vnic_links_count());
	EXPECT_EQ(hook.grabbed, st_prefixed_links_count("c"));
	ST_STATS(self->ctx, &st);
	EXPECT_LE(1ULL, st.name_retries);
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

/*
 * A real concurrent process creating c0..c59 while this one creates six
 * guests of five: whoever loses a name, every guest is created, each NIC
 * under a name of its own.
 */
TEST_F(race, concurrent_outside_process)
{
	struct vnic_ctx_stats st;
	struct vnic_guest *g[6];
	int go[2], status, k;
	char gname[8], c;
	json_t *links;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		/* -force: go on past the names the library got first. */
		_exit(st_run_cmd("for i in $(seq 0 59); do echo link add link "
				 "%s name c$i type macvlan; done | "
				 "ip -force -batch - 2>/dev/null", LOWER) > 1);
	}
	close(go[0]);
	for (k = 0; k < 6; k++) {
		snprintf(gname, sizeof(gname), "g%d", k);
		g[k] = guest_of(_metadata, self->ctx, gname, 5);
	}
	close(go[1]);
	for (k = 0; k < 6; k++) {
		EXPECT_EQ(0, vnic_guest_create(g[k]))
			TH_LOG("g%d: %s", k, vnic_ctx_errmsg(self->ctx));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, _metadata->exit_code);
	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	for (k = 0; k < 6; k++)
		expect_tagged(_metadata, g[k], links);
	EXPECT_EQ(30, st_ip_links_count(links, "vnic:" OWNER ":"));
	json_decref(links);
	ST_STATS(self->ctx, &st);
	TH_LOG("name retries: %llu, resyncs: %llu",
	       (unsigned long long)st.name_retries,
	       (unsigned long long)st.resyncs);
}

/*
 * The same for a tap, whose name TUNSETIFF takes (EBUSY when it exists):
 * the same bound, the same clean failure, the same errno (guest.h:
 * -EEXIST after names kept being taken for name_timeout_ms).
 */
TEST_F(race, every_tap_name_grabbed)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags,
		  .name_timeout_ms = 100);
	VNIC_OPTS(vnic_nic_opts, tap, .kind = VNIC_KIND_TAP, .name = "ct%d",
		  .naming = VNIC_NAMING_CACHE);
	struct vnic_guest *g;
	int fds, ret;

	vnic_ctx_free(self->ctx);
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	ASSERT_EQ(0, vnic_ctx_refresh(self->ctx));
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gt", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &tap, NULL));
	fds = st_count_fds();
	hook = (typeof(hook)){ .armed = true, .prefix = "ct", .grabs_left = -1 };
	ret = vnic_guest_create(g);
	hook.armed = false;
	TH_LOG("gave up after %d grabbed names: %s", hook.grabbed,
	       vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(-EEXIST, ret);
	EXPECT_EQ((int)VNIC_STEP_NAME, (int)vnic_ctx_errstep(self->ctx));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "kept being taken"));
	EXPECT_LE(8, hook.grabbed);
	EXPECT_GT(512, hook.grabbed);
	EXPECT_EQ(0, st_vnic_links_count());
	EXPECT_EQ(hook.grabbed, st_prefixed_links_count("ct"));
	EXPECT_EQ(fds, st_count_fds());
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

TEST_HARNESS_MAIN
