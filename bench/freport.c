// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Output of the filter scenarios, in the guest scenario's conventions: a
 * header naming the machine, a table (or one JSON object per row and
 * line), notes, and a verdict per target.  Ratios use rows measured in the
 * same invocation, never remembered figures.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	return s;
}

void freport_env_init(struct freport_env *re, const struct filt_opts *o,
		      unsigned int guests, unsigned int existing)
{

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
	bench_host(re->kernel, sizeof(re->kernel), &re->cpus, &re->load1);
}

void freport_header(const struct freport_env *re, bool json)
{
	if (json)
		return;
	printf("vnic-bench %s: %u guests x %u %s NICs (%u NICs), %u existing guests, %u runs; kernel %s, %ld CPUs, load %.2f\n",
	       re->scenario, re->guests, re->nics_per_guest, re->kind, re->n,
	       re->existing, re->runs_asked, re->kernel, re->cpus, re->load1);
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

static void print_num(double v, int width, int prec)
{
	if (isnan(v))
		printf(" %*s", width, "-");
	else
		printf(" %*.*f", width, prec, v);
}

static void table_head(const struct freport_env *re)
{
	printf("%-30s %6s %6s %8s %4s %10s %10s %10s", "method", "guests",
	       "nics", "existing", "runs", "median_ms", "min_ms", "max_ms");
	if (re->ratio_a)
		printf(" %10s", re->label_a ? re->label_a : "x_a");
	if (re->ratio_b)
		printf(" %10s", re->label_b ? re->label_b : "x_b");
	printf(" %8s %6s\n", "us/NIC", "writes");
}

static void table_row(const struct freport_env *re, const struct frow *r,
		      const struct frow *rows, unsigned int n)
{
	struct summary ms;

	field(r, offsetof(struct fsample, ms), &ms);
	printf("%-30s %6u %6u %8u %4u", r->method, re->guests, re->n,
	       r->existing, ms.n);
	print_num(ms.median, 10, 3);
	print_num(ms.min, 10, 3);
	print_num(ms.max, 10, 3);
	if (re->ratio_a)
		print_num(ratio_to(r, rows, n, re->ratio_a), 10, 2);
	if (re->ratio_b)
		print_num(ratio_to(r, rows, n, re->ratio_b), 10, 2);
	print_num(ms.median * 1000.0 / re->n, 8, 2);
	print_num(median_of(r, offsetof(struct fsample, writes)), 6, 0);
	putchar('\n');
}

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

static void json_tail(struct json *j, const struct freport_env *re)
{
	json_str(j, "kernel", re->kernel);
	json_uint(j, "cpus", (unsigned long long)re->cpus);
	json_num(j, "load1", re->load1);
	json_end(j);
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
	for (i = 0; t->zero_writes && i < r->runs; i++)
		ok &= r->s[i].writes == 0 && !(r->s[i].genid_delta > 0);
	return ok && *measured;
}

static bool has_target(const struct frow *r)
{
	return !isnan(r->target.max_ms) || !isnan(r->target.max_ratio) ||
	       r->target.zero_writes;
}

static void json_row(const struct freport_env *re, const struct frow *r,
		     const struct frow *rows, unsigned int n)
{
	struct summary ms;
	struct json j;
	double *v = calloc(r->runs ? r->runs : 1, sizeof(*v));
	unsigned int i;
	bool measured;
	char key[48];

	field(r, offsetof(struct fsample, ms), &ms);
	json_begin(&j, stdout);
	json_common(&j, re, r);
	json_uint(&j, "runs", ms.n);
	json_num(&j, "median_ms", ms.median);
	json_num(&j, "min_ms", ms.min);
	json_num(&j, "max_ms", ms.max);
	if (re->ratio_a) {
		snprintf(key, sizeof(key), "ratio_to_%s", re->ratio_a);
		json_num(&j, key, ratio_to(r, rows, n, re->ratio_a));
	}
	if (re->ratio_b) {
		snprintf(key, sizeof(key), "ratio_to_%s", re->ratio_b);
		json_num(&j, key, ratio_to(r, rows, n, re->ratio_b));
	}
	json_num(&j, "per_nic_us", ms.median * 1000.0 / re->n);
	if (r->has_result) {
		json_num(&j, "writes", median_of(r, offsetof(struct fsample, writes)));
		json_num(&j, "messages", median_of(r, offsetof(struct fsample, messages)));
		json_num(&j, "batches", median_of(r, offsetof(struct fsample, batches)));
		json_num(&j, "guests_changed", median_of(r, offsetof(struct fsample, changed)));
		json_num(&j, "genid_delta", median_of(r, offsetof(struct fsample, genid_delta)));
	}
	if (r->rules)
		json_uint(&j, "rules", r->rules);
	json_bool(&j, "extrapolated", r->extrapolated);
	if (r->extrapolated) {
		json_uint(&j, "sample_items", r->sample_items);
		json_uint(&j, "total_items", r->total_items);
	}
	if (r->note[0])
		json_str(&j, "note", r->note);
	if (has_target(r)) {
		json_num(&j, "target_ms", r->target.max_ms);
		json_num(&j, "target_ratio", r->target.max_ratio);
		json_str(&j, "target_ratio_to", r->target.ratio_to);
		json_bool(&j, "target_zero_writes", r->target.zero_writes);
		json_bool(&j, "meets_target", meets(r, rows, n, &measured));
	}
	json_bool(&j, "noisy", summary_noisy(&ms));
	for (i = 0; v && i < r->runs; i++)
		v[i] = r->s[i].ms;
	json_nums(&j, "samples_ms", v, v ? r->runs : 0);
	free(v);
	json_tail(&j, re);
}

static void report_missing(const struct freport_env *re, const struct frow *r,
			   bool json)
{
	const char *why = r->skip ? r->skip : r->error;
	struct json j;

	if (!json) {
		printf("%-30s %s: %s\n", r->method,
		       r->skip ? "skipped" : "FAILED", why);
		return;
	}
	json_begin(&j, stdout);
	json_common(&j, re, r);
	json_uint(&j, "runs", r->runs);
	json_num(&j, "median_ms", NAN);
	json_num(&j, "min_ms", NAN);
	json_num(&j, "max_ms", NAN);
	json_bool(&j, r->skip ? "skipped" : "failed", true);
	json_str(&j, "reason", why);
	json_tail(&j, re);
}

static void verdict(const struct frow *r, const struct frow *rows,
		    unsigned int n)
{
	const struct ftarget *t = &r->target;
	double med = median_of(r, offsetof(struct fsample, ms));
	bool measured, ok = meets(r, rows, n, &measured);
	unsigned int i, writes = 0;

	if (!r->runs) {
		printf("verdict: %s did not run: target NOT MEASURED\n",
		       r->method);
		return;
	}
	printf("verdict: %s median %.3f ms:", r->method, med);
	if (!isnan(t->max_ms))
		printf(" <= %.1f ms %s;", t->max_ms,
		       med <= t->max_ms ? "met" : "missed");
	if (!isnan(t->max_ratio)) {
		double x = ratio_to(r, rows, n, t->ratio_to);

		if (isnan(x))
			printf(" <= %.2fx %s not measured (no %s row);",
			       t->max_ratio, t->ratio_to, t->ratio_to);
		else
			printf(" %.2fx %s (<= %.2fx) %s;", x, t->ratio_to,
			       t->max_ratio, x <= t->max_ratio ? "met" : "missed");
	}
	if (t->zero_writes) {
		for (i = 0; i < r->runs; i++)
			writes += !(r->s[i].writes == 0) ||
				  r->s[i].genid_delta > 0;
		printf(" zero writes %s (%u of %u runs wrote);",
		       writes ? "missed" : "met", writes, r->runs);
	}
	printf(" target %s\n", !measured ? "NOT MEASURED" :
				ok ? "MET" : "MISSED");
}

int freport(const struct freport_env *re, struct frow *rows, unsigned int n,
	    bool json)
{
	unsigned int i;
	int missed = 0;
	bool measured;

	if (!json)
		table_head(re);
	for (i = 0; i < n; i++) {
		struct summary ms;

		if (rows[i].runs) {
			if (json)
				json_row(re, &rows[i], rows, n);
			else
				table_row(re, &rows[i], rows, n);
			field(&rows[i], offsetof(struct fsample, ms), &ms);
			if (summary_noisy(&ms))
				fprintf(stderr,
					"warning: %s: spread (max-min)/median = %.2f > %.1f: its median is noisy\n",
					rows[i].method,
					(ms.max - ms.min) / ms.median,
					BENCH_NOISY_SPREAD);
		}
		if (rows[i].skip || rows[i].error[0])
			report_missing(re, &rows[i], json);
	}
	for (i = 0; i < n; i++) {
		if (!json && rows[i].runs && rows[i].note[0])
			printf("note: %s: %s\n", rows[i].method, rows[i].note);
	}
	for (i = 0; i < n; i++) {
		if (!has_target(&rows[i]))
			continue;
		if (!json)
			verdict(&rows[i], rows, n);
		if (!meets(&rows[i], rows, n, &measured) && measured)
			missed = 1;
	}
	fflush(stdout);
	return missed;
}
