// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The netlink transport and the nf_tables probe, seen from outside.
 *
 *   probe.*     opening an nft handle asks the kernel for its features with
 *               batches it checks and discards: the ruleset stays empty and
 *               its generation does not move; each feature it reports is
 *               one the kernel accepts when the same thing is committed for
 *               real (with BATCH_END) by this test, and each it does not
 *               report is refused.
 *   callback.*  an error returned by a reply callback reaches the caller of
 *               the library (the link table's dump, through lib/nl.c).
 *   seq_wrap    a batch whose sequence numbers wrap past UINT32_MAX (after
 *               2^32 requests of one context) gets every ack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <libnftnl/common.h>
#include <vnic/vnic.h>

/* The harness's setjmp trips -Wclobbered under -O2; its variables are not
 * used after a longjmp. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"
#include "lib/testing.h"

#ifndef NFT_TABLE_F_PERSIST
#define NFT_TABLE_F_PERSIST 0x4
#endif
#ifndef NFTA_DEVICE_PREFIX
#define NFTA_DEVICE_PREFIX 2
#endif

/* --- a small nfnetlink client of the test's own ------------------------ */

struct pnl {
	struct mnl_socket *nl;
	uint32_t seq;
	char buf[16384];
	size_t len;
};

static int pnl_open(struct pnl *p)
{
	memset(p, 0, sizeof(*p));
	p->nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!p->nl || mnl_socket_bind(p->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	p->seq = (uint32_t)time(NULL);
	return 0;
}

static void pnl_close(struct pnl *p)
{
	if (p->nl)
		mnl_socket_close(p->nl);
}

/* The first error the kernel answers to what was sent, or 0 (every
 * message carries NLM_F_ACK, so every message answers). */
static int pnl_answer(struct pnl *p, unsigned int acks)
{
	char rb[MNL_SOCKET_BUFFER_SIZE];
	int first = 0;

	while (acks) {
		int n = (int)mnl_socket_recvfrom(p->nl, rb, sizeof(rb));
		const struct nlmsghdr *nlh = (const void *)rb;

		if (n < 0)
			return -errno;
		for (; mnl_nlmsg_ok(nlh, n); nlh = mnl_nlmsg_next(nlh, &n)) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (nlh->nlmsg_type != NLMSG_ERROR)
				continue;
			acks--;
			if (!first)
				first = e->error;
			if (e->error && nlh->nlmsg_seq == p->seq - 1)
				return first;	/* the batch as a whole */
		}
	}
	return first;
}

static uint32_t pnl_genid(struct pnl *p)
{
	char rb[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(p->buf, NFT_MSG_GETGEN,
						     NFPROTO_UNSPEC, NLM_F_ACK, ++p->seq);
	uint32_t gen = 0;
	bool done = false;

	if (mnl_socket_sendto(p->nl, nlh, nlh->nlmsg_len) < 0)
		return 0;
	while (!done) {
		int n = (int)mnl_socket_recvfrom(p->nl, rb, sizeof(rb));
		const struct nlmsghdr *r = (const void *)rb;

		if (n < 0)
			return 0;
		for (; mnl_nlmsg_ok(r, n); r = mnl_nlmsg_next(r, &n)) {
			const struct nlattr *a;

			if (r->nlmsg_type == NLMSG_ERROR) {
				done = true;
				continue;
			}
			mnl_attr_for_each(a, r, sizeof(struct nfgenmsg))
				if (mnl_attr_get_type(a) == NFTA_GEN_ID)
					gen = ntohl(mnl_attr_get_u32(a));
		}
	}
	return gen;
}

/* A batch: BEGIN (genid, 0: none), the messages put by the caller, END. */
static struct nlmsghdr *pnl_begin(struct pnl *p, uint32_t genid)
{
	struct nlmsghdr *nlh = nftnl_batch_begin(p->buf, ++p->seq);

	if (genid)
		mnl_attr_put_u32(nlh, NFNL_BATCH_GENID, htonl(genid));
	p->len = MNL_ALIGN(nlh->nlmsg_len);
	return nlh;
}

static struct nlmsghdr *pnl_msg(struct pnl *p, uint16_t type)
{
	return nftnl_nlmsg_build_hdr(p->buf + p->len, type, NFPROTO_NETDEV,
				     NLM_F_CREATE | NLM_F_ACK, ++p->seq);
}

static void pnl_put(struct pnl *p, struct nlmsghdr *nlh)
{
	p->len += MNL_ALIGN(nlh->nlmsg_len);
}

/* END, send, and the first error of the answers to msgs messages. */
static int pnl_commit(struct pnl *p, unsigned int msgs)
{
	struct nlmsghdr *end = nftnl_batch_end(p->buf + p->len, ++p->seq);

	p->seq++;	/* p->seq - 1 is END's: a batch error names BEGIN or END */
	p->len += MNL_ALIGN(end->nlmsg_len);
	if (mnl_socket_sendto(p->nl, p->buf, p->len) < 0)
		return -errno;
	return pnl_answer(p, msgs);
}

static void put_table(struct pnl *p, const char *name, uint32_t flags)
{
	struct nlmsghdr *nlh = pnl_msg(p, NFT_MSG_NEWTABLE);

	mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, name);
	mnl_attr_put_u32(nlh, NFTA_TABLE_FLAGS, htonl(flags));
	pnl_put(p, nlh);
}

static void put_chain(struct pnl *p, const char *table, const char *name,
		      uint32_t hook, uint16_t attr, const char *dev)
{
	struct nlmsghdr *nlh = pnl_msg(p, NFT_MSG_NEWCHAIN);
	struct nlattr *h, *d;

	mnl_attr_put_strz(nlh, NFTA_CHAIN_TABLE, table);
	mnl_attr_put_strz(nlh, NFTA_CHAIN_NAME, name);
	h = mnl_attr_nest_start(nlh, NFTA_CHAIN_HOOK);
	mnl_attr_put_u32(nlh, NFTA_HOOK_HOOKNUM, htonl(hook));
	mnl_attr_put_u32(nlh, NFTA_HOOK_PRIORITY, htonl(0));
	d = mnl_attr_nest_start(nlh, NFTA_HOOK_DEVS);
	mnl_attr_put_strz(nlh, attr, dev);
	mnl_attr_nest_end(nlh, d);
	mnl_attr_nest_end(nlh, h);
	mnl_attr_put_u32(nlh, NFTA_CHAIN_POLICY, htonl(NF_ACCEPT));
	mnl_attr_put_strz(nlh, NFTA_CHAIN_TYPE, "filter");
	pnl_put(p, nlh);
}

/* Objects (tables, chains...) `nft -j list ruleset` shows; -1 on error. */
static int ruleset_objects(void)
{
	json_error_t jerr;
	json_t *root, *items;
	int count = -1;
	FILE *f = popen("nft -j list ruleset 2>/dev/null", "r");

	if (!f)
		return -1;
	root = json_loadf(f, 0, &jerr);
	pclose(f);
	items = root ? json_object_get(root, "nftables") : NULL;
	if (json_is_array(items)) {
		size_t i;
		json_t *it;

		count = 0;
		json_array_foreach(items, i, it)
			if (!json_object_get(it, "metainfo"))
				count++;
	}
	json_decref(root);
	return count;
}

/* --- probe ---------------------------------------------------------------- */

FIXTURE(probe) {
	struct vnic_ctx *ctx;
	struct pnl p;
};

FIXTURE_SETUP(probe)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "pr");

	memset(self, 0, sizeof(*self));
	ASSERT_EQ(0, st_netns_new());
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	ASSERT_EQ(0, pnl_open(&self->p));
}

