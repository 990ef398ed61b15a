// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Hooks by name prefix (vnic_filter_opts.hook_prefixes, NFTA_DEVICE_PREFIX):
 * what the table holds and what it hooks, read with our own GETCHAIN dump
 * (nft 1.0.6 cannot list such a ruleset: it retries forever), and frames.
 * The packet cases themselves run against prefix hooks in
 * filter_nft_test's pkt.*_prefix variants.
 *
 *   guest_adds_no_hook          no chain names a guest NIC; frames filtered
 *   nic_made_later_is_hooked    a NIC deleted and made again after the
 *                               chains exist is filtered once synced
 *   reopen_keeps_coverage       a handle without prefixes still finds the
 *                               installed ones: no hook by name
 *   named_hooks_go_on_remove    a guest hooked by name before the prefix
 *                               existed leaves no chain behind
 *   asked_overlapping_installed one an installed prefix covers is not
 *                               made; one that covers it is refused
 *   bad_*                       refused, nothing made, not even the table
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <vnic/vnic.h>

#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"
#include "pkt.h"

#define MAX_CHAINS 64

/* One chain of table netdev vnic, as the kernel dumps it. */
struct chain {
	char name[64];
	char devs[256];		/* "vh0 oth0", prefixes as "vh*" */
	bool base;
};

struct dump {
	struct chain c[MAX_CHAINS];
	unsigned int n;
};

static void devs_of(const struct nlattr *devs, struct chain *c)
{
	const struct nlattr *a;
	size_t len;

	mnl_attr_for_each_nested(a, devs) {
		len = strlen(c->devs);
		snprintf(c->devs + len, sizeof(c->devs) - len, "%s%s%s",
			 len ? " " : "", mnl_attr_get_str(a),
			 mnl_attr_get_type(a) == 2 ? "*" : "");
	}
}

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct dump *d = data;
	struct chain *c;
	const struct nlattr *a, *h;

	if (d->n == MAX_CHAINS)
		return MNL_CB_ERROR;
	c = &d->c[d->n++];
	memset(c, 0, sizeof(*c));
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) == NFTA_CHAIN_NAME)
			snprintf(c->name, sizeof(c->name), "%s", mnl_attr_get_str(a));
		if (mnl_attr_get_type(a) != NFTA_CHAIN_HOOK)
			continue;
		c->base = true;
		mnl_attr_for_each_nested(h, a)
			if (mnl_attr_get_type(h) == NFTA_HOOK_DEVS)
				devs_of(h, c);
	}
	return MNL_CB_OK;
}

/* A GETCHAIN dump (or a GETTABLE) of table netdev vnic: 0, or a negative
 * errno (-ENOENT: no such table). */
static int nft_get(struct dump *d, uint16_t type, uint16_t flags)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	struct nlmsghdr *nlh;
	struct nfgenmsg *g;
	int ret = -errno;

	memset(d, 0, sizeof(*d));
	if (!nl)
		return ret;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = NFNL_SUBSYS_NFTABLES << 8 | type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = 1;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = NFPROTO_NETDEV;
	g->version = NFNETLINK_V0;
	/* NFTA_TABLE_NAME and NFTA_CHAIN_TABLE are both attribute 1. */
	mnl_attr_put_strz(nlh, type == NFT_MSG_GETTABLE ? NFTA_TABLE_NAME :
			  NFTA_CHAIN_TABLE, "vnic");
	ret = mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0 ? -errno : 0;
	while (!ret) {
		ssize_t len = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (len < 0) {
			ret = -errno;
			break;
		}
		ret = mnl_cb_run(buf, (size_t)len, 1, mnl_socket_get_portid(nl),
				 chain_cb, d);
		if (ret <= 0) {
			ret = ret < 0 ? -errno : 0;
			break;
		}
		ret = 0;
	}
	mnl_socket_close(nl);
	return ret;
}

static int dump_chains(struct dump *d)
{
	return nft_get(d, NFT_MSG_GETCHAIN, NLM_F_DUMP);
}

