// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * growth: what adding ONE guest (its K NICs and its filters) costs as the
 * host fills from 0 to N guest NICs, for libvnic and each anchor.
 *
 * Per method: the namespace is reset (NICs deleted in one request, the
 * ruleset flushed by the bench's own nfnetlink socket, legacy xtables
 * emptied), then for each sample point in increasing order the fill is
 * topped up untimed and in bulk (NICs by raw netlink; the method's own
 * filters for them: vnic_filter_apply in chunks, one nft -f, one
 * iptables-restore per family), and R runs of "add one guest" are timed,
 * the guest removed untimed after each.  The median per point is the
 * curve: flat is O(1) per guest, rising is O(N).
 *
 * nft(8) never runs in a namespace that holds prefix-hooked chains (nft
 * 1.0.6 hangs listing them): every method starts from the raw flush.
 */
#include <errno.h>
#include <math.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filters.h"

#define G_DEFAULT_MAX		10000
#define G_DEFAULT_POINTS	6
#define G_MAX_POINTS		BENCH_MAX_POINTS
/* A point's runs are cut so that one method spends about this there. */
#define G_POINT_BUDGET_MS	8000.0

enum { M_PFX, M_LIB, M_NFT, M_XT_LEGACY, M_XT_NFT, M_FLOOR, M_FLOOR_PFX,
       M_BPF, M__MAX };

/* The floor rows: libvnic's own batches, kept and sent again. */
#define IS_FLOOR(m)	((m) == M_FLOOR || (m) == M_FLOOR_PFX)

struct growth;

/*
 * A row of the growth scenario: its name, why it cannot run here (NULL:
 * it can), and one timed "add one guest" (undone untimed).  The fill and
 * the handle follow by_libvnic() and by_prefix().
 */
struct gmdesc {
	const char *name;
	const char *(*skip)(const struct growth *g, unsigned int m);
	int (*add)(struct growth *g, unsigned int m, unsigned int gi,
		   double *ms, char *err, size_t errlen);
};

static const struct gmdesc gmdescs[M__MAX];

/* The methods that fill through libvnic, and those hooking by prefix. */
static bool by_libvnic(unsigned int m)
{
	return m == M_PFX || m == M_LIB || m >= M_FLOOR;	/* M_BPF too */
}

static bool by_prefix(unsigned int m)
{
	return m == M_PFX || m == M_FLOOR_PFX;
}

/* A method's curve; its row (skip, error, the last point's samples) is
 * the growth's rows[] of the same index. */
struct gmethod {
	char note[320];
	unsigned int runs[G_MAX_POINTS];
	double med[G_MAX_POINTS], min[G_MAX_POINTS], max[G_MAX_POINTS];
	double fill_ms;			/* the untimed top-ups, all points */
	bool cut;			/* runs cut at a big point */
};

struct growth {
	const struct bench_opts *o;
	struct filt_env e;
	char ip_path[256];
	unsigned int points[G_MAX_POINTS], np;
	double x[G_MAX_POINTS];		/* points as doubles, for the plot */
	struct gmethod m[M__MAX];
	struct bench_row rows[M__MAX];
	/* The method being run. */
	struct vnic_filter *h;
	unsigned int filled;		/* NICs with their filters */
	/* floor: libvnic's add and remove batches at this point. */
	struct floor_batches fb;
};

/* The bench's NICs are "nv0", "nv1", ...: one prefix hooks them all. */
static const char *const nic_prefixes[] = { "nv", NULL };

/*
 * 0 and N, then N/2, N/4, N/10, N/20 (the default six), then halving:
 * denser where the curve bends.  Whole guests only, no repeats.
 */
static void make_points(struct growth *g)
{
	static const double frac[] = { 0.5, 0.25, 0.1, 0.05 };
	unsigned int k = g->o->nics_per_guest, n = g->o->npoints, i, j;
	unsigned int v[G_MAX_POINTS], nv = 0;
	double f = 0.05;

	v[nv++] = g->o->max_nics / k * k;
	for (i = 0; nv < n - 1; i++) {
		f = i < 4 ? frac[i] : f / 2;
		v[nv++] = (unsigned int)(g->o->max_nics * f) / k * k;
	}
	v[nv++] = 0;
	g->np = 0;
	for (i = nv; i-- > 0;) {
		for (j = 0; j < g->np && g->points[j] != v[i]; j++)
			;
		if (j == g->np)
			g->points[g->np++] = v[i];
	}
	for (i = 0; i < g->np; i++)
		g->x[i] = g->points[i];
}