FIXTURE_TEARDOWN(probe)
{
	pnl_close(&self->p);
	vnic_ctx_free(self->ctx);
}

/* Opening asks the kernel and leaves nothing: no object, no generation. */
TEST_F(probe, leaves_nothing)
{
	VNIC_OPTS(vnic_filter_opts, ro, .flags = VNIC_FILTER_READ_ONLY);
	uint32_t g0 = pnl_genid(&self->p), g1;
	struct vnic_filter *n;
	unsigned int i;

	ASSERT_EQ(0, ruleset_objects());
	for (i = 0; i < 3; i++) {
		/* A writing handle writes nothing at open either. */
		ASSERT_EQ(0, vnic_filter_open(self->ctx, i ? &ro : NULL, &n))
			TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
		EXPECT_NE(0u, vnic_filter_features(n));
		vnic_filter_close(n);
	}
	g1 = pnl_genid(&self->p);
	EXPECT_EQ(g0, g1);
	EXPECT_EQ(0, ruleset_objects());
}

/* Each feature as the probe reports it is what a real commit of the same
 * message gets from the kernel. */
TEST_F(probe, matches_commits)
{
	static const struct {
		uint32_t bit;
		const char *what;
	} checks[] = {
		{ VNIC_FILTER_FEAT_OWNER, "owner" },
		{ VNIC_FILTER_FEAT_PERSIST, "owner+persist" },
		{ VNIC_FILTER_FEAT_EGRESS, "egress chain" },
		{ VNIC_FILTER_FEAT_PREFIX_HOOK, "prefix chain" },
		{ VNIC_FILTER_FEAT_GENID, "generation" },
	};
	struct pnl *p = &self->p;
	struct vnic_filter *n;
	uint32_t f, g;
	unsigned int i;
	int err = 0;

	ASSERT_EQ(0, vnic_filter_open(self->ctx, NULL, &n))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	f = vnic_filter_features(n);
	vnic_filter_close(n);
	for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		char t[16];
		bool accepted;

		snprintf(t, sizeof(t), "t%u", i);
		switch (checks[i].bit) {
		case VNIC_FILTER_FEAT_OWNER:
			pnl_begin(p, 0);
			put_table(p, t, NFT_TABLE_F_OWNER);
			err = pnl_commit(p, 1);
			break;
		case VNIC_FILTER_FEAT_PERSIST:
			pnl_begin(p, 0);
			put_table(p, t, NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST);
			err = pnl_commit(p, 1);
			break;
		case VNIC_FILTER_FEAT_EGRESS:
			pnl_begin(p, 0);
			put_table(p, t, 0);
			put_chain(p, t, "c", NF_NETDEV_EGRESS, NFTA_DEVICE_NAME, "lo");
			err = pnl_commit(p, 2);
			break;
		case VNIC_FILTER_FEAT_PREFIX_HOOK:
			pnl_begin(p, 0);
			put_table(p, t, 0);
			put_chain(p, t, "c", NF_NETDEV_INGRESS, NFTA_DEVICE_PREFIX, "pr");
			err = pnl_commit(p, 2);
			break;
		case VNIC_FILTER_FEAT_GENID:
			/* A generation that is not the ruleset's. */
			g = pnl_genid(p) ^ 0x80000000u;
			pnl_begin(p, g ? g : 1);
			put_table(p, t, 0);
			err = pnl_commit(p, 1);
			break;
		}
		accepted = checks[i].bit == VNIC_FILTER_FEAT_GENID ? err == -ERESTART : !err;
		TH_LOG("%s: commit %d, probe %s", checks[i].what, err,
		       f & checks[i].bit ? "yes" : "no");
		EXPECT_EQ(accepted, !!(f & checks[i].bit))
			TH_LOG("%s: committing it gave %d", checks[i].what, err);
		/* Refused with the errors the probe reads as "unknown". */
		if (!accepted && checks[i].bit != VNIC_FILTER_FEAT_GENID)
			EXPECT_TRUE(err == -EOPNOTSUPP || err == -EINVAL);
	}
	/* The real commits are there: the probe was not all that ran. */
	EXPECT_LT(0, ruleset_objects());
}

