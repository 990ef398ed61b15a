// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * --out DIR: what a run leaves behind for a report or a later comparison.
 * Per scenario, DIR/<scenario>.json (one document: parameters, host,
 * tool versions, rows as --json prints them, notes), DIR/<scenario>.md
 * (the terminal's table, the notes, the environment) and
 * DIR/<scenario>.svg (median per method, min..max whiskers).  Written after
 * the runs, so nothing here is inside a timing.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bench.h"

int out_prepare(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "vnic-bench: --out %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "vnic-bench: --out %s: not a directory\n", dir);
		return -ENOTDIR;
	}
	return 0;
}

FILE *out_open(const char *dir, const char *name, const char *ext,
	       char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s.%s", dir, name, ext);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "vnic-bench: %s: %s\n", path, strerror(errno));
	return f;
}

/* Flush and close; a full disk shows here, not in fopen. */
int out_close(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) || bad) {
		fprintf(stderr, "vnic-bench: writing %s failed\n", path);
		return -EIO;
	}
	return 0;
}

/* The notes callback's lines, in one malloc'd text (NULL: none). */
static char *notes_text(const struct out_doc *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!d->notes)
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	d->notes(f, d->ctx);
	fclose(f);
	return buf;
}

static void json_lines(struct json *j, const char *key, const char *text)
{
	const char *p = text;
	struct json a;
	char line[1024];
	size_t n;

	json_sub(j, key, '[', &a);
	while (p && *p) {
		n = strcspn(p, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		json_str(&a, NULL, line);
		p += n + (p[n] == '\n');
	}
}

/* The scenario's fields, then the table's and the host's. */
static void row_object(struct json *j, const struct out_doc *d,
		       const struct trow *r)
{
	d->json_row(j, r, d->ctx);
	table_json(j, d->t, r);
	host_json(j);
}

static void json_rows(struct json *j, const struct out_doc *d)
{
	struct json a, o;
	unsigned int i;

	json_sub(j, "rows", '[', &a);
	for (i = 0; i < d->t->nrows; i++) {
		json_sub(&a, NULL, '{', &o);
		row_object(&o, d, &d->t->rows[i]);
	}
}

static void write_json(FILE *f, const struct out_doc *d, const char *notes)
{
	struct json j, sub;

	json_begin(&j, f);
	json_str(&j, "format", "vnic-bench/1");
	json_str(&j, "scenario", d->t->scenario);
	json_str(&j, "title", d->title);
	json_sub(&j, "params", '{', &sub);
	if (d->params)
		d->params(&sub, d->ctx);
	json_sub(&j, "host", '{', &sub);
	host_json(&sub);
	json_rows(&j, d);
	json_uint(&j, "noisy_rows", d->t->noisy);
	json_num(&j, "noisy_spread", BENCH_NOISY_SPREAD);
	json_lines(&j, "notes", notes);
	json_end(&j);
}

static void md_env(FILE *f)
{
	const struct host_info *h = host_info();
	unsigned int i;

	fputs("## Environment\n\n| what | value |\n|---|---|\n", f);
	fprintf(f, "| kernel | %s |\n| CPUs | %ld |\n| load (1 min, at start) | %.2f |\n",
		h->kernel, h->cpus, h->load1);
	/* A pipe in a version string would split the cell. */
	for (i = 0; i < h->ntools; i++)
		fprintf(f, "| %s | `%s` |\n", h->tools[i].name,
			strchr(h->tools[i].version, '|') ? "(has a pipe)" :
			h->tools[i].version);
}

static void write_md(FILE *f, const struct out_doc *d, const char *notes)
{
	fprintf(f, "# vnic-bench %s\n\n%s\n\n", d->t->scenario, d->title);
	table_print(f, d->t, TABLE_MARKDOWN);
	fputc('\n', f);
	table_spread_line(f, d->t);
	if (notes && *notes)
		fprintf(f, "\n## Notes and verdicts\n\n```\n%s```\n", notes);
	fputc('\n', f);
	md_env(f);
	fprintf(f, "\n![%s](%s.svg)\n", d->svg ? "chart" : "median per method",
		d->t->scenario);
}

static void write_svg(FILE *f, const struct out_doc *d)
{
	struct svg_bar *b = calloc(d->t->nrows ? d->t->nrows : 1, sizeof(*b));
	double lo = NAN, hi = NAN;
	unsigned int i, n = 0;
	char title[160];

	if (!b)
		return;
	for (i = 0; i < d->t->nrows; i++) {
		const struct trow *r = &d->t->rows[i];

		if (!r->ms.n)
			continue;
		b[n].name = r->method;
		b[n].value = r->ms.median;
		b[n].lo = r->ms.min;
		b[n++].hi = r->ms.max;
		lo = isnan(lo) ? r->ms.min : fmin(lo, r->ms.min);
		hi = isnan(hi) ? r->ms.max : fmax(hi, r->ms.max);
	}
	snprintf(title, sizeof(title), "vnic-bench %s: median per method (whiskers: min..max)",
		 d->t->scenario);
	svg_bars(f, title, svg_wants_log(lo, hi) ? "ms (log scale)" : "ms", b,
		 n, svg_wants_log(lo, hi) ? SVG_LOG_Y : 0);
	free(b);
}

/* The terminal's report: the table, notes and spread, or JSON lines. */
static void print_report(const struct out_doc *d, bool json)
{
	struct json j;
	unsigned int i;

	if (!json) {
		table_print(stdout, d->t, TABLE_TEXT);
		if (d->notes)
			d->notes(stdout, d->ctx);
		table_spread_line(stdout, d->t);
		return;
	}
	for (i = 0; i < d->t->nrows; i++) {
		json_begin(&j, stdout);
		row_object(&j, d, &d->t->rows[i]);
		json_end(&j);
	}
	/* stdout stays JSON; the warning goes beside it. */
	if (d->t->noisy)
		table_spread_line(stderr, d->t);
}

static int out_write(const struct out_doc *d)
{
	char *notes = notes_text(d), path[3][512];
	const char *ext[3] = { "json", "md", "svg" };
	unsigned int k;
	int ret = 0;
	FILE *f;

	for (k = 0; k < 3; k++) {
		f = out_open(d->dir, d->t->scenario, ext[k], path[k],
			     sizeof(path[k]));
		if (!f) {
			ret = -EIO;
			continue;
		}
		if (k == 0)
			write_json(f, d, notes);
		else if (k == 1)
			write_md(f, d, notes);
		else if (d->svg)
			d->svg(f, d->ctx);
		else
			write_svg(f, d);
		ret = out_close(f, path[k]) ?: ret;
	}
	free(notes);
	if (!ret)
		fprintf(stderr, "wrote %s, %s, %s\n", path[0], path[1], path[2]);
	return ret;
}

int out_report(const struct out_doc *d, bool json)
{
	progress_end();
	print_report(d, json);
	fflush(stdout);
	return d->dir ? out_write(d) : 0;
}

FILE *bench_tmpfile(const char *tag, char *path, size_t pathlen)
{
	FILE *f;
	int fd;

	snprintf(path, pathlen, "/tmp/vnic-bench-%s.XXXXXX", tag);
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		close(fd);
		unlink(path);
		errno = e;
	}
	return f;
}

int bench_tmpfile_close(FILE *f, const char *path)
{
	int err = ferror(f) ? -EIO : 0;

	if (fclose(f) && !err)
		err = -errno;
	if (err)
		unlink(path);
	return err;
}
