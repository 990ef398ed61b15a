// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl: command-line front end of libvnic.  This file holds main(): the
 * global options and the dispatch to one command.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct command {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
};

static int cmd_help(struct cli *cli, int argc, char **argv)
{
	const char *topic = argc > 1 ? argv[1] : "";
	const char *sub = argc > 2 ? argv[2] : "";

	if (!strcmp(topic, "add") ||
	    (!strcmp(topic, "guest") && !strcmp(sub, "add")))
		usage_guest_add(stdout);
	else if (!strcmp(topic, "guest"))
		usage_guest(stdout);
	else if (!strcmp(topic, "gc"))
		usage_gc(stdout);
	else if (!strcmp(topic, "filter"))
		usage_filter(stdout);
	else
		usage_main(stdout);
	return CLI_OK;
}

static int print_version(void)
{
	printf("vnicctl (libvnic) %s\n", VNIC_VERSION);
	return CLI_OK;
}

static int cmd_version(struct cli *cli, int argc, char **argv)
{
	if (argc > 1)
		return cli_usage_err("version", "unexpected argument '%s'", argv[1]);
	return print_version();
}

static const struct command commands[] = {
	{ "guest",	cmd_guest },
	{ "gc",		cmd_gc },
	{ "filter",	cmd_filter },
	{ "features",	cmd_features },
	{ "help",	cmd_help },
	{ "version",	cmd_version },
};

static const struct option global_opts[] = {
	{ "json",	no_argument,		NULL, 'j' },
	{ "pretty",	no_argument,		NULL, 'p' },
	{ "stats",	no_argument,		NULL, 's' },
	{ "netns",	required_argument,	NULL, 'n' },
	{ "owner",	required_argument,	NULL, 'o' },
	{ "no-owner",	no_argument,		NULL, 'O' },
	{ "hook-prefix", required_argument,	NULL, 'P' },
	{ "backend",	required_argument,	NULL, 'B' },
	{ "help",	no_argument,		NULL, 'h' },
	{ "version",	no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/* The library's rule for the owner tag, checked here for a clear message. */
static bool valid_owner(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");

	return n >= 1 && n <= 32 && !s[n];
}

/* Returns -1 to go on with the command, else an exit status. */
static int parse_global(struct cli *cli, int argc, char **argv)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:jpsn:o:hV", global_opts,
				NULL)) != -1) {
		switch (c) {
		case 'j':
			cli->json = true;
			break;
		case 'p':
			cli->json = true;
			cli->pretty = true;
			break;
		case 's':
			cli->stats = true;
			break;
		case 'n':
			cli->netns = optarg;
			break;
		case 'o':
			cli->owner = optarg;
			break;
		case 'O':
			cli->no_owner = true;
			break;
		case 'P':
			/* One over the library's limit: its message says why. */
			if (cli->nhook_prefixes > VNIC_FILTER_PREFIXES)
				return cli_usage_err(NULL, "--hook-prefix: more than %d",
						     VNIC_FILTER_PREFIXES);
			cli->hook_prefixes[cli->nhook_prefixes++] = optarg;
			break;
		case 'B':
			if (!strcmp(optarg, "nft"))
				cli->backend = VNIC_BACKEND_NFT;
			else if (!strcmp(optarg, "bpf"))
				cli->backend = VNIC_BACKEND_BPF;
			else
				return cli_usage_err(NULL, "--backend: '%s' is not nft or bpf",
						     optarg);
			break;
		case 'h':
			usage_main(stdout);
			return CLI_OK;
		case 'V':
			return print_version();
		default:
			return cli_bad_opt(NULL, global_opts, argv, c);
		}
	}
	if (cli->owner && !valid_owner(cli->owner))
		return cli_usage_err(NULL, "-o: owner '%s' is not 1..32 of [A-Za-z0-9_.-]",
				     cli->owner);
	if (optind >= argc)
		return cli_usage_err(NULL, "no command given");
	return -1;
}

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/*
 * The library takes fd 0 to mean "no namespace fd": keep 0, 1 and 2 open so
 * that no namespace we open gets one of them.
 */
static void std_fds(void)
{
	int fd;

	do
		fd = open("/dev/null", O_RDWR);
	while (fd >= 0 && fd <= 2);
	if (fd > 2)
		close(fd);
}

/*
 * Standard output written out, else exit status 1: a caller that reads
 * the output (JSON into a file on a full disk) must not take what got
 * cut for the whole answer.  A change the command made stays (the
 * message says so: vnicctl(8), EXIT STATUS).
 */
static int out_done(const struct cli *cli, int ret)
{
	int err = fflush(stdout) ? errno : 0;

	if (!err && !ferror(stdout))
		return ret;
	fprintf(stderr, "vnicctl: writing standard output: %s\n",
		err ? strerror(err) : "write error");
	if (cli->fail_status)
		return cli->fail_status;
	return ret == CLI_OK ? CLI_FAIL : ret;
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	const struct command *cmd;
	int ret;

	std_fds();
	cli.linger = !getenv("VNICCTL_LINGER") ||
		     strcmp(getenv("VNICCTL_LINGER"), "0");
	ret = parse_global(&cli, argc, argv);
	if (ret >= 0)
		return out_done(&cli, ret);
	argc -= optind;
	argv += optind;
	cmd = find_command(argv[0]);
	if (!cmd)
		return cli_usage_err(NULL, "unknown command '%s'", argv[0]);
	ret = cmd->run(&cli, argc, argv);
	cli_close(&cli);
	return out_done(&cli, ret);
}
