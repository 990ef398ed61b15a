// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the bench prints: a header naming the machine, then a table (or one
 * JSON object per method and line), the warnings, and the verdict on the
 * claim "libvnic's best strategy costs at most 1.15x the kernel floor".
 * Ratios use the floor measured in the same invocation, never a remembered
 * figure: the floor moves with the kernel and the machine.
 */
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "bench.h"

#define TABLE_BUILD_ROW "libvnic-cache-table-build"

/* The figures of one row, computed once for the table and for JSON. */
struct row {
	const struct result *r;
	const char *method;
	struct summary ms;
	double ratio, per_nic_us;
	double sendmsg, requests, ioctls, retries, destroy_ms, cleanup_ms;
	double *samples;	/* the ms of each run */
};

/* Other work on a two-core machine is the first suspect of a noisy run. */
/* What every run records of the machine: kernel release, CPUs, load. */
void bench_host(char *kernel, size_t len, long *cpus, double *load1)
{
	struct utsname u;

	snprintf(kernel, len, "%s", uname(&u) == 0 ? u.release : "?");
	*cpus = sysconf(_SC_NPROCESSORS_ONLN);
	*load1 = bench_load_average();
}

double bench_load_average(void)
{
	double load = NAN;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = NAN;
		fclose(f);
	}
	return load;
}

void report_env_init(struct report_env *re, const char *scenario,
		     const struct bench_opts *o)
{

	memset(re, 0, sizeof(*re));
	re->scenario = scenario;
	re->kind = vnic_kind_name(o->kind);
	if (!re->kind)
		re->kind = "?";
	re->n = o->nics;
	re->existing = o->existing;
	re->runs_asked = o->runs;
	bench_host(re->kernel, sizeof(re->kernel), &re->cpus, &re->load1);
}

void report_header(const struct report_env *re, bool json)
{
	/* JSON readers get the same facts as fields of every line. */
	if (json)
		return;
	printf("vnic-bench %s: %u %s NICs, %u existing, %u runs; kernel %s, %ld CPUs, load %.2f\n",
	       re->scenario, re->n, re->kind, re->existing, re->runs_asked,
	       re->kernel, re->cpus, re->load1);
	fflush(stdout);
}

static double field_median(const struct result *r, size_t off)
{
	struct summary s;

	summarize_field(r->samples, r->runs, off, &s);
	return s.median;
}

static void fill_row(struct row *w, const struct result *r, double floor_ms,
		     unsigned int n, size_t off)
{
	memset(w, 0, sizeof(*w));
	w->r = r;
	w->method = r->method;
	summarize_field(r->samples, r->runs, off, &w->ms);
	w->ratio = floor_ms > 0 ? w->ms.median / floor_ms : NAN;
	w->per_nic_us = w->ms.median * 1000.0 / n;
	w->sendmsg = field_median(r, offsetof(struct sample, sendmsg));
	w->requests = field_median(r, offsetof(struct sample, requests));
	w->ioctls = field_median(r, offsetof(struct sample, ioctls));
	w->retries = field_median(r, offsetof(struct sample, retries));
	w->destroy_ms = field_median(r, offsetof(struct sample, destroy_ms));
	w->cleanup_ms = field_median(r, offsetof(struct sample, cleanup_ms));
}

/* The one-time table build of the cache strategy, as a row of its own. */
static void fill_table_row(struct row *w, const struct result *r,
			   double floor_ms, unsigned int n)
{
	fill_row(w, r, floor_ms, n, offsetof(struct sample, table_ms));
	w->method = TABLE_BUILD_ROW;
	w->ratio = NAN;
	w->per_nic_us = NAN;
	w->sendmsg = w->requests = w->ioctls = w->retries = NAN;
	w->destroy_ms = NAN;
	w->cleanup_ms = NAN;
}

static double min_ms(const struct result *r)
{
	struct summary s;

	summarize_field(r->samples, r->runs, offsetof(struct sample, ms), &s);
	return s.min;
}

static const struct result *find_floor(const struct result *res,
				       unsigned int nres)
{
	unsigned int i;

	for (i = 0; i < nres; i++)
		if (!strcmp(res[i].method, "floor") && res[i].runs)
			return &res[i];
	return NULL;
}

