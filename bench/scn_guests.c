// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The "guests" scenario: G guests of K NICs started one after another on
 * a host that keeps them, as a host fills up over the day.  Guest g is
 * made next to the g guests before it; nothing is deleted between guests;
 * after the run everything goes, untimed, and the baseline is checked.
 *
 * What it shows is growth: the cost of the last guests against the cost
 * of the first ones.  A method whose per-guest cost depends on what the
 * namespace already holds (kernel %d naming, name probing) climbs; one
 * that only pays for its own NICs stays flat, up to the kernel's own
 * growth, which the floor shows.
 *
 * The guest scenario's methods are reused, one run() per guest, with the
 * names of guest g starting at g*K.  The libvnic methods are not: a
 * runtime opens one context and keeps it, so its context (and for the
 * cache strategy its link table) is made once per run, untimed, and every
 * guest goes through it.
 *
 * The report is every scenario's (table.c, outdir.c): a row's median is
 * the total of the G guests; --out adds the per-guest growth curve.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define GUESTS_OWNER	"vnicbench"

static const struct gmethod {
	const char *name;
	const struct method *m;	/* the guest scenario's, or NULL: libvnic */
	enum vnic_naming naming;	/* libvnic only */
} gmethods[] = {
	{ "floor", &method_floor, 0 },
	{ "libvnic-kernel", NULL, VNIC_NAMING_KERNEL },
	{ "libvnic-cache", NULL, VNIC_NAMING_CACHE },
	{ "libvnic-explicit", NULL, VNIC_NAMING_EXPLICIT },
	{ "ip-link-add", &method_ip_link_add, 0 },
	{ "ip-batch", &method_ip_batch, 0 },
	{ "ioctl-probe", &method_ioctl_probe, 0 },
	{ "cni-macvlan", &method_cni_macvlan, 0 },
};

#define NGMETHODS (sizeof(gmethods) / sizeof(gmethods[0]))

/*
 * A method's row (report.c's) holds a run's total of the G guests as its
 * ms, libvnic's untimed context start as table_ms and ioctl-probe's
 * probes of all guests as ioctls; this, its priv, every guest's own time.
 */
struct gresult {
	const struct gmethod *gm;
	double *guest_ms;	/* [run * G + g] */
	double *guest_median;	/* [g], over runs: the curve */
	double first_ms, last_ms;	/* per guest, first and last tenth */
};

/* What a libvnic method keeps over one run: one context, every guest. */
struct lv_run {
	struct vnic_ctx *ctx;
	struct vnic_guest **guests;
	unsigned int n;
	struct guest_env *e;		/* the NICs' options */
	enum vnic_naming naming;
};

static void nic_of(const void *arg, unsigned int i, char *name, char *peer,
		   struct vnic_nic_opts *nic)
{
	const struct lv_run *lv = arg;

	libvnic_nic_opts(lv->e, i, lv->naming, name, peer, nic);
}

/* A runtime opens one context and keeps it: made once per run, untimed
 * (the cache strategy's link table too). */
static int lv_start(struct lv_run *lv, struct guest_env *e,
		    const struct gmethod *gm, double *setup_ms, char *err,
		    size_t errlen)
{
	VNIC_OPTS(vnic_ctx_opts, opts, .owner = GUESTS_OWNER);
	uint64_t t0 = now_ns();
	int ret;

	*lv = (struct lv_run){ .e = e, .naming = gm->naming };
	lv->guests = calloc(e->o->guests, sizeof(*lv->guests));
	if (!lv->guests)
		return bench_lib_fail(NULL, "calloc", -ENOMEM, err, errlen);
	ret = vnic_ctx_new(&opts, &lv->ctx);
	if (ret) {
		lv->ctx = NULL;
		return bench_lib_fail(NULL, "vnic_ctx_new", ret, err, errlen);
	}
	if (gm->naming == VNIC_NAMING_CACHE)
		ret = vnic_ctx_refresh(lv->ctx);
	*setup_ms = ms_since(t0);
	return ret ? bench_lib_fail(lv->ctx, "vnic_ctx_refresh", ret, err,
				    errlen) : 0;
}

/* The handles only: the bench's cleanup deletes the NICs by group. */
static void lv_stop(struct lv_run *lv)
{
	while (lv->n)
		vnic_guest_free(lv->guests[--lv->n]);
	free(lv->guests);
	if (lv->ctx)
		vnic_ctx_free(lv->ctx);
}

