// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one option parser of every scenario.  Each option is a row: its
 * name, the field it fills, its bounds.  A scenario (main.c's table) says
 * which options it takes and fills its defaults; the parser refuses the
 * others, so a typo or a misplaced option is an error, not a silent no-op.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum opt_type { T_UINT, T_STR, T_FLAG, T_KIND, T_FILL };

struct opt_desc {
	const char *name;
	unsigned int bit;
	enum opt_type type;
	size_t off;
	unsigned int min, max;
};

#define F(field) offsetof(struct bench_opts, field)

static const struct opt_desc descs[] = {
	{ "nics", O_NICS, T_UINT, F(nics), 1, BENCH_MAX_NICS },
	{ "count", O_COUNT, T_UINT, F(guests), 1, BENCH_MAX_NICS },
	{ "guests", O_GUESTS, T_UINT, F(guests), 1, BENCH_MAX_FILTER_NICS },
	{ "nics-per-guest", O_NPG, T_UINT, F(nics_per_guest), 1, 64 },
	{ "existing", O_EXISTING, T_UINT, F(existing), 0, BENCH_MAX_FILTER_NICS },
	{ "runs", O_RUNS, T_UINT, F(runs), 1, 1000 },
	{ "settle", O_SETTLE, T_UINT, F(settle_ms), 0, 10000 },
	{ "stmt-sample", O_STMT_SAMPLE, T_UINT, F(stmt_sample), 1, 1000000 },
	{ "max-nics", O_MAX_NICS, T_UINT, F(max_nics), 0, 200000 },
	{ "points", O_POINTS, T_UINT, F(npoints), 2, BENCH_MAX_POINTS },
	{ "kind", O_KIND, T_KIND, F(kind), 0, 0 },
	{ "fill-lower", O_FILL, T_FILL, F(fill_other), 0, 0 },
	{ "methods", O_METHODS, T_STR, F(methods), 0, 0 },
	{ "out", O_OUT, T_STR, F(out_dir), 0, 0 },
	{ "json", O_JSON, T_FLAG, F(json), 0, 0 },
	{ "up", O_UP, T_FLAG, F(up), 0, 0 },
	{ "keep-files", O_KEEP, T_FLAG, F(keep_files), 0, 0 },
	{ "quick", O_QUICK, T_FLAG, F(quick), 0, 0 },
	{ "proc-guests", O_PROC, T_STR, F(proc_guests), 0, 0 },
};

#define NDESCS	(sizeof(descs) / sizeof(descs[0]))

/* A whole number in min..max for option opt, or a message and -EINVAL. */
int bench_parse_uint(const char *opt, const char *s, unsigned int min,
		     unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "vnic-bench: %s: want %u..%u, got '%s'\n", opt,
			min, max, s);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

/* The library names the kinds; the bench makes the four it knows. */
static int parse_kind(const char *s, enum vnic_kind *kind, unsigned int ok)
{
	enum vnic_kind k = vnic_kind_from_name(s);
	int i;

	if (k && (ok & (1u << k))) {
		*kind = k;
		return 0;
	}
	fprintf(stderr, "vnic-bench: --kind: one of");
	for (i = 1; i < VNIC_KIND__MAX; i++)
		if (ok & (1u << i))
			fprintf(stderr, " %s", vnic_kind_name(i));
	fprintf(stderr, ", not '%s'\n", s);
	return -EINVAL;
}

static int parse_one(const struct opt_desc *d, const char *arg,
		     struct bench_opts *o, unsigned int kinds)
{
	char *field = (char *)o + d->off;
	char name[32];

	snprintf(name, sizeof(name), "--%s", d->name);
	switch (d->type) {
	case T_UINT:
		return bench_parse_uint(name, arg, d->min, d->max,
					(unsigned int *)field);
	case T_STR:
		*(const char **)field = arg;
		return 0;
	case T_FLAG:
		*(bool *)field = true;
		return 0;
	case T_KIND:
		return parse_kind(arg, (enum vnic_kind *)field, kinds);
	case T_FILL:
		if (strcmp(arg, "same") && strcmp(arg, "other")) {
			fprintf(stderr, "vnic-bench: --fill-lower: same or other, not '%s'\n",
				arg);
			return -EINVAL;
		}
		*(bool *)field = !strcmp(arg, "other");
		return 0;
	}
	return -EINVAL;
}

int bench_parse_opts(const struct scenario *s, int argc, char **argv,
		     struct bench_opts *o)
{
	struct option lo[NDESCS + 2];
	unsigned int i;
	int c, idx;

	memset(o, 0, sizeof(*o));
	o->scenario = s->name;
	o->runs = BENCH_DEFAULT_RUNS;
	o->settle_ms = BENCH_DEFAULT_SETTLE_MS;
	if (s->defaults)
		s->defaults(o);
	for (i = 0; i < NDESCS; i++)
		lo[i] = (struct option){ descs[i].name,
			descs[i].type == T_FLAG ? no_argument : required_argument,
			NULL, 'A' + (int)i };
	lo[i++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[i] = (struct option){ NULL, 0, NULL, 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, &idx)) != -1) {
		const struct opt_desc *d;

		if (c == 'h')
			return 1;
		if (c < 'A' || c >= 'A' + (int)NDESCS)
			return -EINVAL;
		d = &descs[c - 'A'];
		if (!(s->opts & d->bit)) {
			fprintf(stderr, "vnic-bench: --%s is not an option of %s\n",
				d->name, s->name);
			return -EINVAL;
		}
		if (parse_one(d, optarg, o, s->kinds))
			return -EINVAL;
	}
	if (optind != argc)
		return -EINVAL;
	return s->check ? s->check(o) : 0;
}

/* name is one of list's comma-separated words (NULL: all). */
bool bench_in_list(const char *list, const char *name)
{
	size_t len = strlen(name);
	const char *p = list;

	if (!p)
		return true;
	while ((p = strstr(p, name))) {
		bool start = p == list || p[-1] == ',';
		bool end = p[len] == ',' || p[len] == 0;

		if (start && end)
			return true;
		p += len;
	}
	return false;
}

/* Unknown names in --methods are a typo, not an empty selection. */
int bench_check_methods(const char *list, const char *const *known,
			unsigned int nknown)
{
	char *dup, *tok, *save = NULL;
	unsigned int i;
	int ret = 0;

	if (!list)
		return 0;
	dup = strdup(list);
	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < nknown; i++)
			if (!strcmp(tok, known[i]))
				break;
		if (i == nknown) {
			fprintf(stderr, "vnic-bench: unknown method '%s'\n", tok);
			ret = -EINVAL;
		}
	}
	free(dup);
	return ret;
}
