// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl: small helpers for argument parsing and output that every
 * command uses.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("vnicctl: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'vnicctl help%s%s' for more information.\n",
		cmd ? " " : "", cmd ? cmd : "");
	return CLI_USAGE;
}

/* The long options of opts that "--NAME" (up to '=') abbreviates. */
static unsigned int matches(const struct option *opts, const char *arg,
			    char *buf, size_t len)
{
	size_t n = strcspn(arg + 2, "="), used = 0;
	unsigned int count = 0;

	buf[0] = '\0';
	for (; opts->name; opts++) {
		if (strncmp(opts->name, arg + 2, n))
			continue;
		count++;
		if (used < len)
			used += snprintf(buf + used, len - used, "%s--%s",
					 used ? ", " : "", opts->name);
	}
	return count;
}

/*
 * A getopt_long() error ('?' or ':') as a usage error.  getopt_long() says
 * "unknown" (optopt 0) for an abbreviation of several options too, and
 * gives a long option's value for "--flag=ARG": name which it was.
 */
int cli_bad_opt(const char *cmd, const struct option *opts, char **argv, int c)
{
	const char *arg = argv[optind - 1];
	char names[256];

	if (c == ':')
		return cli_usage_err(cmd, "option '%s' needs an argument", arg);
	if (optopt && strncmp(arg, "--", 2))
		return cli_usage_err(cmd, "unknown option '-%c'", optopt);
	if (!strncmp(arg, "--", 2) && arg[2]) {
		if (optopt && strchr(arg, '='))
			return cli_usage_err(cmd, "option '%.*s' takes no argument",
					     (int)strcspn(arg, "="), arg);
		if (matches(opts, arg, names, sizeof(names)) > 1)
			return cli_usage_err(cmd, "option '%.*s' is ambiguous: %s",
					     (int)strcspn(arg, "="), arg, names);
	}
	return cli_usage_err(cmd, "unknown option '%s'", arg);
}

/*
 * A decimal number in min..max.  Digits only: strtoull() alone would take
 * leading blanks, a sign ("-1" wraps to a huge value) and, in base 0, read
 * "010" as eight; out of range includes what overflows.
 */
int cli_parse_u32(const char *cmd, const char *opt, const char *arg,
		  uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v = 0;
	size_t n = strspn(arg, "0123456789");

	errno = 0;
	if (n && !arg[n])
		v = strtoull(arg, NULL, 10);
	if (!n || arg[n] || errno || v < min || v > max)
		return cli_usage_err(cmd, "%s: '%s' is not a number in %u..%u",
				     opt, arg, min, max);
	*out = v;
	return 0;
}

/* True if s holds the "%d" that marks a name template. */
bool cli_has_template(const char *s)
{
	return s && strstr(s, "%d");
}

/*
 * tmpl with its first "%d" replaced by idx (tmpl as is without one).  The
 * result must fit an interface name.
 */
int cli_expand(const char *cmd, const char *opt, const char *tmpl,
	       unsigned int idx, char *buf, size_t len)
{
	const char *p = strstr(tmpl, "%d");
	int n;

	if (!p)
		n = snprintf(buf, len, "%s", tmpl);
	else
		n = snprintf(buf, len, "%.*s%u%s", (int)(p - tmpl), tmpl, idx,
			     p + 2);
	if (n < 0 || (size_t)n >= len || n > VNIC_IFNAME_MAX)
		return cli_usage_err(cmd, "%s: '%s' makes a name longer than %d characters",
				     opt, tmpl, VNIC_IFNAME_MAX);
	return 0;
}

/* Print root on stdout and release it. */
int cli_json_print(struct cli *cli, json_t *root)
{
	size_t flags = JSON_PRESERVE_ORDER;
	int err;

	if (!root) {
		fputs("vnicctl: out of memory\n", stderr);
		return CLI_FAIL;
	}
	flags |= cli->pretty ? JSON_INDENT(2) : JSON_COMPACT;
	err = json_dumpf(root, stdout, flags);
	json_decref(root);
	if (err) {
		fputs("vnicctl: cannot write JSON output\n", stderr);
		return CLI_FAIL;
	}
	putchar('\n');
	return CLI_OK;
}

int cli_subcommand(struct cli *cli, const char *what,
		   const struct subcommand *cmds, size_t n,
		   int (*dflt)(struct cli *cli, int argc, char **argv),
		   void (*usage)(FILE *f), int argc, char **argv)
{
	size_t i;

	if (argc < 2)
		return dflt(cli, 1, argv);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help")) {
		usage(stdout);
		return CLI_OK;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(argv[1], cmds[i].name) ||
		    (cmds[i].alias && !strcmp(argv[1], cmds[i].alias)))
			return cmds[i].run(cli, argc - 1, argv + 1);
	return cli_usage_err(what, "unknown subcommand '%s'", argv[1]);
}

/*
 * The first "--" of argv[1..*argc-1] taken out (the arguments after it
 * move down, *argc is one less); returns its index, or *argc if there is
 * none.  Arguments from there on are operands even when they begin with
 * '-': a guest may be named "-vm1", as guest add (getopt) takes it.
 */
int cli_end_of_options(int *argc, char **argv)
{
	int i, j;

	for (i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--"))
			continue;
		for (j = i; j + 1 < *argc; j++)
			argv[j] = argv[j + 1];
		argv[--*argc] = NULL;
		return i;
	}
	return *argc;
}
