// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one report of every scenario but cni: a header naming the machine
 * and the anchor tools, the shared table (or one JSON object per row and
 * line), notes, a verdict per target and the line on spread; with --out,
 * the same in files.  A scenario says how it differs through its
 * report_style: its columns, its own JSON fields, notes and chart.  Ratios use rows measured in the same invocation,
 * never remembered figures: the floor moves with the kernel and the
 * machine.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_row_init(struct bench_row *r, const char *method, unsigned int runs)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->s = calloc(runs ? runs : 1, sizeof(*r->s));
	if (!r->s)
		snprintf(r->error, sizeof(r->error), "out of memory");
	r->target.max_ms = NAN;
	r->target.max_ratio = NAN;
}

void bench_row_free(struct bench_row *r)
{
	free(r->s);
	r->s = NULL;
}

/* The next sample, all unknown; the caller bumps r->runs when it is good. */
struct sample *bench_row_next(struct bench_row *r)
{
	sample_init(&r->s[r->runs]);
	return &r->s[r->runs];
}

void report_env_init(struct report_env *re, const struct bench_opts *o,
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
	re->n = guests ? guests * o->nics_per_guest : o->nics;
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

/* guests 0: one guest of n NICs (the guest scenario). */
static void title(const struct report_env *re, char *buf, size_t len)
{
	int k = re->title[0] ? -1 : re->guests ?
		snprintf(buf, len, "%s: %u guests x %u %s NICs (%u NICs), %u existing guests",
			 re->scenario, re->guests, re->nics_per_guest,
			 re->kind, re->n, re->existing) :
		snprintf(buf, len, "%s: %u %s NICs, %u existing",
			 re->scenario, re->n, re->kind, re->existing);

	if (k < 0)
		snprintf(buf, len, "%s", re->title);
	else if ((size_t)k < len)
		snprintf(buf + k, len - k, ", %u runs; kernel %s, %ld CPUs, load %.2f",
			 re->runs_asked, re->kernel, re->cpus, re->load1);
}

void report_header(const struct report_env *re, bool json)
{
	char buf[256];

	/* JSON readers get the same facts as fields of every line. */
	if (json)
		return;
	title(re, buf, sizeof(buf));
	printf("vnic-bench %s\n", buf);
	host_print_versions(stdout);
	fflush(stdout);
}

void row_field(const struct bench_row *r, size_t off, struct summary *out)
{
	summarize_field(r->s, r->runs, off, out);
}

double row_median(const struct bench_row *r, size_t off)
{
	struct summary s;

	row_field(r, off, &s);
	return s.median;
}

const struct bench_row *report_find(const struct report *o,
				    const char *method)
{
	unsigned int i;

	for (i = 0; method && i < o->n; i++)
		if (!strcmp(o->rows[i].method, method) && o->rows[i].runs)
			return &o->rows[i];
	return NULL;
}

double report_ratio(const struct report *o, const struct bench_row *r,
		    const char *method)
{
	const struct bench_row *to = report_find(o, method);
	double a, b;

	if (!to || !r->runs || r->aside)
		return NAN;
	a = row_median(r, offsetof(struct sample, ms));
	b = row_median(to, offsetof(struct sample, ms));
	return b > 0 ? a / b : NAN;
}

/* Whether r meets its target; false with *measured false if unmeasured. */
static bool meets(const struct report *o, const struct bench_row *r,
		  bool *measured)
{
	const struct bench_target *t = &r->target;
	double med = row_median(r, offsetof(struct sample, ms));
	bool ok = true;
	unsigned int i;

	*measured = r->runs > 0;
	if (!isnan(t->max_ms))
		ok &= med <= t->max_ms;
	if (!isnan(t->max_ratio)) {
		double x = report_ratio(o, r, t->ratio_to);

		if (isnan(x))
			*measured = false;
		ok &= x <= t->max_ratio;
	}
	if (t->floor) {
		double x = report_ratio(o, r, t->floor);

		if (isnan(x))
			*measured = false;
		ok &= x <= BENCH_TARGET_RATIO;
	}
	for (i = 0; t->zero_writes && i < r->runs; i++)
		ok &= r->s[i].writes == 0 && !(r->s[i].genid_delta > 0);
	return ok && *measured;
}

static bool has_target(const struct bench_row *r)
{
	return !isnan(r->target.max_ms) || !isnan(r->target.max_ratio) ||
	       r->target.floor || r->target.zero_writes;
}

static void json_ratio(struct json *j, const struct report *o,
		       const struct bench_row *r, const char *to)
{
	char key[48];

	if (!to)
		return;
	snprintf(key, sizeof(key), "ratio_to_%s", to);
	json_num(j, key, report_ratio(o, r, to));
}

/* A median of r's samples as a JSON field. */
void report_json_median(struct json *j, const char *key,
			const struct bench_row *r, size_t off)
{
	json_num(j, key, row_median(r, off));
}

static void json_result(struct json *j, const struct bench_row *r)
{
	report_json_median(j, "writes", r, offsetof(struct sample, writes));
	report_json_median(j, "messages", r, offsetof(struct sample, messages));
	report_json_median(j, "batches", r, offsetof(struct sample, batches));
	report_json_median(j, "guests_changed", r, offsetof(struct sample, changed));
	report_json_median(j, "genid_delta", r, offsetof(struct sample, genid_delta));
}

static void json_calls(struct json *j, const struct report *o,
		       const struct bench_row *r)
{
	report_json_median(j, "sendmsg", r, offsetof(struct sample, sendmsg));
	report_json_median(j, "recvmsg", r, offsetof(struct sample, recvmsg));
	report_json_median(j, "link_dumps", r, offsetof(struct sample, dumps));
	json_num(j, "x_per_doubling", r->per_doubling);
	if (r->target.ratio_to)
		json_num(j, "ratio_to_full_apply",
			 report_ratio(o, r, r->target.ratio_to));
}

static void json_target(struct json *j, const struct report *o,
			const struct bench_row *r)
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
			 report_ratio(o, r, r->target.floor));
	}
	json_bool(j, "meets_target", meets(o, r, &measured));
}