/* The G guests of one run, each timed on its own, none deleted; each sees
 * its own first_nic in *go, the environment is shared. */
static int make_guests(struct guest_env *e, struct bench_row *r,
		       struct gresult *gr, struct lv_run *lv,
		       struct bench_opts *go)
{
	double *row = &gr->guest_ms[r->runs * go->guests];
	struct sample *total = &r->s[r->runs], s;
	char gname[16];
	unsigned int g;
	uint64_t t0;
	int ret = 0;

	for (g = 0; g < go->guests && !ret; g++) {
		go->first_nic = g * go->nics;
		sample_init(&s);
		if (gr->gm->m) {
			ret = gr->gm->m->run(e, &s, r->error,
					     sizeof(r->error));
		} else {
			t0 = now_ns();
			snprintf(gname, sizeof(gname), "g%u", g);
			ret = bench_guest_make(lv->ctx, gname, 0, go->nics,
					       nic_of, lv, &lv->guests[lv->n],
					       r->error, sizeof(r->error));
			lv->n += !ret;
			s.ms = ms_since(t0);
		}
		row[g] = s.ms;
		/* Stays NAN for a method that does not count them. */
		if (!isnan(s.ioctls))
			total->ioctls = isnan(total->ioctls) ? s.ioctls :
					total->ioctls + s.ioctls;
	}
	return ret;
}

/* One run of one method; a failed restore ends everything. */
static int run_once(struct guest_env *e, struct bench_row *r, bool *fatal)
{
	struct gresult *gr = r->priv;
	const struct method *m = gr->gm->m;
	const struct bench_opts *o = e->o;
	struct sample *s = bench_row_next(r);
	struct bench_opts go = *o;
	unsigned int deleted, g;
	struct lv_run lv = { 0 };
	int ret = 0;

	e->run = r->runs;
	if (!m)
		ret = lv_start(&lv, e, gr->gm, &s->table_ms, r->error,
			       sizeof(r->error));
	e->o = &go;
	ret = ret ?: make_guests(e, r, gr, &lv, &go);
	e->o = o;
	ret = ret ?: bench_check_links(e, m, o->guests * o->nics *
				       env_links_per_nic(o), r->error,
				       sizeof(r->error));
	if (!m)
		lv_stop(&lv);
	else if (m->release)
		m->release(e);
	*fatal = env_restore(e, &deleted) != 0;
	usleep(o->settle_ms * 1000);
	if (ret)
		return ret;
	for (g = 0, s->ms = 0; g < o->guests; g++)
		s->ms += gr->guest_ms[r->runs * o->guests + g];
	r->runs++;
	return 0;
}

/* ---- the report: report.c's, with the growth columns ---- */

/* Guest g's median over the runs (the curve), and the median per guest
 * of the first and last tenth of the guests (at least one), pooled over
 * the runs. */
static void summarize_guests(struct gresult *gr, unsigned int runs,
			     unsigned int count)
{
	unsigned int d = (count + 9) / 10, run, g, n, last;
	double *v = calloc((size_t)d * runs + runs + 1, sizeof(*v));
	struct summary s;

	gr->guest_median = v ? calloc(count, sizeof(double)) : NULL;
	for (g = 0; gr->guest_median && g < count; g++) {
		for (run = 0; run < runs; run++)
			v[run] = gr->guest_ms[run * count + g];
		summarize(v, runs, &s);
		gr->guest_median[g] = s.median;
	}
	for (last = 0; v && last < 2; last++) {
		for (run = 0, n = 0; run < runs; run++)
			for (g = 0; g < d; g++)
				v[n++] = gr->guest_ms[run * count +
						      (last ? count - d + g : g)];
		summarize(v, n, &s);
		*(last ? &gr->last_ms : &gr->first_ms) = s.median;
	}
	if (!v)
		gr->first_ms = gr->last_ms = NAN;
	free(v);
}

static const struct gresult *gres_of(const struct bench_row *r)
{
	return r->priv;
}

static double col_first(const struct report *o, const struct bench_row *r)
{
	return gres_of(r)->first_ms;
}

static double col_last(const struct report *o, const struct bench_row *r)
{
	return gres_of(r)->last_ms;
}

