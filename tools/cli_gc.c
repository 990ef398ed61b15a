// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl gc: collect what crashed runs left behind, i.e. delete this
 * owner's NICs of every guest not kept, in one request.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CMD "gc"

struct gc_args {
	const char **keep;
	unsigned int nkeep;
	bool dry_run;
};

static const struct option gc_opts[] = {
	{ "keep",	required_argument,	NULL, 'k' },
	{ "dry-run",	no_argument,		NULL, 'd' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* What vnic_guest_new() accepts: 1..64 of [A-Za-z0-9_.-]. */
static bool guest_name_ok(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789_.-");

	return n && n <= 64 && !s[n];
}

/* Returns -1 to go on, else an exit status.  a->keep has room for argc. */
static int parse_args(struct gc_args *a, int argc, char **argv)
{
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":k:dh", gc_opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			/* A typo would keep nothing and delete the guest. */
			if (!guest_name_ok(optarg))
				return cli_usage_err(CMD, "--keep: '%s' is not a guest name "
						     "(1..64 of [A-Za-z0-9_.-])", optarg);
			a->keep[a->nkeep++] = optarg;
			break;
		case 'd':
			a->dry_run = true;
			break;
		case 'h':
			usage_gc(stdout);
			return CLI_OK;
		default:
			return cli_bad_opt(CMD, gc_opts, argv, c);
		}
	}
	/* "gc vm1" would keep nothing and delete vm1 with the rest: refuse. */
	if (optind < argc)
		return cli_usage_err(CMD, "unexpected argument '%s' (guests to keep go after --keep)",
				     argv[optind]);
	return -1;
}

static bool kept(const struct gc_args *a, const char *name)
{
	unsigned int i;

	for (i = 0; i < a->nkeep; i++)
		if (!strcmp(a->keep[i], name))
			return true;
	return false;
}

/* --dry-run: list, as 'guest list' does, the guests gc would collect. */
static int dry_run(struct cli *cli, const struct gc_args *a)
{
	unsigned int i, n = 0, count;
	char **names, **victims;
	int ret;

	ret = vnic_guest_list(cli->ctx, &names, &count);
	if (ret)
		return cli_fail(cli, ret, "gc");
	victims = calloc(count + 1, sizeof(*victims));
	if (!victims) {
		free(names);
		return cli_syserr("gc", -ENOMEM);
	}
	for (i = 0; i < count; i++)
		if (!kept(a, names[i]))
			victims[n++] = names[i];
	ret = cli_print_guests(cli, victims, n);
	free(victims);
	free(names);
	return ret;
}

static int collect(struct cli *cli, const struct gc_args *a)
{
	unsigned int deleted = 0;
	int err;

	err = vnic_collect_orphans(cli->ctx, a->keep, a->nkeep, &deleted);
	if (err)
		return cli_fail(cli, err, "gc");
	if (cli->json)
		return cli_json_print(cli, json_pack("{s:I}", "deleted",
						     (json_int_t)deleted));
	printf("deleted %u NIC%s\n", deleted, deleted == 1 ? "" : "s");
	return CLI_OK;
}

int cmd_gc(struct cli *cli, int argc, char **argv)
{
	struct gc_args a = { 0 };
	int ret;

	a.keep = calloc(argc, sizeof(*a.keep));
	if (!a.keep)
		return cli_syserr("gc", -ENOMEM);
	ret = parse_args(&a, argc, argv);
	if (ret < 0) {
		ret = cli_open(cli);
		if (!ret)
			ret = a.dry_run ? dry_run(cli, &a) : collect(cli, &a);
	}
	free(a.keep);
	return ret;
}
