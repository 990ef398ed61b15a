// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Hostile and bad input to the allocator and the context, one case each
 * (Documentation/testing.rst, "Bad and hostile input inventory").  Every
 * failing case asserts three things:
 *
 *  - the expected negative errno;
 *  - a vnic_ctx_errmsg() that names what is wrong (a substring of it);
 *  - nothing left: every device of the namespace (and of a target
 *    namespace) as `ip -j -d link` shows it -- ifindex, name, address,
 *    alias, MTU, up, linkinfo -- is what it was, and so is the number of
 *    open fds of the process.
 *
 * Where a limit exists, the valid side of it is a case too.  A namespace
 * with many devices runs with 4,000 here; VNIC_HEAVY=1 makes it 60,000 (a
 * few minutes on two cores; run by hand, figures in testing.rst).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"

#define OWNER	"ht"

/* --- what "nothing left" means --------------------------------------- */

/* Every device with what a failed call could have changed on it. */
static char *ns_state(int nsfd)
{
	json_t *links = st_ip_links(nsfd), *l;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;

	if (!links)
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f) {
		json_decref(links);
		return NULL;
	}
	json_array_foreach(links, i, l) {
		json_t *info = json_object_get(l, "linkinfo");
		json_t *flags = json_object_get(l, "flags"), *v;
		char *infos = info ? json_dumps(info, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		const char *alias = json_string_value(json_object_get(l, "ifalias"));
		const char *addr = json_string_value(json_object_get(l, "address"));
		bool up = false;
		size_t k;

		/* LOWER_UP and operstate follow the carrier on their own. */
		json_array_foreach(flags, k, v)
			up |= json_is_string(v) && !strcmp(json_string_value(v), "UP");
		fprintf(f, "%lld:%s addr=%s alias=%s mtu=%lld up=%d info=%s\n",
			json_integer_value(json_object_get(l, "ifindex")),
			json_string_value(json_object_get(l, "ifname")),
			addr ? addr : "", alias ? alias : "",
			json_integer_value(json_object_get(l, "mtu")), up,
			infos ? infos : "");
		free(infos);
	}
	fclose(f);
	json_decref(links);
	return buf;
}

struct state {
	char *here, *there;	/* the test's namespace, a target (or NULL) */
	int there_fd;
	int fds;
};

static void state_take(struct __test_metadata *_metadata, struct state *s,
		       int there_fd)
{
	s->there_fd = there_fd;
	s->here = ns_state(-1);
	s->there = there_fd >= 0 ? ns_state(there_fd) : NULL;
	s->fds = st_count_fds();
	ASSERT_NE(NULL, s->here);
	if (there_fd >= 0)
		ASSERT_NE(NULL, s->there);
}

/* Nothing came, went or changed since state_take(); frees s. */
static void state_same(struct __test_metadata *_metadata, struct state *s)
{
	char *here = ns_state(-1);
	char *there = s->there_fd >= 0 ? ns_state(s->there_fd) : NULL;

	EXPECT_EQ(s->fds, st_count_fds()) TH_LOG("fds leaked or closed");
	ASSERT_NE(NULL, here);
	EXPECT_STREQ(s->here, here);
	if (s->there_fd >= 0)
		EXPECT_STREQ(s->there, there);
	free(here);
	free(there);
	free(s->here);
	free(s->there);
}

static void expect_err(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
		       int ret, int err, const char *what)
{
	const char *msg = vnic_ctx_errmsg(ctx);

	TH_LOG("errmsg: %s", msg);
	EXPECT_EQ(err, ret) TH_LOG("got %d (%s)", ret, vnic_strerror(ret));
	EXPECT_NE(0, msg[0]);
	if (what)
		EXPECT_NE(NULL, strstr(msg, what)) TH_LOG("'%s' lacks '%s'", msg, what);
}

/* Build a guest of n NICs and create it; the first refusal returned. */
static int build_create(struct vnic_ctx *ctx, const char *gname,
			const struct vnic_nic_opts *nics, unsigned int n,
			struct vnic_guest **out)
{
	unsigned int i;
	int ret;

	ret = vnic_guest_new(ctx, gname, out);
	for (i = 0; !ret && i < n; i++)
		ret = vnic_guest_add_nic(*out, &nics[i], NULL);
	if (!ret)
		ret = vnic_guest_create(*out);
	return ret;
}

/*
 * n NICs, refused with err and a message holding 'what', either when added
 * or when created; nothing left here nor in there_fd (-1: no target).
 */
static void expect_refused(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
			   const struct vnic_nic_opts *nics, unsigned int n,
			   int err, const char *what, int there_fd)
{
	struct vnic_guest *g = NULL;
	struct state s;
	int ret;

	state_take(_metadata, &s, there_fd);
	ret = build_create(ctx, "gbad", nics, n, &g);
	expect_err(_metadata, ctx, ret, err, what);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
}

/* The control: the same shape with good values is created, and goes. */
static void expect_created(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
			   const struct vnic_nic_opts *nics, unsigned int n,
			   const char *name0)
{
	struct vnic_nic_info info = { .sz = sizeof(info) };
	struct vnic_guest *g = NULL;
	struct state s;
	struct ip_link l;
	int ret;

	state_take(_metadata, &s, -1);
	ret = build_create(ctx, "ggood", nics, n, &g);
	ASSERT_EQ(0, ret) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(0, vnic_guest_nic_info(g, 0, &info));
	if (name0)
		EXPECT_STREQ(name0, info.name);
	if (!nics[0].netns_fd && !nics[0].netns_pid) {
		ASSERT_EQ(0, st_ip_link_get(info.name, &l));
		EXPECT_EQ(info.ifindex, l.ifindex);
	}
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
}

FIXTURE(hostile) {
	struct vnic_ctx *ctx;
};

FIXTURE_SETUP(hostile)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);

	self->ctx = NULL;
	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	/* The link table and its monitor socket now, before any fd count. */
	ASSERT_EQ(0, vnic_ctx_refresh(self->ctx));
}