/* --- callback -------------------------------------------------------------- */

/* The link table's dump callback fails on the first link: the create that
 * needed the table fails with that error, at the dump, and makes nothing.
 * (Before the callbacks' returns were read, the dump succeeded.) */
TEST(callback_error_reaches_caller)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "cb");
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN, .lower = LOWER,
		  .name = "cb%d", .naming = VNIC_NAMING_CACHE);
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	char *before, *after;
	int err;

	ASSERT_EQ(0, st_test_netns_setup());
	before = st_ip_link_snapshot();
	ASSERT_NE(NULL, before);
	err = vnic_ctx_new_faulty(&o, VNIC_STEP_DUMP, 2, &ctx);
	if (err == -EIO) {	/* a context that dumps while it is made */
		free(before);
		return;
	}
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, vnic_guest_new(ctx, "g", &g));
	ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
	EXPECT_EQ(-EIO, vnic_guest_create(g)) TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ((int)VNIC_STEP_DUMP, (int)vnic_ctx_errstep(ctx));
	after = st_ip_link_snapshot();
	EXPECT_STREQ(before, after);
	free(before);
	free(after);
	vnic_guest_free(g);
	vnic_ctx_free(ctx);
}

/* --- seq_wrap ------------------------------------------------------------ */

/* A guest of four macvlans made and deleted with the context's sequence
 * numbers wrapping past UINT32_MAX at each point of the calls (their
 * batches of creates and deletes numbered ..., UINT32_MAX, 0, 1, ...):
 * each ack is matched to its request, so every call succeeds in the time
 * it takes (an ack not taken for its batch's would leave the engine
 * waiting for it for ever: the alarm ends that). */
TEST(seq_wrap_batch_gets_every_ack)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "sq");
	const char *const names[] = { "sq0", "sq1", "sq2", "sq3" };
	struct vnic_ctx *ctx;
	uint32_t back;

	ASSERT_EQ(0, st_test_netns_setup());
	ASSERT_EQ(0, vnic_ctx_new(&o, &ctx));
	for (back = 1; back <= 8; back++) {
		struct vnic_guest *g;
		unsigned int i;

		ASSERT_EQ(0, vnic_guest_new(ctx, "g", &g));
		for (i = 0; i < 4; i++) {
			VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN,
				  .lower = LOWER, .name = names[i]);

			ASSERT_EQ(0, vnic_guest_add_nic(g, &nic, NULL));
		}
		ASSERT_EQ(0, vnic_ctx_set_seq(ctx, UINT32_MAX - back));
		alarm(10);
		ASSERT_EQ(0, vnic_guest_create(g))
			TH_LOG("seq %u back: %s", back, vnic_ctx_errmsg(ctx));
		EXPECT_EQ(4, st_prefixed_links_count("sq"));
		ASSERT_EQ(0, vnic_ctx_set_seq(ctx, UINT32_MAX - back));
		ASSERT_EQ(0, vnic_guest_destroy(g))
			TH_LOG("seq %u back: %s", back, vnic_ctx_errmsg(ctx));
		alarm(0);
		EXPECT_EQ(0, st_prefixed_links_count("sq"));
	}
	vnic_ctx_free(ctx);
}

TEST_HARNESS_MAIN
