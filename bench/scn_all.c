// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * all: every scenario, one after another, each in a process of its own
 * (this binary re-executed, so each unshares a fresh network namespace and
 * no state or heap carries over), with sizes that finish in a few minutes
 * on two cores.  Each writes DIR/<run>/<scenario>.{json,md,svg} and its
 * terminal output to DIR/<run>.txt; DIR/index.md links them.
 *
 * Exit status: 0 when every scenario ran; 1 when one failed.  A scenario
 * exits 1 both for a missed target and for a failure, so the two are told
 * apart by its JSON document: written means it ran to its report (a missed
 * target, reported, not a failure); missing, a signal, or any other status
 * means it failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench.h"

#define ALL_MAX_ARGS	16

struct all_run {
	const char *name;		/* DIR/<name>/, DIR/<name>.txt */
	const char *scenario;
	const char *full[ALL_MAX_ARGS];
	const char *quick[ALL_MAX_ARGS];
};

/* Smaller than each scenario's own defaults where those take long. */
static const struct all_run runs[] = {
	{ "guest-macvtap", "guest", { "--kind", "macvtap", "--nics", "82" },
	  { "--kind", "macvtap", "--nics", "82", "--runs", "2" } },
	{ "guest-macvlan", "guest", { "--kind", "macvlan", "--nics", "82" },
	  { "--kind", "macvlan", "--nics", "82", "--runs", "2" } },
	{ "guest-veth", "guest", { "--kind", "veth", "--nics", "82" },
	  { "--kind", "veth", "--nics", "82", "--runs", "2" } },
	{ "guest-tap", "guest", { "--kind", "tap", "--nics", "82" },
	  { "--kind", "tap", "--nics", "82", "--runs", "2" } },
	{ "guests", "guests", { "--count", "10", "--nics", "82", "--runs", "2" },
	  { "--count", "2", "--nics", "4", "--runs", "1", "--settle", "0" } },
	{ "filters", "filters", { "--guests", "250", "--runs", "3" },
	  { "--guests", "10", "--runs", "1", "--stmt-sample", "20",
	    "--settle", "0" } },
	{ "filters-add", "filters-add", { "--existing", "2500", "--runs", "3" },
	  { "--existing", "10", "--runs", "1", "--settle", "0" } },
	{ "restart", "restart", { "--guests", "100", "--runs", "3",
				  "--proc-guests", "100,1000" },
	  { "--guests", "10", "--runs", "1", "--settle", "0",
	    "--proc-guests", "10,20" } },
	{ "growth", "growth", { "--max-nics", "4000", "--runs", "3" },
	  { "--max-nics", "40", "--points", "2", "--runs", "1", "--settle",
	    "0" } },
	{ "pkt", "pkt", { "--count", "100", "--runs", "3" },
	  { "--count", "10", "--runs", "1" } },
};

#define NRUNS	(sizeof(runs) / sizeof(runs[0]))

struct all_child {
	const char *self, *dir;
	const struct all_run *r;
	bool quick;
};

/* The child: stdout and stderr into DIR/<name>.txt, then this binary. */
static void child(void *arg, int fd)
{
	const struct all_child *c = arg;
	const char *argv[ALL_MAX_ARGS + 8];
	const char *const *extra = c->quick ? c->r->quick : c->r->full;
	char out[4096], log[4096];
	unsigned int a = 0, i;

	snprintf(out, sizeof(out), "%s/%s", c->dir, c->r->name);
	snprintf(log, sizeof(log), "%s/%s.txt", c->dir, c->r->name);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		_exit(126);
	argv[a++] = c->self;
	argv[a++] = c->r->scenario;
	for (i = 0; extra[i] && a < ALL_MAX_ARGS; i++)
		argv[a++] = extra[i];
	argv[a++] = "--out";
	argv[a++] = out;
	argv[a] = NULL;
	execv(c->self, (char *const *)argv);
	_exit(127);
}