FIXTURE_TEARDOWN(hostile)
{
	st_macvtaps_flush();
	vnic_ctx_free(self->ctx);
}

#define MVL	.kind = VNIC_KIND_MACVLAN, .lower = LOWER
#define MVT	.kind = VNIC_KIND_MACVTAP, .lower = LOWER
#define VETH	.kind = VNIC_KIND_VETH
#define TAP	.kind = VNIC_KIND_TAP

#define BAD(tname, err, what, ...)					\
	TEST_F(hostile, tname)						\
	{								\
		VNIC_OPTS(vnic_nic_opts, nic, __VA_ARGS__);		\
		expect_refused(_metadata, self->ctx, &nic, 1, err, what, -1); \
	}

#define GOOD(tname, name0, ...)						\
	TEST_F(hostile, tname)						\
	{								\
		VNIC_OPTS(vnic_nic_opts, nic, __VA_ARGS__);		\
		expect_created(_metadata, self->ctx, &nic, 1, name0);	\
	}

/* --- names and templates against IFNAMSIZ ---------------------------- */

#define P13	"abcdefghijklm"		/* + "%d": 15 characters */

GOOD(template_15_chars_cache, P13 "0", MVL, .name = P13 "%d")
GOOD(template_15_chars_kernel, P13 "0", MVL, .name = P13 "%d",
     .naming = VNIC_NAMING_KERNEL)
GOOD(template_15_chars_tap, P13 "0", TAP, .name = P13 "%d")
GOOD(name_15_chars_tap, "abcdefghijklmno", TAP, .name = "abcdefghijklmno")
GOOD(veth_both_names_15_chars, "abcdefghijklmno", VETH,
     .name = "abcdefghijklmno", .peer_name = "onmlkjihgfedcba")
BAD(template_16_chars, -EINVAL, "longer than 15", MVL, .name = P13 "n%d")
BAD(name_16_chars_tap, -EINVAL, "longer than 15", TAP, .name = "abcdefghijklmnop")
BAD(template_two_d, -EINVAL, "exactly one", MVL, .name = "a%d%d")
BAD(template_d_in_middle, -EINVAL, "must end", MVL, .name = "a%db")
BAD(template_percent_s, -EINVAL, "exactly one", MVL, .name = "a%s")
BAD(template_escaped_percent, -EINVAL, "exactly one", MVL, .name = "a%%d")
BAD(template_tap_two_d, -EINVAL, "exactly one", TAP, .name = "t%d%d")
BAD(name_slash, -EINVAL, "'/'", MVL, .name = "a/b")
BAD(name_colon, -EINVAL, "':'", MVL, .name = "a:b")
BAD(name_space, -EINVAL, "whitespace", MVL, .name = "a b")
BAD(name_newline_tap, -EINVAL, "whitespace", TAP, .name = "t\n")
BAD(name_dot, -EINVAL, "'.'", MVL, .name = ".")
BAD(name_dotdot, -EINVAL, "'..'", MVL, .name = "..")
BAD(name_empty, -EINVAL, "empty", MVL, .name = "")
BAD(name_control_char, -EINVAL, "non-printable", MVL, .name = "a\x01")
BAD(name_utf8, -EINVAL, "non-printable", MVL, .name = "caf\xc3\xa9")
BAD(lower_name_slash, -EINVAL, "not an interface name", .kind = VNIC_KIND_MACVLAN,
    .lower = "../lower0")
BAD(peer_name_template, -EINVAL, "exact name", VETH, .name = "v0",
    .peer_name = "p%d")

/* --- namespaces: fds and pids that are not what they claim ------------ */

BAD(netns_fd_negative, -EBADF, "not a file descriptor", MVL, .netns_fd = -5)
BAD(netns_pid_negative, -EINVAL, "not a process id", MVL, .netns_pid = -5)
BAD(peer_netns_fd_negative, -EBADF, "peer namespace: fd -5", VETH,
    .name = "v0", .peer_name = "p0", .peer_netns_fd = -5)
BAD(peer_netns_on_macvlan, -EINVAL, "has no peer", MVL, .peer_netns_fd = -5)

static int closed_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	close(fd);
	return fd;
}

TEST_F(hostile, netns_fd_closed)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .netns_fd = closed_fd());

	expect_refused(_metadata, self->ctx, &nic, 1, -EBADF, "not an open", -1);
}

TEST_F(hostile, netns_fd_not_a_namespace)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .netns_fd = fd);

	ASSERT_LE(0, fd);
	expect_refused(_metadata, self->ctx, &nic, 1, -EINVAL, "not a namespace", -1);
	close(fd);
}

TEST_F(hostile, netns_fd_of_uts_namespace)
{
	int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .netns_fd = fd);

	ASSERT_LE(0, fd);
	expect_refused(_metadata, self->ctx, &nic, 1, -EINVAL,
		       "not a network namespace", -1);
	close(fd);
}

/* A child that exits at once: a zombie until reaped. */
static pid_t short_lived(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	return pid;
}

/* Exited but not reaped: /proc/PID exists, its namespaces are gone. */
TEST_F(hostile, netns_pid_zombie)
{
	pid_t pid = short_lived();
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .netns_pid = pid);
	siginfo_t si;

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
	expect_refused(_metadata, self->ctx, &nic, 1, -ENOENT,
		       "cannot open the target namespace", -1);
	waitpid(pid, NULL, 0);
}

TEST_F(hostile, netns_pid_reaped)
{
	pid_t pid = short_lived();
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .netns_pid = pid);

	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	expect_refused(_metadata, self->ctx, &nic, 1, -ENOENT,
		       "cannot open the target namespace", -1);
}

TEST_F(hostile, netns_fd_and_pid_both)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL);
	struct netns_holder h;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	nic.netns_fd = h.fd;
	nic.netns_pid = h.pid;
	expect_refused(_metadata, self->ctx, &nic, 1, -EINVAL, "not both", h.fd);
	st_netns_holder_stop(&h);
}

/*
 * A namespace whose last process exited lives on while an fd holds it:
 * it is a valid target, and a guest created there stays deletable after
 * the caller closed its own fd (the library holds a dup).
 */
