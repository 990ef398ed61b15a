// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one table every scenario prints, for a terminal and for Markdown:
 * method, n (runs the median is over), median, min, max, the ratio to the
 * best row and to libvnic's, the scenario's extra columns, and a flag on
 * rows whose spread is too wide to trust.  Cells are formatted once, then
 * laid out by style, so the summary file says exactly what the terminal
 * said.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define CELL_LEN	32
#define FIXED_COLS	7	/* method n median min max x_best x_libvnic */
#define MAX_COLS	(FIXED_COLS + TABLE_MAX_EXTRA + 1)

static bool measured(const struct trow *r)
{
	return r->ms.n > 0;
}

void table_finish(struct table *t)
{
	unsigned int i;

	t->best_ms = t->libvnic_ms = NAN;
	t->measured = t->noisy = t->unjudged = 0;
	for (i = 0; i < t->nrows; i++) {
		const struct trow *r = &t->rows[i];

		if (!measured(r))
			continue;
		t->measured++;
		t->noisy += summary_noisy(&r->ms);
		t->unjudged += r->ms.n < 2;
		if (r->aside)
			continue;
		if (isnan(t->best_ms) || r->ms.median < t->best_ms)
			t->best_ms = r->ms.median;
		if (r->libvnic_ref)
			t->libvnic_ms = r->ms.median;
	}
}

static double ratio(const struct trow *r, double to)
{
	if (!measured(r) || r->aside || !(to > 0))
		return NAN;
	return r->ms.median / to;
}

static double table_x_best(const struct table *t, const struct trow *r)
{
	return ratio(r, t->best_ms);
}

static double table_x_libvnic(const struct table *t, const struct trow *r)
{
	return ratio(r, t->libvnic_ms);
}

static void num_cell(char *c, double v, int prec)
{
	if (isnan(v))
		snprintf(c, CELL_LEN, "-");
	else
		snprintf(c, CELL_LEN, "%.*f", prec, v);
}

static unsigned int head_cells(const struct table *t, const char **h)
{
	static const char *const fixed[FIXED_COLS] = {
		"method", "n", "median_ms", "min_ms", "max_ms", "x_best",
		"x_libvnic",
	};
	unsigned int i;

	for (i = 0; i < FIXED_COLS; i++)
		h[i] = fixed[i];
	for (i = 0; i < t->nextra; i++)
		h[FIXED_COLS + i] = t->extra[i].head;
	h[FIXED_COLS + t->nextra] = "noisy";
	return FIXED_COLS + t->nextra + 1;
}

static void row_cells(const struct table *t, const struct trow *r,
		      char c[][CELL_LEN])
{
	unsigned int i;

	snprintf(c[0], CELL_LEN, "%s", r->method);
	snprintf(c[1], CELL_LEN, "%u", r->ms.n);
	num_cell(c[2], r->ms.median, t->ms_prec);
	num_cell(c[3], r->ms.min, t->ms_prec);
	num_cell(c[4], r->ms.max, t->ms_prec);
	num_cell(c[5], table_x_best(t, r), 2);
	num_cell(c[6], table_x_libvnic(t, r), 2);
	for (i = 0; i < t->nextra; i++)
		num_cell(c[FIXED_COLS + i], r->extra[i], t->extra[i].prec);
	snprintf(c[FIXED_COLS + t->nextra], CELL_LEN, "%s",
		 summary_noisy(&r->ms) ? "NOISY" : "");
}

static int col_width(const struct table *t, unsigned int col, const char *head)
{
	char c[MAX_COLS][CELL_LEN];
	int w = strlen(head);
	unsigned int i;

	for (i = 0; i < t->nrows; i++) {
		if (!measured(&t->rows[i]))
			continue;
		row_cells(t, &t->rows[i], c);
		if ((int)strlen(c[col]) > w)
			w = strlen(c[col]);
	}
	return w;
}