static double floor_median(const struct result *res, unsigned int nres)
{
	const struct result *fl = find_floor(res, nres);
	struct summary s;

	if (!fl)
		return NAN;
	summarize_field(fl->samples, fl->runs, offsetof(struct sample, ms), &s);
	return s.median;
}

/* The libvnic row with the lowest median, or NULL. */
static const struct result *best_libvnic(const struct result *res,
					 unsigned int nres, double *median)
{
	const struct result *best = NULL;
	struct summary s;
	unsigned int i;

	*median = NAN;
	for (i = 0; i < nres; i++) {
		if (!res[i].libvnic || !res[i].runs)
			continue;
		summarize_field(res[i].samples, res[i].runs,
				offsetof(struct sample, ms), &s);
		if (!best || s.median < *median) {
			best = &res[i];
			*median = s.median;
		}
	}
	return best;
}

static void print_num(double v, int width, int prec)
{
	if (isnan(v))
		printf(" %*s", width, "-");
	else
		printf(" %*.*f", width, prec, v);
}

static void table_head(void)
{
	printf("%-26s %5s %8s %4s %10s %10s %10s %7s %8s %8s %8s\n", "method",
	       "n", "existing", "runs", "median_ms", "min_ms", "max_ms",
	       "x_floor", "us/NIC", "sendmsg", "ioctls");
}

static void table_row(const struct report_env *re, const struct row *w)
{
	printf("%-26s %5u %8u %4u", w->method, re->n, re->existing, w->ms.n);
	print_num(w->ms.median, 10, 2);
	print_num(w->ms.min, 10, 2);
	print_num(w->ms.max, 10, 2);
	print_num(w->ratio, 7, 2);
	print_num(w->per_nic_us, 8, 1);
	print_num(w->sendmsg, 8, 0);
	print_num(w->ioctls, 8, 0);
	putchar('\n');
}

static void json_common(struct json *j, const struct report_env *re,
			const char *method)
{
	json_str(j, "scenario", re->scenario);
	json_str(j, "method", method);
	json_str(j, "kind", re->kind);
	json_uint(j, "n", re->n);
	json_uint(j, "existing", re->existing);
}

static void json_row(const struct report_env *re, const struct row *w,
		     const struct result *best, double best_ratio)
{
	const struct result *r = w->r;
	struct json j;

	json_begin(&j, stdout);
	json_common(&j, re, w->method);
	json_uint(&j, "runs", w->ms.n);
	json_num(&j, "median_ms", w->ms.median);
	json_num(&j, "min_ms", w->ms.min);
	json_num(&j, "max_ms", w->ms.max);
	json_num(&j, "ratio_to_floor", w->ratio);
	json_num(&j, "per_nic_us", w->per_nic_us);
	json_num(&j, "sendmsg_per_guest", w->sendmsg);
	json_num(&j, "requests_per_guest", w->requests);
	json_num(&j, "ioctls_per_guest", w->ioctls);
	if (r->libvnic && w->method == r->method) {
		json_num(&j, "name_retries", w->retries);
		json_num(&j, "destroy_first_run_ms", w->destroy_ms);
		json_bool(&j, "best", r == best);
		json_num(&j, "target_ratio", BENCH_TARGET_RATIO);
		if (r == best && !isnan(best_ratio))
			json_bool(&j, "meets_target",
				  best_ratio <= BENCH_TARGET_RATIO);
	}
	json_num(&j, "cleanup_median_ms", w->cleanup_ms);
	json_bool(&j, "noisy", summary_noisy(&w->ms));
	json_nums(&j, "samples_ms", w->samples, r->runs);
	json_str(&j, "kernel", re->kernel);
	json_uint(&j, "cpus", (unsigned long long)re->cpus);
	json_num(&j, "load1", re->load1);
	json_end(&j);
}

/* A method that did not run, or stopped: said, never left out. */
static void report_missing(const struct report_env *re, const struct result *r,
			   bool json)
{
	const char *why = r->skip ? r->skip : r->error;
	struct json j;

	if (!json) {
		printf("%-26s %s: %s\n", r->method,
		       r->skip ? "skipped" : "FAILED", why);
		return;
	}
	json_begin(&j, stdout);
	json_common(&j, re, r->method);
	json_uint(&j, "runs", r->runs);
	json_num(&j, "median_ms", NAN);
	json_num(&j, "min_ms", NAN);
	json_num(&j, "max_ms", NAN);
	json_bool(&j, r->skip ? "skipped" : "failed", true);
	json_str(&j, "reason", why);
	json_str(&j, "kernel", re->kernel);
	json_uint(&j, "cpus", (unsigned long long)re->cpus);
	json_num(&j, "load1", re->load1);
	json_end(&j);
}

