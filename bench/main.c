// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnic-bench: how long a guest's NICs and filters take to make, by libvnic
 * and by what runtimes use today, next to the kernel's own floor.
 *
 *	vnic-bench SCENARIO [options]
 *
 * The scenarios are the table below; each is one scn_*.c file that says
 * its options, defaults and run (struct scenario, bench.h).  main() finds
 * the scenario, parses its options (opts.c), refuses early without the
 * privileges, moves into a new network namespace (the figures must not
 * depend on the host's links, and nothing made can touch the host) and
 * runs it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "bench.h"

static const struct scenario *const scenarios[] = {
	&scn_guest,
	&scn_guests,
	&scn_filters,
	&scn_filters_add,
	&scn_restart,
	&scn_growth,
	&scn_cni,
	&scn_pkt,
	&scn_all,
};

#define NSCENARIOS	(sizeof(scenarios) / sizeof(scenarios[0]))

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "usage: vnic-bench SCENARIO [options]\n\n");
	for (i = 0; i < NSCENARIOS; i++)
		fprintf(f, "%s\n", scenarios[i]->usage);
	fprintf(f,
		"Every scenario prints a header (kernel, CPUs, load, the anchor tools'\n"
		"versions) and a table: method, n (runs), median/min/max ms, x_best (to\n"
		"the fastest row), x_libvnic (to libvnic's row), the scenario's own\n"
		"columns, NOISY where (max-min)/median > 0.5, and a closing line on\n"
		"spread.  A progress line shows on stderr when it is a terminal.\n"
		"--json        one JSON object per method and line\n"
		"--out DIR     also write DIR/<scenario>.json (one document), .md (the\n"
		"              table, notes and environment) and .svg (median per method)\n");
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	/* Raw capget: libcap is not worth a dependency for one bit. */
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

/* Refuse early and clearly, rather than fail on the first request. */
static int enter_netns(void)
{
	if (!has_cap(CAP_NET_ADMIN) || !has_cap(CAP_SYS_ADMIN)) {
		fprintf(stderr,
			"vnic-bench: needs root (CAP_NET_ADMIN to create links, CAP_SYS_ADMIN\n"
			"to unshare its own network namespace); run it as root, e.g. sudo %s\n",
			"vnic-bench guest --nics 82");
		return -EPERM;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "vnic-bench: unshare(CLONE_NEWNET): %s\n",
			strerror(errno));
		return -errno;
	}
	return 0;
}

static const struct scenario *find(const char *name)
{
	unsigned int i;

	for (i = 0; name && i < NSCENARIOS; i++)
		if (!strcmp(name, scenarios[i]->name))
			return scenarios[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct scenario *s = find(argc >= 2 ? argv[1] : NULL);
	struct bench_opts o;
	int ret;

	if (!s) {
		bool help = argc >= 2 && !strcmp(argv[1], "--help");

		usage(help ? stdout : stderr);
		return help ? 0 : 2;
	}
	/* getopt sees the scenario's arguments only. */
	ret = bench_parse_opts(s, argc - 1, argv + 1, &o);
	if (ret) {
		fprintf(ret > 0 ? stdout : stderr, "usage: vnic-bench %s",
			s->usage);
		return ret > 0 ? 0 : 2;
	}
	/* A bad --out must fail now, not after minutes of runs. */
	if (o.out_dir && !s->no_netns && out_prepare(o.out_dir))
		return 2;
	if (!s->no_netns && enter_netns())
		return 1;
	/* Line-buffered even into a pipe: progress and rows interleave. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return s->run(&o);
}
