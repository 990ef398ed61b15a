// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl filter apply|sync|show|remove|render: the guests' filter policy
 * enforced by libvnic's nftables table (nft.h).  The policy file is parsed
 * in cli_policy.c; filter hold is cli_hold.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tools/featcache.h"
#include "tools/linger.h"

/*
 * Operands of a filter subcommand: -h/--help prints help, other options are
 * refused ("-" alone is an operand: stdin), "--" ends the options (and is
 * taken out: *argc counts the operands after it too), the operand count
 * must be in min..max.  Returns -1 to go on, else an exit status.
 */
int cli_filter_operands(const char *cmd, const char *what, int *argcp,
			char **argv, int min, int max)
{
	int argc, end = cli_end_of_options(argcp, argv), i;

	argc = *argcp;
	for (i = 1; i < end; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage_filter(stdout);
			return CLI_OK;
		}
		if (argv[i][0] == '-' && argv[i][1])
			return cli_usage_err(cmd, "unknown option '%s'", argv[i]);
	}
	if (argc - 1 < min)
		return cli_usage_err(cmd, "missing %s", what);
	if (argc - 1 > max)
		return cli_usage_err(cmd, "unexpected argument '%s'", argv[max + 1]);
	return -1;
}

/*
 * The nft features an earlier vnicctl kept on this boot (tools/featcache.c)
 * spare the probe, whose aborted batch waits for an RCU grace period.
 * VNICCTL_FEATURES_FILE names another file; set empty, it turns this off.
 */
#define FEATURES_DIR	"/run/vnic"
#define FEATURES_FILE	FEATURES_DIR "/nft-features"

static const char *features_path(void)
{
	const char *p = getenv("VNICCTL_FEATURES_FILE");

	return p ? p : FEATURES_FILE;
}

/*
 * Features the library refuses (-EINVAL: a corrupted file, bits a newer
 * libvnic wrote before a downgrade) are no reason to fail: probe once and
 * rewrite the file.  A file that cannot be written is no error either.
 */
static int open_feat(struct cli *cli, struct vnic_filter_opts *opts,
		     struct vnic_filter **out)
{
	const char *path = features_path();
	int err;

	opts->features = featcache_read(path);
	err = vnic_filter_open(cli->ctx, opts, out);
	if (err == -EINVAL && opts->features) {
		opts->features = 0;
		err = vnic_filter_open(cli->ctx, opts, out);
	}
	if (err || opts->features || !path[0])
		return err;
	if (!strcmp(path, FEATURES_FILE))
		mkdir(FEATURES_DIR, 0755);	/* EEXIST, EROFS...: no matter */
	featcache_keep(path, vnic_filter_features(*out));
	return 0;
}

/*
 * Open the table.  A command that writes claims it (NFT_TABLE_F_OWNER)
 * unless --no-owner; vnicctl exits right after, so the claim is only of use
 * where the kernel keeps an owned table after its owner (NFT_TABLE_F_PERSIST,
 * Linux 6.9): elsewhere the table would go with vnicctl, so refuse.  Reading
 * commands open it read-only.
 */
