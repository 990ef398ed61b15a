// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl features: what the library probed in the running kernel.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int print_json(struct cli *cli, uint64_t have)
{
	json_t *o = json_object();
	const char *name;
	unsigned int bit;

	for (bit = 0; o && bit < 64; bit++) {
		name = vnic_feature_name(1ull << bit);
		if (name)
			json_object_set_new(o, name,
					    json_boolean(have & (1ull << bit)));
	}
	return cli_json_print(cli, o);
}

static void print_table(uint64_t have)
{
	static const char *const header[] = { "FEATURE", "SUPPORTED" };
	struct cli_table *t = cli_table_new(header, 2);
	const char *row[2];
	unsigned int bit;

	for (bit = 0; bit < 64; bit++) {
		row[0] = vnic_feature_name(1ull << bit);
		row[1] = have & (1ull << bit) ? "yes" : "no";
		if (row[0])
			cli_table_add(t, row);
	}
	cli_table_print(t);
	cli_table_free(t);
}

int cmd_features(struct cli *cli, int argc, char **argv)
{
	int ret;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage_main(stdout);
		return CLI_OK;
	}
	if (argc > 1)
		return cli_usage_err("features", "unexpected argument '%s'", argv[1]);
	ret = cli_open(cli);
	if (ret)
		return ret;
	if (cli->json)
		return print_json(cli, vnic_ctx_features(cli->ctx));
	print_table(vnic_ctx_features(cli->ctx));
	return CLI_OK;
}