static const struct chain *find_chain(const struct dump *d, const char *name)
{
	unsigned int i;

	for (i = 0; i < d->n; i++)
		if (!strcmp(d->c[i].name, name))
			return &d->c[i];
	return NULL;
}

/* A base chain that names dev itself (not by prefix), or NULL. */
static const struct chain *hooking_by_name(const struct dump *d, const char *dev)
{
	unsigned int i;
	char *tok, *save, buf[256];

	for (i = 0; i < d->n; i++) {
		snprintf(buf, sizeof(buf), "%s", d->c[i].devs);
		for (tok = strtok_r(buf, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save))
			if (!strcmp(tok, dev))
				return &d->c[i];
	}
	return NULL;
}

static void log_chains(struct __test_metadata *_metadata, const struct dump *d)
{
	unsigned int i;

	for (i = 0; i < d->n; i++)
		TH_LOG("chain %s%s%s", d->c[i].name, d->c[i].base ? " hooks " : "",
		       d->c[i].devs);
}

static void expect_case(struct __test_metadata *_metadata, struct pkt_topo *t,
			enum pkt_case_id id, enum pkt_verdict want)
{
	const struct pkt_case *c = &pkt_cases[id];
	struct pkt_outcome o;

	ASSERT_EQ(0, pkt_case_run(t, c, &o)) TH_LOG("%s: send", c->name);
	ASSERT_TRUE(o.control_seen) TH_LOG("%s: the path is broken", c->name);
	EXPECT_EQ(want == PKT_PASS, o.seen)
		TH_LOG("%s: %s", c->name, o.seen ? "arrived" : "dropped");
}

static const char *const prefixes[] = { "vh", "oth", NULL };

FIXTURE(prefix) {
	struct pkt_topo t;
	struct vnic_filter *n;
	struct vnic_policy *p;
	struct vnic_filter_result res;
};

