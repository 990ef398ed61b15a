// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The filter policy enforced by the nftables backend, proved with real
 * frames (the backend-neutral cases of pkt.c, one test each per device
 * kind), and what nft(8) and the kernel say about the installed table.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"
#include "pkt.h"

static const char *kind_str(enum vnic_kind k)
{
	return vnic_kind_name(k) ? vnic_kind_name(k) : "?";
}

static void topo_setup(struct __test_metadata *_metadata, struct pkt_topo *t,
		       enum vnic_kind kind)
{
	const char *missing;
	char why[256];
	int ret;

	ASSERT_EQ(0, st_netns_new());
	missing = st_missing_feature(VNIC_FEAT_VETH | VNIC_FEAT_TUN |
				     VNIC_FEAT_MACVTAP);
	if (missing)
		SKIP(return, "kernel lacks %s", missing);
	ret = pkt_topo_setup(t, kind, why, sizeof(why));
	ASSERT_EQ(0, ret) TH_LOG("%s topology: %s", kind_str(kind), why);
}

/* Load ruleset text (printf-style) with nft -f; nft's exit status, its
 * first line of stderr in err. */
static int __attribute__((format(printf, 3, 4)))
nft_load(char *err, size_t len, const char *fmt, ...)
{
	char path[] = "/tmp/vnic-nft-XXXXXX";
	va_list ap;
	FILE *f;
	int fd, ret;

	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		return -errno;
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	ret = st_run_cmd_err(err, len, "nft -f %s", path);
	unlink(path);
	return ret;
}

/* Run case c; assert that the control frame arrived and that the case's
 * frame did (want PASS) or did not (want DROP). */
static void expect_case(struct __test_metadata *_metadata, struct pkt_topo *t,
			const struct pkt_case *c, enum pkt_verdict want)
{
	struct pkt_outcome o;
	int ret = pkt_case_run(t, c, &o);

	ASSERT_EQ(0, ret) TH_LOG("%s: send: %s", c->name, strerror(-ret));
	EXPECT_TRUE(o.control_seen)
		TH_LOG("%s on %s: the control frame after it never arrived "
		       "(%lld ms): the path is broken, nothing is proved",
		       c->name, kind_str(t->kind), o.ms);
	EXPECT_EQ(want == PKT_PASS, o.seen)
		TH_LOG("%s on %s (%s): %s, expected it %s", c->name,
		       kind_str(t->kind), c->what,
		       o.seen ? "arrived" : "dropped",
		       want == PKT_PASS ? "to arrive" : "dropped");
}

/*
 * The machinery itself, no libvnic filter involved: with no filter every
 * frame arrives (except what the device drops by itself), and a
 * hand-written nft ruleset on the same hooks makes drops observable.  If
 * these fail, the packet cases below prove nothing.
 */
FIXTURE(machinery) {
	struct pkt_topo t;
};

FIXTURE_VARIANT(machinery) {
	enum vnic_kind kind;
};

FIXTURE_VARIANT_ADD(machinery, veth) { VNIC_KIND_VETH };
FIXTURE_VARIANT_ADD(machinery, tap) { VNIC_KIND_TAP };
FIXTURE_VARIANT_ADD(machinery, macvtap) { VNIC_KIND_MACVTAP };

FIXTURE_SETUP(machinery)
{
	topo_setup(_metadata, &self->t, variant->kind);
}

FIXTURE_TEARDOWN(machinery)
{
	pkt_topo_teardown(&self->t);
}

TEST_F(machinery, no_filter_every_case_arrives)
{
	unsigned int i;

	for (i = 0; i < PKT_CASE__MAX; i++) {
		const struct pkt_case *c = &pkt_cases[i];

		ASSERT_NE(NULL, c->name) TH_LOG("case %u has no entry", i);
		expect_case(_metadata, &self->t, c,
			    pkt_expect(c, variant->kind, false));
	}
}

/* The hooks the cases are judged past: from the guest, ingress of a veth
 * host end or tap, egress of a macvtap; to the guest, the other one. */
TEST_F(machinery, hand_written_nft_drops_are_seen)
{
	bool mvt = variant->kind == VNIC_KIND_MACVTAP;
	char err[256];
	int ret;

	ret = nft_load(err, sizeof(err),
		"table netdev hand {\n"
		"  chain out { type filter hook %s device \"%s\" priority 0;\n"
		"    ether saddr != " PKT_NIC_MAC " drop; }\n"
		"  chain in { type filter hook %s device \"%s\" priority 0;\n"
		"    ether daddr " PKT_STRANGER_MAC " drop; }\n"
		"}\n", mvt ? "egress" : "ingress", self->t.nic,
		mvt ? "ingress" : "egress", self->t.nic);
	ASSERT_EQ(0, ret) TH_LOG("nft -f: %s", err);
	expect_case(_metadata, &self->t, &pkt_cases[PKT_CASE_mac_spoof], PKT_DROP);
	expect_case(_metadata, &self->t, &pkt_cases[PKT_CASE_legit_ipv4], PKT_PASS);
	expect_case(_metadata, &self->t, &pkt_cases[PKT_CASE_in_other_unicast],
		    PKT_DROP);
	expect_case(_metadata, &self->t, &pkt_cases[PKT_CASE_in_unicast_nic],
		    PKT_PASS);
	/* And with the table gone, the spoofed frame arrives again. */
	ASSERT_EQ(0, st_run_cmd("nft delete table netdev hand"));
	expect_case(_metadata, &self->t, &pkt_cases[PKT_CASE_mac_spoof],
		    pkt_expect(&pkt_cases[PKT_CASE_mac_spoof], variant->kind, false));
}

TEST_HARNESS_MAIN
