// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Output of the filter scenarios, in the guest scenario's conventions: a
 * header naming the machine and the anchor tools, the shared table (or one
 * JSON object per row and line), notes, a verdict per target and the line
 * on spread; with --out, the same in files.  Ratios use rows measured in the
 * same invocation, never remembered figures.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "filters.h"

void frow_init(struct frow *r, const char *method, unsigned int runs)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->s = calloc(runs ? runs : 1, sizeof(*r->s));
	if (!r->s)
		snprintf(r->error, sizeof(r->error), "out of memory");
	r->target.max_ms = NAN;
	r->target.max_ratio = NAN;
}

void frow_free(struct frow *r)
{
	free(r->s);
	r->s = NULL;
}

/* The next sample, all unknown; the caller bumps r->runs when it is good. */
struct fsample *frow_next(struct frow *r)
{
	struct fsample *s = &r->s[r->runs];

	s->ms = s->writes = s->messages = s->batches = NAN;
	s->genid_delta = s->changed = NAN;
	s->sendmsg = s->recvmsg = s->dumps = NAN;
	return s;
}

void freport_env_init(struct freport_env *re, const struct bench_opts *o,
		      unsigned int guests, unsigned int existing)
{
	const struct host_info *h;

	memset(re, 0, sizeof(*re));
	re->scenario = o->scenario;
	re->kind = vnic_kind_name(o->kind);
	if (!re->kind)
		re->kind = "?";
	re->guests = guests;
	re->nics_per_guest = o->nics_per_guest;
	re->n = guests * o->nics_per_guest;
	re->existing = existing;
	re->runs_asked = o->runs;
	re->out_dir = o->out_dir;
	/* Runs the anchor tools for their versions: before any clock. */
	h = host_info();
	snprintf(re->kernel, sizeof(re->kernel), "%s", h->kernel);
	re->cpus = h->cpus;
	re->load1 = h->load1;
	progress_begin(re->scenario);
}

static void title(const struct freport_env *re, char *buf, size_t len)
{
	snprintf(buf, len, "%s: %u guests x %u %s NICs (%u NICs), %u existing guests, %u runs; kernel %s, %ld CPUs, load %.2f",
		 re->scenario, re->guests, re->nics_per_guest, re->kind, re->n,
		 re->existing, re->runs_asked, re->kernel, re->cpus, re->load1);
}

void freport_header(const struct freport_env *re, bool json)
{
	char buf[256];

	if (json)
		return;
	title(re, buf, sizeof(buf));
	printf("vnic-bench %s\n", buf);
	host_print_versions(stdout);
	fflush(stdout);
}

static void field(const struct frow *r, size_t off, struct summary *out)
{
	double *v = calloc(r->runs ? r->runs : 1, sizeof(*v));
	unsigned int i;

	if (!v) {
		summarize(NULL, 0, out);
		return;
	}
	for (i = 0; i < r->runs; i++)
		memcpy(&v[i], (const char *)&r->s[i] + off, sizeof(double));
	summarize(v, r->runs, out);
	free(v);
}

static double median_of(const struct frow *r, size_t off)
{
	struct summary s;

	field(r, off, &s);
	return s.median;
}

static const struct frow *find_row(const struct frow *rows, unsigned int n,
				   const char *method)
{
	unsigned int i;

	for (i = 0; method && i < n; i++)
		if (!strcmp(rows[i].method, method) && rows[i].runs)
			return &rows[i];
	return NULL;
}

static double ratio_to(const struct frow *r, const struct frow *rows,
		       unsigned int n, const char *method)
{
	const struct frow *to = find_row(rows, n, method);
	double a, b;

	if (!to || !r->runs)
		return NAN;
	a = median_of(r, offsetof(struct fsample, ms));
	b = median_of(to, offsetof(struct fsample, ms));
	return b > 0 ? a / b : NAN;
}

