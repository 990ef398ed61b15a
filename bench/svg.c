// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A small SVG writer for the bench's charts: line plots (growth curves,
 * one series per method) and bar charts (medians per method).  Plain SVG
 * 1.1 with no script and no external font, so a browser, an image viewer
 * and a repository's file view all show the same picture; no plotting
 * dependency to install on the machine being measured.
 */
#include <math.h>
#include <string.h>

#include "bench.h"

#define W		760
#define H		460
#define TOP		44
#define LEFT		84
#define RIGHT_PLOT	200	/* room for the legend */
#define RIGHT_BARS	24
#define BOTTOM_PLOT	56
#define BOTTOM_BARS	130	/* room for slanted method names */
#define TICKS		6

static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

#define NCOLORS (sizeof(palette) / sizeof(palette[0]))

struct axis {
	double lo, hi, step;	/* step: linear ticks; log: a decade */
	bool log;
	double p0, p1;		/* pixels of lo and hi */
};

struct frame {
	int x0, y0, x1, y1;	/* the plot area: left, top, right, bottom */
};

static void text_escape(FILE *f, const char *s)
{
	static const char special[] = "&<>\"";
	static const char *const entity[] = { "&amp;", "&lt;", "&gt;",
					      "&quot;" };
	const char *p;

	for (; s && *s; s++) {
		p = strchr(special, *s);
		if (p)
			fputs(entity[p - special], f);
		else
			fputc(*s, f);
	}
}

/* A text element; anchor start, middle or end, rotated by rot degrees. */
static void text(FILE *f, double x, double y, const char *anchor, int size,
		 double rot, const char *s)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"",
		x, y, anchor, size);
	if (rot)
		fprintf(f, " transform=\"rotate(%.0f %.1f %.1f)\"", rot, x, y);
	fputc('>', f);
	text_escape(f, s);
	fputs("</text>\n", f);
}

bool svg_wants_log(double lo, double hi)
{
	return lo > 0 && hi / lo > 100;
}

/* 1, 2 or 5 times a power of ten: about TICKS ticks over range. */
static double nice_step(double range)
{
	double raw = range / TICKS, mag = pow(10, floor(log10(raw)));
	double norm = raw / mag;

	if (norm < 1.5)
		return mag;
	if (norm < 3)
		return 2 * mag;
	if (norm < 7)
		return 5 * mag;
	return 10 * mag;
}

static void axis_fit(struct axis *a, double lo, double hi, bool log_scale,
		     bool from_zero)
{
	a->log = log_scale;
	if (isnan(lo) || isnan(hi)) {
		lo = log_scale ? 1 : 0;
		hi = log_scale ? 10 : 1;
	}
	if (log_scale) {
		a->lo = pow(10, floor(log10(lo)));
		a->hi = pow(10, ceil(log10(hi)));
		if (a->hi <= a->lo)
			a->hi = a->lo * 10;
		a->step = 10;
		return;
	}
	if (from_zero && lo > 0)
		lo = 0;
	if (hi <= lo)
		hi = lo + (lo ? fabs(lo) : 1);
	a->step = nice_step(hi - lo);
	a->lo = floor(lo / a->step) * a->step;
	a->hi = ceil(hi / a->step) * a->step;
}

static double pos(const struct axis *a, double v)
{
	double t = a->log ? (log10(v) - log10(a->lo)) /
			    (log10(a->hi) - log10(a->lo)) :
			    (v - a->lo) / (a->hi - a->lo);

	return a->p0 + t * (a->p1 - a->p0);
}

/* The ticks of a, in order; a log axis has one per decade. */
static unsigned int ticks(const struct axis *a, double *v, unsigned int max)
{
	unsigned int n = 0;
	double t;

	for (t = a->lo; t <= a->hi * (1 + 1e-9) && n < max;
	     t = a->log ? t * a->step : a->lo + a->step * n)
		v[n++] = t;
	return n;
}

static bool plottable(const struct axis *a, double v)
{
	return !isnan(v) && !isinf(v) && (!a->log || v > 0);
}

static void begin(FILE *f, int w, int h, const char *title)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
		w, h, w, h, w, h);
	text(f, w / 2.0, 24, "middle", 15, 0, title);
}

static void end(FILE *f)
{
	fputs("</svg>\n", f);
}

/* Grid lines and tick labels along one axis, and the axis' label (turned
 * upright for y). */
static void axis_draw(FILE *f, const struct frame *fr, const struct axis *a,
		      bool vertical, const char *label)
{
	double v[64], p;
	unsigned int n = ticks(a, v, 64), i;
	char buf[32];

	for (i = 0; i < n; i++) {
		p = pos(a, v[i]);
		snprintf(buf, sizeof(buf), "%g", v[i]);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
			vertical ? fr->x0 : p, vertical ? p : fr->y0,
			vertical ? fr->x1 : p, vertical ? p : fr->y1);
		if (vertical)
			text(f, fr->x0 - 6, p + 4, "end", 11, 0, buf);
		else
			text(f, p, fr->y1 + 16, "middle", 11, 0, buf);
	}
	if (vertical)
		text(f, 18, (fr->y0 + fr->y1) / 2.0, "middle", 12, -90, label);
	else
		text(f, (fr->x0 + fr->x1) / 2.0, fr->y1 + 40, "middle", 12, 0,
		     label);
}

static void box(FILE *f, const struct frame *fr)
{
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333333\"/>\n",
		fr->x0, fr->y0, fr->x1 - fr->x0, fr->y1 - fr->y0);
}