int cli_filter_open(struct cli *cli, bool write, struct vnic_filter **out)
{
	VNIC_OPTS(vnic_filter_opts, opts, .backend = cli->backend);
	struct vnic_filter *n;
	uint32_t feat;
	int err;

	if (cli->backend == VNIC_BACKEND_BPF) {
		/* Its programs outlive vnicctl in the filters; no table to own. */
		if (cli->no_owner || cli->nhook_prefixes)
			return cli_usage_err("filter", "--%s is an nft option (--backend nft)",
					     cli->no_owner ? "no-owner" : "hook-prefix");
		err = vnic_filter_open(cli->ctx, &opts, &n);
		if (err)
			return cli_fail(cli, err, "filter: open bpf backend");
		*out = n;
		return CLI_OK;
	}
	/* A keeper's socket would keep the claim one grace period past our
	 * exit, and the next vnicctl would find the table owned (linger.c). */
	if (cli->claim_at_commit && cli->linger)
		cli->no_owner = true;
	if (cli->no_owner)
		opts.flags |= VNIC_FILTER_NO_OWNER;
	else if (cli->claim_at_commit)
		opts.flags |= VNIC_FILTER_CLAIM_AT_COMMIT;
	if (cli->nhook_prefixes)
		opts.hook_prefixes = cli->hook_prefixes;
	/* Reading writes nothing, and works on a table a runtime owns. */
	if (!write)
		opts.flags |= VNIC_FILTER_READ_ONLY;
	err = open_feat(cli, &opts, &n);
	if (err)
		return cli_fail(cli, err, "filter: open table");
	feat = vnic_filter_features(n);
	if (write && !cli->no_owner && (feat & VNIC_FILTER_FEAT_OWNER) &&
	    !(feat & VNIC_FILTER_FEAT_PERSIST)) {
		vnic_filter_close(n);
		fputs("vnicctl: filter: this kernel has no NFT_TABLE_F_PERSIST (Linux 6.9):\n"
		      "  a table owned by vnicctl would be deleted when it exits.\n"
		      "  Use --no-owner (the table is then not protected from other\n"
		      "  processes), or a program that links libvnic and keeps it open.\n",
		      stderr);
		return CLI_FAIL;
	}
	*out = n;
	return CLI_OK;
}

int cli_filter_result(struct cli *cli, const struct vnic_filter_result *r,
		      const char *repaired)
{
	if (cli->json)
		return cli_json_print(cli, json_pack(
			"{s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I}",
			"added", (json_int_t)r->guests_added,
			"changed", (json_int_t)r->guests_changed,
			"removed", (json_int_t)r->guests_removed,
			"unchanged", (json_int_t)r->guests_unchanged,
			"writes", r->writes != 0,
			"messages", (json_int_t)r->messages,
			"batches", (json_int_t)r->batches,
			"genid", (json_int_t)r->genid,
			"repaired", (json_int_t)r->repaired));
	printf("%u added, %u changed, %u removed, %u unchanged; ",
	       r->guests_added, r->guests_changed, r->guests_removed,
	       r->guests_unchanged);
	if (r->writes)
		printf("%u message%s in %u batch%s; ", r->messages,
		       r->messages == 1 ? "" : "s", r->batches,
		       r->batches == 1 ? "" : "es");
	else
		printf("nothing written; ");
	printf("generation %u\n", r->genid);
	if (repaired && *repaired)
		printf("repaired: %s\n", repaired);
	return CLI_OK;
}

/* What apply, sync and render start from: a policy file read, checked and
 * built, and the table opened.  ret < 0: ready; else the exit status. */
struct file_job {
	struct vnic_policy *p;
	struct vnic_filter *n;
};

static int file_job_open(struct cli *cli, const char *cmd, int argc, char **argv,
			 bool write, struct file_job *job)
{
	int ret;

	memset(job, 0, sizeof(*job));
	ret = cli_filter_operands(cmd, "policy file", &argc, argv, 1, 1);
	if (ret >= 0)
		return ret;
	ret = cli_policy_load(argv[1], &job->p);
	if (!ret)
		ret = cli_open(cli);
	if (!ret)
		ret = cli_filter_open(cli, write, &job->n);
	return ret ? ret : -1;
}

/*
 * A command that committed and exits (apply, sync, remove) hands the last
 * close of its nfnetlink socket to a keeper (tools/linger.c): after a
 * commit that deleted anything, that close waits for an RCU grace period
 * (filters.rst).  Its output is flushed first; the keeper holds none of
 * our descriptors but the nfnetlink sockets, so `$(vnicctl ...)` does not
 * wait for it.  VNICCTL_LINGER=0: the close waits here, as before.
 */