TEST_F(hostile, netns_only_held_by_fd)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = "dead0");
	struct netns_holder h;
	struct vnic_guest *g;
	struct state s;
	struct ip_link l;
	json_t *links;
	int fd;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	fd = fcntl(h.fd, F_DUPFD_CLOEXEC, 3);
	ASSERT_LE(0, fd);
	st_netns_holder_stop(&h);		/* no process left in it */
	state_take(_metadata, &s, fd);
	nic.netns_fd = fd;
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gdead", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	links = st_ip_links(fd);
	ASSERT_NE(NULL, links);
	EXPECT_EQ(0, st_ip_link_find(links, "dead0", &l));
	EXPECT_STREQ("macvlan", l.kind);
	json_decref(links);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
	close(fd);
}

/* The caller closes its fd between add and create: the dup carries on. */
TEST_F(hostile, netns_fd_closed_after_add)
{
	VNIC_OPTS(vnic_nic_opts, nic, VETH, .name = "ca0", .peer_name = "cap0");
	struct netns_holder h;
	struct vnic_guest *g;
	struct ip_link l;
	json_t *links;
	int fd;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	fd = fcntl(h.fd, F_DUPFD_CLOEXEC, 3);
	ASSERT_LE(0, fd);
	nic.netns_fd = fd;
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gclosed", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	close(fd);
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	links = st_ip_links(h.fd);
	ASSERT_NE(NULL, links);
	EXPECT_EQ(0, st_ip_link_find(links, "ca0", &l));
	json_decref(links);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	links = st_ip_links(h.fd);
	ASSERT_NE(NULL, links);
	EXPECT_EQ(-ENOENT, st_ip_link_find(links, "ca0", &l));
	json_decref(links);
	EXPECT_EQ(-ENOENT, st_ip_link_get("cap0", &l));
	st_netns_holder_stop(&h);
}

/* A context's own namespace: vnic_ctx_new() refuses, *out untouched. */
static void expect_ctx_refused(struct __test_metadata *_metadata, int nsfd,
			       int err)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .netns_fd = nsfd);
	struct vnic_ctx *ctx = (void *)1;
	int fds = st_count_fds();

	EXPECT_EQ(err, vnic_ctx_new(&o, &ctx));
	EXPECT_EQ((void *)1, ctx);
	EXPECT_EQ(fds, st_count_fds());
}

TEST_F(hostile, ctx_netns_fd_negative)
{
	expect_ctx_refused(_metadata, -5, -EBADF);
}

TEST_F(hostile, ctx_netns_fd_closed)
{
	expect_ctx_refused(_metadata, closed_fd(), -EBADF);
}

TEST_F(hostile, ctx_netns_fd_not_a_namespace)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	expect_ctx_refused(_metadata, fd, -EINVAL);
	close(fd);
}

TEST_F(hostile, ctx_netns_fd_of_mnt_namespace)
{
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);

	expect_ctx_refused(_metadata, fd, -EINVAL);
	close(fd);
}

/* A context in a namespace no process is in any more works there. */
TEST_F(hostile, ctx_in_namespace_only_held_by_fd)
{
	VNIC_OPTS(vnic_nic_opts, nic, VETH, .name = "cv%d", .peer_name = "cvp0");
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct netns_holder h;
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	struct ip_link l;
	json_t *links;
	int fd;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	fd = fcntl(h.fd, F_DUPFD_CLOEXEC, 3);
	ASSERT_LE(0, fd);
	st_netns_holder_stop(&h);
	o.netns_fd = fd;
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	ASSERT_EQ(0, build_create(ctx, "gc", &nic, 1, &g))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	links = st_ip_links(fd);
	ASSERT_NE(NULL, links);
	EXPECT_EQ(0, st_ip_link_find(links, "cv0", &l));
	EXPECT_EQ(0, st_ip_link_find(links, "cvp0", &l));
	json_decref(links);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	links = st_ip_links(fd);
	ASSERT_NE(NULL, links);
	EXPECT_EQ(1, st_ip_links_count(links, NULL))	/* lo only */
		TH_LOG("devices left in the namespace");
	json_decref(links);
	vnic_ctx_free(ctx);
	close(fd);
}

/* --- the lower device ------------------------------------------------- */

BAD(lower_loopback, -EINVAL, "not an Ethernet device",
    .kind = VNIC_KIND_MACVLAN, .lower = "lo")

TEST_F(hostile, lower_l3_tun)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP, .lower = "tn0");

	ASSERT_EQ(0, st_run_cmd("ip tuntap add tn0 mode tun"));
	expect_refused(_metadata, self->ctx, &nic, 1, -EINVAL,
		       "'tn0' is not an Ethernet device", -1);
	st_run_cmd("ip link del tn0");
}

/* A macvlan over a macvlan: the kernel stacks it on the real lower. */
TEST_F(hostile, lower_is_macvlan)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = "fm0",
		  .name = "onfm0");
	struct vnic_guest *g;
	struct state s;
	struct ip_link l;

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name fm0 type macvlan", LOWER));
	state_take(_metadata, &s, -1);
	ASSERT_EQ(0, build_create(self->ctx, "gm", &nic, 1, &g))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(0, st_ip_link_get("onfm0", &l));
	EXPECT_STREQ(LOWER, l.link);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
}

TEST_F(hostile, lower_deleted_before_create)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP, .lower = "lower1");
	struct vnic_guest *g;
	struct state s;

	ASSERT_EQ(0, st_lower_add("lower1", "lower1p"));
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gdel", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, st_run_cmd("ip link del lower1"));
	state_take(_metadata, &s, -1);
	expect_err(_metadata, self->ctx, vnic_guest_create(g), -ENODEV,
		   "lower device 'lower1' not found");
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
}

TEST_F(hostile, lower_ifindex_of_deleted_device)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN);
	struct ip_link l;

	ASSERT_EQ(0, st_lower_add("lower1", "lower1p"));
	ASSERT_EQ(0, st_ip_link_get("lower1", &l));
	ASSERT_EQ(0, st_run_cmd("ip link del lower1"));
	nic.lower_ifindex = l.ifindex;
	expect_refused(_metadata, self->ctx, &nic, 1, -ENODEV,
		       "no lower device of ifindex", -1);
}