/* The filter scenarios' own fields. */
static void filter_json(struct json *j, const struct report *o,
			const struct bench_row *r)
{
	json_num(j, "per_nic_us", report_per_nic(o, r));
	if (r->has_result)
		json_result(j, r);
	if (r->has_calls)
		json_calls(j, o, r);
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
}

static void json_measured(struct json *j, const struct report *o,
			  const struct bench_row *r)
{
	double *v = calloc(r->runs ? r->runs : 1, sizeof(*v));
	unsigned int i;

	json_ratio(j, o, r, o->re->ratio_a);
	json_ratio(j, o, r, o->re->ratio_b);
	o->style->json(j, o, r);
	for (i = 0; v && i < r->runs; i++)
		v[i] = r->s[i].ms;
	if (!o->style->lean)
		json_nums(j, "samples_ms", v, v ? r->runs : 0);
	free(v);
}

/* One row's object: a line of --json, an element of --out's rows. */
static void json_row(struct json *j, const struct trow *t, const void *ctx)
{
	const struct report *o = ctx;
	const struct bench_row *r = t->data;

	json_str(j, "scenario", o->re->scenario);
	json_str(j, "method", r->method);
	if (!o->style->lean) {
		json_str(j, "kind", o->re->kind);
		json_uint(j, "n", o->re->n);
	}
	if (o->re->guests) {
		json_uint(j, "guests", o->re->guests);
		json_uint(j, "nics_per_guest", o->re->nics_per_guest);
	}
	if (!o->style->lean)
		json_uint(j, "existing", r->existing);
	if (o->style->row)
		o->style->row(j, o, r);
	if (t->ms.n)
		json_measured(j, o, r);
}

