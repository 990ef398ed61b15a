// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A netdev base chain hooks at most 256 devices (NFT_NETDEVICE_MAX), so the
 * shared chains are sharded: eg0, eg1, ... of at most 255 devices each.
 * 300 macvlans in three guests must all be hooked, removing a guest frees
 * its places, a shard that loses its last device goes, and what nft -f
 * loads from the rendering is the same ruleset.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <vnic/vnic.h>

/* The harness's setjmp trips -Wclobbered under -O2; its variables are not
 * used after a longjmp. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"

#define GUESTS		3
#define PER_GUEST	100

FIXTURE(shard) {
	struct vnic_ctx *ctx;
	struct vnic_guest *g[GUESTS];
	struct vnic_policy *p;
	struct vnic_filter *n;
};

FIXTURE_SETUP(shard)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "sh");
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVLAN,
		  .lower = LOWER, .naming = VNIC_NAMING_CACHE);
	char gname[8], tmpl[8];
	unsigned int i, k;

	memset(self, 0, sizeof(*self));
	ASSERT_EQ(0, st_test_netns_setup());
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	ASSERT_EQ(0, vnic_policy_new(self->ctx, &self->p));
	for (i = 0; i < GUESTS; i++) {
		snprintf(gname, sizeof(gname), "g%u", i);
		snprintf(tmpl, sizeof(tmpl), "s%u_%%d", i);
		nic.name = tmpl;
		ASSERT_EQ(0, vnic_guest_new(self->ctx, gname, &self->g[i]));
		for (k = 0; k < PER_GUEST; k++)
			ASSERT_EQ(0, vnic_guest_add_nic(self->g[i], &nic, NULL));
		ASSERT_EQ(0, vnic_guest_create(self->g[i]))
			TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
		ASSERT_EQ(0, vnic_policy_add_guest(self->p, gname, NULL));
		ASSERT_EQ(0, vnic_policy_add_nics_of(self->p, gname, self->g[i]))
			TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	}
	ASSERT_EQ(0, vnic_filter_open(self->ctx, NULL, &self->n))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
}

FIXTURE_TEARDOWN(shard)
{
	unsigned int i;

	vnic_filter_close(self->n);
	vnic_policy_free(self->p);
	for (i = 0; i < GUESTS; i++)
		vnic_guest_free(self->g[i]);
	vnic_ctx_free(self->ctx);
}

/* Devices hooked by each "egN" chain, from nft -j; -1 if none listed. */
static int shard_devs(const char *chain)
{
	char cmd[128];
	json_t *root, *items, *it, *c, *dev;
	json_error_t jerr;
	int count = -1;
	size_t i;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nft -j list chain netdev vnic %s 2>/dev/null",
		 chain);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	root = json_loadf(f, 0, &jerr);
	pclose(f);
	items = root ? json_object_get(root, "nftables") : NULL;
	json_array_foreach(items, i, it) {
		c = json_object_get(it, "chain");
		if (!c)
			continue;
		dev = json_object_get(c, "dev");
		count = json_is_array(dev) ? (int)json_array_size(dev) :
			json_is_string(dev) ? 1 : 0;
	}
	json_decref(root);
	return count;
}

/* nft 1.0.6 leaves "dev" out of its JSON for netdev chains: count the
 * device names of the text listing instead. */
static int shard_devs_text(const char *chain)
{
	char cmd[256], line[65536];
	int count = -1;
	FILE *f;

	if (shard_devs(chain) > 0)
		return shard_devs(chain);
	snprintf(cmd, sizeof(cmd), "nft list chain netdev vnic %s 2>/dev/null "
		 "| grep -o 'devices = {[^}]*}\\|device \"[^\"]*\"'", chain);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		char *p = line;

		count = 1;
		while ((p = strchr(p, ',')))
			count++, p++;
	}
	pclose(f);
	return count;
}

TEST_F(shard, three_hundred_nics_in_two_shards)
{
	VNIC_OPTS(vnic_filter_result, res);
	const char *gone[] = { "g1" };

	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, &res))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ((uint32_t)GUESTS, res.guests_added);
	EXPECT_EQ(255, shard_devs_text("eg0"));
	EXPECT_EQ(GUESTS * PER_GUEST - 255, shard_devs_text("eg1"));
	EXPECT_EQ(-1, shard_devs_text("eg2"));

	/* g1 had 100 in eg0: eg1 keeps its 45, eg0 drops to 155. */
	ASSERT_EQ(0, vnic_filter_remove(self->n, gone, 1, &res))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(155, shard_devs_text("eg0"));
	EXPECT_EQ(45, shard_devs_text("eg1"));
}

/*
 * Two NICs of a large policy do not exist, the first at the end of g0 and
 * the other at the very end: the error names the first, no NIC after it
 * is looked up, and nothing is made (no table).  Found by the link table
 * (the fixture's context named the NICs by it) and by SIOCGIFINDEX (a
 * context without the table) alike.
 */