/* Everything the writers need, as one context for their callbacks. */
struct fout {
	const struct freport_env *re;
	const struct frow *rows;
	unsigned int n;
	struct trow *trows;
	struct table t;
};

static void json_common(struct json *j, const struct freport_env *re,
			const struct frow *r)
{
	json_str(j, "scenario", re->scenario);
	json_str(j, "method", r->method);
	json_str(j, "kind", re->kind);
	json_uint(j, "n", re->n);
	json_uint(j, "guests", re->guests);
	json_uint(j, "nics_per_guest", re->nics_per_guest);
	json_uint(j, "existing", r->existing);
}

/* Whether r meets its target; false with *measured false if unmeasured. */
static bool meets(const struct frow *r, const struct frow *rows,
		  unsigned int n, bool *measured)
{
	const struct ftarget *t = &r->target;
	double med = median_of(r, offsetof(struct fsample, ms));
	bool ok = true;
	unsigned int i;

	*measured = r->runs > 0;
	if (!isnan(t->max_ms))
		ok &= med <= t->max_ms;
	if (!isnan(t->max_ratio)) {
		double x = ratio_to(r, rows, n, t->ratio_to);

		if (isnan(x))
			*measured = false;
		ok &= x <= t->max_ratio;
	}
	if (t->floor) {
		double x = ratio_to(r, rows, n, t->floor);

		if (isnan(x))
			*measured = false;
		ok &= x <= BENCH_TARGET_RATIO;
	}
	for (i = 0; t->zero_writes && i < r->runs; i++)
		ok &= r->s[i].writes == 0 && !(r->s[i].genid_delta > 0);
	return ok && *measured;
}

static bool has_target(const struct frow *r)
{
	return !isnan(r->target.max_ms) || !isnan(r->target.max_ratio) ||
	       r->target.floor || r->target.zero_writes;
}

static void json_ratio(struct json *j, const struct fout *o,
		       const struct frow *r, const char *to)
{
	char key[48];

	if (!to)
		return;
	snprintf(key, sizeof(key), "ratio_to_%s", to);
	json_num(j, key, ratio_to(r, o->rows, o->n, to));
}

static void json_result(struct json *j, const struct frow *r)
{
	json_num(j, "writes", median_of(r, offsetof(struct fsample, writes)));
	json_num(j, "messages", median_of(r, offsetof(struct fsample, messages)));
	json_num(j, "batches", median_of(r, offsetof(struct fsample, batches)));
	json_num(j, "guests_changed", median_of(r, offsetof(struct fsample, changed)));
	json_num(j, "genid_delta", median_of(r, offsetof(struct fsample, genid_delta)));
}

static void json_target(struct json *j, const struct fout *o,
			const struct frow *r)
{
	bool measured;

	json_num(j, "target_ms", r->target.max_ms);
	json_num(j, "target_ratio", r->target.max_ratio);
	json_str(j, "target_ratio_to", r->target.ratio_to);
	json_bool(j, "target_zero_writes", r->target.zero_writes);
	if (r->target.floor) {
		json_str(j, "target_floor", r->target.floor);
		json_num(j, "target_ratio_to_floor", BENCH_TARGET_RATIO);
		json_num(j, "ratio_to_floor",
			 ratio_to(r, o->rows, o->n, r->target.floor));
	}
	json_bool(j, "meets_target", meets(r, o->rows, o->n, &measured));
}