/* ---- small helpers ---- */

/* "what: why" into err, the failed tool's stderr for -ECHILD; ret. */
static int fail(const char *what, int ret, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what,
		 ret == -ECHILD ? bench_last_error() : strerror(-ret));
	return ret;
}

/* Delete the NICs of guest gi, untimed, whoever made them. */
static int del_guest_nics(struct growth *g, unsigned int gi)
{
	unsigned int k = g->o->nics_per_guest, i, n = 0;
	char name[16];
	int idx, ret;

	for (i = gi * k; i < (gi + 1) * k; i++) {
		filt_nic_name(i, name);
		idx = (int)if_nametoindex(name);
		if (idx > 0 && !rawnl_queue_dellink(&g->e.nl, idx))
			n++;
	}
	ret = n ? rawnl_flush(&g->e.nl, 0) : 0;
	return ret;
}

/* ---- reset and fill ---- */

static int reset(struct growth *g, unsigned int m, char *err, size_t errlen)
{
	unsigned int tables = 1;
	int ret;

	ret = filt_env_del_nics(&g->e);
	if (!ret)
		ret = nfnl_flush_ruleset(&g->e);
	if (!ret && m == M_XT_LEGACY)
		ret = xt_flush(XT_LEGACY);
	if (!ret)
		ret = nfnl_count_tables(&g->e, &tables);
	if (!ret && tables)
		ret = -EEXIST;
	if (ret)
		fail("resetting the namespace", ret, err, errlen);
	g->filled = 0;
	/* Thousands of unregistered devices and hooks leave RCU work. */
	usleep(g->o->settle_ms * 1000 * 4);
	return ret;
}

static int fill_libvnic(struct growth *g, unsigned int first,
			unsigned int guests, char *err, size_t errlen)
{
	unsigned int n, end = first + guests;
	int ret = 0;

	for (; first < end && !ret; first += n) {
		struct vnic_filter_result res = { .sz = sizeof(res) };
		struct vnic_policy *p;

		n = end - first < FILT_SETUP_CHUNK ? end - first :
						     FILT_SETUP_CHUNK;
		ret = filt_policy(&g->e, first, n, -1, &p, err, errlen);
		if (ret)
			break;
		ret = vnic_filter_apply(g->h, p, &res);
		if (ret)
			bench_lib_fail(g->e.ctx, "vnic_filter_apply (fill)", ret, err, errlen);
		vnic_policy_free(p);
	}
	return ret;
}

static int fill_nft(struct growth *g, unsigned int first, unsigned int guests,
		    char *err, size_t errlen)
{
	char *text, path[64];
	unsigned int rules;
	size_t len;
	int ret;

	ret = chains_render_range(&g->e, first, guests, &text, &len, &rules);
	if (!ret) {
		ret = nft_write_tmp(text, len, path, sizeof(path));
		free(text);
	}
	if (ret)
		return fail("rendering the fill", ret, err, errlen);
	ret = nft_file(&g->e, path);
	unlink(path);
	return ret ? fail("nft -f (fill)", ret, err, errlen) : 0;
}

/* Every guest so far in one restore per family: *-restore flushes the
 * table, and arptables-nft-restore takes no --noflush. */
static int fill_xt(struct growth *g, enum xt_variant v, unsigned int guests,
		   char *err, size_t errlen)
{
	struct xt_set s;
	int ret = xt_set_build(&g->e, v, 0, guests, &s);

	if (!ret)
		ret = xt_preload(v, &s, s.n);
	if (ret)
		fail("restore (fill)", ret, err, errlen);
	xt_set_free(&s);
	return ret;
}

