// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * growth: what adding ONE guest (its K NICs and its filters) costs as the
 * host fills from 0 to N guest NICs, for libvnic and each anchor.
 *
 * Per method: the namespace is reset (NICs deleted in one request, the
 * ruleset flushed by the bench's own nfnetlink socket, legacy xtables
 * emptied), then for each point in increasing order the fill is topped up
 * untimed and in bulk (NICs by raw netlink; the method's own filters:
 * vnic_filter_apply in chunks, one nft -f, one iptables-restore per
 * family), and R runs of "add one guest" are timed, each undone untimed.
 * The median per point is the curve: flat is O(1) per guest, rising O(N).
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

#define G_MAX_POINTS		BENCH_MAX_POINTS
/* A point's runs are cut so that one method spends about this there. */
#define G_POINT_BUDGET_MS	8000.0

enum { M_PFX, M_LIB, M_NFT, M_XT_LEGACY, M_XT_NFT, M_FLOOR, M_FLOOR_PFX,
       M_BPF, M__MAX };

struct growth;
typedef int add_fn(struct growth *g, unsigned int m, unsigned int gi,
		   double *ms, char *err, size_t errlen);
static add_fn add_libvnic, add_anchor, add_floor;

/* A row: one timed "add one guest" (undone untimed); the libvnic rows
 * fill through libvnic, the others are skipped without their tools. */
static const struct gmdesc {
	const char *name;
	add_fn *add;
	bool lib, prefix, floor;
} gmdescs[M__MAX] = {
	[M_PFX] = { "libvnic-prefix", add_libvnic, true, true, false },
	[M_LIB] = { "libvnic", add_libvnic, true, false, false },
	[M_NFT] = { "ip-nft", add_anchor, false, false, false },
	[M_XT_LEGACY] = { "ip-iptables-legacy", add_anchor, false, false, false },
	[M_XT_NFT] = { "ip-iptables-nft", add_anchor, false, false, false },
	[M_FLOOR] = { "floor", add_floor, true, false, true },
	[M_FLOOR_PFX] = { "floor-prefix", add_floor, true, true, true },
	[M_BPF] = { "libvnic-bpf", add_libvnic, true, false, false },
};

/* A method's curve; its row (skip, error, the last point's samples) is
 * rows[] of the same index. */
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
	struct vnic_filter *h;		/* the method being run's */
	unsigned int filled;		/* NICs with their filters */
	struct floor_batches fb;	/* floor: libvnic's, at this point */
};

static enum xt_variant xt_of(unsigned int m)
{
	return m == M_XT_LEGACY ? XT_LEGACY : XT_NFT;
}

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
	for (i = nv; i-- > 0;) {
		for (j = 0; j < g->np && g->points[j] != v[i]; j++)
			;
		if (j == g->np)
			g->points[g->np++] = v[i];
	}
	for (i = 0; i < g->np; i++)
		g->x[i] = g->points[i];
}

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
	int idx;

	for (i = gi * k; i < (gi + 1) * k; i++) {
		filt_nic_name(i, name);
		idx = (int)if_nametoindex(name);
		n += idx > 0 && !rawnl_queue_dellink(&g->e.nl, idx);
	}
	return n ? rawnl_flush(&g->e.nl, 0) : 0;
}

/* ---- reset and fill ---- */