/* q applied by a context without a link table: g0's NICs and the missing
 * one asked of the kernel, none after it, nothing made. */
static void missing_by_ioctl(struct __test_metadata *_metadata,
			     const struct vnic_policy *q)
{
	VNIC_OPTS(vnic_ctx_stats, st0);
	VNIC_OPTS(vnic_ctx_stats, st1);
	struct vnic_filter *n = NULL;
	struct vnic_ctx *ctx = NULL;

	ASSERT_EQ(0, vnic_ctx_new(NULL, &ctx));
	ASSERT_EQ(0, vnic_filter_open(ctx, NULL, &n));
	ASSERT_EQ(0, vnic_ctx_stats(ctx, &st0));
	EXPECT_EQ(-ENODEV, vnic_filter_apply(n, q, NULL));
	ASSERT_EQ(0, vnic_ctx_stats(ctx, &st1));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(ctx), "guest g0: NIC nosuch0"))
		TH_LOG("%s", vnic_ctx_errmsg(ctx));
	EXPECT_EQ((uint64_t)PER_GUEST + 1, st1.ioctls - st0.ioctls);
	EXPECT_NE(0, st_run_cmd("nft list tables | grep -q ."));
	vnic_filter_close(n);
	vnic_ctx_free(ctx);
}

TEST_F(shard, missing_nics_named_in_order_nothing_made)
{
	VNIC_OPTS(vnic_nic_policy, g0, .ifname = "nosuch0",
		  .kind = VNIC_KIND_MACVLAN, .mac = "02:00:00:00:0a:01");
	VNIC_OPTS(vnic_nic_policy, g2, .ifname = "nosuch2",
		  .kind = VNIC_KIND_MACVLAN, .mac = "02:00:00:00:0a:02");
	VNIC_OPTS(vnic_ctx_stats, st0);
	VNIC_OPTS(vnic_ctx_stats, st1);
	struct vnic_policy *q;
	char gname[8];
	unsigned int i;
	int ret;

	ASSERT_EQ(0, vnic_policy_new(self->ctx, &q));
	for (i = 0; i < GUESTS; i++) {
		snprintf(gname, sizeof(gname), "g%u", i);
		ASSERT_EQ(0, vnic_policy_add_guest(q, gname, NULL));
		ASSERT_EQ(0, vnic_policy_add_nics_of(q, gname, self->g[i]));
	}
	ASSERT_EQ(0, vnic_policy_add_nic(q, "g0", &g0));
	ASSERT_EQ(0, vnic_policy_add_nic(q, "g2", &g2));
	ASSERT_EQ(0, vnic_ctx_stats(self->ctx, &st0));
	ret = vnic_filter_apply(self->n, q, NULL);
	ASSERT_EQ(0, vnic_ctx_stats(self->ctx, &st1));
	EXPECT_EQ(-ENODEV, ret);
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "guest g0: NIC nosuch0"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	/* The NICs were named by the link table, so g0's are found there;
	 * the missing one is asked of the kernel, and none after it. */
	EXPECT_EQ(1ull, st1.ioctls - st0.ioctls);
	EXPECT_NE(0, st_run_cmd("nft list tables | grep -q ."));
	missing_by_ioctl(_metadata, q);
	vnic_policy_free(q);

	/* The same handle then applies the policy whole. */
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(255, shard_devs_text("eg0"));
}

/*
 * libnftnl 1.2.4 copies a base chain's device names with strdup() and
 * keeps a NULL where that fails; the message it then builds dereferences
 * it.  This strdup() (it interposes libnftnl's) fails once for
 * strdup_fail when libnftnl asks, as it would out of memory.
 */
static const char *strdup_fail;

char *strdup(const char *s)
{
	Dl_info info;
	size_t len = strlen(s) + 1;
	char *d;

	if (strdup_fail && !strcmp(s, strdup_fail) &&
	    dladdr(__builtin_return_address(0), &info) && info.dli_fname &&
	    strstr(info.dli_fname, "libnftnl")) {
		strdup_fail = NULL;
		errno = ENOMEM;
		return NULL;
	}
	d = malloc(len);
	return d ? memcpy(d, s, len) : NULL;
}

/* A device name libnftnl could not copy fails the apply with -ENOMEM,
 * before anything is sent (no table), instead of a crash; the same handle
 * then applies the policy whole. */