static double col_growth(const struct report *o, const struct bench_row *r)
{
	return gres_of(r)->last_ms / gres_of(r)->first_ms;
}

static double col_per_nic(const struct report *o, const struct bench_row *r)
{
	return gres_of(r)->last_ms * 1000.0 / o->re->nics_per_guest;
}

static void guests_cols(struct report *o)
{
	report_col(o, "x_floor", 2, report_ratio_a);
	report_col(o, "first_ms", 2, col_first);
	report_col(o, "last_ms", 2, col_last);
	report_col(o, "growth", 2, col_growth);
	report_col(o, "us/NIC", 1, col_per_nic);
}

static void guests_row(struct json *j, const struct report *o,
		       const struct bench_row *r)
{
	json_bool(j, "libvnic", r->libvnic);
}

static void guests_json(struct json *j, const struct report *o,
			const struct bench_row *r)
{
	const struct gresult *gr = gres_of(r);
	double us_per_nic = 1000.0 / o->re->nics_per_guest;

	json_num(j, "first_guest_ms", gr->first_ms);
	json_num(j, "last_guest_ms", gr->last_ms);
	json_num(j, "growth", gr->last_ms / gr->first_ms);
	json_num(j, "per_nic_us_first", gr->first_ms * us_per_nic);
	json_num(j, "per_nic_us_last", gr->last_ms * us_per_nic);
	if (r->libvnic)
		report_json_median(j, "setup_median_ms", r,
				   offsetof(struct sample, table_ms));
	report_json_median(j, "ioctls_per_run", r,
			   offsetof(struct sample, ioctls));
	if (gr->guest_median)
		json_nums(j, "guest_median_ms", gr->guest_median, o->re->guests);
}

static void guests_notes(FILE *f, const struct report *o)
{
	const struct bench_row *r;

	for (r = o->rows; r < o->rows + o->n; r++)
		if (r->libvnic && r->runs)
			fprintf(f, "note: %s: context%s made once per run, untimed: %.2f ms\n",
				r->method,
				gres_of(r)->gm->naming == VNIC_NAMING_CACHE ?
				" and link table" : "",
				row_median(r, offsetof(struct sample, table_ms)));
	fprintf(f, "note: median_ms is the total of the %u guests; first_ms/last_ms: median per guest over the first and last %u guests of every run; growth = last/first\n",
		o->re->guests, (o->re->guests + 9) / 10);
}

static const struct report_style guests_style = {
	.ms_prec = 2, .cols = guests_cols, .row = guests_row,
	.json = guests_json, .notes = guests_notes, .failed_fails = true,
};

/* DIR/guests-curve.svg: what the table's first/last columns summarize,
 * one series per method that ran; guests numbered from 1 on the axis. */
static int out_curve(const struct bench_row *res, unsigned int nres,
		     unsigned int count, const char *dir)
{
	struct svg_series *s = calloc(nres + 1, sizeof(*s));
	double *x = calloc(count, sizeof(*x)), lo = NAN, hi = NAN;
	unsigned int i, k, ns = 0;
	char path[512];
	FILE *f = s && x ? out_open(dir, "guests-curve", "svg", path,
				    sizeof(path)) : NULL;
	int ret = f ? 0 : -EIO;

	for (k = 0; f && k < count; k++)
		x[k] = k + 1;
	for (i = 0; f && i < nres; i++) {
		const double *med = gres_of(&res[i])->guest_median;

		if (!res[i].runs || !med)
			continue;
		s[ns++] = (struct svg_series){ res[i].method, x, med, count };
		/* fmin and fmax pass over a NAN side. */
		for (k = 0; k < count; k++) {
			lo = fmin(lo, med[k]);
			hi = fmax(hi, med[k]);
		}
	}
	if (f) {
		svg_plot(f, "vnic-bench guests: median per guest as the host fills",
			 "guest", svg_wants_log(lo, hi) ?
			 "ms per guest (log scale)" : "ms per guest", s, ns,
			 svg_wants_log(lo, hi) ? SVG_LOG_Y : 0);
		ret = out_close(f, path);
	}
	if (!ret)
		fprintf(stderr, "wrote %s\n", path);
	free(x);
	free(s);
	return ret;
}