static int reset(struct growth *g, unsigned int m, char *err, size_t errlen)
{
	unsigned int tables = 1;
	int ret = filt_env_del_nics(&g->e);

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

/* Guests first..end-1's filters, by the method's own means, untimed. */
static int fill_filters(struct growth *g, unsigned int m, unsigned int first,
			unsigned int end, char *err, size_t errlen)
{
	struct vnic_policy *p;
	struct xt_set s;
	char *text, path[64];
	unsigned int n, rules;
	size_t len;
	int ret = 0;

	if (gmdescs[m].lib) {
		for (; first < end && !ret; first += n) {
			n = end - first < FILT_SETUP_CHUNK ? end - first :
							     FILT_SETUP_CHUNK;
			ret = filt_policy(&g->e, first, n, -1, &p, err, errlen);
			if (ret)
				break;
			ret = vnic_filter_apply(g->h, p, NULL);
			if (ret)
				bench_lib_fail(g->e.ctx, "vnic_filter_apply (fill)",
					       ret, err, errlen);
			vnic_policy_free(p);
		}
		return ret;
	}
	if (m == M_NFT) {
		ret = chains_render_range(&g->e, first, end - first, &text,
					  &len, &rules);
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
	/* Every guest so far in one restore per family: *-restore flushes
	 * the table, and arptables-nft-restore takes no --noflush. */
	ret = xt_set_build(&g->e, xt_of(m), 0, end, &s);
	if (!ret)
		ret = xt_preload(xt_of(m), &s, s.n);
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
	uint64_t t0 = now_ns();
	int ret;

	if (nics - g->filled < k)
		return 0;
	progress("%s: filling to %u NICs (untimed)", gmdescs[m].name, nics);
	ret = filt_env_add_nics(&g->e, g->filled, nics - g->filled);
	if (ret) {
		snprintf(err, errlen, "making NICs %u..%u: %.200s", g->filled,
			 nics - 1, g->e.nl.err[0] ? g->e.nl.err : strerror(-ret));
		return ret;
	}
	ret = fill_filters(g, m, g->filled / k, nics / k, err, errlen);
	g->filled = nics;
	g->m[m].fill_ms += ms_since(t0);
	return ret;
}

/* ---- one guest ---- */

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
	if (!ret && (ret = vnic_filter_apply(g->h, p, &res)))
		bench_lib_fail(g->e.ctx, "vnic_filter_apply", ret, err, errlen);
	*ms = ms_since(t0);
	vnic_policy_free(p);
	/* Untimed: the guest goes again. */
	ret2 = vnic_filter_remove(g->h, &name, 1, NULL);
	if (ret2 && !ret)
		ret = bench_lib_fail(g->e.ctx, "vnic_filter_remove", ret2, err,
				     errlen);
	ret2 = vg ? vnic_guest_destroy(vg) : 0;
	if (ret2 && !ret)
		ret = bench_lib_fail(g->e.ctx, "vnic_guest_destroy", ret2, err,
				     errlen);
	return ret;
}

/* The guest's NICs as ip -batch takes them, written before the clock. */
static int write_ip_batch(struct growth *g, unsigned int gi, char *path,
			  size_t len)
{
	unsigned int k = g->o->nics_per_guest, i;
	char name[16], mac[18];
	FILE *f = bench_tmpfile("ip", path, len);

	if (!f)
		return -errno;
	for (i = gi * k; i < (gi + 1) * k; i++) {
		filt_nic_name(i, name);
		filt_nic_mac_str(i, mac);
		fprintf(f, "link add link lower%u name %s address %s type macvlan mode bridge\n",
			i / FILT_NICS_PER_LOWER, name, mac);
	}
	return bench_tmpfile_close(f, path);
}

/* Untimed: the guest's rules (nft: its two chains of the per-guest-chain
 * layout; xtables: the jumps, then the chains). */
static int anchor_remove(struct growth *g, unsigned int m, unsigned int gi,
			 char *err, size_t errlen)
{
	char chain[32];
	const char *argv[] = { NULL, "delete", "chain", "netdev", FILT_TABLE,
			       chain, NULL };
	struct xt_set rm;
	double rms;
	int ret;

	if (m == M_NFT) {
		snprintf(chain, sizeof(chain), "from_nv%u",
			 gi * g->o->nics_per_guest);
		ret = nft_run(&g->e, argv);
		snprintf(chain, sizeof(chain), "guest_g%u", gi);
		ret = ret ?: nft_run(&g->e, argv);
		return ret ? fail("nft delete chain", ret, err, errlen) : 0;
	}
	ret = xt_set_build_remove(&g->e, xt_of(m), gi, 1, &rm);
	if (!ret)
		ret = xt_set_files(&rm);
	if (!ret)
		ret = xt_restore(xt_of(m), &rm, true, &rms);
	if (ret)
		fail("removing the guest's rules", ret, err, errlen);
	xt_set_unlink(&rm);
	xt_set_free(&rm);
	return ret;
}

/* An anchor: ip -batch of the guest's NICs, then its rules by nft -f (the
 * per-guest-chain layout) or *-restore --noflush, files written before
 * the clock. */
static int add_anchor(struct growth *g, unsigned int m, unsigned int gi,
		      double *ms, char *err, size_t errlen)
{
	char ipf[64], nftf[64] = "";
	const char *const argv[] = { g->ip_path, "-batch", ipf, NULL };
	struct xt_set s = { 0 };
	unsigned int rules;
	char *text = NULL;
	double xms;
	uint64_t t0;
	size_t len;
	int ret;

	ret = write_ip_batch(g, gi, ipf, sizeof(ipf));
	if (ret)
		return fail("ip batch file", ret, err, errlen);
	if (m == M_NFT) {
		ret = chains_render_range(&g->e, gi, 1, &text, &len, &rules);
		if (!ret)
			ret = nft_write_tmp(text, len, nftf, sizeof(nftf));
		free(text);
	} else if (!(ret = xt_set_build(&g->e, xt_of(m), gi, 1, &s))) {
		ret = xt_set_files(&s);
	}
	if (ret)
		fail("the guest's rule files", ret, err, errlen);
	t0 = now_ns();
	if (!ret && (ret = bench_exec(argv, NULL, -1, NULL)))
		fail("ip -batch", ret, err, errlen);
	if (!ret && (ret = m == M_NFT ? nft_file(&g->e, nftf) :
				       xt_restore(xt_of(m), &s, true, &xms)))
		fail(m == M_NFT ? "nft -f" : "restore --noflush", ret, err,
		     errlen);
	*ms = ms_since(t0);
	unlink(ipf);
	if (nftf[0])
		unlink(nftf);
	xt_set_unlink(&s);
	xt_set_free(&s);
	if (!ret)
		ret = anchor_remove(g, m, gi, err, errlen);
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

/* ---- a method's curve ---- */

static const char *skip_reason(struct growth *g, unsigned int m)
{
	if (!bench_in_list(g->o->methods, gmdescs[m].name))
		return "not selected (--methods)";
	if (gmdescs[m].lib)
		return NULL;
	if (!g->ip_path[0])
		return "ip(8) not found (install iproute2)";
	if (m != M_NFT)
		return xt_skip(xt_of(m));
	return g->e.nft_path[0] ? NULL : FILT_NFT_MISSING;
}

/* libvnic's handle for the method (none for the anchors); 1 when the
 * kernel cannot hook by prefix (the row is skipped). */
static int open_handle(struct growth *g, unsigned int m, char *err,
		       size_t errlen)
{
	VNIC_OPTS(vnic_filter_opts, bpf, .backend = VNIC_BACKEND_BPF,
		  .capacity = g->o->max_nics + g->o->nics_per_guest);
	int ret;

	g->h = NULL;
	if (!gmdescs[m].lib)
		return 0;
	if (m != M_BPF) {
		ret = filt_open(&g->e, gmdescs[m].prefix, &g->h, err, errlen);
		/* vnic_filter_open() can fail -EOPNOTSUPP too: an error,
		 * not this skip */
		if (ret != -EOPNOTSUPP || strcmp(err, PFX_SKIP))
			return ret;
		err[0] = '\0';
		g->rows[m].skip = PFX_SKIP;
		return 1;
	}
	ret = vnic_filter_open(g->e.ctx, &bpf, &g->h);
	if (ret) {
		g->h = NULL;
		return bench_lib_fail(g->e.ctx, "vnic_filter_open", ret, err,
				      errlen);
	}
	return 0;
}

static int run_point(struct growth *g, unsigned int m, unsigned int pi)
{
	struct gmethod *gm = &g->m[m];
	struct bench_row *row = &g->rows[m];
	char *err = row->error;
	size_t errlen = sizeof(row->error);
	unsigned int gi = g->points[pi] / g->o->nics_per_guest;
	unsigned int runs = g->o->runs, r;
	double v[1000], ms, prev = pi ? gm->med[pi - 1] : NAN;
	struct summary s;
	int ret;

	/* All runs, unless the last point says one would take the point
	 * over its budget. */
	if (!isnan(prev) && prev * runs > G_POINT_BUDGET_MS) {
		runs = (unsigned int)(G_POINT_BUDGET_MS / prev);
		runs = runs < 1 ? 1 : runs;
		gm->cut = true;
	}
	/* floor: libvnic's batches for this guest at this point, kept from
	 * its second add (the first may make the table), untimed; the handle
	 * closed, so that the bench's socket may change the table libvnic
	 * owned, and opened again after. */
	if (gmdescs[m].floor) {
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
	if (!ret && gmdescs[m].floor)
		ret = open_handle(g, m, err, errlen);
	if (ret)
		return ret;
	summarize(v, runs, &s);
	gm->runs[pi] = runs;
	gm->med[pi] = s.median;
	gm->min[pi] = s.min;
	gm->max[pi] = s.max;
	/* The row's samples: the last point's, for the table. */
	for (row->runs = 0, r = 0; r < runs; r++, row->runs++)
		bench_row_next(row)->ms = v[r];
	return 0;
}

static void run_method(struct growth *g, unsigned int m)
{
	struct gmethod *gm = &g->m[m];
	struct bench_row *row = &g->rows[m];
	char *err = row->error;
	unsigned int pi;
	int ret;

	for (pi = 0; pi < G_MAX_POINTS; pi++)
		gm->med[pi] = gm->min[pi] = gm->max[pi] = NAN;
	row->skip = skip_reason(g, m);
	if (row->skip)
		return;
	ret = reset(g, m, err, sizeof(row->error));
	ret = ret ?: open_handle(g, m, err, sizeof(row->error));
	for (pi = 0; pi < g->np && !ret; pi++) {
		ret = fill(g, m, g->points[pi], err, sizeof(row->error));
		ret = ret ?: run_point(g, m, pi);
	}
	if (g->h)
		vnic_filter_close(g->h);
	g->h = NULL;
	if (ret > 0)		/* skipped, said in row->skip */
		return;
	if (ret && !err[0])
		snprintf(err, sizeof(row->error), "%s", strerror(-ret));
	/* A failed method shows no figures, only why. */
	if (err[0])
		row->runs = 0;
	/* The next method must not start next to this one's state. */
	if (reset(g, m, err[0] ? gm->note : err,
		  err[0] ? sizeof(gm->note) : sizeof(row->error)))
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

/* libvnic's curve over the floor of its layout, point by point. */
static bool floor_ratios(const struct growth *g, unsigned int m, double *x)
{
	unsigned int f = gmdescs[m].prefix ? M_FLOOR_PFX : M_FLOOR, i;
	const struct gmethod *lv = &g->m[m], *fl = &g->m[f];

	/* A failed curve stops short (NAN points): nothing is judged. */
	if (m > M_LIB || g->rows[m].skip || g->rows[f].skip || !lv->runs[0] ||
	    !fl->runs[0] || g->rows[m].error[0] || g->rows[f].error[0])
		return false;
	for (i = 0; i < g->np; i++)
		x[i] = lv->med[i] / fl->med[i];
	return true;
}

/* The curve table, each method's fill and cuts, the ratios to the floor. */
static void notes(FILE *f, const struct report *o)
{
	const struct growth *g = o->re->priv;
	double x[G_MAX_POINTS];
	unsigned int m, i;
	bool ok;

	fprintf(f, "curve: ms per added guest (median) by guest NICs present\n%-20s",
		"method");
	for (i = 0; i < g->np; i++)
		fprintf(f, " %9u", g->points[i]);
	for (m = 0; m < M__MAX; m++) {
		if (!g->rows[m].skip)
			fprintf(f, "\n%-20s", gmdescs[m].name);
		for (i = 0; !g->rows[m].skip && i < g->np; i++)
			if (isnan(g->m[m].med[i]))
				fprintf(f, " %9s", "-");
			else
				fprintf(f, " %9.3f", g->m[m].med[i]);
	}
	fputc('\n', f);
	for (m = 0; m < M__MAX; m++) {
		const struct gmethod *gm = &g->m[m];

		if (g->rows[m].skip || (!gm->runs[0] && !g->rows[m].error[0]))
			continue;
		fprintf(f, "note: %s: fill (untimed) %.1f s in all",
			gmdescs[m].name, gm->fill_ms / 1000.0);
		if (gm->cut)
			fprintf(f, "; runs cut to keep a point near %.0f s:",
				G_POINT_BUDGET_MS / 1000.0);
		for (i = 0; gm->cut && i < g->np; i++)
			fprintf(f, " %u@%u", gm->runs[i], g->points[i]);
		fprintf(f, "%s%s\n", gm->note[0] ? "; " : "", gm->note);
	}
	fprintf(f, "note: each run adds one guest of %u macvlans and its filters and is undone untimed; libvnic-*: vnic_guest_create (explicit names) + vnic_filter_apply; ip-nft: ip -batch + nft -f of the guest's chains (per-guest-chain layout); ip-iptables-*: ip -batch + iptables/ip6tables-restore --noflush (nft variant: arptables-nft, one process per command); floor*: the guest's NICs in one sendmsg() + the nf_tables batch libvnic sent for the guest at that point (captured untimed), sent again\n",
		g->o->nics_per_guest);
	for (m = M_PFX; m <= M_LIB; m++) {
		if (!floor_ratios(g, m, x))
			continue;
		fprintf(f, "ratio: %s over %s by point:", gmdescs[m].name,
			gmdescs[gmdescs[m].prefix ? M_FLOOR_PFX : M_FLOOR].name);
		for (i = 0, ok = true; i < g->np; i++) {
			fprintf(f, " %.2fx", x[i]);
			ok &= !(x[i] > BENCH_TARGET_RATIO);
		}
		fprintf(f, "; <= %.2fx at every point: %s\n", BENCH_TARGET_RATIO,
			ok ? "met" : "missed");
	}
}

static void svg(FILE *f, const struct report *o)
{
	const struct growth *g = o->re->priv;
	struct svg_series s[M__MAX];
	unsigned int m, n = 0;

	for (m = 0; m < M__MAX; m++)
		if (!g->rows[m].skip && g->m[m].runs[0])
			s[n++] = (struct svg_series){ gmdescs[m].name, g->x,
						      g->m[m].med, g->np };
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
	double v[G_MAX_POINTS];

	for (i = 0; i < g->np; i++)
		v[i] = gm->runs[i];
	json_nums(j, "points", g->x, g->np);
	json_nums(j, "median_ms_per_point", gm->med, g->np);
	json_nums(j, "min_ms_per_point", gm->min, g->np);
	json_nums(j, "max_ms_per_point", gm->max, g->np);
	json_nums(j, "runs_per_point", v, g->np);
	json_num(j, "fill_ms", gm->fill_ms);
	if (floor_ratios(g, m, v))
		json_nums(j, "ratio_to_floor_per_point", v, g->np);
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
	snprintf(re.title, sizeof(re.title),
		 "growth: one guest of %u macvlans + filters, host filled 0..%u guest NICs, %u points, %u runs; kernel %s, %ld CPUs, load %.2f",
		 o->nics_per_guest, o->max_nics, g->np, o->runs, re.kernel,
		 re.cpus, re.load1);
	report_header(&re, o->json);
	ret = filt_env_setup_cap(&g->e, o, 0, o->max_nics + o->nics_per_guest);
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
	g->rows[g->rows[M_PFX].runs ? M_PFX : M_LIB].libvnic = true;
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
	o->max_nics = 10000;
	o->npoints = 6;
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