/* Top the namespace up to 'nics' guest NICs with the method's filters. */
static int fill(struct growth *g, unsigned int m, unsigned int nics,
		char *err, size_t errlen)
{
	unsigned int k = g->o->nics_per_guest;
	unsigned int first = g->filled / k, guests = (nics - g->filled) / k;
	uint64_t t0 = now_ns();
	int ret;

	if (!guests)
		return 0;
	progress("%s: filling to %u NICs (untimed)", gmdescs[m].name, nics);
	ret = filt_env_add_nics(&g->e, g->filled, nics - g->filled);
	if (ret) {
		snprintf(err, errlen, "making NICs %u..%u: %.200s", g->filled,
			 nics - 1, g->e.nl.err[0] ? g->e.nl.err : strerror(-ret));
		return ret;
	}
	switch (by_libvnic(m) ? M_LIB : m) {
	case M_LIB:
		ret = fill_libvnic(g, first, guests, err, errlen);
		break;
	case M_NFT:
		ret = fill_nft(g, first, guests, err, errlen);
		break;
	default:
		ret = fill_xt(g, m == M_XT_LEGACY ? XT_LEGACY : XT_NFT,
			      first + guests, err, errlen);
	}
	g->filled = nics;
	g->m[m].fill_ms += ms_since(t0);
	return ret;
}

/* ---- one guest: libvnic ---- */

/* The bench's macvlans, explicit names and MACs, on the filter lowers. */
static void nic_of(const void *arg, unsigned int i, char *name, char *mac,
		   struct vnic_nic_opts *nic)
{
	const struct growth *g = arg;

	filt_nic_name(i, name);
	filt_nic_mac_str(i, mac);
	*nic = (struct vnic_nic_opts){
		.sz = sizeof(*nic), .kind = VNIC_KIND_MACVLAN, .name = name,
		.naming = VNIC_NAMING_EXPLICIT, .mode = VNIC_MACVLAN_BRIDGE,
		.lower_ifindex = g->e.lowers[i / FILT_NICS_PER_LOWER],
		.mac = mac,
	};
}

static int add_libvnic(struct growth *g, unsigned int m, unsigned int gi,
		       double *ms, char *err, size_t errlen)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	struct vnic_guest *vg = NULL;
	struct vnic_policy *p;
	char gname[32];
	const char *name = gname;
	uint64_t t0;
	int ret, ret2;

	/* The policy is the caller's data, built before the clock. */
	ret = filt_policy(&g->e, gi, 1, -1, &p, err, errlen);
	if (ret)
		return ret;
	filt_guest_name(gi, gname);
	t0 = now_ns();
	ret = bench_guest_make(g->e.ctx, gname, gi * g->o->nics_per_guest,
			       g->o->nics_per_guest, nic_of, g, &vg, err,
			       errlen);
	if (!ret) {
		ret = vnic_filter_apply(g->h, p, &res);
		if (ret)
			bench_lib_fail(g->e.ctx, "vnic_filter_apply", ret, err, errlen);
	}
	*ms = ms_since(t0);
	vnic_policy_free(p);
	/* Untimed: the guest goes again. */
	ret2 = vnic_filter_remove(g->h, &name, 1, NULL);
	if (ret2 && !ret)
		ret = bench_lib_fail(g->e.ctx, "vnic_filter_remove", ret2, err, errlen);
	if (vg) {
		ret2 = vnic_guest_destroy(vg);
		if (ret2 && !ret)
			ret = bench_lib_fail(g->e.ctx, "vnic_guest_destroy", ret2, err,
				       errlen);
	}
	return ret;
}

/* ---- one guest: the anchors ---- */

/* The guest's NICs as ip -batch takes them, written before the clock. */
static int write_ip_batch(struct growth *g, unsigned int gi, char *path,
			  size_t len)
{
	unsigned int k = g->o->nics_per_guest, i;
	char name[16], mac[18], lower[24];
	FILE *f = bench_tmpfile("ip", path, len);

	if (!f)
		return -errno;
	for (i = gi * k; i < (gi + 1) * k; i++) {
		filt_nic_name(i, name);
		filt_nic_mac_str(i, mac);
		snprintf(lower, sizeof(lower), "lower%u",
			 i / FILT_NICS_PER_LOWER);
		fprintf(f, "link add link %s name %s address %s type macvlan mode bridge\n",
			lower, name, mac);
	}
	return bench_tmpfile_close(f, path);
}

static int ip_batch(struct growth *g, const char *path, char *err,
		    size_t errlen)
{
	const char *const argv[] = { g->ip_path, "-batch", path, NULL };
	int ret = bench_exec(argv, NULL, -1, NULL);

	return ret ? fail("ip -batch", ret, err, errlen) : 0;
}

