// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JSON by hand: the bench writes objects of strings and numbers, so a
 * library dependency would buy nothing.  One object per line on stdout;
 * --out nests the same objects in one document per scenario (json_sub).
 */
#include <math.h>

#include "bench.h"

void json_escape(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			/* Other control bytes are not allowed raw; bytes
			 * >= 0x80 pass through (kernel text is UTF-8). */
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->first = true;
	fputc('{', f);
}

void json_end(struct json *j)
{
	fputs("}\n", j->f);
	fflush(j->f);
}

/* key NULL: the next element of an array. */
static void json_key(struct json *j, const char *key)
{
	if (!j->first)
		fputc(',', j->f);
	j->first = false;
	if (!key)
		return;
	json_escape(j->f, key);
	fputc(':', j->f);
}

void json_sub(struct json *parent, const char *key, char open,
	      struct json *child)
{
	json_key(parent, key);
	fputc(open, parent->f);
	child->f = parent->f;
	child->first = true;
}

void json_sub_end(struct json *child, char close)
{
	fputc(close, child->f);
}

void json_str(struct json *j, const char *key, const char *val)
{
	json_key(j, key);
	if (val)
		json_escape(j->f, val);
	else
		fputs("null", j->f);
}

static void json_put_num(FILE *f, double val)
{
	/* JSON has no NaN or infinity: unknown is null. */
	if (isnan(val) || isinf(val))
		fputs("null", f);
	else
		fprintf(f, "%.6g", val);
}

void json_num(struct json *j, const char *key, double val)
{
	json_key(j, key);
	json_put_num(j->f, val);
}

void json_uint(struct json *j, const char *key, unsigned long long val)
{
	json_key(j, key);
	fprintf(j->f, "%llu", val);
}

void json_bool(struct json *j, const char *key, bool val)
{
	json_key(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_nums(struct json *j, const char *key, const double *vals,
	       unsigned int n)
{
	unsigned int i;

	json_key(j, key);
	fputc('[', j->f);
	for (i = 0; i < n; i++) {
		if (i)
			fputc(',', j->f);
		json_put_num(j->f, vals[i]);
	}
	fputc(']', j->f);
}
