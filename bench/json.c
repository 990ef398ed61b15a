// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JSON through jansson (the CLI's dependency too): one object per line on
 * stdout; --out nests the same objects in one document per scenario
 * (json_sub).  Building a tree and dumping it once keeps the escaping and
 * the commas jansson's job; these helpers only say NaN is null.
 */
#include <math.h>

#include "bench.h"

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->v = json_object();
}

void json_end(struct json *j)
{
	json_dumpf(j->v, j->f, JSON_COMPACT | JSON_REAL_PRECISION(6));
	fputc('\n', j->f);
	fflush(j->f);
	json_decref(j->v);
}

/* key NULL: the next element of an array.  Takes val's reference. */
static void put(struct json *j, const char *key, json_t *val)
{
	if (key)
		json_object_set_new(j->v, key, val);
	else
		json_array_append_new(j->v, val);
}

void json_sub(struct json *parent, const char *key, char open,
	      struct json *child)
{
	child->f = parent->f;
	child->v = open == '{' ? json_object() : json_array();
	put(parent, key, child->v);
}

void json_str(struct json *j, const char *key, const char *val)
{
	put(j, key, val ? json_string(val) : json_null());
}

/* JSON has no NaN or infinity: unknown is null. */
static json_t *num(double val)
{
	return isnan(val) || isinf(val) ? json_null() : json_real(val);
}

void json_num(struct json *j, const char *key, double val)
{
	put(j, key, num(val));
}

void json_uint(struct json *j, const char *key, unsigned long long val)
{
	put(j, key, json_integer((json_int_t)val));
}

void json_bool(struct json *j, const char *key, bool val)
{
	put(j, key, json_boolean(val));
}

void json_nums(struct json *j, const char *key, const double *vals,
	       unsigned int n)
{
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; i < n; i++)
		json_array_append_new(a, num(vals[i]));
	put(j, key, a);
}