/* Untimed: the guest's two chains of the per-guest-chain layout. */
static int nft_remove_guest(struct growth *g, unsigned int gi, char *err,
			    size_t errlen)
{
	char chain[32];
	const char *argv[] = { NULL, "delete", "chain", "netdev", FILT_TABLE,
			       chain, NULL };
	int ret;

	snprintf(chain, sizeof(chain), "from_nv%u",
		 gi * g->o->nics_per_guest);
	ret = nft_run(&g->e, argv);
	if (!ret) {
		snprintf(chain, sizeof(chain), "guest_g%u", gi);
		ret = nft_run(&g->e, argv);
	}
	return ret ? fail("nft delete chain", ret, err, errlen) : 0;
}

static int add_nft(struct growth *g, unsigned int m, unsigned int gi,
		   double *ms, char *err, size_t errlen)
{
	char ipf[64], nftf[64];
	unsigned int rules;
	char *text = NULL;
	size_t len;
	uint64_t t0;
	int ret;

	ret = write_ip_batch(g, gi, ipf, sizeof(ipf));
	if (ret)
		return fail("ip batch file", ret, err, errlen);
	ret = chains_render_range(&g->e, gi, 1, &text, &len, &rules);
	if (!ret)
		ret = nft_write_tmp(text, len, nftf, sizeof(nftf));
	free(text);
	if (ret) {
		unlink(ipf);
		return fail("nft fragment", ret, err, errlen);
	}
	t0 = now_ns();
	ret = ip_batch(g, ipf, err, errlen);
	if (!ret && (ret = nft_file(&g->e, nftf)))
		fail("nft -f", ret, err, errlen);
	*ms = ms_since(t0);
	unlink(ipf);
	unlink(nftf);
	if (!ret)
		ret = nft_remove_guest(g, gi, err, errlen);
	return del_guest_nics(g, gi) ?: ret;
}

static int add_xt(struct growth *g, unsigned int m, unsigned int gi,
		  double *ms, char *err, size_t errlen)
{
	enum xt_variant v = m == M_XT_LEGACY ? XT_LEGACY : XT_NFT;
	struct xt_set s, rm;
	double xms, rms;
	char ipf[64];
	uint64_t t0;
	int ret;

	ret = write_ip_batch(g, gi, ipf, sizeof(ipf));
	if (ret)
		return fail("ip batch file", ret, err, errlen);
	ret = xt_set_build(&g->e, v, gi, 1, &s);
	if (!ret)
		ret = xt_set_files(&s);
	if (ret) {
		unlink(ipf);
		xt_set_free(&s);
		return fail("restore files", ret, err, errlen);
	}
	t0 = now_ns();
	ret = ip_batch(g, ipf, err, errlen);
	if (!ret) {
		ret = xt_restore(v, &s, true, &xms);
		if (ret)
			fail("restore --noflush", ret, err, errlen);
	}
	*ms = ms_since(t0);
	unlink(ipf);
	xt_set_unlink(&s);
	xt_set_free(&s);
	/* Untimed: the jumps, then the chains, then the NICs. */
	if (!ret) {
		ret = xt_set_build_remove(&g->e, v, gi, 1, &rm);
		if (!ret)
			ret = xt_set_files(&rm);
		if (!ret)
			ret = xt_restore(v, &rm, true, &rms);
		if (ret)
			fail("removing the guest's rules", ret, err, errlen);
		xt_set_unlink(&rm);
		xt_set_free(&rm);
	}
	return del_guest_nics(g, gi) ?: ret;
}

/*
 * The floor: the guest's NICs pre-encoded in one sendmsg(), then the add
 * batch libvnic sent for it at this point (floor.c), timed; its remove
 * batch and the NICs' deletion untimed.
 */
static int add_floor(struct growth *g, unsigned int m, unsigned int gi,
		     double *ms, char *err, size_t errlen)
{
	unsigned int k = g->o->nics_per_guest;
	double bms = 0, rms;
	uint64_t t0;
	int ret;

	ret = filt_queue_nics(&g->e, gi * k, k);
	t0 = now_ns();
	if (!ret)
		ret = rawnl_flush(&g->e.nl, 0);
	*ms = ms_since(t0);
	if (ret)
		snprintf(err, errlen, "the guest's NICs: %.200s",
			 g->e.nl.err[0] ? g->e.nl.err : strerror(-ret));
	if (!ret) {
		ret = floor_replay(&g->e, &g->fb, 0, 1, &bms);
		*ms += bms;
		if (!ret)
			ret = floor_replay(&g->e, &g->fb, 1, g->fb.n, &rms);
		if (ret)
			snprintf(err, errlen, "sending libvnic's batches again: %s",
				 strerror(-ret));
	}
	return del_guest_nics(g, gi) ?: ret;
}

