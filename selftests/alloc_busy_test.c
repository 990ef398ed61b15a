// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A busy namespace never makes an operation fail.
 *
 * dump.*: this binary interposes recvmsg() and, when armed, marks every
 * dump reply NLM_F_DUMP_INTR, as the kernel does when links change while it
 * dumps; the first time, it also has ip(8) create a link in the middle of
 * the dump.  Every operation that dumps must still succeed, and the link
 * born during the table's dump must be known without an EEXIST.
 *
 * crowd.*: eight processes create 50 macvtaps each at once, in a namespace
 * that already holds 100 macvtaps on the same lower, next to an outside
 * process that creates and deletes macvtaps of the same name range all the
 * while.  No creator fails, the 400 names are distinct and carry their
 * creator's tag, and gc leaves nothing behind.  Repeated CROWD_REPS times.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"

#define OWNER		"bz"
#define CREATORS	8
#define PER		50
#define CROWD_REPS	3
#define BACKGROUND	100	/* macvtaps already on the lower */
#define CHURN_RANGE	(BACKGROUND + CREATORS * PER + 40)
#define CHURN_GROUP	77
#define BACKGROUND_GROUP 78

static struct {
	bool armed;
	bool spawn;		/* create a link during the next dump */
	int marked;		/* dump messages marked interrupted */
} hook;

static void mark_dump(void *buf, ssize_t len)
{
	struct nlmsghdr *nlh = buf;
	int rem = (int)len;

	for (; NLMSG_OK(nlh, rem); nlh = NLMSG_NEXT(nlh, rem)) {
		if (!(nlh->nlmsg_flags & NLM_F_MULTI))
			continue;	/* an ack or an event: not a dump */
		nlh->nlmsg_flags |= NLM_F_DUMP_INTR;
		hook.marked++;
		if (hook.spawn) {
			hook.spawn = false;
			st_run_cmd("ip link add link %s name c0 type macvlan", LOWER);
		}
	}
}

/* libmnl reads with recvmsg(): the executable's definition wins.  Only
 * what was copied is parsed: nl_recv() peeks at a datagram's length with
 * a 1-byte buffer and MSG_TRUNC (n is then the whole datagram's), and the
 * read that takes it is the one to mark. */
ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t n = syscall(SYS_recvmsg, fd, msg, flags);
	int dom = 0;
	socklen_t sl = sizeof(dom);

	if (hook.armed && n > 0 && !(flags & MSG_PEEK) && msg->msg_iovlen == 1 &&
	    !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &sl) && dom == AF_NETLINK)
		mark_dump(msg->msg_iov[0].iov_base,
			  n < (ssize_t)msg->msg_iov[0].iov_len ? n :
			  (ssize_t)msg->msg_iov[0].iov_len);
	return n;
}

FIXTURE(dump) {
	struct vnic_ctx *ctx;
};

FIXTURE_VARIANT(dump) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(dump, monitor) { 0 };
FIXTURE_VARIANT_ADD(dump, noecho) { VNIC_CTX_NO_ECHO };
FIXTURE_VARIANT_ADD(dump, nomonitor) { VNIC_CTX_NO_MONITOR };

FIXTURE_SETUP(dump)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER, .flags = variant->flags);

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
}

FIXTURE_TEARDOWN(dump)
{
	hook.armed = false;
	vnic_ctx_free(self->ctx);
}

/*
 * Refresh, create (cache and kernel naming; without the echo the kernel-
 * named NIC is found by a dump), list, adopt and gc, every dump marked
 * interrupted: all succeed.  c0, born during the table's dump, is skipped
 * without an EEXIST retry: the monitor queue completed the dump.
 */
TEST_F(dump, interrupted_dumps_never_fail)
{
	VNIC_OPTS(vnic_nic_opts, cache, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "c%d", .naming = VNIC_NAMING_CACHE);
	VNIC_OPTS(vnic_nic_opts, kern, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "k%d", .naming = VNIC_NAMING_KERNEL);
	struct vnic_guest *g, *a;
	struct vnic_ctx_stats st;
	unsigned int i, n, count, deleted = 0, seen = 0;
	char **names;

	hook = (typeof(hook)){ .armed = true, .spawn = true };
	ASSERT_EQ(0, vnic_ctx_refresh(self->ctx)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_FALSE(hook.spawn);
	ASSERT_LT(0, hook.marked);

	ASSERT_EQ(0, vnic_guest_new(self->ctx, "g1", &g));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, vnic_guest_add_nic(g, &cache, NULL));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &kern, NULL));
	ASSERT_EQ(0, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	for (i = 0; i < 3; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		ASSERT_EQ(0, vnic_guest_nic_info(g, i, &info));
		ASSERT_TRUE(st_name_suffix(info.name, "c", &n)) TH_LOG("%s", info.name);
		seen |= 1u << n;
	}
	EXPECT_EQ(0xeu, seen);
	ST_STATS(self->ctx, &st);
	EXPECT_EQ(0ULL, st.name_retries);
	EXPECT_LE(1ULL, st.dumps_interrupted);
	if (variant->flags & VNIC_CTX_NO_MONITOR)	/* retried, then kept */
		EXPECT_LE(8ULL, st.dumps_interrupted);

	ASSERT_EQ(0, vnic_guest_list(self->ctx, &names, &count))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	ASSERT_EQ(1U, count);
	EXPECT_STREQ("g1", names[0]);
	free(names);
	ASSERT_EQ(0, vnic_guest_adopt(self->ctx, "g1", &a))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(4U, vnic_guest_nic_count(a));
	vnic_guest_free(a);
	vnic_guest_free(g);
	ASSERT_EQ(0, vnic_collect_orphans(self->ctx, NULL, 0, &deleted))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	hook.armed = false;
	EXPECT_EQ(4U, deleted);
	EXPECT_EQ(0, st_vnic_links_count());
	EXPECT_EQ(1, st_prefixed_links_count("c"));	/* ip's own c0 */
}