/* Method left-aligned, numbers right-aligned; Markdown pipes around. */
static void line(FILE *f, const char *const *cells, const int *w,
		 unsigned int ncols, enum table_style style)
{
	const char *sep = style == TABLE_MARKDOWN ? " | " : "  ";
	bool md = style == TABLE_MARKDOWN;
	unsigned int i;

	if (md)
		fputs("| ", f);
	for (i = 0; i < ncols; i++) {
		/* The terminal's last column: no padding to trail the line. */
		if (!md && i == ncols - 1)
			fprintf(f, "%s%s", cells[i][0] ? sep : "", cells[i]);
		else
			fprintf(f, "%s%*s", i ? sep : "", i ? w[i] : -w[i],
				cells[i]);
	}
	fputs(md ? " |\n" : "\n", f);
}

static void md_rule(FILE *f, const int *w, unsigned int ncols)
{
	unsigned int i;
	int k;

	fputc('|', f);
	for (i = 0; i < ncols; i++) {
		for (k = 0; k < w[i] + 1; k++)
			fputc('-', f);
		/* Numbers right-aligned in rendered Markdown too. */
		fputs(i ? ":|" : "-|", f);
	}
	fputc('\n', f);
}

static void missing_line(FILE *f, const struct trow *r, int w,
			 enum table_style style)
{
	const char *what = r->skip ? "skipped" : "FAILED";
	const char *why = r->skip ? r->skip : r->error;

	if (style == TABLE_MARKDOWN)
		fprintf(f, "- `%s` %s: %s\n", r->method, what, why);
	else
		fprintf(f, "%-*s %s: %s\n", w, r->method, what, why);
}

static bool missing(const struct trow *r)
{
	return r->skip || (r->error && r->error[0]);
}

void table_print(FILE *f, const struct table *t, enum table_style style)
{
	const char *head[MAX_COLS], *cells[MAX_COLS];
	char c[MAX_COLS][CELL_LEN];
	unsigned int ncols = head_cells(t, head), i, k;
	int w[MAX_COLS];

	for (k = 0; k < ncols; k++) {
		w[k] = col_width(t, k, head[k]);
		cells[k] = c[k];
	}
	line(f, head, w, ncols, style);
	if (style == TABLE_MARKDOWN)
		md_rule(f, w, ncols);
	/* Markdown cannot hold a reason in a row: those follow the table. */
	for (i = 0; i < t->nrows; i++) {
		const struct trow *r = &t->rows[i];

		if (measured(r)) {
			row_cells(t, r, c);
			line(f, cells, w, ncols, style);
		}
		if (missing(r) && style == TABLE_TEXT)
			missing_line(f, r, w[0], style);
	}
	for (i = 0, k = 0; style == TABLE_MARKDOWN && i < t->nrows; i++) {
		if (!missing(&t->rows[i]))
			continue;
		/* A list needs a blank line between it and the table. */
		if (!k++)
			fputc('\n', f);
		missing_line(f, &t->rows[i], w[0], style);
	}
}

void table_spread_line(FILE *f, const struct table *t)
{
	unsigned int i;

	if (!t->noisy) {
		fprintf(f, "spread: %u of %u rows within (max-min)/median <= %.1f%s\n",
			t->measured - t->unjudged, t->measured,
			BENCH_NOISY_SPREAD,
			t->unjudged ? " (rows of one run: spread unknown)" : "");
		return;
	}
	fprintf(f, "spread: NOISY, %u of %u rows over (max-min)/median %.1f:",
		t->noisy, t->measured, BENCH_NOISY_SPREAD);
	for (i = 0; i < t->nrows; i++)
		if (summary_noisy(&t->rows[i].ms))
			fprintf(f, " %s", t->rows[i].method);
	fputs("; do not trust their medians alone (more --runs, an idle machine)\n",
	      f);
}

void table_json(struct json *j, const struct table *t, const struct trow *r)
{
	json_uint(j, "runs", r->ms.n);
	json_num(j, "median_ms", r->ms.median);
	json_num(j, "min_ms", r->ms.min);
	json_num(j, "max_ms", r->ms.max);
	json_num(j, "ratio_to_best", table_x_best(t, r));
	json_num(j, "ratio_to_libvnic", table_x_libvnic(t, r));
	json_bool(j, "noisy", summary_noisy(&r->ms));
	/* A method that did not run, or stopped: said, never left out. */
	if (missing(r)) {
		json_bool(j, r->skip ? "skipped" : "failed", true);
		json_str(j, "reason", r->skip ? r->skip : r->error);
	}
}
