// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The progress line: filters take minutes at their defaults, and a silent
 * terminal looks hung.  One line on stderr, rewritten in place, and only
 * on a terminal: a pipe or a test reads the report and nothing else.
 * Callers post a line per step a person would wait for (a method's run, a
 * chunk of setup), never per request: drawing on a terminal costs CPU the
 * measured code shares.
 */
#include <stdarg.h>
#include <unistd.h>

#include "bench.h"

static struct {
	const char *scenario;
	bool tty, shown;
} pg;

void progress_begin(const char *scenario)
{
	pg.scenario = scenario;
	pg.tty = isatty(2);
	pg.shown = false;
}

void progress(const char *fmt, ...)
{
	va_list ap;

	if (!pg.tty || !pg.scenario)
		return;
	/* \033[K: erase what a longer previous line left to the right. */
	fprintf(stderr, "\r[%s] ", pg.scenario);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\033[K", stderr);
	fflush(stderr);
	pg.shown = true;
}

void progress_clear(void)
{
	if (pg.shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	pg.shown = false;
}

void progress_end(void)
{
	progress_clear();
	pg.scenario = NULL;
}