/* --- crowd -------------------------------------------------------------- */

struct crowd_shared {
	volatile int stop;
	int err[CREATORS];
	char msg[CREATORS][256];
	char names[CREATORS][PER][IFNAMSIZ];
	unsigned long long retries, resyncs, intr;
	int churns;		/* rounds of the outside process */
	int churn_adds;		/* its adds that got their name */
	long long ms[CREATORS];
};

/* Creator k: a context of its own (echo or not, monitor or not, cache or
 * kernel naming: every path), 50 macvtaps in one call. */
static int creator(int k, int go, struct crowd_shared *sh)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER,
		  .flags = (k & 1 ? VNIC_CTX_NO_ECHO : 0) |
			   (k == 6 ? VNIC_CTX_NO_MONITOR : 0));
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP, .lower = LOWER,
		  .name = "macvtap%d",
		  .naming = k == 7 ? VNIC_NAMING_KERNEL : VNIC_NAMING_CACHE);
	VNIC_OPTS(vnic_ctx_stats, st);
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
	/* Half build their table before the start, half on first use. */
	if (k < CREATORS / 2 && vnic_ctx_refresh(ctx))
		return 1;
	if (read(go, &c, 1) < 0)
		return 1;
	sh->ms[k] = st_now_ms();
	sh->err[k] = vnic_guest_create(g);
	sh->ms[k] = st_now_ms() - sh->ms[k];
	snprintf(sh->msg[k], sizeof(sh->msg[k]), "%s", vnic_ctx_errmsg(ctx));
	for (i = 0; !sh->err[k] && i < PER; i++) {
		VNIC_OPTS(vnic_nic_info, info);

		if (vnic_guest_nic_info(g, i, &info))
			return 1;
		memcpy(sh->names[k][i], info.name, IFNAMSIZ);
	}
	if (!vnic_ctx_stats(ctx, &st)) {
		__atomic_fetch_add(&sh->retries, st.name_retries, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->resyncs, st.resyncs, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->intr, st.dumps_interrupted, __ATOMIC_RELAXED);
	}
	/* The NICs stay, for the parent to inspect and collect. */
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
	return 0;
}

/* One request of the outside process, answered before the next. */
static int churn_req(struct mnl_socket *nl, struct nlmsghdr *nlh, char *buf)
{
	ssize_t n;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	n = mnl_socket_recvfrom(nl, buf, MNL_SOCKET_BUFFER_SIZE);
	if (n < 0)
		return -errno;
	return mnl_cb_run(buf, n, 0, 0, NULL, NULL) < 0 ? -errno : 0;
}

static struct nlmsghdr *churn_msg(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_u32(nlh, IFLA_GROUP, CHURN_GROUP);
	return nlh;
}

/* The outside process, another program on raw rtnetlink: adds macvtaps of
 * random names of the same range in a group of its own, then deletes the
 * group, until told to stop.  Deleting by group never touches a creator's
 * NIC; an add that finds its name taken just fails. */
static int churner(int go, struct crowd_shared *sh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], name[IFNAMSIZ], c;
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	unsigned int lower = if_nametoindex(LOWER);
	struct nlmsghdr *nlh;
	struct nlattr *info;
	int i;

	if (!nl || !lower || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    read(go, &c, 1) < 0)
		return 1;
	srandom((unsigned int)getpid());
	while (!sh->stop) {
		for (i = 0; i < 16; i++) {
			snprintf(name, sizeof(name), "macvtap%ld", random() % CHURN_RANGE);
			nlh = churn_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
			mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
			mnl_attr_put_u32(nlh, IFLA_LINK, lower);
			info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
			mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "macvtap");
			mnl_attr_nest_end(nlh, info);
			sh->churn_adds += !churn_req(nl, nlh, buf);
		}
		if (churn_req(nl, churn_msg(buf, RTM_DELLINK, 0), buf) &&
		    errno != ENODEV)
			return 1;
		sh->churns++;
	}
	mnl_socket_close(nl);
	return 0;
}