/* An rtnetlink request from a test thread, acked; 0 or -errno. */
static int rt_request(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
	char buf[8192];
	ssize_t n;

	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	return mnl_cb_run(buf, n, 0, 0, NULL, NULL) < 0 ? -errno : 0;
}

static int rt_dellink(const char *name)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	struct ifinfomsg *ifi;
	int ret;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		if (nl)
			mnl_socket_close(nl);
		return -errno;
	}
	nlh->nlmsg_type = RTM_DELLINK;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	ret = rt_request(nl, nlh);
	mnl_socket_close(nl);
	return ret;
}

struct deleter {
	atomic_int go;
	unsigned int spins;
	int ret;
};

static void *deleter_fn(void *p)
{
	struct deleter *d = p;
	volatile unsigned int i;

	while (!atomic_load(&d->go))
		;
	for (i = 0; i < d->spins; i++)
		;
	d->ret = rt_dellink("lower1");
	return NULL;
}

#define RACE_ROUNDS	24
#define RACE_NICS	16

/*
 * The lower goes away while a guest is being created over it, at a
 * different instant each round.  Whatever the outcome -- refused before
 * sending, a NIC refused by the kernel, NICs created and then taken away
 * with their lower -- the call either succeeds or fails with a message, and
 * once the guest is destroyed nothing is left.
 */
TEST_F(hostile, lower_deleted_during_create)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = "lower1",
		  .name = "rc%d", .up = 1);
	unsigned int r, i, failed = 0;
	struct state s;

	state_take(_metadata, &s, -1);
	for (r = 0; r < RACE_ROUNDS; r++) {
		struct deleter d = { .spins = r * r * 2000 };
		struct vnic_guest *g;
		pthread_t t;
		int ret;

		ASSERT_EQ(0, st_lower_add("lower1", "lower1p"));
		ASSERT_EQ(0, vnic_guest_new(self->ctx, "grace", &g));
		for (i = 0; i < RACE_NICS; i++) {
			ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
		}
		ASSERT_EQ(0, pthread_create(&t, NULL, deleter_fn, &d));
		atomic_store(&d.go, 1);
		ret = vnic_guest_create(g);
		pthread_join(t, NULL);
		EXPECT_EQ(0, d.ret);
		if (ret) {
			failed++;
			EXPECT_NE(0, vnic_ctx_errmsg(self->ctx)[0])
				TH_LOG("round %u: %d with no message", r, ret);
		}
		EXPECT_EQ(0, vnic_guest_destroy(g))
			TH_LOG("round %u: %s", r, vnic_ctx_errmsg(self->ctx));
		/* lower1p went with lower1. */
		EXPECT_EQ(0, st_vnic_links_count());
	}
	TH_LOG("%u of %u rounds failed cleanly, the rest created", failed,
	       RACE_ROUNDS);
	state_same(_metadata, &s);
}

/* --- RLIMIT_NOFILE ---------------------------------------------------- */

/* Lower the soft limit so that exactly k more fds can be opened. */
static int fds_allow(unsigned int k, struct rlimit *old)
{
	struct rlimit rl;
	unsigned int m, free_below = 0;

	if (getrlimit(RLIMIT_NOFILE, old))
		return -errno;
	for (m = 0; m < old->rlim_cur; m++) {
		if (fcntl((int)m, F_GETFD) >= 0)
			continue;
		if (free_below == k)
			break;
		free_below++;
	}
	rl = *old;
	rl.rlim_cur = m;
	return setrlimit(RLIMIT_NOFILE, &rl) ? -errno : 0;
}

static void fds_restore(const struct rlimit *old)
{
	setrlimit(RLIMIT_NOFILE, old);
}

TEST_F(hostile, rlimit_ctx_new)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct vnic_ctx *ctx = (void *)1;
	struct rlimit old;
	int fds = st_count_fds(), ret;

	ASSERT_EQ(0, fds_allow(0, &old));
	ret = vnic_ctx_new(&o, &ctx);
	fds_restore(&old);
	EXPECT_EQ(-EMFILE, ret);
	EXPECT_EQ((void *)1, ctx);
	EXPECT_EQ(fds, st_count_fds());
}

/* One fd allowed: not enough for the link table's monitor socket too? */
TEST_F(hostile, rlimit_first_cache_use)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = "rl%d");
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	struct rlimit old;
	struct state s;
	int ret;

	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	ASSERT_EQ(0, vnic_guest_new(ctx, "grl", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	state_take(_metadata, &s, -1);
	ASSERT_EQ(0, fds_allow(0, &old));
	ret = vnic_guest_create(g);
	fds_restore(&old);
	expect_err(_metadata, ctx, ret, -EMFILE, "link table");
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
	vnic_ctx_free(ctx);
}

TEST_F(hostile, rlimit_target_namespace_socket)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = "rt0");
	struct netns_holder h;
	struct vnic_guest *g;
	struct rlimit old;
	struct state s;
	int ret;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	nic.netns_fd = h.fd;
	/* Before the guest holds its dup of h.fd. */
	state_take(_metadata, &s, h.fd);
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "grl", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	ASSERT_EQ(0, fds_allow(0, &old));
	ret = vnic_guest_create(g);
	fds_restore(&old);
	expect_err(_metadata, self->ctx, ret, -EMFILE, "socket in the target namespace");
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
	st_netns_holder_stop(&h);
}