static const char *skip_nft(const struct growth *g, unsigned int m)
{
	if (!g->ip_path[0])
		return "ip(8) not found (install iproute2)";
	return g->e.nft_path[0] ? NULL :
	       "nft(8) not found in /usr/sbin, /sbin, /usr/bin, /bin, /usr/local/sbin (install nftables)";
}

static const char *skip_xt(const struct growth *g, unsigned int m)
{
	if (!g->ip_path[0])
		return "ip(8) not found (install iproute2)";
	return xt_skip(m == M_XT_LEGACY ? XT_LEGACY : XT_NFT);
}

static const struct gmdesc gmdescs[M__MAX] = {
	[M_PFX] = { "libvnic-prefix", NULL, add_libvnic },
	[M_LIB] = { "libvnic", NULL, add_libvnic },
	[M_NFT] = { "ip-nft", skip_nft, add_nft },
	[M_XT_LEGACY] = { "ip-iptables-legacy", skip_xt, add_xt },
	[M_XT_NFT] = { "ip-iptables-nft", skip_xt, add_xt },
	[M_FLOOR] = { "floor", NULL, add_floor },
	[M_FLOOR_PFX] = { "floor-prefix", NULL, add_floor },
	[M_BPF] = { "libvnic-bpf", NULL, add_libvnic },
};

/* ---- a method's curve ---- */

static const char *skip_reason(struct growth *g, unsigned int m)
{
	if (!bench_in_list(g->o->methods, gmdescs[m].name))
		return "not selected (--methods)";
	return gmdescs[m].skip ? gmdescs[m].skip(g, m) : NULL;
}

static int open_handle(struct growth *g, unsigned int m, char *err,
		       size_t errlen)
{
	VNIC_OPTS(vnic_filter_opts, opts, .table = FILT_TABLE,
		  .hook_prefixes = by_prefix(m) ? nic_prefixes : NULL);
	VNIC_OPTS(vnic_filter_opts, bpf, .backend = VNIC_BACKEND_BPF,
		  .capacity = g->o->max_nics + g->o->nics_per_guest);
	int ret;

	g->h = NULL;
	if (!by_libvnic(m))
		return 0;
	ret = vnic_filter_open(g->e.ctx, m == M_BPF ? &bpf : &opts, &g->h);
	if (ret) {
		g->h = NULL;
		return bench_lib_fail(g->e.ctx, "vnic_filter_open", ret, err, errlen);
	}
	if (by_prefix(m) &&
	    !(vnic_filter_features(g->h) & VNIC_FILTER_FEAT_PREFIX_HOOK)) {
		vnic_filter_close(g->h);
		g->h = NULL;
		g->rows[m].skip = PFX_SKIP;
		return 1;
	}
	return 0;
}

/* Runs at a point: all of them, unless the last point says one run
 * would take the point over its budget. */
static unsigned int runs_at(struct growth *g, struct gmethod *gm,
			    unsigned int pi)
{
	unsigned int r = g->o->runs;
	double prev = pi ? gm->med[pi - 1] : NAN;

	if (!isnan(prev) && prev * r > G_POINT_BUDGET_MS) {
		r = (unsigned int)(G_POINT_BUDGET_MS / prev);
		r = r < 1 ? 1 : r;
		gm->cut = true;
	}
	return r;
}