FIXTURE_SETUP(prefix)
{
	char why[256];
	const char *missing;

	memset(self, 0, sizeof(*self));
	ASSERT_EQ(0, st_netns_new());
	missing = st_missing_feature(VNIC_FEAT_VETH);
	if (missing)
		SKIP(return, "kernel lacks %s", missing);
	ASSERT_EQ(0, pkt_topo_setup(&self->t, VNIC_KIND_VETH, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, pkt_policy_build(&self->t, NULL, &self->p))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	self->res.sz = sizeof(self->res);
}

FIXTURE_TEARDOWN(prefix)
{
	vnic_policy_free(self->p);
	if (self->n)
		vnic_filter_close(self->n);
	pkt_topo_teardown(&self->t);
}

/* Open with these prefixes; SKIP where the kernel has no prefix hooks. */
static void open_with(struct __test_metadata *_metadata,
		      FIXTURE_DATA(prefix) *self, const char *const *pfx)
{
	VNIC_OPTS(vnic_filter_opts, o, .hook_prefixes = pfx);

	if (self->n)
		vnic_filter_close(self->n);
	self->n = NULL;
	ASSERT_EQ(0, vnic_filter_open(self->t.ctx, &o, &self->n))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	if (pfx && !(vnic_filter_features(self->n) & VNIC_FILTER_FEAT_PREFIX_HOOK))
		SKIP(return, "kernel refuses prefix hooks (NFTA_DEVICE_PREFIX, Linux 6.17)");
}

/* Neither guest NIC is named by any chain; the prefix chains exist. */
static void expect_prefix_layout(struct __test_metadata *_metadata)
{
	struct dump d;

	ASSERT_EQ(0, dump_chains(&d));
	log_chains(_metadata, &d);
	EXPECT_EQ(NULL, hooking_by_name(&d, PKT_OTHER_NIC));
	EXPECT_EQ(NULL, hooking_by_name(&d, "vh0"));
	ASSERT_NE(NULL, find_chain(&d, "pfxin_vh"));
	EXPECT_STREQ("vh*", find_chain(&d, "pfxin_vh")->devs);
	ASSERT_NE(NULL, find_chain(&d, "pfxeg_oth"));
	EXPECT_STREQ("oth*", find_chain(&d, "pfxeg_oth")->devs);
	EXPECT_EQ(NULL, find_chain(&d, "to_" PKT_GUEST));
	EXPECT_EQ(NULL, find_chain(&d, "in0"));
}

TEST_F(prefix, guest_adds_no_hook)
{
	open_with(_metadata, self, prefixes);
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	EXPECT_EQ(2u, self->res.guests_added);
	expect_prefix_layout(_metadata);
	expect_case(_metadata, &self->t, PKT_CASE_mac_spoof, PKT_DROP);
	expect_case(_metadata, &self->t, PKT_CASE_ip_spoof, PKT_DROP);
	expect_case(_metadata, &self->t, PKT_CASE_in_other_unicast, PKT_DROP);
	expect_case(_metadata, &self->t, PKT_CASE_legit_ipv4, PKT_PASS);
}

TEST_F(prefix, nic_made_later_is_hooked)
{
	char why[256];
	struct dump before, after;

	open_with(_metadata, self, prefixes);
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &self->res));
	ASSERT_EQ(0, dump_chains(&before));
	ASSERT_EQ(0, pkt_topo_recreate_nic(&self->t, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, vnic_filter_sync(self->n, self->p, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	EXPECT_EQ(1u, self->res.guests_changed);
	/* The new device was hooked by the kernel, not by a chain change. */
	ASSERT_EQ(0, dump_chains(&after));
	EXPECT_EQ(before.n, after.n);
	expect_prefix_layout(_metadata);
	expect_case(_metadata, &self->t, PKT_CASE_mac_spoof, PKT_DROP);
	expect_case(_metadata, &self->t, PKT_CASE_arp_spoof_sha, PKT_DROP);
	expect_case(_metadata, &self->t, PKT_CASE_legit_ipv4, PKT_PASS);
}

TEST_F(prefix, reopen_keeps_coverage)
{
	open_with(_metadata, self, prefixes);
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &self->res));
	open_with(_metadata, self, NULL);
	ASSERT_EQ(0, vnic_filter_sync(self->n, self->p, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	EXPECT_EQ(0, self->res.writes);
	EXPECT_EQ(2u, self->res.guests_unchanged);
	/* Replaced and added again: still no hook by name. */
	ASSERT_EQ(0, vnic_filter_remove(self->n, (const char *const[]){ PKT_GUEST },
				     1, &self->res));
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	expect_prefix_layout(_metadata);
	expect_case(_metadata, &self->t, PKT_CASE_mac_spoof, PKT_DROP);
	expect_case(_metadata, &self->t, PKT_CASE_legit_ipv4, PKT_PASS);
}

TEST_F(prefix, named_hooks_go_on_remove)
{
	struct dump d;
	unsigned int i;

	open_with(_metadata, self, NULL);
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &self->res));
	ASSERT_EQ(0, dump_chains(&d));
	ASSERT_NE(NULL, hooking_by_name(&d, "vh0")) TH_LOG("no hook by name?");
	open_with(_metadata, self, prefixes);
	expect_case(_metadata, &self->t, PKT_CASE_mac_spoof, PKT_DROP);
	ASSERT_EQ(0, vnic_filter_remove(self->n,
				     (const char *const[]){ PKT_GUEST, PKT_GUEST2 },
				     2, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	ASSERT_EQ(0, dump_chains(&d));
	log_chains(_metadata, &d);
	for (i = 0; i < d.n; i++) {
		const char *name = d.c[i].name;

		/* The prefix chains and the shared chains of the switches
		 * (regular chains: no device) stay with the table. */
		EXPECT_TRUE(!strncmp(name, "pfx", 3) || !strncmp(name, "sw_", 3))
			TH_LOG("%s left behind", name);
	}
	expect_case(_metadata, &self->t, PKT_CASE_mac_spoof, PKT_PASS);
}

/*
 * A prefix asked next to an installed one it overlaps would hook the
 * devices both cover twice: each packet would walk both chains.  One the
 * installed prefix covers is not made (its devices are hooked already);
 * one that covers an installed prefix is refused at open, nothing made.
 */
TEST_F(prefix, asked_overlapping_installed)
{
	static const char *const narrower[] = { "vh0", "oth", NULL };
	static const char *const wider[] = { "v", NULL };
	VNIC_OPTS(vnic_filter_opts, o, .hook_prefixes = wider);
	struct vnic_filter *n = NULL;
	struct dump d;

	open_with(_metadata, self, prefixes);
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	open_with(_metadata, self, narrower);
	ASSERT_EQ(0, vnic_filter_remove(self->n, (const char *const[]){ PKT_GUEST },
				     1, &self->res));
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	ASSERT_EQ(0, dump_chains(&d));
	log_chains(_metadata, &d);
	EXPECT_EQ(NULL, find_chain(&d, "pfxin_vh0"));
	EXPECT_EQ(NULL, find_chain(&d, "pfxeg_vh0"));
	expect_prefix_layout(_metadata);
	expect_case(_metadata, &self->t, PKT_CASE_mac_spoof, PKT_DROP);
	expect_case(_metadata, &self->t, PKT_CASE_legit_ipv4, PKT_PASS);
	ASSERT_EQ(0, vnic_filter_sync(self->n, self->p, &self->res))
		TH_LOG("%s", vnic_ctx_errmsg(self->t.ctx));
	EXPECT_EQ(0, self->res.writes);

	vnic_filter_close(self->n);
	self->n = NULL;
	EXPECT_EQ(-EINVAL, vnic_filter_open(self->t.ctx, &o, &n));
	EXPECT_EQ(NULL, n);
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->t.ctx), "'vh'"))
		TH_LOG("message: %s", vnic_ctx_errmsg(self->t.ctx));
	if (n)
		vnic_filter_close(n);
	ASSERT_EQ(0, dump_chains(&d));
	EXPECT_EQ(NULL, find_chain(&d, "pfxin_v"));
}