/* Four queues, two fds allowed: the tap goes, persistent or not. */
static void rlimit_tap(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
		       uint32_t flags)
{
	VNIC_OPTS(vnic_nic_opts, ok, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "rlok0");
	VNIC_OPTS(vnic_nic_opts, nic, TAP, .name = "rlt%d", .queues = 4,
		  .tap_flags = flags);
	struct vnic_guest *g;
	struct rlimit old;
	struct state s;
	int ret;

	ASSERT_EQ(0, vnic_guest_new(ctx, "grl", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &ok, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	state_take(_metadata, &s, -1);
	ASSERT_EQ(0, fds_allow(2, &old));
	ret = vnic_guest_create(g);
	fds_restore(&old);
	expect_err(_metadata, ctx, ret, -EMFILE, "TUNSETIFF");
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
}

TEST_F(hostile, rlimit_tap_queues)
{
	rlimit_tap(_metadata, self->ctx, 0);
}

TEST_F(hostile, rlimit_tap_queues_persist)
{
	rlimit_tap(_metadata, self->ctx, VNIC_TAP_PERSIST);
}

TEST_F(hostile, rlimit_macvtap_open_queues)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .name = "rq0");
	int fds[4] = { -1, -1, -1, -1 };
	struct vnic_guest *g;
	struct rlimit old;
	struct state s;
	int ret;

	ASSERT_EQ(0, build_create(self->ctx, "grq", &nic, 1, &g));
	state_take(_metadata, &s, -1);
	ASSERT_EQ(0, fds_allow(2, &old));
	ret = vnic_guest_nic_open_queues(g, 0, fds, 4);
	fds_restore(&old);
	expect_err(_metadata, self->ctx, ret, -EMFILE, "queues of macvtap rq0");
	EXPECT_EQ(-1, fds[0]);
	state_same(_metadata, &s);
	EXPECT_EQ(0, vnic_guest_destroy(g));
}

/* --- the guest as a whole --------------------------------------------- */

TEST_F(hostile, guest_zero_nics)
{
	struct vnic_guest *g;
	struct state s;

	state_take(_metadata, &s, -1);
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gzero", &g));
	EXPECT_EQ(0, vnic_guest_create(g));
	EXPECT_EQ(0u, vnic_guest_nic_count(g));
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
}

/* More NICs than a 13-character prefix has names (two digits: 100). */
static void too_many(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
		     const struct vnic_nic_opts *nic, int err, const char *what)
{
	struct vnic_nic_opts nics[101];
	unsigned int i;

	for (i = 0; i < 101; i++)
		nics[i] = *nic;
	expect_refused(_metadata, ctx, nics, 101, err, what, -1);
}

TEST_F(hostile, too_many_nics_cache)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = P13 "%d");

	too_many(_metadata, self->ctx, &nic, -ENOSPC, "every name of this template");
}

/* The kernel's "%d" prints 100, IFNAMSIZ cuts it to an existing name. */
TEST_F(hostile, too_many_nics_kernel)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = P13 "%d",
		  .naming = VNIC_NAMING_KERNEL);

	too_many(_metadata, self->ctx, &nic, -EEXIST, "no free name of this template");
}

TEST_F(hostile, too_many_taps_cache)
{
	VNIC_OPTS(vnic_nic_opts, nic, TAP, .name = P13 "%d");

	too_many(_metadata, self->ctx, &nic, -ENOSPC, "no free name");
}

TEST_F(hostile, duplicate_explicit_names)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = "dup0");
	struct vnic_nic_opts nics[2] = { nic, nic };

	expect_refused(_metadata, self->ctx, nics, 2, -EEXIST, "dup0", -1);
}

/* NIC 1 is named like NIC 0's peer. */
TEST_F(hostile, veth_name_is_other_nics_peer)
{
	VNIC_OPTS(vnic_nic_opts, a, VETH, .name = "va0", .peer_name = "vb0");
	VNIC_OPTS(vnic_nic_opts, b, VETH, .name = "vb0", .peer_name = "vc0");
	struct vnic_nic_opts nics[2] = { a, b };

	expect_refused(_metadata, self->ctx, nics, 2, -EEXIST, "vb0", -1);
}

/* NIC 1's peer is named like NIC 0. */
TEST_F(hostile, veth_peer_is_other_nic)
{
	VNIC_OPTS(vnic_nic_opts, a, MVL, .name = "va0");
	VNIC_OPTS(vnic_nic_opts, b, VETH, .name = "vb0", .peer_name = "va0");
	struct vnic_nic_opts nics[2] = { a, b };

	expect_refused(_metadata, self->ctx, nics, 2, -EEXIST,
		       "peer name 'va0' is taken", -1);
}

/* A foreign device keeps its name, alias and everything else. */
TEST_F(hostile, explicit_name_taken_by_foreign)
{
	VNIC_OPTS(vnic_nic_opts, ok, MVT, .name = "ok0");
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = "fm0");
	struct vnic_nic_opts nics[2] = { ok, nic };

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name fm0 type macvlan && "
				"ip link set fm0 alias theirs", LOWER));
	expect_refused(_metadata, self->ctx, nics, 2, -EEXIST, "fm0", -1);
}

/* IFF_TUN_EXCL: never attach to someone else's persistent tap. */
TEST_F(hostile, tap_name_of_foreign_persistent_tap)
{
	VNIC_OPTS(vnic_nic_opts, nic, TAP, .name = "ftap0");

	ASSERT_EQ(0, st_run_cmd("ip tuntap add ftap0 mode tap"));
	expect_refused(_metadata, self->ctx, &nic, 1, -EEXIST, "ftap0", -1);
}

TEST_F(hostile, explicit_name_taken_in_target)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .name = "tk0");
	struct netns_holder h;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	ASSERT_EQ(0, st_run_cmd("ip link add link %s name tk0 type macvlan && "
				"ip link set tk0 netns %d", LOWER, h.pid));
	nic.netns_fd = h.fd;
	expect_refused(_metadata, self->ctx, &nic, 1, -EEXIST, "tk0", h.fd);
	st_netns_holder_stop(&h);
}

/* --- veth peers ------------------------------------------------------- */

BAD(veth_peer_missing, -EINVAL, "needs a peer name", VETH, .name = "v0")
BAD(veth_peer_same_as_name, -EINVAL, "the NIC's own name", VETH,
    .name = "v0", .peer_name = "v0")
BAD(veth_peer_taken, -EEXIST, "peer name '" LOWER_PEER "' is taken", VETH,
    .name = "v0", .peer_name = LOWER_PEER)
