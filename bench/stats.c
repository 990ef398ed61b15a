// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Timing and summaries.  Medians, not means: one run disturbed by the
 * other core's work should not move the figure we compare against.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	/* Monotonic: the wall clock may be stepped while we measure. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double ms_since(uint64_t t0)
{
	return (double)(now_ns() - t0) / 1e6;
}

/* Every field a double, every one named below. */
_Static_assert(sizeof(struct sample) == 15 * sizeof(double), "sample_init");

void sample_init(struct sample *s)
{
	*s = (struct sample){ NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
			      NAN, NAN, NAN, NAN, NAN, NAN };
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void summarize(const double *vals, unsigned int n, struct summary *out)
{
	double *v = calloc(n ? n : 1, sizeof(*v));
	unsigned int i, k = 0;

	out->n = 0;
	out->median = out->min = out->max = NAN;
	if (!v)
		return;
	for (i = 0; i < n; i++)
		if (!isnan(vals[i]))
			v[k++] = vals[i];
	if (k) {
		qsort(v, k, sizeof(*v), cmp_double);
		out->n = k;
		out->min = v[0];
		out->max = v[k - 1];
		out->median = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	}
	free(v);
}

void summarize_field(const struct sample *s, unsigned int n, size_t off,
		     struct summary *out)
{
	double *v = calloc(n ? n : 1, sizeof(*v));
	unsigned int i;

	if (!v) {
		summarize(NULL, 0, out);
		return;
	}
	for (i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&s[i] + off, sizeof(double));
	summarize(v, n, out);
	free(v);
}

bool summary_noisy(const struct summary *s)
{
	return s->n > 1 && s->median > 0 &&
	       (s->max - s->min) / s->median > BENCH_NOISY_SPREAD;
}