static int run_point(struct growth *g, unsigned int m, unsigned int pi)
{
	struct gmethod *gm = &g->m[m];
	struct bench_row *row = &g->rows[m];
	char *err = row->error;
	size_t errlen = sizeof(row->error);
	unsigned int k = g->o->nics_per_guest, gi = g->points[pi] / k;
	unsigned int runs = runs_at(g, gm, pi), r;
	double v[1000], ms;
	struct summary s;
	int ret;

	/* floor: libvnic's batches for this guest at this point, kept
	 * (untimed); the handle closed, so that the bench's socket may
	 * change the table libvnic owned, and opened again after. */
	if (IS_FLOOR(m)) {
		/* The second add: the first may make the table. */
		floor_free(&g->fb);
		ret = add_libvnic(g, m, gi, &ms, err, errlen);
		floor_capture(g->h, &g->fb);
		if (!ret)
			ret = add_libvnic(g, m, gi, &ms, err, errlen);
		floor_capture(g->h, NULL);
		vnic_filter_close(g->h);
		g->h = NULL;
		if (ret)
			return ret;
	}
	/* A warm-up, untimed: the first add may make shared structure. */
	ret = gmdescs[m].add(g, m, gi, &ms, err, errlen);
	for (r = 0; r < runs && !ret; r++) {
		progress("%s: %u NICs, run %u/%u", gmdescs[m].name,
			 g->points[pi], r + 1, runs);
		ret = gmdescs[m].add(g, m, gi, &v[r], err, errlen);
		usleep(g->o->settle_ms * 1000);
	}
	if (!ret && IS_FLOOR(m))
		ret = open_handle(g, m, err, errlen);
	if (ret)
		return ret;
	summarize(v, runs, &s);
	gm->runs[pi] = runs;
	gm->med[pi] = s.median;
	gm->min[pi] = s.min;
	gm->max[pi] = s.max;
	/* The row's samples: the last point's, for the table. */
	for (row->runs = 0, r = 0; r < runs; r++) {
		bench_row_next(row)->ms = v[r];
		row->runs++;
	}
	return 0;
}