BAD(veth_peer_taken_kernel, -EEXIST, "peer name '" LOWER_PEER "' is taken",
    VETH, .name = "v%d", .naming = VNIC_NAMING_KERNEL, .peer_name = LOWER_PEER)

/* Cache naming: no round of retries under other names, none blamed. */
TEST_F(hostile, veth_peer_taken_cache)
{
	VNIC_OPTS(vnic_nic_opts, nic, VETH, .name = "v%d", .peer_name = LOWER_PEER);
	struct vnic_ctx_stats st = { .sz = sizeof(st) };

	expect_refused(_metadata, self->ctx, &nic, 1, -EEXIST,
		       "peer name '" LOWER_PEER "' is taken", -1);
	ASSERT_EQ(0, vnic_ctx_stats(self->ctx, &st));
	EXPECT_EQ(0u, st.name_retries);
}

/* The same name for both ends is fine when they live apart. */
TEST_F(hostile, veth_peer_same_name_other_namespace)
{
	VNIC_OPTS(vnic_nic_opts, nic, VETH, .name = "same0", .peer_name = "same0");
	struct netns_holder h;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	nic.peer_netns_fd = h.fd;
	expect_created(_metadata, self->ctx, &nic, 1, "same0");
	st_netns_holder_stop(&h);
}

TEST_F(hostile, veth_peer_taken_in_peer_namespace)
{
	VNIC_OPTS(vnic_nic_opts, nic, VETH, .name = "pv0", .peer_name = "eth0");
	struct netns_holder h;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	ASSERT_EQ(0, st_run_cmd("ip link add link %s name eth0 type macvlan && "
				"ip link set eth0 netns %d", LOWER, h.pid));
	nic.peer_netns_fd = h.fd;
	expect_refused(_metadata, self->ctx, &nic, 1, -EEXIST,
		       "peer name 'eth0' is taken", h.fd);
	st_netns_holder_stop(&h);
}

/* --- MAC addresses ---------------------------------------------------- */

BAD(mac_multicast, -EINVAL, "not a unicast", MVL, .mac = "01:00:5e:00:00:01")
BAD(mac_zero, -EINVAL, "not a unicast", MVL, .mac = "00:00:00:00:00:00")
BAD(mac_malformed, -EINVAL, "not a unicast", MVL, .mac = "02:00:00:00:00:0g")
BAD(mac_mixed_separators, -EINVAL, "not a unicast", MVL,
    .mac = "02:00-00:00:00:01")
GOOD(mac_dashes, NULL, MVL, .mac = "02-00-00-00-00-01")
BAD(mac_on_tun, -EINVAL, "no MAC address", .kind = VNIC_KIND_TUN,
    .mac = "02:00:00:00:00:01")

/* An up macvlan's MAC must be free on its lower (macvlan_open). */
TEST_F(hostile, mac_of_foreign_macvlan)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .mac = "02:00:00:00:00:99", .up = 1);

	ASSERT_EQ(0, st_run_cmd("ip link add link %s name fm0 address "
				"02:00:00:00:00:99 type macvlan && "
				"ip link set fm0 up", LOWER));
	expect_refused(_metadata, self->ctx, &nic, 1, -EADDRINUSE, "MAC is in use", -1);
}

TEST_F(hostile, mac_twice_in_guest)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .mac = "02:00:00:00:00:55", .up = 1);
	struct vnic_nic_opts nics[2] = { nic, nic };

	expect_refused(_metadata, self->ctx, nics, 2, -EADDRINUSE,
		       "nic 1: macvtap macvtap1: its MAC is in use", -1);
}

TEST_F(hostile, mac_of_lower)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVL, .up = 1);
	struct ip_link l;

	ASSERT_EQ(0, st_ip_link_get(LOWER, &l));
	nic.mac = l.address;
	expect_refused(_metadata, self->ctx, &nic, 1, -EADDRINUSE, "MAC is in use", -1);
}

/* --- MTU and queues --------------------------------------------------- */

BAD(mtu_above_lower, -EINVAL, "MTU 1501 above the 1500 of lower device", MVL,
    .mtu = 1501)
GOOD(mtu_equal_to_lower, NULL, MVL, .mtu = 1500)
BAD(mtu_above_lower_macvtap, -EINVAL, "MTU 9000 above", MVT, .mtu = 9000)
BAD(tap_queues_257, -EINVAL, "at most 256 queues", TAP, .queues = 257)
BAD(tap_queues_huge, -EINVAL, "at most 256 queues", TAP, .queues = 0xffffffffu)
BAD(queues_on_macvtap, -EINVAL, "takes no tap options", MVT, .queues = 2)
GOOD(tap_queues_256, NULL, TAP, .queues = 256)

/* 0 means 1: one fd to hand over, not two. */
TEST_F(hostile, tap_queues_0_is_1)
{
	VNIC_OPTS(vnic_nic_opts, nic, TAP, .queues = 0);
	struct vnic_guest *g;
	struct state s;
	int fds[2] = { -1, -1 };

	state_take(_metadata, &s, -1);
	ASSERT_EQ(0, build_create(self->ctx, "gq", &nic, 1, &g));
	expect_err(_metadata, self->ctx, vnic_guest_nic_open_queues(g, 0, fds, 2),
		   -EINVAL, "has 1 queues");
	EXPECT_EQ(-1, fds[0]);
	ASSERT_EQ(0, vnic_guest_nic_open_queues(g, 0, fds, 1));
	EXPECT_LE(0, fds[0]);
	close(fds[0]);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	state_same(_metadata, &s);
}

static void open_queues_refused(struct __test_metadata *_metadata,
				struct vnic_ctx *ctx, unsigned int idx,
				unsigned int n, const char *what)
{
	VNIC_OPTS(vnic_nic_opts, nic, MVT, .name = "oq0");
	struct vnic_guest *g;
	struct state s;
	int *fds = calloc(n + 1, sizeof(*fds));

	ASSERT_NE(NULL, fds);
	ASSERT_EQ(0, build_create(ctx, "gq", &nic, 1, &g));
	state_take(_metadata, &s, -1);
	expect_err(_metadata, ctx, vnic_guest_nic_open_queues(g, idx, fds, n),
		   -EINVAL, what);
	state_same(_metadata, &s);
	EXPECT_EQ(0, vnic_guest_destroy(g));
	free(fds);
}

