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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define GUESTS_OWNER	"vnicbench"

struct gmethod {
	const char *name;
	const struct method *m;	/* the guest scenario's, or NULL: libvnic */
	enum vnic_naming naming;	/* libvnic only */
};

static const struct gmethod gmethods[] = {
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

struct gresult {
	const struct gmethod *gm;
	const char *skip;
	char error[256];
	unsigned int runs;	/* complete runs */
	double *guest_ms;	/* [run * G + g] */
	double *total_ms;	/* [run] */
	double *setup_ms;	/* [run]: untimed start, libvnic's context */
	double *ioctls;		/* [run]: ioctl-probe's probes, all guests */
};

/* What a libvnic method keeps over one run: one context, every guest. */
struct lv_run {
	struct vnic_ctx *ctx;
	struct vnic_guest **guests;
	unsigned int n;
};

static int lv_fail(struct vnic_ctx *ctx, const char *what, int ret,
		   char *err, size_t errlen)
{
	const char *msg = ctx ? vnic_ctx_errmsg(ctx) : NULL;

	snprintf(err, errlen, "%s: %s%s%s", what, vnic_strerror(ret),
		 msg && *msg ? ": " : "", msg ? msg : "");
	return ret;
}

static int lv_start(struct lv_run *lv, const struct gmethod *gm,
		    unsigned int count, double *setup_ms, char *err,
		    size_t errlen)
{
	VNIC_OPTS(vnic_ctx_opts, opts, .owner = GUESTS_OWNER);
	uint64_t t0 = now_ns();
	int ret;

	memset(lv, 0, sizeof(*lv));
	lv->guests = calloc(count, sizeof(*lv->guests));
	if (!lv->guests)
		return lv_fail(NULL, "calloc", -ENOMEM, err, errlen);
	ret = vnic_ctx_new(&opts, &lv->ctx);
	if (ret) {
		lv->ctx = NULL;
		return lv_fail(NULL, "vnic_ctx_new", ret, err, errlen);
	}
	if (gm->naming == VNIC_NAMING_CACHE)
		ret = vnic_ctx_refresh(lv->ctx);
	*setup_ms = ms_since(t0);
	return ret ? lv_fail(lv->ctx, "vnic_ctx_refresh", ret, err, errlen) : 0;
}

/* One guest through the run's context; timed by the caller. */
static int lv_guest(struct lv_run *lv, struct guest_env *e,
		    const struct gmethod *gm, unsigned int g, char *err,
		    size_t errlen)
{
	char gname[16], name[16], peer[16];
	struct vnic_nic_opts nic;
	struct vnic_guest *guest;
	unsigned int i;
	int ret;

	snprintf(gname, sizeof(gname), "g%u", g);
	ret = vnic_guest_new(lv->ctx, gname, &guest);
	if (ret)
		return lv_fail(lv->ctx, "vnic_guest_new", ret, err, errlen);
	lv->guests[lv->n++] = guest;
	for (i = 0; i < e->o->nics; i++) {
		libvnic_nic_opts(e, i, gm->naming, name, peer, &nic);
		ret = vnic_guest_add_nic(guest, &nic, NULL);
		if (ret)
			return lv_fail(lv->ctx, "vnic_guest_add_nic", ret,
				       err, errlen);
	}
	ret = vnic_guest_create(guest);
	return ret ? lv_fail(lv->ctx, "vnic_guest_create", ret, err, errlen) :
		     0;
}

/* The handles only: the bench's cleanup deletes the NICs by group. */
static void lv_stop(struct lv_run *lv)
{
	unsigned int i;

	for (i = 0; i < lv->n; i++)
		vnic_guest_free(lv->guests[i]);
	free(lv->guests);
	if (lv->ctx)
		vnic_ctx_free(lv->ctx);
	memset(lv, 0, sizeof(*lv));
}

/* Every guest's links must be there, where the method puts them. */
static int check_all(struct guest_env *e, const struct gmethod *gm,
		     unsigned int want, char *err, size_t errlen)
{
	unsigned int here, got;
	int ret = env_count_new(e, &here);

	got = here;
	if (!ret && gm->m && gm->m->count) {
		if (here) {
			snprintf(err, errlen,
				 "%u links left in the bench's namespace", here);
			return -EPROTO;
		}
		ret = gm->m->count(e, &got);
	}
	if (ret || got == want)
		return ret;
	snprintf(err, errlen,
		 "reported success but %u links were created, not %u", got,
		 want);
	return -EPROTO;
}

/* The G guests of one run, each timed on its own, none deleted. */
static int make_guests(struct guest_env *e, struct gresult *r,
		       struct lv_run *lv, struct bench_opts *go)
{
	double *row = &r->guest_ms[r->runs * go->guests];
	unsigned int g;
	struct sample s;
	uint64_t t0;
	int ret = 0;

	for (g = 0; g < go->guests && !ret; g++) {
		go->first_nic = g * go->nics;
		sample_init(&s);
		if (r->gm->m) {
			ret = r->gm->m->run(e, &s, r->error,
					    sizeof(r->error));
		} else {
			t0 = now_ns();
			ret = lv_guest(lv, e, r->gm, g, r->error,
				       sizeof(r->error));
			s.ms = ms_since(t0);
		}
		row[g] = s.ms;
		/* Stays NAN for a method that does not count them. */
		if (!isnan(s.ioctls))
			r->ioctls[r->runs] = isnan(r->ioctls[r->runs]) ?
					     s.ioctls :
					     r->ioctls[r->runs] + s.ioctls;
	}
	return ret;
}

static void release_all(struct guest_env *e, const struct gmethod *gm,
			struct lv_run *lv)
{
	if (!gm->m)
		lv_stop(lv);
	else if (gm->m->release)
		gm->m->release(e);
}

/* One run of one method; a failed restore ends everything. */
static int run_once(struct guest_env *e, struct gresult *r, bool *fatal)
{
	const struct bench_opts *o = e->o;
	struct bench_opts go = *o;
	unsigned int deleted, g;
	struct lv_run lv;
	double total = 0;
	int ret = 0;

	memset(&lv, 0, sizeof(lv));
	e->run = r->runs;
	r->setup_ms[r->runs] = NAN;
	r->ioctls[r->runs] = NAN;
	if (!r->gm->m)
		ret = lv_start(&lv, r->gm, o->guests,
			       &r->setup_ms[r->runs], r->error,
			       sizeof(r->error));
	/* Each guest sees its own first_nic; the environment is shared. */
	e->o = &go;
	if (!ret)
		ret = make_guests(e, r, &lv, &go);
	e->o = o;
	if (!ret)
		ret = check_all(e, r->gm, o->guests * o->nics *
				env_links_per_nic(o), r->error, sizeof(r->error));
	release_all(e, r->gm, &lv);
	*fatal = env_restore(e, &deleted) != 0;
	usleep(o->settle_ms * 1000);
	if (ret)
		return ret;
	for (g = 0; g < o->guests; g++)
		total += r->guest_ms[r->runs * o->guests + g];
	r->total_ms[r->runs++] = total;
	return 0;
}

static void init_results(const struct guest_env *e, struct gresult *res,
			 unsigned int *nres)
{
	const struct bench_opts *o = e->o;
	unsigned int i;

	*nres = 0;
	for (i = 0; i < NGMETHODS; i++) {
		struct gresult *r = &res[*nres];

		if (!bench_in_list(o->methods, gmethods[i].name))
			continue;
		memset(r, 0, sizeof(*r));
		r->gm = &gmethods[i];
		if (r->gm->m && r->gm->m->skip)
			r->skip = r->gm->m->skip(e);
		r->guest_ms = calloc((size_t)o->runs * o->guests,
				     sizeof(double));
		r->total_ms = calloc(o->runs, sizeof(double));
		r->setup_ms = calloc(o->runs, sizeof(double));
		r->ioctls = calloc(o->runs, sizeof(double));
		if (!r->guest_ms || !r->total_ms || !r->setup_ms || !r->ioctls)
			snprintf(r->error, sizeof(r->error), "out of memory");
		(*nres)++;
	}
}

static void free_results(struct gresult *res, unsigned int nres)
{
	unsigned int i;

	for (i = 0; i < nres; i++) {
		free(res[i].guest_ms);
		free(res[i].total_ms);
		free(res[i].setup_ms);
		free(res[i].ioctls);
	}
}

struct loop {
	struct guest_env *e;
	struct gresult *res;
};

static const char *active(void *ctx, unsigned int i)
{
	const struct gresult *r = &((struct loop *)ctx)->res[i];

	return r->skip || r->error[0] ? NULL : r->gm->name;
}

/* A failed restore ends everything. */
static int once(void *ctx, unsigned int i, unsigned int run)
{
	struct loop *l = ctx;
	struct gresult *r = &l->res[i];
	bool fatal = false;

	if (run_once(l->e, r, &fatal)) {
		progress_clear();
		fprintf(stderr, "vnic-bench: %s: %s\n", r->gm->name, r->error);
	}
	return fatal ? -EIO : 0;
}

static int run_all(struct guest_env *e, struct gresult *res, unsigned int nres)
{
	struct loop l = { e, res };
	struct bench_loop bl = { .runs = e->o->runs, .n = nres, .ctx = &l,
				 .active = active, .once = once };

	return bench_warm_up(e) ? -EIO : bench_rotate(&bl);
}

/* ---- the report: the shared table, --json lines and --out files ---- */

/* The figures of one method, computed once for the table and for JSON. */
struct grow {
	const struct gresult *r;
	struct summary total, setup, ioctls;
	double first_ms, last_ms;	/* per guest, first and last tenth */
	double growth;			/* last / first */
	double ratio;			/* total / floor's total */
	double *guest_median;		/* [g], over runs */
};

/* Everything the writers need, as one context for their callbacks. */
struct gout {
	const struct bench_opts *o;
	const struct gresult *res;
	unsigned int nres;
	struct grow *rows;	/* [nres] */
	struct trow *trows;	/* [nres] */
	struct table t;
};

enum { X_FLOOR, X_FIRST, X_LAST, X_GROWTH, X_PER_NIC, X__MAX };

static const struct tcol extra_cols[X__MAX] = {
	[X_FLOOR] = { "x_floor", 2 },
	[X_FIRST] = { "first_ms", 2 },
	[X_LAST] = { "last_ms", 2 },
	[X_GROWTH] = { "growth", 2 },
	[X_PER_NIC] = { "us/NIC", 1 },
};

/* The guests of a tenth of the run (at least one), pooled over runs. */
static double tenth_median(const struct gresult *r, unsigned int count,
			   bool last)
{
	unsigned int d = (count + 9) / 10, run, g, n = 0;
	double *v = calloc((size_t)d * r->runs + 1, sizeof(*v));
	struct summary s;

	if (!v)
		return NAN;
	for (run = 0; run < r->runs; run++)
		for (g = 0; g < d; g++)
			v[n++] = r->guest_ms[run * count +
					     (last ? count - d + g : g)];
	summarize(v, n, &s);
	free(v);
	return s.median;
}

/* Guest g's median over the runs: the growth curve (NULL: no memory). */
static double *guest_medians(const struct gresult *r, unsigned int count)
{
	double *v = calloc(r->runs ? r->runs : 1, sizeof(*v));
	double *med = calloc(count, sizeof(*med));
	unsigned int g, run;
	struct summary s;

	for (g = 0; v && med && g < count; g++) {
		for (run = 0; run < r->runs; run++)
			v[run] = r->guest_ms[run * count + g];
		summarize(v, r->runs, &s);
		med[g] = s.median;
	}
	if (!v) {
		free(med);
		med = NULL;
	}
	free(v);
	return med;
}

static void fill_grow(struct grow *w, const struct gresult *r,
		      unsigned int count, double floor_ms)
{
	memset(w, 0, sizeof(*w));
	w->r = r;
	summarize(r->total_ms, r->runs, &w->total);
	summarize(r->setup_ms, r->runs, &w->setup);
	summarize(r->ioctls, r->runs, &w->ioctls);
	w->first_ms = tenth_median(r, count, false);
	w->last_ms = tenth_median(r, count, true);
	w->growth = w->last_ms / w->first_ms;
	w->ratio = floor_ms > 0 ? w->total.median / floor_ms : NAN;
	w->guest_median = guest_medians(r, count);
}

static double floor_total(const struct gresult *res, unsigned int nres)
{
	struct summary s;
	unsigned int i;

	for (i = 0; i < nres; i++) {
		if (strcmp(res[i].gm->name, "floor") || !res[i].runs)
			continue;
		summarize(res[i].total_ms, res[i].runs, &s);
		return s.median;
	}
	return NAN;
}

static void guests_title(const struct bench_opts *o, char *buf, size_t len)
{
	const struct host_info *h = host_info();

	snprintf(buf, len, "guests: %u guests x %u %s NICs, %u existing, %u runs; kernel %s, %ld CPUs, load %.2f",
		 o->guests, o->nics, vnic_kind_name(o->kind), o->existing,
		 o->runs, h->kernel, h->cpus, h->load1);
}

static void header(const struct bench_opts *o)
{
	char title[256];

	/* JSON readers get the same facts as fields of every line. */
	if (o->json)
		return;
	guests_title(o, title, sizeof(title));
	printf("vnic-bench %s\n", title);
	host_print_versions(stdout);
	fflush(stdout);
}

static void json_params(struct json *j, const void *ctx)
{
	const struct bench_opts *o = ((const struct gout *)ctx)->o;

	json_str(j, "kind", vnic_kind_name(o->kind));
	json_uint(j, "guests", o->guests);
	json_uint(j, "nics_per_guest", o->nics);
	json_uint(j, "existing", o->existing);
	json_uint(j, "runs", o->runs);
}

static void json_measured(struct json *j, const struct bench_opts *o,
			  const struct grow *w)
{
	double us_per_nic = 1000.0 / o->nics;	/* from a guest's ms */

	json_num(j, "ratio_to_floor", w->ratio);
	json_num(j, "first_guest_ms", w->first_ms);
	json_num(j, "last_guest_ms", w->last_ms);
	json_num(j, "growth", w->growth);
	json_num(j, "per_nic_us_first", w->first_ms * us_per_nic);
	json_num(j, "per_nic_us_last", w->last_ms * us_per_nic);
	if (!w->r->gm->m)
		json_num(j, "setup_median_ms", w->setup.median);
	json_num(j, "ioctls_per_run", w->ioctls.median);
	json_nums(j, "samples_ms", w->r->total_ms, w->r->runs);
	if (w->guest_median)
		json_nums(j, "guest_median_ms", w->guest_median, o->guests);
}

/* One row's object: a line of --json, an element of --out's rows. */
static void json_row(struct json *j, const struct trow *t, const void *ctx)
{
	const struct bench_opts *o = ((const struct gout *)ctx)->o;
	const struct grow *w = t->data;

	json_str(j, "scenario", "guests");
	json_str(j, "method", t->method);
	json_str(j, "kind", vnic_kind_name(o->kind));
	json_uint(j, "guests", o->guests);
	json_uint(j, "nics_per_guest", o->nics);
	json_uint(j, "n", (unsigned long long)o->guests * o->nics);
	json_uint(j, "existing", o->existing);
	json_bool(j, "libvnic", !w->r->gm->m);
	if (t->ms.n)
		json_measured(j, o, w);
}

static void notes(FILE *f, const void *ctx)
{
	const struct gout *g = ctx;
	unsigned int i;

	for (i = 0; i < g->nres; i++) {
		const struct grow *w = &g->rows[i];

		if (w->r->gm->m || !w->r->runs)
			continue;
		fprintf(f, "note: %s: context%s made once per run, untimed: %.2f ms\n",
			w->r->gm->name,
			w->r->gm->naming == VNIC_NAMING_CACHE ?
			" and link table" : "", w->setup.median);
	}
	fprintf(f, "note: median_ms is the total of the %u guests; first_ms/last_ms: median per guest over the first and last %u guests of every run; growth = last/first\n",
		g->o->guests, (g->o->guests + 9) / 10);
}

static void add_row(struct gout *g, unsigned int i, double floor_ms)
{
	const struct gresult *r = &g->res[i];
	struct grow *w = &g->rows[i];
	struct trow *t = &g->trows[i];

	fill_grow(w, r, g->o->guests, floor_ms);
	t->method = r->gm->name;
	t->skip = r->skip;
	t->error = r->error;
	t->ms = w->total;
	t->data = w;
	t->extra[X_FLOOR] = w->ratio;
	t->extra[X_FIRST] = w->first_ms;
	t->extra[X_LAST] = w->last_ms;
	t->extra[X_GROWTH] = w->growth;
	t->extra[X_PER_NIC] = w->last_ms * 1000.0 / g->o->nics;
}

/* One row per method; x_libvnic is taken to the fastest libvnic total. */
static int build_rows(struct gout *g)
{
	double floor_ms = floor_total(g->res, g->nres);
	struct trow *best = NULL;
	unsigned int i;

	g->rows = calloc(g->nres + 1, sizeof(*g->rows));
	g->trows = calloc(g->nres + 1, sizeof(*g->trows));
	if (!g->rows || !g->trows)
		return -ENOMEM;
	for (i = 0; i < g->nres; i++) {
		struct trow *t = &g->trows[i];

		add_row(g, i, floor_ms);
		if (g->res[i].gm->m || !t->ms.n)
			continue;
		if (!best || t->ms.median < best->ms.median)
			best = t;
	}
	if (best)
		best->libvnic_ref = true;
	g->t = (struct table){ .scenario = "guests", .rows = g->trows,
			       .nrows = g->nres, .ms_prec = 2,
			       .nextra = X__MAX };
	memcpy(g->t.extra, extra_cols, sizeof(extra_cols));
	table_finish(&g->t);
	return 0;
}

static void free_rows(struct gout *g)
{
	unsigned int i;

	for (i = 0; g->rows && i < g->nres; i++)
		free(g->rows[i].guest_median);
	free(g->rows);
	free(g->trows);
}

/* The curve's series: one per method that ran; *lo..*hi their span. */
static unsigned int curve_series(const struct gout *g, const double *x,
				 struct svg_series *s, double *lo, double *hi)
{
	unsigned int i, k, ns = 0;

	*lo = *hi = NAN;
	for (i = 0; i < g->nres; i++) {
		const struct grow *w = &g->rows[i];

		if (!w->total.n || !w->guest_median)
			continue;
		s[ns++] = (struct svg_series){ .name = g->trows[i].method,
					       .x = x, .y = w->guest_median,
					       .n = g->o->guests };
		/* fmin and fmax pass over a NAN side. */
		for (k = 0; k < g->o->guests; k++) {
			*lo = fmin(*lo, w->guest_median[k]);
			*hi = fmax(*hi, w->guest_median[k]);
		}
	}
	return ns;
}

static void write_curve(FILE *f, const struct gout *g, const double *x,
			struct svg_series *s)
{
	unsigned int ns;
	double lo, hi;
	bool log_y;

	ns = curve_series(g, x, s, &lo, &hi);
	log_y = svg_wants_log(lo, hi);
	svg_plot(f, "vnic-bench guests: median per guest as the host fills",
		 "guest", log_y ? "ms per guest (log scale)" : "ms per guest",
		 s, ns, log_y ? SVG_LOG_Y : 0);
}

/* DIR/guests-curve.svg: what the table's first/last columns summarize. */
static int out_curve(const struct gout *g, const char *dir)
{
	struct svg_series *s = calloc(g->nres + 1, sizeof(*s));
	double *x = calloc(g->o->guests, sizeof(*x));
	unsigned int k;
	char path[512];
	int ret = -ENOMEM, bad;
	FILE *f = NULL;

	snprintf(path, sizeof(path), "%s/guests-curve.svg", dir);
	if (s && x)
		f = fopen(path, "w");
	if (s && x && !f) {
		ret = -errno;
		fprintf(stderr, "vnic-bench: %s: %s\n", path, strerror(errno));
	}
	if (f) {
		/* Guests are numbered from 1 on the axis: "the 20th guest". */
		for (k = 0; k < g->o->guests; k++)
			x[k] = k + 1;
		write_curve(f, g, x, s);
		bad = ferror(f);
		ret = fclose(f) || bad ? -EIO : 0;
		if (ret)
			fprintf(stderr, "vnic-bench: writing %s failed\n", path);
		else
			fprintf(stderr, "wrote %s\n", path);
	}
	free(x);
	free(s);
	return ret;
}

static int report(const struct bench_opts *o, const struct gresult *res,
		  unsigned int nres)
{
	struct gout g = { .o = o, .res = res, .nres = nres };
	struct out_doc d = {
		.dir = o->out_dir, .t = &g.t, .params = json_params,
		.json_row = json_row, .notes = notes, .ctx = &g,
	};
	unsigned int i, failed = 0;
	char title[256];
	int ret;

	guests_title(o, title, sizeof(title));
	d.title = title;
	ret = build_rows(&g);
	if (ret) {
		fprintf(stderr, "vnic-bench: out of memory\n");
	} else {
		ret = out_report(&d, o->json);
		/* Tried even when another file failed: each says its own. */
		if (o->out_dir)
			ret = out_curve(&g, o->out_dir) ?: ret;
	}
	free_rows(&g);
	for (i = 0; i < nres; i++)
		failed += res[i].error[0] != 0;
	return failed || ret ? -1 : 0;
}

static int run(const struct bench_opts *o)
{
	struct gresult res[NGMETHODS];
	const char *names[NGMETHODS];
	struct guest_env e;
	unsigned int nres;
	uint64_t t0;
	int ret;

	for (nres = 0; nres < NGMETHODS; nres++)
		names[nres] = gmethods[nres].name;
	if (bench_check_methods(o->methods, names, NGMETHODS))
		return 2;
	/* Runs the anchor tools for their versions: before any clock. */
	host_info();
	progress_begin("guests");
	header(o);
	t0 = now_ns();
	ret = env_setup(&e, o);
	if (ret) {
		progress_end();
		fprintf(stderr, "vnic-bench: setup: %s\n", strerror(-ret));
		env_free(&e);
		return 1;
	}
	if (!o->json)
		fprintf(stderr, "baseline: %u links (%u existing), set up in %.0f ms\n",
			e.base.n, o->existing, ms_since(t0));
	init_results(&e, res, &nres);
	ret = run_all(&e, res, nres);
	if (!ret) {
		ret = report(o, res, nres);
	} else {
		progress_end();
		fprintf(stderr, "vnic-bench: aborted: the baseline could not be restored\n");
	}
	free_results(res, nres);
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