/* Refused before anything is sent: not even the table is made. */
static void bad(struct __test_metadata *_metadata, FIXTURE_DATA(prefix) *self,
		const char *const *pfx, const char *msg)
{
	VNIC_OPTS(vnic_filter_opts, o, .hook_prefixes = pfx);
	struct vnic_filter *n = NULL;
	struct dump d;
	int fds = st_count_fds();

	vnic_filter_close(self->n);
	self->n = NULL;
	EXPECT_EQ(-EINVAL, vnic_filter_open(self->t.ctx, &o, &n));
	EXPECT_EQ(NULL, n);
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->t.ctx), msg))
		TH_LOG("message: %s", vnic_ctx_errmsg(self->t.ctx));
	EXPECT_EQ(-ENOENT, nft_get(&d, NFT_MSG_GETTABLE, NLM_F_ACK));
	EXPECT_EQ(fds, st_count_fds());
}

TEST_F(prefix, bad_empty)
{
	bad(_metadata, self, (const char *const[]){ "", NULL }, "1..14");
}

TEST_F(prefix, bad_too_long)
{
	bad(_metadata, self, (const char *const[]){ "abcdefghijklmno", NULL },
	    "1..14");
}

TEST_F(prefix, bad_char)
{
	bad(_metadata, self, (const char *const[]){ "vh", "a b", NULL }, "a b");
}

TEST_F(prefix, bad_overlap)
{
	bad(_metadata, self, (const char *const[]){ "vh", "vh0", NULL }, "overlap");
}

TEST_F(prefix, bad_too_many)
{
	static const char *const many[] = {
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l",
		"m", "n", "o", "p", "q", NULL,
	};

	bad(_metadata, self, many, "more than 16");
}

TEST_HARNESS_MAIN