static void json_measured(struct json *j, const struct fout *o,
			  const struct frow *r)
{
	double *v = calloc(r->runs ? r->runs : 1, sizeof(*v));
	unsigned int i;

	json_ratio(j, o, r, o->re->ratio_a);
	json_ratio(j, o, r, o->re->ratio_b);
	json_num(j, "per_nic_us", median_of(r, offsetof(struct fsample, ms)) *
				  1000.0 / o->re->n);
	if (r->has_result)
		json_result(j, r);
	if (r->has_calls) {
		json_num(j, "sendmsg", median_of(r, offsetof(struct fsample, sendmsg)));
		json_num(j, "recvmsg", median_of(r, offsetof(struct fsample, recvmsg)));
		json_num(j, "dumps", median_of(r, offsetof(struct fsample, dumps)));
		json_num(j, "x_per_doubling", r->per_doubling);
		if (r->target.ratio_to)
			json_num(j, "ratio_to_full_apply",
				 ratio_to(r, o->rows, o->n, r->target.ratio_to));
	}
	if (r->rules)
		json_uint(j, "rules", r->rules);
	json_bool(j, "extrapolated", r->extrapolated);
	if (r->extrapolated) {
		json_uint(j, "sample_items", r->sample_items);
		json_uint(j, "total_items", r->total_items);
	}
	if (r->note[0])
		json_str(j, "note", r->note);
	if (has_target(r))
		json_target(j, o, r);
	for (i = 0; v && i < r->runs; i++)
		v[i] = r->s[i].ms;
	json_nums(j, "samples_ms", v, v ? r->runs : 0);
	free(v);
}

/* One row's object: a line of --json, an element of --out's rows. */
static void json_row(struct json *j, const struct trow *t, const void *ctx)
{
	const struct fout *o = ctx;

	json_common(j, o->re, t->data);
	if (t->ms.n)
		json_measured(j, o, t->data);
}

static void json_params(struct json *j, const void *ctx)
{
	const struct freport_env *re = ((const struct fout *)ctx)->re;
	const struct {
		const char *key;
		unsigned int val;
	} p[] = {
		{ "guests", re->guests }, { "nics_per_guest", re->nics_per_guest },
		{ "nics", re->n }, { "existing", re->existing },
		{ "runs", re->runs_asked },
	};
	unsigned int i;

	json_str(j, "kind", re->kind);
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		json_uint(j, p[i].key, p[i].val);
}

static void verdict(FILE *f, const struct frow *r, const struct frow *rows,
		    unsigned int n)
{
	const struct ftarget *t = &r->target;
	double med = median_of(r, offsetof(struct fsample, ms));
	bool measured, ok = meets(r, rows, n, &measured);
	unsigned int i, writes = 0;

	if (!r->runs) {
		fprintf(f, "verdict: %s did not run: target NOT MEASURED\n",
			r->method);
		return;
	}
	fprintf(f, "verdict: %s median %.3f ms:", r->method, med);
	if (!isnan(t->max_ms))
		fprintf(f, " <= %.1f ms %s;", t->max_ms,
			med <= t->max_ms ? "met" : "missed");
	if (!isnan(t->max_ratio)) {
		double x = ratio_to(r, rows, n, t->ratio_to);

		if (isnan(x))
			fprintf(f, " <= %.2fx %s not measured (no %s row);",
				t->max_ratio, t->ratio_to, t->ratio_to);
		else
			fprintf(f, " %.2fx %s (<= %.2fx) %s;", x, t->ratio_to,
				t->max_ratio, x <= t->max_ratio ? "met" : "missed");
	}
	if (t->floor) {
		double x = ratio_to(r, rows, n, t->floor);

		if (isnan(x))
			fprintf(f, " <= %.2fx %s not measured (no %s row);",
				BENCH_TARGET_RATIO, t->floor, t->floor);
		else
			fprintf(f, " %.2fx %s (<= %.2fx) %s;", x, t->floor,
				BENCH_TARGET_RATIO,
				x <= BENCH_TARGET_RATIO ? "met" : "missed");
	}
	if (t->zero_writes) {
		for (i = 0; i < r->runs; i++)
			writes += !(r->s[i].writes == 0) ||
				  r->s[i].genid_delta > 0;
		fprintf(f, " zero writes %s (%u of %u runs wrote);",
			writes ? "missed" : "met", writes, r->runs);
	}
	fprintf(f, " target %s\n", !measured ? "NOT MEASURED" :
				   ok ? "MET" : "MISSED");
}