TEST_F(hostile, macvtap_open_queues_0)
{
	open_queues_refused(_metadata, self->ctx, 0, 0, "asked for 0 queue fds");
}

TEST_F(hostile, macvtap_open_queues_257)
{
	open_queues_refused(_metadata, self->ctx, 0, 257, "at most 256");
}

TEST_F(hostile, macvtap_open_queues_no_such_nic)
{
	open_queues_refused(_metadata, self->ctx, 7, 1, "no nic 7");
}

/* --- owners and guest names ------------------------------------------- */

static void expect_bad_guest(struct __test_metadata *_metadata,
			     struct vnic_ctx *ctx, const char *name)
{
	struct vnic_guest *g = (void *)1;
	int fds = st_count_fds();

	expect_err(_metadata, ctx, vnic_guest_new(ctx, name, &g), -EINVAL,
		   "guest name");
	EXPECT_EQ((void *)1, g);
	EXPECT_EQ(fds, st_count_fds());
}

TEST_F(hostile, guest_name_utf8)
{
	expect_bad_guest(_metadata, self->ctx, "g\xc3\xa9");
}

TEST_F(hostile, guest_name_newline)
{
	expect_bad_guest(_metadata, self->ctx, "g\n1");
}

TEST_F(hostile, guest_name_tag_lookalike)
{
	expect_bad_guest(_metadata, self->ctx, "vnic:" OWNER ":g:0");
}

static void expect_bad_owner(struct __test_metadata *_metadata, const char *owner)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = owner);
	struct vnic_ctx *ctx = (void *)1;
	int fds = st_count_fds();

	EXPECT_EQ(-EINVAL, vnic_ctx_new(&o, &ctx));
	EXPECT_EQ((void *)1, ctx);
	EXPECT_EQ(fds, st_count_fds());
}

TEST_F(hostile, owner_utf8)
{
	expect_bad_owner(_metadata, "\xc3\xa9t\xc3\xa9");
}

TEST_F(hostile, owner_100_chars)
{
	char owner[101];

	memset(owner, 'o', 100);
	owner[100] = '\0';
	expect_bad_owner(_metadata, owner);
}

/* --- a namespace with many devices ------------------------------------ */

/*
 * n macvlans prefixN (N from 0) over the lower, raw rtnetlink in windows of
 * acked requests: a foreign creator, and the fastest one.
 */
static int bulk_macvlans(const int *lowers, unsigned int nlowers,
			 const char *prefix, unsigned int n)
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	static char buf[256 * 256], rbuf[1 << 16];
	unsigned int i = 0, k, w;
	int ret = 0;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	while (!ret && i < n) {
		size_t off = 0;

		for (w = 0; w < 256 && i < n; w++, i++) {
			struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf + off);
			struct ifinfomsg *ifi;
			struct nlattr *li;
			char name[IFNAMSIZ];

			nlh->nlmsg_type = RTM_NEWLINK;
			nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
					   NLM_F_CREATE | NLM_F_EXCL;
			nlh->nlmsg_seq = i + 1;
			ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
			ifi->ifi_family = AF_UNSPEC;
			snprintf(name, sizeof(name), "%s%u", prefix, i);
			mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
			mnl_attr_put_u32(nlh, IFLA_LINK, (uint32_t)lowers[i % nlowers]);
			li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
			mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "macvlan");
			mnl_attr_nest_end(nlh, li);
			off += nlh->nlmsg_len;
		}
		if (mnl_socket_sendto(nl, buf, off) < 0) {
			ret = -errno;
			break;
		}
		for (k = 0; !ret && k < w;) {
			ssize_t len = mnl_socket_recvfrom(nl, rbuf, sizeof(rbuf));
			struct nlmsghdr *nlh = (struct nlmsghdr *)rbuf;

			if (len < 0) {
				ret = -errno;
				break;
			}
			for (; mnl_nlmsg_ok(nlh, (int)len); nlh = mnl_nlmsg_next(nlh, (int *)&len)) {
				struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

				if (nlh->nlmsg_type != NLMSG_ERROR)
					continue;
				k++;
				if (e->error)
					ret = e->error;
			}
		}
	}
	mnl_socket_close(nl);
	return ret;
}

/*
 * The kernel links every macvlan into its lower's adjacency lists, a walk
 * of all the lower's uppers per create: 60,000 on one lower took 17 minutes
 * (quadratic), so the foreign devices are spread over lowers of 1,000.
 */
#define PER_LOWER	1000

/*
 * libvnic names and creates correctly next to n foreign devices named
 * like its template: the cache continues after them, and so does the
 * kernel's "%d" while a free suffix is below its limit of 32768 (past it:
 * -ENOSPC, said so); an explicit name among them is refused, and none of
 * them is touched.
 */