static void json_params(struct json *j, const void *ctx)
{
	const struct report *o = ctx;
	const struct report_env *re = o->re;

	if (!o->style->lean) {
		json_str(j, "kind", re->kind);
		json_uint(j, "nics", re->n);
		json_uint(j, "existing", re->existing);
	}
	if (re->guests) {
		json_uint(j, "guests", re->guests);
		json_uint(j, "nics_per_guest", re->nics_per_guest);
	}
	json_uint(j, "runs", re->runs_asked);
	if (o->style->params)
		o->style->params(j, o);
}

/* A row of that name that failed (report_rows() took its runs). */
static bool failed(const struct report *o, const char *method)
{
	unsigned int i;

	for (i = 0; i < o->n; i++)
		if (!strcmp(o->rows[i].method, method) && o->rows[i].error[0])
			return true;
	return false;
}

static void verdict(FILE *f, const struct report *o, const struct bench_row *r)
{
	const struct bench_target *t = &r->target;
	double med = row_median(r, offsetof(struct sample, ms));
	bool measured, ok = meets(o, r, &measured);
	const char *to[2] = { t->ratio_to, t->floor };
	double max[2] = { t->max_ratio, t->floor ? BENCH_TARGET_RATIO : NAN };
	unsigned int i, writes = 0;

	if (!r->runs) {
		fprintf(f, "verdict: %s %s: target NOT MEASURED\n", r->method,
			r->error[0] ? "FAILED" : "did not run");
		return;
	}
	fprintf(f, "verdict: %s median %.3f ms:", r->method, med);
	if (!isnan(t->max_ms))
		fprintf(f, " <= %.1f ms %s;", t->max_ms,
			med <= t->max_ms ? "met" : "missed");
	for (i = 0; i < 2; i++) {
		double x = report_ratio(o, r, to[i]);

		if (isnan(max[i]))
			continue;
		if (isnan(x))
			fprintf(f, " <= %.2fx %s not measured (%s %s);",
				max[i], to[i], failed(o, to[i]) ? to[i] : "no",
				failed(o, to[i]) ? "FAILED" : to[i]);
		else
			fprintf(f, " %.2fx %s (<= %.2fx) %s;", x, to[i], max[i],
				x <= max[i] ? "met" : "missed");
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
	const struct report *o = ctx;
	unsigned int i;

	for (i = 0; i < o->n; i++)
		if (o->rows[i].runs && o->rows[i].note[0])
			fprintf(f, "note: %s: %s\n", o->rows[i].method,
				o->rows[i].note);
	for (i = 0; i < o->n; i++)
		if (has_target(&o->rows[i]))
			verdict(f, o, &o->rows[i]);
	if (o->style->notes)
		o->style->notes(f, o);
}

/*
 * x_libvnic is taken to the row a target is stated for (libvnic, adding
 * one guest, the unchanged sync): the claim each scenario checks; with no
 * target, to the fastest libvnic row.  A ratio column to that same row
 * would repeat it, so it is left out.
 */
static const struct bench_row *libvnic_ref(const struct report *o)
{
	const struct bench_row *best = NULL;
	double best_ms = NAN, ms;
	unsigned int i;

	for (i = 0; i < o->n; i++)
		if (has_target(&o->rows[i]))
			return &o->rows[i];
	for (i = 0; i < o->n; i++) {
		if (!o->rows[i].libvnic || !o->rows[i].runs)
			continue;
		ms = row_median(&o->rows[i], offsetof(struct sample, ms));
		if (!best || ms < best_ms) {
			best = &o->rows[i];
			best_ms = ms;
		}
	}
	return best;
}

void report_col(struct report *o, const char *head, int prec,
		    double (*val)(const struct report *,
				  const struct bench_row *))
{
	unsigned int i, c = o->t.nextra++;

	o->t.extra[c] = (struct tcol){ head, prec };
	for (i = 0; i < o->n; i++)
		o->trows[i].extra[c] = val(o, &o->rows[i]);
}

double report_ratio_a(const struct report *o, const struct bench_row *r)
{
	return report_ratio(o, r, o->re->ratio_a);
}

static double col_ratio_b(const struct report *o, const struct bench_row *r)
{
	return report_ratio(o, r, o->re->ratio_b);
}

static void ratio_col(struct report *o, const char *to, const char *label,
		      double (*val)(const struct report *,
				    const struct bench_row *))
{
	if (to && !(o->ref && !strcmp(to, o->ref->method)))
		report_col(o, label ? label : to, 2, val);
}

double report_per_nic(const struct report *o, const struct bench_row *r)
{
	return r->aside ? NAN :
	       row_median(r, offsetof(struct sample, ms)) * 1000.0 / o->re->n;
}

static double col_existing(const struct report *o, const struct bench_row *r)
{
	return r->existing;
}

static double col_writes(const struct report *o, const struct bench_row *r)
{
	return row_median(r, offsetof(struct sample, writes));
}

/* The filter scenarios: existing, their ratios, us/NIC, writes. */
static void filter_cols(struct report *o)
{
	report_col(o, "existing", 0, col_existing);
	ratio_col(o, o->re->ratio_a, o->re->label_a, report_ratio_a);
	ratio_col(o, o->re->ratio_b, o->re->label_b, col_ratio_b);
	report_col(o, "us/NIC", 2, report_per_nic);
	report_col(o, "writes", 0, col_writes);
}

static const struct report_style filter_style = {
	.ms_prec = 3, .cols = filter_cols, .json = filter_json,
};

static int build(struct report *o)
{
	unsigned int i;

	o->trows = calloc(o->n ? o->n : 1, sizeof(*o->trows));
	if (!o->trows)
		return -1;
	o->ref = libvnic_ref(o);
	o->t = (struct table){ .scenario = o->re->scenario, .rows = o->trows,
			       .nrows = o->n, .ms_prec = o->style->ms_prec };
	for (i = 0; i < o->n; i++) {
		struct trow *t = &o->trows[i];
		const struct bench_row *r = &o->rows[i];

		t->method = r->method;
		t->skip = r->skip;
		t->error = r->error;
		t->data = r;
		t->aside = r->aside;
		t->libvnic_ref = r == o->ref;
		row_field(r, offsetof(struct sample, ms), &t->ms);
	}
	o->style->cols(o);
	table_finish(&o->t);
	return 0;
}

static void style_svg(FILE *f, const void *ctx)
{
	const struct report *o = ctx;

	o->style->svg(f, o);
}

int report_rows(const struct report_env *re, struct bench_row *rows,
		unsigned int n, bool json)
{
	struct report o = { .re = re, .rows = rows, .n = n,
			    .style = re->style ? re->style : &filter_style };
	struct out_doc d = {
		.dir = re->out_dir, .t = &o.t, .params = json_params,
		.json_row = json_row, .notes = notes, .ctx = &o,
	};
	unsigned int i;
	int missed = 0;
	char buf[256];
	bool measured;

	/* A row that failed in any run shows no figures, only why: the runs
	 * before the failure are not trusted either, and no ratio or verdict
	 * is taken to it. */
	for (i = 0; i < n; i++)
		if (rows[i].error[0])
			rows[i].runs = 0;
	if (build(&o)) {
		fprintf(stderr, "vnic-bench: out of memory\n");
		return 1;
	}
	title(re, buf, sizeof(buf));
	d.title = buf;
	if (o.style->svg)
		d.svg = style_svg;
	if (out_report(&d, json))
		missed = 1;
	for (i = 0; i < n; i++)
		if ((has_target(&rows[i]) && !meets(&o, &rows[i], &measured) &&
		     measured) || (o.style->failed_fails && rows[i].error[0]))
			missed = 1;
	free(o.trows);
	fflush(stdout);
	return missed;
}
