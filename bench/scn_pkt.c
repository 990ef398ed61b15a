// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The "pkt" scenario: what each filter backend costs per packet.
 *
 *   test-run-*   one 64-byte IPv4/UDP frame through the bpf backend's
 *                ingress program by BPF_PROG_TEST_RUN (the private hook
 *                vnic_bpf_test_run), repeated in the kernel: the empty
 *                program, then the clean policy with a legit frame, a
 *                spoofed MAC and a spoofed IPv4 source (both dropped)
 *   veth-*       real frames: a bounded sender (a fixed count, sendmmsg on
 *                a packet socket, pinned to one CPU) on the guest's end g0
 *                of a veth pair, the frames crossing vh0's hook and a bridge
 *                to fa0, counted on fa0p; no filter, the kernel's own tc
 *                hook with an empty program (veth-tc-empty: what any
 *                cls_bpf filter costs before its program does anything),
 *                nft by name, nft by prefix, bpf, and bpf attached by tcx
 *
 * Every row is time per frame: the table's ms column is ms per 10^6
 * frames, i.e. ns per frame; frames_per_s is its inverse.  Each veth run
 * is a child in a fresh network namespace (the scenario's own), so one
 * backend's hooks never see another's frames.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <vnic/vnic.h>

#include "lib/testing.h"
#include "bench.h"
#include "frames.h"

#define PKT_DEFAULT_KFRAMES	200	/* veth: thousands of frames a run */
#define PKT_REPEAT_PER_KFRAME	5000	/* test-run: repeats per --count */
#define PKT_MAX_RUNS		64

enum { P_EMPTY, P_LEGIT, P_SPOOF_MAC, P_SPOOF_IP, P_NONE, P_TC_EMPTY, P_NFT,
       P_NFT_PFX, P_BPF, P_BPF_TCX, P__MAX };

/* How a row runs: test-run of a frame, or real frames with a backend. */
struct pdesc {
	const char *name;
	int prog;		/* test-run: 0 vnic_in, 2 vnic_nop; -1: veth */
	int mac_last, ip_last;	/* the frame's source MAC/IPv4 last byte */
	int backend;		/* veth: -1 none, VNIC_BACKEND_* */
	bool prefix;
	bool tc_empty;		/* clsact + an empty cls_bpf program, by tc(8) */
	uint32_t flags;		/* vnic_filter_opts.flags */
	unsigned int ref;	/* the row its x_ref is taken to */
};

static const struct pdesc pdescs[P__MAX] = {
	[P_EMPTY] = { "test-run-empty", 2, 0, 1, -1, .ref = P_EMPTY },
	[P_LEGIT] = { "test-run-legit", 0, 0, 1, -1, .ref = P_EMPTY },
	[P_SPOOF_MAC] = { "test-run-spoofed-mac", 0, 0x66, 1, -1, .ref = P_EMPTY },
	[P_SPOOF_IP] = { "test-run-spoofed-ipv4", 0, 0, 99, -1, .ref = P_EMPTY },
	[P_NONE] = { "veth-none", -1, 0, 1, -1, .ref = P_NONE },
	[P_TC_EMPTY] = { "veth-tc-empty", -1, 0, 1, -1, .tc_empty = true,
			 .ref = P_NONE },
	[P_NFT] = { "veth-nft", -1, 0, 1, VNIC_BACKEND_NFT, .ref = P_NONE },
	[P_NFT_PFX] = { "veth-nft-prefix", -1, 0, 1, VNIC_BACKEND_NFT,
			.prefix = true, .ref = P_NONE },
	[P_BPF] = { "veth-bpf", -1, 0, 1, VNIC_BACKEND_BPF, .ref = P_NONE },
	[P_BPF_TCX] = { "veth-bpf-tcx", -1, 0, 1, VNIC_BACKEND_BPF,
			.flags = VNIC_FILTER_TCX, .ref = P_NONE },
};

/*
 * The kernel's own hook: a clsact on vh0 and, on its ingress and egress
 * as the bpf backend's, a cls_bpf filter whose program does nothing.  A
 * classic program that returns 0 ("no match"): the kernel runs it as a
 * JITed eBPF program and cls_bpf then passes the frame on
 * (TC_ACT_UNSPEC), the same walk as a direct-action program that returns
 * TC_ACT_UNSPEC, without a program to load from the bench.
 */
static const char tc_empty_cmd[] =
	"tc qdisc add dev vh0 clsact && "
	"tc filter add dev vh0 ingress pref 1 protocol all bpf bytecode '1,6 0 0 0' && "
	"tc filter add dev vh0 egress pref 1 protocol all bpf bytecode '1,6 0 0 0'";

struct pkt {
	const struct bench_opts *o;
	struct bench_row r[P__MAX];
	int verdict[P__MAX];	/* test-run: -1 pass, 2 drop */
};

/* A frame from 02:00:00:00:00:<mac_last>, 10.0.0.<ip_last>. */
static void frame(unsigned char *f, int mac_last, int ip_last)
{
	const unsigned char mac[6] = { 2, 0, 0, 0, 0, (unsigned char)mac_last };
	const unsigned char ip[4] = { 10, 0, 0, (unsigned char)ip_last };

	frame_udp4(f, mac, ip);
}

/* Guest vm0: vh0, 02:00:00:00:00:00, 10.0.0.1, the clean policy. */
static int policy(struct vnic_ctx *ctx, struct vnic_policy **out)
{
	static const char *const v4[] = { "10.0.0.1" };
	VNIC_OPTS(vnic_nic_policy, nic, .ifname = "vh0", .kind = VNIC_KIND_VETH,
		  .mac = "02:00:00:00:00:00", .ipv4 = v4, .n_ipv4 = 1);
	int ret = vnic_policy_new(ctx, out);

	if (!ret)
		ret = vnic_policy_add_guest(*out, "vm0", NULL);
	if (!ret)
		ret = vnic_policy_add_nic(*out, "vm0", &nic);
	return ret;
}

/* A run's ns per frame, as the row's ms: ms per 10^6 frames (veth: the
 * sender's CPU time; its wall clock time in table_ms). */
static void keep(struct bench_row *r, double ns, double wall)
{
	struct sample *s = bench_row_next(r);

	s->ms = ns;
	s->table_ms = wall;
	r->runs++;
}

/* ---- BPF_PROG_TEST_RUN ---- */

static void test_runs(struct pkt *k)
{
	unsigned int repeat = k->o->guests * PKT_REPEAT_PER_KFRAME, m, run;
	struct vnic_policy *p = NULL;
	struct vnic_ctx *ctx = NULL;
	struct vnic_bpf *b = NULL;
	unsigned char f[64];
	char err[256] = "";
	int ret, ifindex;
	uint32_t ns;

	ret = system("ip link add name vh0 type veth peer name g0 && ip link set vh0 up") ?
	      -EIO : 0;
	if (ret)
		snprintf(err, sizeof(err), "ip link add vh0: failed");
	if (!ret && (ret = vnic_ctx_new(NULL, &ctx)))
		snprintf(err, sizeof(err), "vnic_ctx_new: %s", vnic_strerror(ret));
	if (!ret && (ret = policy(ctx, &p)))
		bench_lib_fail(ctx, "policy", ret, err, sizeof(err));
	if (!ret && (ret = vnic_bpf_open(ctx, NULL, &b)))
		bench_lib_fail(ctx, "vnic_bpf_open", ret, err, sizeof(err));
	if (!ret && (ret = vnic_bpf_sync(b, p, NULL)))
		bench_lib_fail(ctx, "vnic_bpf_sync", ret, err, sizeof(err));
	ifindex = (int)if_nametoindex("vh0");
	for (run = 0; run < k->o->runs; run++)
		for (m = P_EMPTY; m <= P_SPOOF_IP; m++) {
			struct bench_row *r = &k->r[m];

			if (ret && !r->skip)
				snprintf(r->error, sizeof(r->error), "%s", err);
			if (r->skip || r->error[0])
				continue;
			progress("%s run %u", pdescs[m].name, run + 1);
			frame(f, pdescs[m].mac_last, pdescs[m].ip_last);
			if (vnic_bpf_test_run(b, pdescs[m].prog, ifindex, f,
					      sizeof(f), repeat, &k->verdict[m],
					      &ns))
				bench_lib_fail(ctx, "vnic_bpf_test_run", -EIO,
					       r->error, sizeof(r->error));
			else
				keep(r, ns, ns);
		}
	if (b)
		vnic_bpf_close(b);
	if (p)
		vnic_policy_free(p);
	vnic_ctx_free(ctx);
	if (system("ip link del vh0 2>/dev/null"))
		fprintf(stderr, "vnic-bench: pkt: ip link del vh0 failed\n");
}

/* ---- real frames through a veth pair ---- */

/* In a child: the namespace, the backend's filter on vh0, then the
 * frames; the sender's CPU ns per frame that arrived on fa0p (its wall
 * clock ns per frame into *wall), or a negative errno. */
static double veth_run(const struct pdesc *d, unsigned int kframes,
		       double *wall, char *err, size_t errlen)
{
	static const char *const pfx[] = { "vh", NULL };
	VNIC_OPTS(vnic_filter_opts, fo, .backend = (enum vnic_backend)d->backend,
		  .hook_prefixes = d->prefix ? pfx : NULL, .flags = d->flags);
	struct vnic_filter *h = NULL;
	struct vnic_ctx *ctx = NULL;
	struct vnic_policy *p;
	unsigned long long got;
	unsigned char f[FRAME_LEN];
	uint64_t ns, cpu;
	int ret;

	if (frames_veth_ns(true)) {
		snprintf(err, errlen, "namespace setup: %s", strerror(EIO));
		return -EIO;
	}
	ret = d->backend < 0 ? 0 : vnic_ctx_new(NULL, &ctx);
	if (!ret && ctx && !(ret = policy(ctx, &p)))
		ret = vnic_filter_open(ctx, &fo, &h);
	if (!ret && h && ((d->prefix &&
			   !(vnic_filter_features(h) & VNIC_FILTER_FEAT_PREFIX_HOOK)) ||
			  ((d->flags & VNIC_FILTER_TCX) &&
			   !(vnic_filter_features(h) & VNIC_FILTER_FEAT_TCX))))
		ret = -EOPNOTSUPP;
	if (!ret && h)
		ret = vnic_filter_apply(h, p, NULL);
	if (!ret && d->tc_empty && system(tc_empty_cmd)) {
		snprintf(err, errlen, "tc: the empty cls_bpf filter failed");
		return -EIO;
	}
	if (ret && ctx)
		bench_lib_fail(ctx, "filter setup", ret, err, errlen);
	else if (ret)
		snprintf(err, errlen, "vnic_ctx_new: %s", strerror(-ret));
	if (ret)
		return ret;
	frame(f, 0, 1);
	ret = frames_send(f, kframes * 1000u, &ns, &cpu, &got);
	if (ret) {
		snprintf(err, errlen, "packet socket: %s", strerror(-ret));
		return ret;
	}
	if (got < kframes * 1000u / 2) {
		snprintf(err, errlen, "%llu of %u frames arrived", got,
			 kframes * 1000u);
		return -EIO;
	}
	*wall = (double)ns / (double)got;
	return (double)cpu / (double)got;
}

/* One veth run, in a child of its own (bench_child): what it sends back. */
struct veth_job {
	const struct pdesc *d;
	unsigned int kframes;
	struct { double ns, wall; char err[232]; } res;
};

static void veth_child(void *arg, int fd)
{
	struct veth_job *j = arg;

	j->res.ns = veth_run(j->d, j->kframes, &j->res.wall, j->res.err,
			     sizeof(j->res.err));
	bench_child_send(fd, &j->res, sizeof(j->res));
}

/* Row m's run; its ns per frame kept. */
static void veth_once(struct pkt *k, unsigned int m)
{
	struct veth_job j = { &pdescs[m], k->o->guests, { -EIO, 0, "" } };
	struct bench_child c = { .run = veth_child, .arg = &j, .out = &j.res,
				 .len = sizeof(j.res) };
	struct bench_row *r = &k->r[m];

	if (bench_child(&c)) {
		j.res.ns = -EIO;
		snprintf(j.res.err, sizeof(j.res.err), "the child died");
	}
	if (j.res.ns > 0)
		keep(r, j.res.ns, j.res.wall);
	else if (j.res.ns == -EOPNOTSUPP && pdescs[m].prefix)
		r->skip = "the kernel refuses prefix hooks (NFTA_DEVICE_PREFIX, Linux 6.17)";
	else if (j.res.ns == -EOPNOTSUPP && pdescs[m].flags)
		r->skip = "the kernel has no tcx (Linux 6.6)";
	else
		snprintf(r->error, sizeof(r->error), "%s", j.res.err);
}

/* ---- report ---- */

static double col_ns(const struct report *o, const struct bench_row *r)
{
	return r->runs ? row_median(r, offsetof(struct sample, ms)) : NAN;
}

static double col_wall(const struct report *o, const struct bench_row *r)
{
	return r->runs ? row_median(r, offsetof(struct sample, table_ms)) : NAN;
}

static double col_kframes(const struct report *o, const struct bench_row *r)
{
	return 1e6 / col_ns(o, r);
}

static double col_ref(const struct report *o, const struct bench_row *r)
{
	const struct bench_row *ref = &o->rows[pdescs[r - o->rows].ref];

	return col_ns(o, r) / col_ns(o, ref);
}

static void cols(struct report *o)
{
	report_col(o, "ns_frame", 1, col_ns);
	report_col(o, "wall_ns", 1, col_wall);
	report_col(o, "kframes_s", 0, col_kframes);
	report_col(o, "x_ref", 3, col_ref);
}

static void json_measured(struct json *j, const struct report *o,
			  const struct bench_row *r)
{
	json_num(j, "ns_per_packet", col_ns(o, r));
	json_num(j, "wall_ns_per_packet", col_wall(o, r));
	json_num(j, "frames_per_s", 1e9 / col_ns(o, r));
	json_num(j, "ratio_to_ref", col_ref(o, r));
	if (r->priv)
		json_str(j, "verdict", *(int *)r->priv == 2 ? "drop" : "pass");
}

static void json_params(struct json *j, const struct report *o)
{
	json_uint(j, "frames", o->re->n * 1000ull);
	json_uint(j, "test_run_repeat", o->re->n * PKT_REPEAT_PER_KFRAME);
}

static void notes(FILE *f, const struct report *o)
{
	double e = col_ns(o, &o->rows[P_EMPTY]), l = col_ns(o, &o->rows[P_LEGIT]);
	double n = col_ns(o, &o->rows[P_NONE]), b = col_ns(o, &o->rows[P_BPF]);
	double nft = col_ns(o, &o->rows[P_NFT]), pfx = col_ns(o, &o->rows[P_NFT_PFX]);
	double hook = col_ns(o, &o->rows[P_TC_EMPTY]), tcx = col_ns(o, &o->rows[P_BPF_TCX]);

	fprintf(f, "ms is ms per 10^6 frames (= ns per frame); test-run: BPF_PROG_TEST_RUN of one 64-byte IPv4/UDP frame, %u repeats in the kernel, mean per run; veth: %u frames per run from a packet socket on g0 (sendmmsg, %u a call) through vh0's hook and a bridge, counted on fa0p, the sender pinned to one CPU; ns = the sender's CPU time / frames arrived (the path's own work, the frames' softirq included, not the time other tasks held the CPU); wall_ns = send time / frames arrived\n",
		o->re->n * PKT_REPEAT_PER_KFRAME, o->re->n * 1000, FRAMES_BATCH);
	if (!isnan(e) && !isnan(l))
		fprintf(f, "target: the clean policy adds <= 50 ns over the empty program: %+.1f ns (%s)\n",
			l - e, l - e <= 50 ? "met" : "MISSED");
	if (!isnan(n) && !isnan(b))
		fprintf(f, "target: bpf frames/s >= 0.95x unfiltered: %.3fx (%s)\n",
			n / b, n / b >= 0.95 ? "met" : "MISSED");
	if (!isnan(n) && !isnan(b))
		fprintf(f, "by wall clock (load included): bpf %.3fx unfiltered\n",
			col_wall(o, &o->rows[P_NONE]) / col_wall(o, &o->rows[P_BPF]));
	if (!isnan(hook) && !isnan(b))
		fprintf(f, "the kernel's hook alone (clsact, an empty cls_bpf program) carries %.3fx the frames of no filter; bpf carries %.3fx the frames of that hook: what the policy's program costs on its own\n",
			n / hook, hook / b);
	if (!isnan(tcx) && !isnan(n))
		fprintf(f, "bpf attached by tcx (no clsact, no cls_bpf): %.3fx unfiltered\n",
			n / tcx);
	if (!isnan(b) && (!isnan(nft) || !isnan(pfx)))
		fprintf(f, "target: bpf frames/s >= the nft rows: %.3fx nft by name, %.3fx nft by prefix (1 = same rate; NAN: row missing)\n",
			nft / b, pfx / b);
}

/* No kind, NIC count, existing or samples: a frame is not a NIC. */
static const struct report_style pkt_style = {
	.ms_prec = 1, .cols = cols, .json = json_measured,
	.params = json_params, .notes = notes, .failed_fails = true,
	.lean = true,
};

static int run(const struct bench_opts *o)
{
	struct pkt *k = calloc(1, sizeof(*k));
	struct report_env re;
	unsigned int m, run;
	char ip[256];
	int ret;

	if (!k)
		return 1;
	k->o = o;
	for (m = 0; m < P__MAX; m++) {
		bench_row_init(&k->r[m], pdescs[m].name, o->runs);
		k->r[m].priv = pdescs[m].prog >= 0 ? &k->verdict[m] : NULL;
		/* x_best and x_libvnic compare real frames only. */
		k->r[m].aside = pdescs[m].prog >= 0;
		k->r[m].libvnic = m == P_BPF;
	}
	for (m = 0; m < P__MAX; m++)
		if (!bench_in_list(o->methods, pdescs[m].name))
			k->r[m].skip = "not selected (--methods)";
		else if (!bench_find_tool("ip", ip, sizeof(ip)))
			k->r[m].skip = "ip(8) not found (install iproute2): it makes the veth pairs";
		else if (pdescs[m].tc_empty && !bench_find_tool("tc", ip, sizeof(ip)))
			k->r[m].skip = "tc(8) not found (install iproute2): it attaches the empty filter";
	report_env_init(&re, o, 0, 0);
	re.n = o->guests;
	re.style = &pkt_style;
	snprintf(re.title, sizeof(re.title), "pkt: ns per frame, %u runs",
		 o->runs);
	report_header(&re, o->json);
	snprintf(re.title, sizeof(re.title),
		 "pkt: ns per frame, BPF_PROG_TEST_RUN and a filtered veth pair, %u runs; kernel %s, %ld CPUs, load %.2f",
		 o->runs, re.kernel, re.cpus, re.load1);
	test_runs(k);
	/* Runs outer, rows inner: a drift in the load spreads over all. */
	for (run = 0; run < o->runs; run++)
		for (m = P_NONE; m < P__MAX; m++)
			if (!k->r[m].skip && !k->r[m].error[0]) {
				progress("%s run %u", pdescs[m].name, run + 1);
				veth_once(k, m);
			}
	ret = report_rows(&re, k->r, P__MAX, o->json);
	for (m = 0; m < P__MAX; m++)
		bench_row_free(&k->r[m]);
	free(k);
	return ret;
}

static void defaults(struct bench_opts *o)
{
	o->guests = PKT_DEFAULT_KFRAMES;
}

static int check(struct bench_opts *o)
{
	const char *known[P__MAX];
	unsigned int m;

	for (m = 0; m < P__MAX; m++)
		known[m] = pdescs[m].name;
	if (o->runs > PKT_MAX_RUNS) {
		fprintf(stderr, "vnic-bench: pkt: --runs at most %u\n",
			PKT_MAX_RUNS);
		return -EINVAL;
	}
	if (o->guests > 5000) {
		fprintf(stderr, "vnic-bench: pkt: --count at most 5000 (thousand frames)\n");
		return -EINVAL;
	}
	return bench_check_methods(o->methods, known, P__MAX);
}

const struct scenario scn_pkt = {
	.name = "pkt",
	.usage =
		"pkt [--count K] [--runs R] [--methods a,b] [--json] [--out DIR]\n"
		"  ns per frame: BPF_PROG_TEST_RUN of the bpf backend's program\n"
		"  (empty program, clean policy with a legit, a spoofed-MAC and a\n"
		"  spoofed-IPv4 frame; K x 5000 repeats), and K thousand real frames\n"
		"  (default 200) through a filtered veth pair and a bridge: no filter,\n"
		"  the kernel's tc hook with an empty program, nft by name, nft by\n"
		"  prefix, bpf, bpf by tcx.  Methods: test-run-empty test-run-legit\n"
		"  test-run-spoofed-mac test-run-spoofed-ipv4 veth-none veth-tc-empty\n"
		"  veth-nft veth-nft-prefix veth-bpf veth-bpf-tcx\n",
	.opts = O_COUNT | O_RUNS | O_METHODS | O_OUT | O_JSON,
	.defaults = defaults,
	.check = check,
	.run = run,
};
