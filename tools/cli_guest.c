// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl guest list|show|del: guests found by their NICs' alias tags, and
 * the dispatch of the 'guest' subcommands ('add' lives in cli_add.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/*
 * Operands of a subcommand without options: -h/--help prints help, other
 * options are refused, "--" ends the options (and is taken out: *argc
 * counts the operands after it too), the operand count must be in
 * min..max.  Returns -1 to go on, else an exit status.
 */
static int operands(const char *cmd, int *argcp, char **argv, int min, int max)
{
	int argc, end = cli_end_of_options(argcp, argv), i;

	argc = *argcp;
	for (i = 1; i < end; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage_guest(stdout);
			return CLI_OK;
		}
		if (argv[i][0] == '-')
			return cli_usage_err(cmd, "unknown option '%s'", argv[i]);
	}
	if (argc - 1 < min)
		return cli_usage_err(cmd, "missing guest name");
	if (argc - 1 > max)
		return cli_usage_err(cmd, "unexpected argument '%s'", argv[max + 1]);
	return -1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct kinds of a guest's NICs, "macvtap" or "veth,tap". */
static void guest_kinds(const struct vnic_guest *g, char *buf, size_t len)
{
	unsigned int i, n = vnic_guest_nic_count(g);
	unsigned int seen = 0;
	const char *name;
	size_t used = 0;
	VNIC_OPTS(vnic_nic_info, info);

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (vnic_guest_nic_info(g, i, &info) || !info.created ||
		    info.kind <= 0 || info.kind >= 32 || (seen & (1u << info.kind)))
			continue;
		seen |= 1u << info.kind;
		name = vnic_kind_name(info.kind);
		used += snprintf(buf + used, len - used, "%s%s",
				 used ? "," : "", name ? name : "unknown");
		if (used >= len)
			break;
	}
}

static void list_row(struct cli_table *t, const struct vnic_guest *g)
{
	char count[16], kinds[64];
	const char *row[3];
	unsigned int i, n = 0;
	VNIC_OPTS(vnic_nic_info, info);

	for (i = 0; i < vnic_guest_nic_count(g); i++)
		if (!vnic_guest_nic_info(g, i, &info) && info.created)
			n++;
	snprintf(count, sizeof(count), "%u", n);
	guest_kinds(g, kinds, sizeof(kinds));
	row[0] = vnic_guest_name(g);
	row[1] = count;
	row[2] = kinds;
	cli_table_add(t, row);
}

/* Adopt each guest and describe it into 'out' (JSON array or table). */
static int list_guests(struct cli *cli, char **names, unsigned int count,
		       json_t *arr, struct cli_table *t)
{
	struct vnic_guest *g;
	unsigned int i;
	int err;

	for (i = 0; i < count; i++) {
		err = vnic_guest_adopt(cli->ctx, names[i], &g);
		if (err == -ENOENT)
			continue;	/* deleted since the list was taken */
		if (err)
			return cli_fail(cli, err, "guest %s", names[i]);
		if (arr)
			json_array_append_new(arr, cli_guest_json(g, 0));
		else
			list_row(t, g);
		vnic_guest_free(g);
	}
	return CLI_OK;
}

/* Print the named guests as 'guest list' does (sorts names). */
int cli_print_guests(struct cli *cli, char **names, unsigned int count)
{
	static const char *const header[] = { "GUEST", "NICS", "KIND" };
	struct cli_table *t = NULL;
	json_t *arr = NULL;
	int ret;

	qsort(names, count, sizeof(*names), cmp_str);
	if (cli->json)
		arr = json_array();
	else
		t = cli_table_new(header, 3);
	ret = list_guests(cli, names, count, arr, t);
	if (ret) {
		json_decref(arr);
		cli_table_free(t);
		return ret;
	}
	if (cli->json)
		return cli_json_print(cli, arr);
	cli_table_print(t);
	cli_table_free(t);
	return CLI_OK;
}

static int guest_list(struct cli *cli, int argc, char **argv)
{
	unsigned int count;
	char **names;
	int ret;

	ret = operands("guest list", &argc, argv, 0, 0);
	if (ret >= 0)
		return ret;
	ret = cli_open(cli);
	if (ret)
		return ret;
	ret = vnic_guest_list(cli->ctx, &names, &count);
	if (ret)
		return cli_fail(cli, ret, "guest list");
	ret = cli_print_guests(cli, names, count);
	free(names);
	return ret;
}

static int guest_show(struct cli *cli, int argc, char **argv)
{
	struct vnic_guest *g;
	int ret;

	ret = operands("guest show", &argc, argv, 1, 1);
	if (ret >= 0)
		return ret;
	ret = cli_open(cli);
	if (ret)
		return ret;
	ret = vnic_guest_adopt(cli->ctx, argv[1], &g);
	if (ret)
		return cli_fail(cli, ret, "guest %s", argv[1]);
	ret = cli_guest_print(cli, g, 0);
	vnic_guest_free(g);
	return ret;
}

static int guest_del_one(struct cli *cli, const char *name)
{
	struct vnic_guest *g;
	int err;

	err = vnic_guest_adopt(cli->ctx, name, &g);
	if (!err)
		err = vnic_guest_destroy(g);
	if (err)
		return cli_fail(cli, err, "guest %s", name);
	return CLI_OK;
}

static int guest_del(struct cli *cli, int argc, char **argv)
{
	int i, ret, worst = CLI_OK;

	ret = operands("guest del", &argc, argv, 1, argc);
	if (ret >= 0)
		return ret;
	ret = cli_open(cli);
	if (ret)
		return ret;
	for (i = 1; i < argc; i++) {
		ret = guest_del_one(cli, argv[i]);
		if (ret > worst)
			worst = ret;
	}
	return worst;
}


static const struct subcommand guest_cmds[] = {
	{ "add",	NULL,		cmd_guest_add },
	{ "list",	"ls",		guest_list },
	{ "show",	NULL,		guest_show },
	{ "del",	"delete",	guest_del },
};

int cmd_guest(struct cli *cli, int argc, char **argv)
{
	return cli_subcommand(cli, "guest", guest_cmds, ARRAY_SIZE(guest_cmds), guest_list, usage_guest, argc, argv);
}