static void warn_noisy(const struct row *w)
{
	if (summary_noisy(&w->ms))
		fprintf(stderr,
			"warning: %s: spread (max-min)/median = %.2f > %.1f: its median is noisy\n",
			w->method, (w->ms.max - w->ms.min) / w->ms.median,
			BENCH_NOISY_SPREAD);
}

static void emit(const struct report_env *re, struct row *w,
		 const struct result *best, double best_ratio, bool json)
{
	unsigned int i;

	w->samples = calloc(w->r->runs ? w->r->runs : 1, sizeof(double));
	for (i = 0; w->samples && i < w->r->runs; i++)
		w->samples[i] = strcmp(w->method, TABLE_BUILD_ROW) ?
				w->r->samples[i].ms : w->r->samples[i].table_ms;
	if (json)
		json_row(re, w, best, best_ratio);
	else
		table_row(re, w);
	warn_noisy(w);
	free(w->samples);
}

/* Deleting is not what is measured, but a slow delete is worth a line. */
static void destroy_notes(const struct result *res, unsigned int nres,
			  double floor_ms, unsigned int n)
{
	unsigned int i;
	struct row w;

	for (i = 0; i < nres; i++) {
		if (!res[i].libvnic || !res[i].runs)
			continue;
		fill_row(&w, &res[i], floor_ms, n, offsetof(struct sample, ms));
		if (isnan(w.destroy_ms))
			continue;
		printf("note: %s: vnic_guest_destroy %.1f ms (first run), bench cleanup by link group %.1f ms (median)\n",
		       res[i].method, w.destroy_ms, w.cleanup_ms);
	}
}

/*
 * The claim is judged on medians; the ratio of the minima follows it as a
 * check: on a busy machine it is the figure least disturbed by others.
 */
static void verdict(const struct result *res, unsigned int nres,
		    const struct result *best, double best_ms,
		    double floor_ms, double ratio)
{
	const struct result *fl = find_floor(res, nres);

	if (!best) {
		printf("verdict: no libvnic method ran: target <= %.2fx floor not measured\n",
		       BENCH_TARGET_RATIO);
		return;
	}
	if (isnan(floor_ms)) {
		printf("verdict: %s %.2f ms, but no floor in this run: target not measured\n",
		       best->method, best_ms);
		return;
	}
	printf("verdict: best libvnic strategy %s %.2f ms = %.2fx floor %.2f ms: target <= %.2fx %s (ratio of minima %.2fx)\n",
	       best->method, best_ms, ratio, floor_ms, BENCH_TARGET_RATIO,
	       ratio <= BENCH_TARGET_RATIO ? "MET" : "MISSED",
	       fl ? min_ms(best) / min_ms(fl) : NAN);
}

int report_results(const struct report_env *re, const struct result *res,
		   unsigned int nres, bool json)
{
	double floor_ms = floor_median(res, nres), best_ms;
	const struct result *best = best_libvnic(res, nres, &best_ms);
	double ratio = best ? best_ms / floor_ms : NAN;
	unsigned int i, failed = 0;
	struct row w;

	if (!json)
		table_head();
	for (i = 0; i < nres; i++) {
		if (res[i].runs) {
			fill_row(&w, &res[i], floor_ms, re->n,
				 offsetof(struct sample, ms));
			emit(re, &w, best, ratio, json);
		}
		if (res[i].runs && !strcmp(res[i].method, "libvnic-cache")) {
			fill_table_row(&w, &res[i], floor_ms, re->n);
			emit(re, &w, best, ratio, json);
		}
		if (res[i].skip || res[i].error[0])
			report_missing(re, &res[i], json);
		failed += res[i].error[0] != 0;
	}
	if (!json) {
		destroy_notes(res, nres, floor_ms, re->n);
		verdict(res, nres, best, best_ms, floor_ms, ratio);
	}
	fflush(stdout);
	return failed ? -1 : 0;
}