/* Take v into lo..hi, unless an axis could not show it. */
static void widen(double *lo, double *hi, double v, bool log_scale)
{
	if (isnan(v) || isinf(v) || (log_scale && v <= 0))
		return;
	*lo = isnan(*lo) ? v : fmin(*lo, v);
	*hi = isnan(*hi) ? v : fmax(*hi, v);
}

/* The ranges of the points both of whose coordinates are known. */
static void range_xy(const struct svg_series *s, unsigned int ns, bool log_y,
		     double x[2], double y[2])
{
	unsigned int i, k;

	x[0] = x[1] = y[0] = y[1] = NAN;
	for (i = 0; i < ns; i++)
		for (k = 0; k < s[i].n; k++) {
			if (isnan(s[i].x[k]) || isnan(s[i].y[k]) ||
			    (log_y && s[i].y[k] <= 0))
				continue;
			widen(&x[0], &x[1], s[i].x[k], false);
			widen(&y[0], &y[1], s[i].y[k], log_y);
		}
}

/* One series: a line through its points, a dot on each. */
static void series(FILE *f, const struct svg_series *s, const char *color,
		   const struct axis *x, const struct axis *y)
{
	unsigned int k;

	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
		color);
	for (k = 0; k < s->n; k++)
		if (plottable(x, s->x[k]) && plottable(y, s->y[k]))
			fprintf(f, "%.1f,%.1f ", pos(x, s->x[k]), pos(y, s->y[k]));
	fputs("\"/>\n", f);
	for (k = 0; k < s->n; k++)
		if (plottable(x, s->x[k]) && plottable(y, s->y[k]))
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
				pos(x, s->x[k]), pos(y, s->y[k]), color);
}

static void legend(FILE *f, const struct frame *fr,
		   const struct svg_series *s, unsigned int ns)
{
	unsigned int i;
	int y;

	for (i = 0; i < ns; i++) {
		y = fr->y0 + 10 + 20 * i;
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>\n",
			fr->x1 + 12, y, fr->x1 + 32, y, palette[i % NCOLORS]);
		text(f, fr->x1 + 38, y + 4, "start", 11, 0, s[i].name);
	}
}

void svg_plot(FILE *f, const char *title, const char *xlabel,
	      const char *ylabel, const struct svg_series *s,
	      unsigned int ns, unsigned int flags)
{
	struct frame fr = { LEFT, TOP, W - RIGHT_PLOT, H - BOTTOM_PLOT };
	double xr[2], yr[2];
	struct axis x, y;
	unsigned int i;

	range_xy(s, ns, flags & SVG_LOG_Y, xr, yr);
	axis_fit(&x, xr[0], xr[1], false, false);
	axis_fit(&y, yr[0], yr[1], flags & SVG_LOG_Y, true);
	x.p0 = fr.x0;
	x.p1 = fr.x1;
	y.p0 = fr.y1;
	y.p1 = fr.y0;
	begin(f, W, H, title);
	axis_draw(f, &fr, &y, true, ylabel);
	axis_draw(f, &fr, &x, false, xlabel);
	box(f, &fr);
	for (i = 0; i < ns; i++)
		series(f, &s[i], palette[i % NCOLORS], &x, &y);
	legend(f, &fr, s, ns);
	end(f);
}

static void range_bars(const struct svg_bar *b, unsigned int nb, bool log_y,
		       double *lo, double *hi)
{
	unsigned int i;

	*lo = *hi = NAN;
	for (i = 0; i < nb; i++) {
		widen(lo, hi, b[i].value, log_y);
		widen(lo, hi, b[i].lo, log_y);
		widen(lo, hi, b[i].hi, log_y);
	}
}

/* A bar from the axis' floor to its value, a whisker over lo..hi. */
static void bar(FILE *f, const struct svg_bar *b, const struct axis *y,
		double cx, double bw, int bottom, const char *color)
{
	double top;

	if (plottable(y, b->value)) {
		top = pos(y, b->value);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
			cx - bw / 2, top, bw, bottom - top, color);
		text_escape(f, b->name);
		fprintf(f, ": %g</title></rect>\n", b->value);
	}
	if (plottable(y, b->lo) && plottable(y, b->hi))
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\" stroke-width=\"1.5\"/>\n",
			cx, pos(y, b->lo), cx, pos(y, b->hi));
	text(f, cx, bottom + 14, "end", 11, -35, b->name);
}

void svg_bars(FILE *f, const char *title, const char *ylabel,
	      const struct svg_bar *b, unsigned int nb, unsigned int flags)
{
	struct frame fr = { LEFT, TOP, W - RIGHT_BARS, H - BOTTOM_BARS };
	double lo, hi, slot;
	struct axis y;
	unsigned int i;

	range_bars(b, nb, flags & SVG_LOG_Y, &lo, &hi);
	axis_fit(&y, lo, hi, flags & SVG_LOG_Y, true);
	y.p0 = fr.y1;
	y.p1 = fr.y0;
	slot = (double)(fr.x1 - fr.x0) / (nb ? nb : 1);
	begin(f, W, H, title);
	axis_draw(f, &fr, &y, true, ylabel);
	box(f, &fr);
	for (i = 0; i < nb; i++)
		bar(f, &b[i], &y, fr.x0 + slot * (i + 0.5), slot * 0.6, fr.y1,
		    palette[i % NCOLORS]);
	end(f);
}