static void run_method(struct growth *g, unsigned int m)
{
	struct gmethod *gm = &g->m[m];
	struct bench_row *row = &g->rows[m];
	char *err = row->error;
	size_t errlen = sizeof(row->error);
	unsigned int pi;
	int ret;

	for (pi = 0; pi < G_MAX_POINTS; pi++)
		gm->med[pi] = gm->min[pi] = gm->max[pi] = NAN;
	row->skip = skip_reason(g, m);
	if (row->skip)
		return;
	ret = reset(g, m, err, errlen);
	if (!ret)
		ret = open_handle(g, m, err, errlen);
	for (pi = 0; pi < g->np && !ret; pi++) {
		ret = fill(g, m, g->points[pi], err, errlen);
		if (!ret)
			ret = run_point(g, m, pi);
	}
	if (g->h)
		vnic_filter_close(g->h);
	g->h = NULL;
	if (ret > 0)		/* skipped, said in row->skip */
		return;
	if (ret && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	/* A failed method shows no figures, only why. */
	if (err[0])
		row->runs = 0;
	/* The next method must not start next to this one's state. */
	if (reset(g, m, err[0] ? gm->note : err,
		  err[0] ? sizeof(gm->note) : errlen))
		fprintf(stderr, "vnic-bench: growth: %s\n",
			err[0] ? gm->note : err);
}

/* ---- report ---- */

static unsigned int last_point(const struct gmethod *gm, unsigned int np)
{
	while (np > 1 && isnan(gm->med[np - 1]))
		np--;
	return np - 1;
}

static void curve_table(FILE *f, const struct growth *g)
{
	unsigned int m, i;

	fprintf(f, "curve: ms per added guest (median) by guest NICs present\n");
	fprintf(f, "%-20s", "method");
	for (i = 0; i < g->np; i++)
		fprintf(f, " %9u", g->points[i]);
	fputc('\n', f);
	for (m = 0; m < M__MAX; m++) {
		if (g->rows[m].skip)
			continue;
		fprintf(f, "%-20s", gmdescs[m].name);
		for (i = 0; i < g->np; i++) {
			if (isnan(g->m[m].med[i]))
				fprintf(f, " %9s", "-");
			else
				fprintf(f, " %9.3f", g->m[m].med[i]);
		}
		fputc('\n', f);
	}
}

/* libvnic's curve over the floor of its layout, point by point. */
static bool floor_ratios(const struct growth *g, unsigned int m, double *x)
{
	unsigned int f = by_prefix(m) ? M_FLOOR_PFX : M_FLOOR, i;
	const struct gmethod *lv = &g->m[m], *fl = &g->m[f];

	if (g->rows[m].skip || g->rows[f].skip || !lv->runs[0] || !fl->runs[0])
		return false;
	for (i = 0; i < g->np; i++)
		x[i] = lv->med[i] / fl->med[i];
	return true;
}

static void floor_notes(FILE *f, const struct growth *g)
{
	double x[G_MAX_POINTS];
	unsigned int m, i;
	bool ok;

	for (m = M_PFX; m <= M_LIB; m++) {
		if (!floor_ratios(g, m, x))
			continue;
		fprintf(f, "ratio: %s over %s by point:", gmdescs[m].name,
			gmdescs[by_prefix(m) ? M_FLOOR_PFX : M_FLOOR].name);
		for (i = 0, ok = true; i < g->np; i++) {
			fprintf(f, " %.2fx", x[i]);
			ok &= !(x[i] > BENCH_TARGET_RATIO);
		}
		fprintf(f, "; <= %.2fx at every point: %s\n", BENCH_TARGET_RATIO,
			ok ? "met" : "missed");
	}
}

static void notes(FILE *f, const struct report *o)
{
	const struct growth *g = o->re->priv;
	unsigned int m, i;

	curve_table(f, g);
	for (m = 0; m < M__MAX; m++) {
		const struct gmethod *gm = &g->m[m];

		if (g->rows[m].skip || (!gm->runs[0] && !g->rows[m].error[0]))
			continue;
		fprintf(f, "note: %s: fill (untimed) %.1f s in all",
			gmdescs[m].name, gm->fill_ms / 1000.0);
		if (gm->cut) {
			fprintf(f, "; runs cut to keep a point near %.0f s:",
				G_POINT_BUDGET_MS / 1000.0);
			for (i = 0; i < g->np; i++)
				fprintf(f, " %u@%u", gm->runs[i], g->points[i]);
		}
		if (gm->note[0])
			fprintf(f, "; %s", gm->note);
		fputc('\n', f);
	}
	fprintf(f, "note: each run adds one guest of %u macvlans and its filters and is undone untimed; libvnic-*: vnic_guest_create (explicit names) + vnic_filter_apply; ip-nft: ip -batch + nft -f of the guest's chains (per-guest-chain layout); ip-iptables-*: ip -batch + iptables/ip6tables-restore --noflush (nft variant: arptables-nft, one process per command); floor*: the guest's NICs in one sendmsg() + the nf_tables batch libvnic sent for the guest at that point (captured untimed), sent again\n",
		g->o->nics_per_guest);
	floor_notes(f, g);
}

static void svg(FILE *f, const struct report *o)
{
	const struct growth *g = o->re->priv;
	struct svg_series s[M__MAX];
	unsigned int m, n = 0;

	for (m = 0; m < M__MAX; m++) {
		if (g->rows[m].skip || !g->m[m].runs[0])
			continue;
		s[n].name = gmdescs[m].name;
		s[n].x = g->x;
		s[n].y = g->m[m].med;
		s[n++].n = g->np;
	}
	svg_plot(f, "vnic-bench growth: adding one guest as the host fills",
		 "guest NICs present", "ms per added guest (log scale)", s, n,
		 SVG_LOG_Y);
}

static void json_params(struct json *j, const struct report *o)
{
	const struct growth *g = o->re->priv;

	json_str(j, "kind", "macvlan");
	json_uint(j, "max_nics", g->o->max_nics);
	json_uint(j, "nics_per_guest", g->o->nics_per_guest);
	json_nums(j, "points", g->x, g->np);
}

static void json_row(struct json *j, const struct report *o,
		     const struct bench_row *r)
{
	json_uint(j, "nics_per_guest", o->re->nics_per_guest);
}

static void json_measured(struct json *j, const struct report *o,
			  const struct bench_row *r)
{
	const struct growth *g = o->re->priv;
	unsigned int m = (unsigned int)(r - o->rows), i;
	const struct gmethod *gm = &g->m[m];
	double runs[G_MAX_POINTS];

	for (i = 0; i < g->np; i++)
		runs[i] = gm->runs[i];
	json_nums(j, "points", g->x, g->np);
	json_nums(j, "median_ms_per_point", gm->med, g->np);
	json_nums(j, "min_ms_per_point", gm->min, g->np);
	json_nums(j, "max_ms_per_point", gm->max, g->np);
	json_nums(j, "runs_per_point", runs, g->np);
	json_num(j, "fill_ms", gm->fill_ms);
	if (m <= M_LIB && floor_ratios(g, m, runs))
		json_nums(j, "ratio_to_floor_per_point", runs, g->np);
}

/* Columns: the last point, the first, and the growth between them. */
static double col_at(const struct report *o, const struct bench_row *r)
{
	const struct growth *g = o->re->priv;

	return r->runs ? g->points[last_point(&g->m[r - o->rows], g->np)] : NAN;
}

static double col_at0(const struct report *o, const struct bench_row *r)
{
	const struct growth *g = o->re->priv;

	return r->runs ? g->m[r - o->rows].med[0] : NAN;
}

static double col_growth(const struct report *o, const struct bench_row *r)
{
	return row_median(r, offsetof(struct sample, ms)) / col_at0(o, r);
}

static void cols(struct report *o)
{
	report_col(o, "at_nics", 0, col_at);
	report_col(o, "ms_at_0", 3, col_at0);
	report_col(o, "growth_x", 1, col_growth);
}

static const struct report_style growth_style = {
	.ms_prec = 3, .cols = cols, .row = json_row, .json = json_measured,
	.params = json_params, .notes = notes, .svg = svg,
	.failed_fails = true, .lean = true,
};

static void growth_title(const struct growth *g, char *buf, size_t len)
{
	const struct host_info *hi = host_info();

	snprintf(buf, len,
		 "growth: one guest of %u macvlans + filters, host filled 0..%u guest NICs, %u points, %u runs; kernel %s, %ld CPUs, load %.2f",
		 g->o->nics_per_guest, g->o->max_nics, g->np, g->o->runs,
		 hi->kernel, hi->cpus, hi->load1);
}

/* ---- the scenario ---- */

static int run(const struct bench_opts *o)
{
	struct growth *g = calloc(1, sizeof(*g));
	struct report_env re;
	uint64_t t0 = now_ns();
	unsigned int m;
	int ret;

	if (!g)
		return 1;
	g->o = o;
	make_points(g);
	bench_find_tool("ip", g->ip_path, sizeof(g->ip_path));
	report_env_init(&re, o, 0, 0);
	re.style = &growth_style;
	re.priv = g;
	growth_title(g, re.title, sizeof(re.title));
	report_header(&re, o->json);
	ret = filt_env_setup_cap(&g->e, o, 0,
				 o->max_nics + o->nics_per_guest);
	if (ret) {
		fprintf(stderr, "vnic-bench: growth: setting up: %s\n",
			strerror(-ret));
		free(g);
		return 1;
	}
	for (m = 0; m < M__MAX; m++) {
		bench_row_init(&g->rows[m], gmdescs[m].name, o->runs);
		run_method(g, m);
	}
	/* x_libvnic: the first libvnic curve that ran. */
	for (m = M_PFX; m <= M_LIB; m++)
		if (g->rows[m].runs) {
			g->rows[m].libvnic = true;
			break;
		}
	ret = report_rows(&re, g->rows, M__MAX, o->json);
	for (m = 0; m < M__MAX; m++)
		bench_row_free(&g->rows[m]);
	floor_free(&g->fb);
	filt_env_free(&g->e);
	if (!o->json)
		fprintf(stderr, "total %.1f s, NICs deleted\n",
			ms_since(t0) / 1000.0);
	free(g);
	return ret;
}

static void defaults(struct bench_opts *o)
{
	o->nics_per_guest = FILT_DEFAULT_NICS_PER_GUEST;
	o->kind = VNIC_KIND_MACVLAN;
	o->max_nics = G_DEFAULT_MAX;
	o->npoints = G_DEFAULT_POINTS;
}

const struct scenario scn_growth = {
	.name = "growth",
	.usage =
		"growth [--max-nics N] [--points P] [--runs R] [--nics-per-guest K]\n"
		"       [--methods a,b] [--settle MS] [--json] [--out DIR]\n"
		"  The cost of adding one guest (K NICs, default 4, and its filters)\n"
		"  as the host fills from 0 to N guest NICs (default 10000), at P\n"
		"  points (default 6: 0, 500, 1000, 2500, 5000, 10000), R runs each\n"
		"  (default 5; fewer where one run is slow: said in the notes).\n"
		"  Methods: floor libvnic-prefix libvnic libvnic-bpf ip-nft ip-iptables-legacy\n"
		"  ip-iptables-nft; --out DIR adds growth.svg (ms per guest vs NICs)\n",
	.opts = O_MAX_NICS | O_POINTS | O_RUNS | O_NPG | O_METHODS | O_SETTLE |
		O_OUT | O_JSON,
	.defaults = defaults,
	.run = run,
};