static int run(const struct bench_opts *o)
{
	struct bench_row res[NGMETHODS];
	struct gresult gres[NGMETHODS];
	const char *names[NGMETHODS];
	struct report_env re;
	struct guest_env e;
	unsigned int n = 0, i;
	int ret;

	for (i = 0; i < NGMETHODS; i++)
		names[i] = gmethods[i].name;
	if (bench_check_methods(o->methods, names, NGMETHODS))
		return 2;
	report_env_init(&re, o, o->guests, o->existing);
	re.nics_per_guest = o->nics;
	re.n = o->guests * o->nics;
	re.style = &guests_style;
	re.ratio_a = "floor";
	snprintf(re.title, sizeof(re.title),
		 "guests: %u guests x %u %s NICs, %u existing, %u runs; kernel %s, %ld CPUs, load %.2f",
		 o->guests, o->nics, re.kind, o->existing, o->runs, re.kernel,
		 re.cpus, re.load1);
	report_header(&re, o->json);
	if (bench_env_start(&e, o))
		return 1;
	for (i = 0; i < NGMETHODS; i++) {
		const struct method *m = gmethods[i].m;

		if (!bench_in_list(o->methods, gmethods[i].name))
			continue;
		bench_row_init(&res[n], gmethods[i].name, o->runs);
		gres[n] = (struct gresult){ .gm = &gmethods[i] };
		gres[n].guest_ms = calloc((size_t)o->runs * o->guests,
					  sizeof(double));
		if (!gres[n].guest_ms)
			snprintf(res[n].error, sizeof(res[n].error),
				 "out of memory");
		res[n].priv = &gres[n];
		res[n].libvnic = !m;
		res[n].existing = o->existing;
		res[n++].skip = m && m->skip ? m->skip(&e) : NULL;
	}
	ret = bench_run_rows(&e, res, n, run_once);
	if (!ret) {
		for (i = 0; i < n; i++)
			summarize_guests(&gres[i], res[i].runs, o->guests);
		ret = report_rows(&re, res, n, o->json);
		/* Tried even when another file failed: each says its own. */
		if (o->out_dir)
			ret = out_curve(res, n, o->guests, o->out_dir) ?: ret;
	}
	for (i = 0; i < n; i++) {
		bench_row_free(&res[i]);
		free(gres[i].guest_ms);
		free(gres[i].guest_median);
	}
	env_free(&e);
	return ret ? 1 : 0;
}

static void defaults(struct bench_opts *o)
{
	o->kind = VNIC_KIND_MACVTAP;
	o->runs = BENCH_GUESTS_DEFAULT_RUNS;
	o->guests = BENCH_GUESTS_DEFAULT_COUNT;
	o->nics = BENCH_GUESTS_DEFAULT_NICS;
}

static int check(struct bench_opts *o)
{
	if ((unsigned long)o->guests * o->nics > BENCH_MAX_NICS) {
		fprintf(stderr, "vnic-bench: guests: --count x --nics: at most %u NICs\n",
			BENCH_MAX_NICS);
		return -EINVAL;
	}
	return 0;
}

/* Taps are refused: a tap lives as long as its fd, and the per-guest
 * methods would have to hand G sets of fds around. */
const struct scenario scn_guests = {
	.name = "guests",
	.usage =
		"guests [--count G] [--nics K] [--kind macvtap|macvlan|veth]\n"
		"       [--existing N] [--runs R] [--json] [--up] [--settle MS]\n"
		"       [--methods floor,libvnic-cache,...] [--out DIR]\n"
		"  Starts G guests of K NICs one after another on a filling host (default\n"
		"  20 x 82, 3 runs): nothing is deleted until the run ends.  Reports the\n"
		"  total and the per-guest cost of the first and last tenth of guests;\n"
		"  --out adds DIR/guests-curve.svg, the median cost of each guest.\n"
		"  Methods: floor libvnic-kernel libvnic-cache libvnic-explicit\n"
		"           ip-link-add ip-batch ioctl-probe cni-macvlan\n",
	.opts = O_NICS | O_COUNT | O_KIND | O_EXISTING | O_RUNS | O_JSON |
		O_UP | O_SETTLE | O_METHODS | O_OUT,
	.kinds = KBIT(MACVTAP) | KBIT(MACVLAN) | KBIT(VETH),
	.defaults = defaults,
	.check = check,
	.run = run,
};
