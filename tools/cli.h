/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vnicctl: what the command files share.  Each command parses its own
 * arguments first (usage errors exit 2 before any netlink traffic), then
 * opens the context with cli_open() and reports failures with cli_fail().
 */
#ifndef VNICCTL_CLI_H
#define VNICCTL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include <vnic/vnic.h>

#ifndef VNIC_VERSION
#define VNIC_VERSION "0.1.0"
#endif

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

/* Exit statuses. */
enum {
	CLI_OK = 0,
	CLI_FAIL = 1,		/* the operation failed */
	CLI_USAGE = 2,		/* bad command line or input; nothing was done */
};

/* Global options and the context they describe. */
struct cli {
	bool json;
	bool pretty;
	bool stats;
	const char *owner;	/* NULL: the library's default */
	const char *netns;	/* -n argument, NULL: ours */
	bool no_owner;		/* --no-owner: filter commands do not claim
				 * the table (VNIC_FILTER_NO_OWNER) */
	bool claim_at_commit;	/* filter sync: VNIC_FILTER_CLAIM_AT_COMMIT */
	bool linger;		/* VNICCTL_LINGER is not 0: apply, sync and
				 * remove leave the last nfnetlink close to a
				 * keeper (tools/linger.c) */
	/* --hook-prefix P, repeatable: vnic_filter_opts.hook_prefixes */
	const char *hook_prefixes[VNIC_FILTER_PREFIXES + 2];
	unsigned int nhook_prefixes;
	enum vnic_backend backend;	/* --backend nft|bpf (filter commands) */
	int fail_status;	/* a failure's exit status if not CLI_FAIL
				 * (filter diff: 1 means "differs") */
	struct vnic_ctx *ctx;
};

/* cli_ctx.c */
int cli_open(struct cli *cli);
void cli_close(struct cli *cli);
__printf(3, 4)
int cli_fail(struct cli *cli, int err, const char *fmt, ...);
int cli_syserr(const char *what, int err);
int cli_open_netns(const char *arg, int *fd);

/* cli_util.c */
__printf(2, 3)
int cli_usage_err(const char *cmd, const char *fmt, ...);
struct option;
int cli_bad_opt(const char *cmd, const struct option *opts, char **argv, int c);
int cli_parse_u32(const char *cmd, const char *opt, const char *arg,
		  uint32_t min, uint32_t max, uint32_t *out);
bool cli_has_template(const char *s);
int cli_end_of_options(int *argc, char **argv);
int cli_expand(const char *cmd, const char *opt, const char *tmpl,
	       unsigned int idx, char *buf, size_t len);
int cli_json_print(struct cli *cli, json_t *root);

/* cli_out.c */
struct cli_table;
struct cli_table *cli_table_new(const char *const *header, unsigned int cols);
void cli_table_add(struct cli_table *t, const char *const *row);
void cli_table_print(struct cli_table *t);
void cli_table_free(struct cli_table *t);
json_t *cli_nic_json(const struct vnic_nic_info *info, unsigned int idx);
json_t *cli_guest_json(const struct vnic_guest *g, unsigned int from);
void cli_guest_table(const struct vnic_guest *g, unsigned int from);
int cli_guest_print(struct cli *cli, const struct vnic_guest *g,
		    unsigned int from);

/* cli_policy.c: the filter policy file ("-": stdin) read and checked by
 * the library's policy model; no context needed.  Returns 0 with *out set,
 * or an exit status after printing the problem. */
int cli_policy_load(const char *file, struct vnic_policy **out);

/* cli_filter.c: a filter command's operands (-1: go on, else the exit
 * status); the table opened for writing (claimed unless --no-owner)
 * or read-only; a commit's result printed, with what it repaired (a
 * sync's, NULL or "": none) on a second line.  Both return an exit
 * status. */
int cli_filter_operands(const char *cmd, const char *what, int *argc,
			char **argv, int min, int max);
int cli_filter_open(struct cli *cli, bool write, struct vnic_filter **out);
int cli_filter_result(struct cli *cli, const struct vnic_filter_result *r,
		      const char *repaired);

/* cli_diff.c: filter diff, and the differences sync and show report */
struct vnic_filter;
struct vnic_filter_diff;
void cli_diff_phrase(const struct vnic_filter_diff *d, bool done, char *buf,
		     size_t len);
int cli_filter_diff(struct cli *cli, struct vnic_filter *n,
		    const struct vnic_policy *p);
int cli_filter_sync(struct vnic_filter *n, const struct vnic_policy *p,
		    struct vnic_filter_result *res, char *repaired);
int cli_filter_damage(struct cli *cli, struct vnic_filter *n);

/* one file per command */
int cli_print_guests(struct cli *cli, char **names, unsigned int count);
int cmd_guest(struct cli *cli, int argc, char **argv);
int cmd_guest_add(struct cli *cli, int argc, char **argv);
int cmd_gc(struct cli *cli, int argc, char **argv);
int cmd_features(struct cli *cli, int argc, char **argv);
int cmd_filter(struct cli *cli, int argc, char **argv);
int cmd_filter_hold(struct cli *cli, int argc, char **argv);

void usage_main(FILE *f);
void usage_guest(FILE *f);
void usage_guest_add(FILE *f);
void usage_gc(FILE *f);
void usage_filter(FILE *f);

/* A subcommand table: "NAME [ALIAS]" -> run(cli, argc, argv). */
struct subcommand {
	const char *name;
	const char *alias;
	int (*run)(struct cli *cli, int argc, char **argv);
};

/* Run argv[1] from cmds; none: dflt; help: usage(stdout). */
int cli_subcommand(struct cli *cli, const char *what,
		   const struct subcommand *cmds, size_t n,
		   int (*dflt)(struct cli *cli, int argc, char **argv),
		   void (*usage)(FILE *f), int argc, char **argv);

#endif /* VNICCTL_CLI_H */