static void commit_close(struct cli *cli, struct vnic_filter *n)
{
	if (!n)
		return;
	if (!cli->linger || !cli->claim_at_commit) {
		vnic_filter_close(n);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	filter_close(n);
}

static void file_job_close(struct cli *cli, struct file_job *job)
{
	commit_close(cli, job->n);
	vnic_policy_free(job->p);
}

enum commit { C_APPLY, C_SYNC };

/* A handle that does not own the table pins its commit to the generation
 * it read the table at: a commit by anyone meanwhile fails it with -EAGAIN,
 * after which the handle has read the table again. */
#define COMMIT_TRIES	3

/* apply FILE, sync FILE: the file's policy in one commit. */
static int commit_file(struct cli *cli, int argc, char **argv, enum commit how)
{
	const char *cmd = how == C_APPLY ? "filter apply" : "filter sync";
	VNIC_OPTS(vnic_filter_result, res);
	char repaired[1024] = "";
	struct file_job job;
	int ret, err, i;

	ret = file_job_open(cli, cmd, argc, argv, true, &job);
	if (ret < 0) {
		for (i = 0, err = -EAGAIN; i < COMMIT_TRIES && err == -EAGAIN; i++)
			err = how == C_APPLY ?
			      vnic_filter_apply(job.n, job.p, &res) :
			      cli_filter_sync(job.n, job.p, &res, repaired);
		ret = err ? cli_fail(cli, err, "%s", cmd) :
			    cli_filter_result(cli, &res, repaired);
	}
	file_job_close(cli, &job);
	return ret;
}

static int filter_apply(struct cli *cli, int argc, char **argv)
{
	cli->claim_at_commit = true;	/* as filter_sync() */
	return commit_file(cli, argc, argv, C_APPLY);
}

/*
 * apply, sync and remove claim nothing while a keeper makes their last
 * close (cli_filter_open()); with VNICCTL_LINGER=0 they claim the table with
 * their commit, not at open (VNIC_FILTER_CLAIM_AT_COMMIT): vnicctl exits
 * right after, so a sync that changes nothing (or a command refused before
 * its commit) writes nothing, and the generation it leaves is still the
 * one libvnic's last commit recorded: the next process reads nothing back
 * either.  hold claims at open.
 */
static int filter_sync(struct cli *cli, int argc, char **argv)
{
	cli->claim_at_commit = true;
	return commit_file(cli, argc, argv, C_SYNC);
}

static int filter_remove(struct cli *cli, int argc, char **argv)
{
	VNIC_OPTS(vnic_filter_result, res);
	struct vnic_filter *n;
	int ret, err, i;

	ret = cli_filter_operands("filter remove", "guest name", &argc, argv, 1, argc);
	if (ret >= 0)
		return ret;
	ret = cli_open(cli);
	if (ret)
		return ret;
	cli->claim_at_commit = true;	/* as filter_sync() */
	ret = cli_filter_open(cli, true, &n);
	if (ret)
		return ret;
	for (i = 0, err = -EAGAIN; i < COMMIT_TRIES && err == -EAGAIN; i++)
		err = vnic_filter_remove(n, (const char *const *)argv + 1,
					 (unsigned int)argc - 1, &res);
	ret = err ? cli_fail(cli, err, "filter remove") :
		    cli_filter_result(cli, &res, NULL);
	commit_close(cli, n);
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *counter_json(const char *guest, uint64_t packets, uint64_t bytes)
{
	return json_pack("{s:s, s:I, s:I}", "guest", guest,
			 "packets", (json_int_t)packets,
			 "bytes", (json_int_t)bytes);
}

static void counter_row(struct cli_table *t, const char *guest,
			uint64_t packets, uint64_t bytes)
{
	char sp[24], sb[24];
	const char *row[3] = { guest, sp, sb };

	snprintf(sp, sizeof(sp), "%llu", (unsigned long long)packets);
	snprintf(sb, sizeof(sb), "%llu", (unsigned long long)bytes);
	cli_table_add(t, row);
}

static const char *const show_header[] = { "GUEST", "DROP-PACKETS", "DROP-BYTES" };

/* show GUEST: one guest's counter. */
static int show_one(struct cli *cli, struct vnic_filter *n, const char *guest)
{
	uint64_t packets, bytes;
	struct cli_table *t;
	int err;

	err = vnic_filter_counter(n, guest, &packets, &bytes);
	if (err)
		return cli_fail(cli, err, "filter show %s", guest);
	if (cli->json)
		return cli_json_print(cli, counter_json(guest, packets, bytes));
	t = cli_table_new(show_header, 3);
	counter_row(t, guest, packets, bytes);
	cli_table_print(t);
	cli_table_free(t);
	return CLI_OK;
}

/* show: every installed guest, sorted, with its counter. */
static int show_all(struct cli *cli, struct vnic_filter *n)
{
	struct cli_table *t = NULL;
	json_t *arr = NULL;
	uint64_t packets, bytes;
	unsigned int i, count;
	char **names;
	int err, ret = CLI_OK;

	err = vnic_filter_guests(n, &names, &count);
	if (err)
		return cli_fail(cli, err, "filter show");
	qsort(names, count, sizeof(*names), cmp_str);
	if (cli->json)
		arr = json_array();
	else
		t = cli_table_new(show_header, 3);
	for (i = 0; i < count; i++) {
		err = vnic_filter_counter(n, names[i], &packets, &bytes);
		if (err == -ENOENT)
			continue;	/* removed since the list was read */
		if (err) {
			ret = cli_fail(cli, err, "filter show %s", names[i]);
			break;
		}
		if (arr)
			json_array_append_new(arr, counter_json(names[i], packets, bytes));
		else
			counter_row(t, names[i], packets, bytes);
	}
	free(names);
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

static int filter_show(struct cli *cli, int argc, char **argv)
{
	struct vnic_filter *n;
	int ret;

	ret = cli_filter_operands("filter show", "guest name", &argc, argv, 0, 1);
	if (ret >= 0)
		return ret;
	ret = cli_open(cli);
	if (ret)
		return ret;
	ret = cli_filter_open(cli, false, &n);
	if (ret)
		return ret;
	ret = argc > 1 ? show_one(cli, n, argv[1]) : show_all(cli, n);
	/* A guest's counter says nothing of whether its filter is still
	 * what was installed: the damage is checked for one guest too. */
	if (ret == CLI_OK)
		ret = cli_filter_damage(cli, n);
	vnic_filter_close(n);
	return ret;
}

static int filter_diff(struct cli *cli, int argc, char **argv)
{
	struct file_job job;
	int ret;

	cli->fail_status = CLI_USAGE;
	ret = file_job_open(cli, "filter diff", argc, argv, false, &job);
	if (ret < 0)
		ret = cli_filter_diff(cli, job.n, job.p);
	else if (ret == CLI_FAIL)
		ret = CLI_USAGE;	/* diff: 1 means "differs" */
	file_job_close(cli, &job);
	return ret;
}

static int filter_render(struct cli *cli, int argc, char **argv)
{
	struct file_job job;
	char *text = NULL;
	int ret, err;

	ret = file_job_open(cli, "filter render", argc, argv, false, &job);
	if (ret < 0) {
		err = vnic_filter_render(job.n, job.p, &text);
		ret = err ? cli_fail(cli, err, "filter render") : CLI_OK;
		if (!err) {
			fputs(text, stdout);
			if (*text && text[strlen(text) - 1] != '\n')
				putchar('\n');
			free(text);
		}
	}
	file_job_close(cli, &job);
	return ret;
}


static const struct subcommand filter_cmds[] = {
	{ "apply",	NULL,		filter_apply },
	{ "sync",	NULL,		filter_sync },
	{ "show",	"list",		filter_show },
	{ "remove",	"del",		filter_remove },
	{ "render",	NULL,		filter_render },
	{ "diff",	NULL,		filter_diff },
	{ "hold",	NULL,		cmd_filter_hold },
};

int cmd_filter(struct cli *cli, int argc, char **argv)
{
	return cli_subcommand(cli, "filter", filter_cmds, ARRAY_SIZE(filter_cmds), filter_show, usage_filter, argc, argv);
}