static void many_devices(struct __test_metadata *_metadata, struct vnic_ctx *ctx,
			 unsigned int n)
{
	VNIC_OPTS(vnic_nic_opts, cache, MVL, .name = "fm%d");
	VNIC_OPTS(vnic_nic_opts, kern, MVL, .name = "fm%d",
		  .naming = VNIC_NAMING_KERNEL);
	VNIC_OPTS(vnic_nic_opts, taken, MVL, .name = "fm17");
	unsigned int nlowers = (n + PER_LOWER - 1) / PER_LOWER, i;
	struct vnic_nic_opts nics[10];
	struct vnic_nic_info info = { .sz = sizeof(info) };
	struct vnic_guest *g;
	struct ip_link l;
	char name[IFNAMSIZ], peer[IFNAMSIZ];
	long long t0, t1;
	struct state s;
	int *lowers;

	lowers = calloc(nlowers, sizeof(*lowers));
	ASSERT_NE(NULL, lowers);
	for (i = 0; i < nlowers; i++) {
		snprintf(name, sizeof(name), "lw%u", i);
		snprintf(peer, sizeof(peer), "lwp%u", i);
		ASSERT_EQ(0, st_lower_add(name, peer));
		ASSERT_EQ(0, st_ip_link_get(name, &l));
		lowers[i] = l.ifindex;
	}
	t0 = st_now_ms();
	ASSERT_EQ(0, bulk_macvlans(lowers, nlowers, "fm", n));
	t1 = st_now_ms();
	free(lowers);
	TH_LOG("%u foreign macvlans over %u lowers created in %lld ms", n,
	       nlowers, t1 - t0);
	state_take(_metadata, &s, -1);
	TH_LOG("ip -j -d link of the namespace read in %lld ms", st_now_ms() - t1);

	for (i = 0; i < 10; i++)
		nics[i] = cache;
	t0 = st_now_ms();
	ASSERT_EQ(0, vnic_ctx_refresh(ctx));
	t1 = st_now_ms();
	ASSERT_EQ(0, build_create(ctx, "gmany", nics, 10, &g))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	TH_LOG("link table rebuilt in %lld ms, 10 cache-named NICs created in "
	       "%lld ms", t1 - t0, st_now_ms() - t1);
	/* Every name fmN below n is taken: the cache continues at n. */
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		snprintf(name, sizeof(name), "fm%u", n + i);
		EXPECT_STREQ(name, info.name);
		ASSERT_EQ(0, st_ip_link_get(info.name, &l));
		EXPECT_EQ(info.ifindex, l.ifindex);
	}
	t0 = st_now_ms();
	EXPECT_EQ(0, vnic_guest_destroy(g));
	TH_LOG("destroyed in %lld ms", st_now_ms() - t0);

	for (i = 0; i < 10; i++)
		nics[i] = kern;
	if (n + 10 > 32768) {
		expect_refused(_metadata, ctx, nics, 10, -ENOSPC,
			       "found no free suffix below 32768", -1);
	} else {
		t0 = st_now_ms();
		ASSERT_EQ(0, build_create(ctx, "gmany", nics, 10, &g))
			TH_LOG("%s", vnic_ctx_errmsg(ctx));
		TH_LOG("10 kernel-named NICs created in %lld ms", st_now_ms() - t0);
		for (i = 0; i < 10; i++) {
			ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
			snprintf(name, sizeof(name), "fm%u", n + i);
			EXPECT_STREQ(name, info.name);
		}
		EXPECT_EQ(0, vnic_guest_destroy(g));
	}
	expect_refused(_metadata, ctx, &taken, 1, -EEXIST, "fm17", -1);
	state_same(_metadata, &s);
}

TEST_F_TIMEOUT(hostile, namespace_with_4000_devices, 120)
{
	many_devices(_metadata, self->ctx, 4000);
}

TEST_F_TIMEOUT(hostile, namespace_with_60000_devices, 3600)
{
	if (!getenv("VNIC_HEAVY"))
		SKIP(return, "set VNIC_HEAVY=1 to run (minutes)");
	many_devices(_metadata, self->ctx, 60000);
}

/* --- a link whose message is larger than 64 KiB --------------------- */

/*
 * Anyone with CAP_NET_ADMIN in the namespace can give a link hundreds of
 * alternative names (128 bytes each): every RTM_NEWLINK about it, in a
 * dump or an event, then runs past 64 KiB.  The dumps must read it whole
 * (iproute2 does), not fail every cache-named create, list and gc with
 * ENOSPC; and a kernel-named NIC found by its MAC (no echo) must not be
 * left behind because that dump failed.  The link changes once the table
 * is built, so that the monitor reads its events too.
 */
#define BIG_ALTNAMES 496

static void big_link(struct __test_metadata *_metadata)
{
	char path[] = "/tmp/vnic-altnames-XXXXXX";
	int fd = mkstemp(path), i;
	FILE *f;

	ASSERT_LE(0, fd);
	f = fdopen(fd, "w");
	ASSERT_NE(NULL, f);
	for (i = 0; i < BIG_ALTNAMES; i++)
		fprintf(f, "link property add dev big0 altname a%0126d\n", i);
	fclose(f);
	ASSERT_EQ(0, st_run_cmd("ip link add big0 type veth peer name big0p"));
	EXPECT_EQ(0, st_run_cmd("ip -batch %s", path));
	unlink(path);
}

static void big_create(struct __test_metadata *_metadata, uint32_t flags,
		       enum vnic_naming naming)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = flags);
	VNIC_OPTS(vnic_nic_opts, nic, VETH, .name = "hb%d", .naming = naming,
		  .peer_name = "hbp", .up = 1);
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
	char **names = NULL;
	unsigned int n = 0;
	struct state s;

	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	/* The link table and its monitor socket now, before the fd count. */
	EXPECT_EQ(0, vnic_ctx_refresh(ctx)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	state_take(_metadata, &s, -1);
	ASSERT_EQ(0, vnic_guest_new(ctx, "gbig", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	EXPECT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	/* The monitor (if any) now gets events of more than 32 KiB. */
	EXPECT_EQ(0, st_run_cmd("ip link set big0 up && ip link set big0 down"));
	EXPECT_EQ(0, vnic_guest_list(ctx, &names, &n)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(1u, n);
	free(names);
	EXPECT_EQ(0, vnic_guest_destroy(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	ASSERT_EQ(0, vnic_guest_new(ctx, "gbig", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	EXPECT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ(0, vnic_guest_destroy(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	state_same(_metadata, &s);
	vnic_ctx_free(ctx);
}

TEST_F(hostile, link_message_over_64k)
{
	big_link(_metadata);
	big_create(_metadata, 0, VNIC_NAMING_CACHE);
	big_create(_metadata, VNIC_CTX_NO_ECHO, VNIC_NAMING_KERNEL);
	big_create(_metadata, VNIC_CTX_NO_MONITOR, VNIC_NAMING_CACHE);
}

TEST_HARNESS_MAIN
