// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl: the library context (namespace, owner) and error reporting.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/nsfs.h>

#include "cli.h"

static int netns_fd = -1;

int cli_syserr(const char *what, int err)
{
	fprintf(stderr, "vnicctl: %s: %s\n", what, vnic_strerror(err));
	return CLI_FAIL;
}

/*
 * Open a network namespace: a path (/run/netns/X, /proc/PID/ns/net) or,
 * like ip -n, a bare name under /run/netns.
 */
int cli_open_netns(const char *arg, int *fd)
{
	char path[4096];
	int nsfd, type;

	if (strchr(arg, '/'))
		snprintf(path, sizeof(path), "%s", arg);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", arg);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return cli_syserr(path, -errno);
	type = ioctl(nsfd, NS_GET_NSTYPE);
	if (type != CLONE_NEWNET) {
		close(nsfd);
		fprintf(stderr, "vnicctl: %s: not a network namespace\n", path);
		return CLI_FAIL;
	}
	*fd = nsfd;
	return CLI_OK;
}

int cli_open(struct cli *cli)
{
	VNIC_OPTS(vnic_ctx_opts, opts, .owner = cli->owner);
	int err;

	if (cli->netns) {
		err = cli_open_netns(cli->netns, &netns_fd);
		if (err)
			return err;
		opts.netns_fd = netns_fd;
	}
	err = vnic_ctx_new(&opts, &cli->ctx);
	if (err) {
		cli->ctx = NULL;
		fprintf(stderr, "vnicctl: %s\n", vnic_strerror(err));
		return err == -EINVAL ? CLI_USAGE : CLI_FAIL;
	}
	return CLI_OK;
}

static void print_stats(const struct vnic_ctx *ctx)
{
	VNIC_OPTS(vnic_ctx_stats, st);

	if (vnic_ctx_stats(ctx, &st))
		return;
	fprintf(stderr,
		"stats: sendmsg %llu recvmsg %llu requests %llu ioctls %llu dumps %llu resyncs %llu name-retries %llu dumps-interrupted %llu\n",
		(unsigned long long)st.sendmsg_calls,
		(unsigned long long)st.recvmsg_calls,
		(unsigned long long)st.requests,
		(unsigned long long)st.ioctls,
		(unsigned long long)st.dumps,
		(unsigned long long)st.resyncs,
		(unsigned long long)st.name_retries,
		(unsigned long long)st.dumps_interrupted);
}

void cli_close(struct cli *cli)
{
	if (cli->ctx) {
		if (cli->stats)
			print_stats(cli->ctx);
		vnic_ctx_free(cli->ctx);
		cli->ctx = NULL;
	}
	if (netns_fd >= 0) {
		close(netns_fd);
		netns_fd = -1;
	}
}

/*
 * Report a failed library call: "vnicctl: WHAT: MESSAGE", where MESSAGE is
 * the context's description of the failure (step, NIC, the kernel's extended
 * ack) or, lacking one, the errno text.  Input the library rejected before
 * sending anything is a usage error.
 */
int cli_fail(struct cli *cli, int err, const char *fmt, ...)
{
	const char *msg = cli->ctx ? vnic_ctx_errmsg(cli->ctx) : NULL;
	va_list ap;

	if (!msg || !*msg)
		msg = vnic_strerror(err);
	fputs("vnicctl: ", stderr);
	if (fmt) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputs(": ", stderr);
	}
	fprintf(stderr, "%s\n", msg);
	if (err == -EINVAL && cli->ctx &&
	    vnic_ctx_errstep(cli->ctx) == VNIC_STEP_VALIDATE)
		return CLI_USAGE;
	return CLI_FAIL;
}