/* 0: ran (maybe a missed target), 1: missed, -1: failed. */
static int run_one(const char *self, const char *dir, const struct all_run *r,
		   bool quick, double *ms)
{
	struct all_child a = { self, dir, r, quick };
	struct bench_child c = { .run = child, .arg = &a };
	char doc[4096];
	struct stat st;
	int ret = bench_child(&c);

	*ms = c.ms;
	snprintf(doc, sizeof(doc), "%s/%s/%s.json", dir, r->name, r->scenario);
	if ((ret && ret != -ECHILD) || !WIFEXITED(c.status) ||
	    WEXITSTATUS(c.status) > 1 || stat(doc, &st) < 0)
		return -1;
	return WEXITSTATUS(c.status);
}

static const char *const verdicts[] = { "ok", "target missed (reported)",
					"FAILED" };

static void write_index(const char *dir, const int *res, const double *ms,
			bool quick)
{
	char path[4096];
	unsigned int i, a;
	FILE *f;

	snprintf(path, sizeof(path), "%s/index.md", dir);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "vnic-bench: %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "# vnic-bench all%s\n\n", quick ? " --quick" : "");
	fprintf(f, "| run | arguments | result | s | report | log |\n");
	fprintf(f, "|---|---|---|---|---|---|\n");
	for (i = 0; i < NRUNS; i++) {
		const char *const *x = quick ? runs[i].quick : runs[i].full;

		fprintf(f, "| %s | `%s", runs[i].name, runs[i].scenario);
		for (a = 0; x[a]; a++)
			fprintf(f, " %s", x[a]);
		fprintf(f, "` | %s | %.1f | [%s.md](%s/%s.md) | [%s.txt](%s.txt) |\n",
			verdicts[res[i] < 0 ? 2 : res[i]], ms[i] / 1000.0,
			runs[i].scenario, runs[i].name, runs[i].scenario,
			runs[i].name, runs[i].name);
	}
	fputc('\n', f);
	if (fclose(f))
		fprintf(stderr, "vnic-bench: writing %s failed\n", path);
}

static int run(const struct bench_opts *o)
{
	char tmpl[] = "/tmp/vnic-bench-all.XXXXXX", self[4096];
	const char *dir = o->out_dir;
	bool quick = o->quick;
	int res[NRUNS], failed = 0;
	double ms[NRUNS];
	unsigned int i;
	ssize_t n;

	/* Re-executed by path: argv[0] may be relative to a cwd we keep, but
	 * /proc/self/exe is what is running. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(stderr, "vnic-bench: /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	self[n] = 0;
	if (!dir && !(dir = mkdtemp(tmpl))) {
		fprintf(stderr, "vnic-bench: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	if (out_prepare(dir))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("vnic-bench all%s: %zu runs, each in its own namespace, into %s\n",
	       quick ? " --quick" : "", NRUNS, dir);
	for (i = 0; i < NRUNS; i++) {
		res[i] = run_one(self, dir, &runs[i], quick, &ms[i]);
		failed |= res[i] < 0;
		printf("%-14s %-26s %6.1f s  %s/%s.txt\n", runs[i].name,
		       verdicts[res[i] < 0 ? 2 : res[i]], ms[i] / 1000.0, dir,
		       runs[i].name);
	}
	write_index(dir, res, ms, quick);
	printf("wrote %s/index.md\n", dir);
	return failed ? 1 : 0;
}

const struct scenario scn_all = {
	.name = "all",
	.usage =
		"all [--out DIR] [--quick]\n"
		"  Every scenario above, each in its own process and namespace, with\n"
		"  sizes for a few minutes on two cores (guests 10 x 82, filters 250\n"
		"  guests, filters-add 2500 existing, growth to 4000 NICs, 3 runs;\n"
		"  --quick: tiny sizes, 1-2 runs, a smoke test).  Writes\n"
		"  DIR/<run>/<scenario>.*, DIR/<run>.txt and DIR/index.md (default DIR:\n"
		"  a new /tmp/vnic-bench-all.XXXXXX).  Exit 1 if a scenario failed; a\n"
		"  missed target is reported, not a failure.\n",
	.opts = O_OUT | O_QUICK,
	.run = run,
	.no_netns = true,
};