FIXTURE(crowd) {
	int unused;
};

FIXTURE_SETUP(crowd)
{
	ST_SETUP_NETNS();
	ASSERT_EQ(0, st_run_cmd("for i in $(seq 0 %d); do echo link add link %s "
				"name macvtap$i group %d type macvtap; done | ip -batch -",
				BACKGROUND - 1, LOWER, BACKGROUND_GROUP));
}

FIXTURE_TEARDOWN(crowd)
{
	st_macvtaps_flush();
}

static void crowd_run(struct __test_metadata *_metadata, struct crowd_shared *sh)
{
	pid_t pids[CREATORS + 1];
	int go[2], k, st;

	ASSERT_EQ(0, pipe(go));
	for (k = 0; k <= CREATORS; k++) {
		pids[k] = fork();
		ASSERT_LE(0, pids[k]);
		if (pids[k] == 0) {
			close(go[1]);
			_exit(k < CREATORS ? creator(k, go[0], sh) : churner(go[0], sh));
		}
	}
	close(go[0]);
	usleep(200 * 1000);
	close(go[1]);	/* everyone starts at once */
	for (k = 0; k < CREATORS; k++) {
		ASSERT_EQ(pids[k], waitpid(pids[k], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("creator %d setup failed", k);
	}
	sh->stop = 1;
	ASSERT_EQ(pids[CREATORS], waitpid(pids[CREATORS], &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The 400 names: distinct, each a macvtap with its creator's tag. */
static void crowd_check(struct __test_metadata *_metadata, struct crowd_shared *sh)
{
	static char all[CREATORS * PER][IFNAMSIZ];
	char alias[64];
	struct ip_link l;
	json_t *links;
	int k, i;

	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	for (k = 0; k < CREATORS; k++) {
		for (i = 0; i < PER; i++) {
			ASSERT_EQ(0, st_ip_link_find(links, sh->names[k][i], &l))
				TH_LOG("%s missing", sh->names[k][i]);
			snprintf(alias, sizeof(alias), "vnic:%s:g%d:%d", OWNER, k, i);
			EXPECT_STREQ(alias, l.alias);
			EXPECT_STREQ("macvtap", l.kind);
			memcpy(all[k * PER + i], sh->names[k][i], IFNAMSIZ);
		}
	}
	EXPECT_EQ(CREATORS * PER, st_ip_links_count(links, "vnic:" OWNER ":"));
	json_decref(links);
	qsort(all, CREATORS * PER, IFNAMSIZ, cmp_name);
	for (i = 1; i < CREATORS * PER; i++)
		EXPECT_STRNE(all[i - 1], all[i]);
}

TEST_F_TIMEOUT(crowd, eight_creators_next_to_outside_churn, 120)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = OWNER);
	struct crowd_shared *sh;
	unsigned int deleted;
	struct vnic_ctx *ctx;
	json_t *links;
	int rep, k;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	for (rep = 0; rep < CROWD_REPS; rep++) {
		long long slowest = 0;

		memset(sh, 0, sizeof(*sh));
		crowd_run(_metadata, sh);
		for (k = 0; k < CREATORS; k++)
			EXPECT_EQ(0, sh->err[k]) TH_LOG("rep %d creator %d: %s",
							rep, k, sh->msg[k]);
		ASSERT_EQ(0, _metadata->exit_code);
		crowd_check(_metadata, sh);
		for (k = 0; k < CREATORS; k++)
			slowest = sh->ms[k] > slowest ? sh->ms[k] : slowest;
		TH_LOG("rep %d: slowest create %lld ms, name retries %llu, resyncs %llu, "
		       "interrupted dumps %llu, outside rounds %d (%d adds)", rep,
		       slowest, sh->retries, sh->resyncs, sh->intr, sh->churns,
		       sh->churn_adds);
		EXPECT_LT(0, sh->churns);
		deleted = 0;
		ASSERT_EQ(0, vnic_collect_orphans(ctx, NULL, 0, &deleted))
			TH_LOG("%s", vnic_ctx_errmsg(ctx));
		EXPECT_EQ((unsigned int)(CREATORS * PER), deleted);
		ASSERT_EQ(0, st_vnic_links_count());
		ASSERT_EQ(0, _metadata->exit_code);
	}
	vnic_ctx_free(ctx);
	munmap(sh, sizeof(*sh));
	/* Nothing left but the background, the lower pair and lo. */
	ASSERT_EQ(BACKGROUND, st_prefixed_links_count("macvtap"));
	ASSERT_EQ(0, st_run_cmd("ip link del group %d", BACKGROUND_GROUP));
	ASSERT_EQ(0, st_prefixed_links_count("macvtap"));
	links = st_ip_links(-1);
	ASSERT_NE(NULL, links);
	EXPECT_EQ(3U, json_array_size(links));	/* lo, the lower and its peer */
	json_decref(links);
}

TEST_HARNESS_MAIN