static void notes(FILE *f, const void *ctx)
{
	const struct fout *o = ctx;
	unsigned int i;

	for (i = 0; i < o->n; i++)
		if (o->rows[i].runs && o->rows[i].note[0])
			fprintf(f, "note: %s: %s\n", o->rows[i].method,
				o->rows[i].note);
	for (i = 0; i < o->n; i++)
		if (has_target(&o->rows[i]))
			verdict(f, &o->rows[i], o->rows, o->n);
}

/*
 * x_libvnic is taken to the row a target is stated for (libvnic, adding
 * one guest, the unchanged sync): the claim each scenario checks.  A ratio
 * column to that same row would repeat it, so it is left out.
 */
static const struct frow *libvnic_ref(const struct fout *o)
{
	unsigned int i;

	for (i = 0; i < o->n; i++)
		if (has_target(&o->rows[i]))
			return &o->rows[i];
	return NULL;
}

static void add_col(struct table *t, const char *head, int prec)
{
	t->extra[t->nextra].head = head;
	t->extra[t->nextra++].prec = prec;
}

static void ratio_col(struct fout *o, const char *to, const char *label,
		      const struct frow *ref)
{
	unsigned int i, c = o->t.nextra;

	if (!to || (ref && !strcmp(to, ref->method)))
		return;
	add_col(&o->t, label ? label : to, 2);
	for (i = 0; i < o->n; i++)
		o->trows[i].extra[c] = ratio_to(&o->rows[i], o->rows, o->n, to);
}

static void fill_trow(struct trow *t, const struct frow *r,
		      const struct frow *ref)
{
	memset(t, 0, sizeof(*t));
	t->method = r->method;
	t->skip = r->skip;
	t->error = r->error;
	t->data = r;
	t->libvnic_ref = r == ref;
	field(r, offsetof(struct fsample, ms), &t->ms);
}

static int build(struct fout *o)
{
	const struct frow *ref = libvnic_ref(o);
	unsigned int i, c;

	o->trows = calloc(o->n ? o->n : 1, sizeof(*o->trows));
	if (!o->trows)
		return -1;
	o->t = (struct table){ .scenario = o->re->scenario, .rows = o->trows,
			       .nrows = o->n, .ms_prec = 3 };
	for (i = 0; i < o->n; i++)
		fill_trow(&o->trows[i], &o->rows[i], ref);
	add_col(&o->t, "existing", 0);
	for (i = 0; i < o->n; i++)
		o->trows[i].extra[0] = o->rows[i].existing;
	ratio_col(o, o->re->ratio_a, o->re->label_a, ref);
	ratio_col(o, o->re->ratio_b, o->re->label_b, ref);
	c = o->t.nextra;
	add_col(&o->t, "us/NIC", 2);
	add_col(&o->t, "writes", 0);
	for (i = 0; i < o->n; i++) {
		o->trows[i].extra[c] = o->trows[i].ms.median * 1000.0 / o->re->n;
		o->trows[i].extra[c + 1] =
			median_of(&o->rows[i], offsetof(struct fsample, writes));
	}
	table_finish(&o->t);
	return 0;
}

int freport(const struct freport_env *re, struct frow *rows, unsigned int n,
	    bool json)
{
	struct fout o = { .re = re, .rows = rows, .n = n };
	struct out_doc d = {
		.dir = re->out_dir, .t = &o.t, .params = json_params,
		.json_row = json_row, .notes = notes, .ctx = &o,
	};
	unsigned int i;
	int missed = 0;
	char buf[256];
	bool measured;

	if (build(&o)) {
		fprintf(stderr, "vnic-bench: out of memory\n");
		return 1;
	}
	title(re, buf, sizeof(buf));
	d.title = buf;
	if (out_report(&d, json))
		missed = 1;
	for (i = 0; i < n; i++)
		if (has_target(&rows[i]) &&
		    !meets(&rows[i], rows, n, &measured) && measured)
			missed = 1;
	free(o.trows);
	fflush(stdout);
	return missed;
}