TEST_F(shard, device_name_not_copied_is_enomem)
{
	strdup_fail = "s1_7";
	EXPECT_EQ(-ENOMEM, vnic_filter_apply(self->n, self->p, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(NULL, strdup_fail) TH_LOG("libnftnl never copied s1_7");
	strdup_fail = NULL;
	EXPECT_NE(0, st_run_cmd("nft list tables | grep -q ."));
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(255, shard_devs_text("eg0"));
}

TEST_F(shard, emptied_shard_goes_and_comes_back)
{
	const char *last[] = { "g2" };

	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	/* g2's 100: 55 in eg0, 45 = all of eg1. */
	ASSERT_EQ(0, vnic_filter_remove(self->n, last, 1, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(-1, shard_devs_text("eg1"));
	EXPECT_EQ(200, shard_devs_text("eg0"));
	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(255, shard_devs_text("eg0"));
	EXPECT_EQ(45, shard_devs_text("eg1"));
}

/* A new handle reads the shards back and syncs without writing. */
TEST_F(shard, restart_reads_shards)
{
	VNIC_OPTS(vnic_filter_result, res);
	struct vnic_filter *again;

	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, NULL));
	vnic_filter_close(self->n);
	self->n = NULL;
	ASSERT_EQ(0, vnic_filter_open(self->ctx, NULL, &again));
	self->n = again;
	ASSERT_EQ(0, vnic_filter_sync(again, self->p, &res))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(0, res.writes);
	EXPECT_EQ((uint32_t)GUESTS, res.guests_unchanged);
}

/* The table as nft lists it, less what only ownership adds (the flags nft
 * -f cannot spell, the owner's name) and blank lines: the text apply and
 * render must agree on. */
/* The table as nft lists it, the state element's generation masked (apply
 * records the one its commit made, a rendered text loaded by nft -f none). */
static char *table_text(void)
{
	FILE *f = popen("nft list table netdev vnic | grep -v '^\tflags' | "
			"grep -v '^$' | sed 's/ # progname .*//' | "
			"sed 's/ g=[0-9]* / g=G /'", "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	if (m) {
		char chunk[4096];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		fclose(m);
	}
	pclose(f);
	return buf;
}

TEST_F(shard, render_loads_back_the_same)
{
	char *text = NULL, *before, *after;
	char path[] = "/tmp/vnic-shard-render-XXXXXX";
	FILE *f;
	int fd, ret;

	ASSERT_EQ(0, vnic_filter_apply(self->n, self->p, NULL));
	before = table_text();
	ASSERT_NE(NULL, before);
	ASSERT_EQ(0, vnic_filter_render(self->n, self->p, &text));
	vnic_filter_close(self->n);
	self->n = NULL;
	ASSERT_EQ(0, st_run_cmd("nft delete table netdev vnic"));
	/* A file of this run's own (not a fixed name: runs of the suite side
	 * by side loaded each other's, or none), gone also when nft fails. */
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	f = fdopen(fd, "w");
	ASSERT_NE(NULL, f);
	fputs(text, f);
	fclose(f);
	free(text);
	ret = st_run_cmd("nft -f %s", path);
	remove(path);
	ASSERT_EQ(0, ret);
	after = table_text();
	ASSERT_NE(NULL, after);
	EXPECT_EQ(0, strcmp(before, after));
	EXPECT_NE(NULL, strstr(after, "chain eg1"));
	free(before);
	free(after);
}

/*
 * A policy larger than the handle's capacity: apply makes the sets of a
 * new table big enough (doubling their size), and the rendered text sizes
 * them the same, so nft -f fills no set (ENFILE, as nft 1.0.6 said of the
 * bench's 5,000 guests) and loads what apply made.
 */
TEST_F(shard, render_over_capacity_loads_back_the_same)
{
	VNIC_OPTS(vnic_filter_opts, small, .capacity = 16);
	char *text = NULL, *before, *after;
	char path[] = "/tmp/vnic-shard-cap-XXXXXX";
	struct vnic_filter *n;
	FILE *f;
	int fd;

	vnic_filter_close(self->n);
	self->n = NULL;
	ASSERT_EQ(0, vnic_filter_open(self->ctx, &small, &n));
	ASSERT_EQ(0, vnic_filter_render(n, self->p, &text));
	vnic_filter_close(n);
	ASSERT_EQ(0, vnic_filter_open(self->ctx, &small, &n));
	ASSERT_EQ(0, vnic_filter_apply(n, self->p, NULL))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	vnic_filter_close(n);
	before = table_text();
	ASSERT_NE(NULL, before);
	ASSERT_EQ(0, st_run_cmd("nft delete table netdev vnic"));
	/* A file of this run's own: runs of the suite side by side. */
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	f = fdopen(fd, "w");
	ASSERT_NE(NULL, f);
	fputs(text, f);
	fclose(f);
	free(text);
	EXPECT_EQ(0, st_run_cmd("nft -f %s", path));
	remove(path);
	after = table_text();
	ASSERT_NE(NULL, after);
	EXPECT_EQ(0, strcmp(before, after))
		TH_LOG("applied:\n%.600s\nloaded:\n%.600s", before, after);
	free(before);
	free(after);
}

TEST_HARNESS_MAIN
