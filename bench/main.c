// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnic-bench: how long a guest's NICs take to create, by libvnic and by
 * what runtimes use today, next to the kernel's own floor.
 *
 *	vnic-bench guest --nics 82 [--kind macvtap] [--existing N]
 *			 [--runs R] [--json] [--up] [--settle MS]
 *			 [--fill-lower same|other]
 *			 [--methods a,b] [--out DIR]
 *	vnic-bench guests [--count G] [--nics K] [--kind ...] [--existing N]
 *			  [--runs R] [--json] [--up] [--settle MS] [--methods a,b] [--out DIR]
 *	vnic-bench filters|filters-add|restart ...	(scn_filters.c)
 *	vnic-bench growth ...				(scn_growth.c)
 *	vnic-bench all [--out DIR] [--quick]		(scn_all.c)
 *
 * It moves itself into a new network namespace first: the figures must not
 * depend on the host's links, and nothing it makes can touch the host.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "bench.h"
#include "filters.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vnic-bench guest --nics N [--kind macvtap|macvlan|veth|tap]\n"
		"                        [--existing N] [--runs R] [--json] [--up]\n"
		"                        [--settle MS] [--fill-lower same|other]\n"
		"                        [--methods floor,libvnic-kernel,...] [--out DIR]\n"
		"\n"
		"Creates one guest's N NICs with each method, R times, in a private\n"
		"network namespace, and reports medians next to the kernel floor.\n"
		"Methods: floor floor-tagged libvnic-kernel libvnic-cache\n"
		"         libvnic-explicit ip-link-add ip-batch ioctl-probe\n"
		"         cni-macvlan (--kind macvlan: the CNI plugin, one exec per\n"
		"         NIC into a target netns, as container runtimes do)\n"
		"--existing N  start every run next to N macvlans (e.g. 4000)\n"
		"--fill-lower same|other  the existing macvlans sit on the NICs'\n"
		"              lower (default) or on another device\n"
		"--up          bring every NIC up, in every method\n"
		"--settle MS   idle after each untimed cleanup (default 50)\n"
		"--json        one JSON object per method and line\n"
		"\n"
		"usage: vnic-bench guests [--count G] [--nics K] [--kind macvtap|macvlan|veth]\n"
		"                         [--existing N] [--runs R] [--json] [--up]\n"
		"                         [--settle MS] [--methods floor,libvnic-cache,...]\n"
		"                         [--out DIR]\n"
		"\n"
		"Starts G guests of K NICs one after another on a filling host (default\n"
		"%u x %u, %u runs): nothing is deleted until the run ends.  Reports the\n"
		"total and the per-guest cost of the first and last tenth of guests;\n"
		"--out adds DIR/guests-curve.svg, the median cost of each guest.\n"
		"Methods: floor libvnic-kernel libvnic-cache libvnic-explicit\n"
		"         ip-link-add ip-batch ioctl-probe cni-macvlan\n"
		"\n"
		"Every scenario prints a header (kernel, CPUs, load, the anchor tools'\n"
		"versions) and a table: method, n (runs), median/min/max ms, x_best (to\n"
		"the fastest row), x_libvnic (to libvnic's row), the scenario's own\n"
		"columns, NOISY where (max-min)/median > 0.5, and a closing line on\n"
		"spread.  A progress line shows on stderr when it is a terminal.\n"
		"--out DIR     also write DIR/<scenario>.json (one document), .md (the\n"
		"              table, notes and environment) and .svg (median per method)\n"
		"\n", BENCH_GUESTS_DEFAULT_COUNT, BENCH_GUESTS_DEFAULT_NICS,
		BENCH_GUESTS_DEFAULT_RUNS);
	filt_usage(f);
	growth_usage(f);
	all_usage(f);
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

FILE *bench_tmpfile(const char *tag, char *path, size_t pathlen)
{
	FILE *f;
	int fd;

	snprintf(path, pathlen, "/tmp/vnic-bench-%s.XXXXXX", tag);
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		close(fd);
		unlink(path);
		errno = e;
	}
	return f;
}

int bench_tmpfile_close(FILE *f, const char *path)
{
	int err = ferror(f) ? -EIO : 0;

	if (fclose(f) && !err)
		err = -errno;
	if (err)
		unlink(path);
	return err;
}

/* A whole number in min..max for option opt, or a message and -EINVAL. */
int bench_parse_uint(const char *opt, const char *s, unsigned int min,
		     unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "vnic-bench: %s: want %u..%u, got '%s'\n", opt,
			min, max, s);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

static int parse_kind(const char *s, enum vnic_kind *kind)
{
	static const char *const kinds[] = { "macvtap", "macvlan", "veth",
					     "tap" };
	static const enum vnic_kind values[] = { VNIC_KIND_MACVTAP,
		VNIC_KIND_MACVLAN, VNIC_KIND_VETH, VNIC_KIND_TAP };
	unsigned int i;

	/* Our own table: the library's may not be linked in yet, and the
	 * bench only knows how to make these four. */
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!strcmp(s, kinds[i])) {
			*kind = values[i];
			return 0;
		}
	}
	fprintf(stderr, "vnic-bench: --kind: macvtap, macvlan, veth or tap, not '%s'\n",
		s);
	return -EINVAL;
}

static int parse_fill_lower(const char *s, struct bench_opts *o)
{
	if (strcmp(s, "same") && strcmp(s, "other")) {
		fprintf(stderr, "vnic-bench: --fill-lower: same or other, not '%s'\n",
			s);
		return -EINVAL;
	}
	o->fill_other = !strcmp(s, "other");
	return 0;
}

static const struct option longopts[] = {
	{ "nics", required_argument, NULL, 'n' },
	{ "count", required_argument, NULL, 'c' },
	{ "kind", required_argument, NULL, 'k' },
	{ "existing", required_argument, NULL, 'e' },
	{ "runs", required_argument, NULL, 'r' },
	{ "methods", required_argument, NULL, 'm' },
	{ "settle", required_argument, NULL, 's' },
	{ "fill-lower", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "up", no_argument, NULL, 'u' },
	{ "out", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_one(int c, struct bench_opts *o)
{
	switch (c) {
	case 'n':
		return bench_parse_uint("--nics", optarg, 1, BENCH_MAX_NICS, &o->nics);
	case 'c':
		return bench_parse_uint("--count", optarg, 1, BENCH_MAX_NICS,
					&o->guests);
	case 'k':
		return parse_kind(optarg, &o->kind);
	case 'e':
		return bench_parse_uint("--existing", optarg, 0, BENCH_MAX_NICS,
				  &o->existing);
	case 'r':
		return bench_parse_uint("--runs", optarg, 1, 1000, &o->runs);
	case 's':
		return bench_parse_uint("--settle", optarg, 0, 10000, &o->settle_ms);
	case 'f':
		return parse_fill_lower(optarg, o);
	case 'm':
		o->methods = optarg;
		return 0;
	case 'o':
		o->out_dir = optarg;
		return 0;
	case 'j':
		o->json = true;
		return 0;
	case 'u':
		o->up = true;
		return 0;
	case 'h':
		usage(stdout);
		exit(0);
	default:
		return -EINVAL;
	}
}

/* guests: defaults for what was not given, and what it cannot do. */
static int check_guests(struct bench_opts *o)
{
	if (!o->guests)
		o->guests = BENCH_GUESTS_DEFAULT_COUNT;
	if (!o->nics)
		o->nics = BENCH_GUESTS_DEFAULT_NICS;
	if ((unsigned long)o->guests * o->nics > BENCH_MAX_NICS) {
		fprintf(stderr, "vnic-bench: guests: --count x --nics: at most %u NICs\n",
			BENCH_MAX_NICS);
		return -EINVAL;
	}
	/* A tap lives as long as its fd: the per-guest methods would have
	 * to hand G sets of fds around; the guest scenario measures taps. */
	if (o->kind == VNIC_KIND_TAP) {
		fprintf(stderr, "vnic-bench: guests: --kind tap is not supported (use guest --kind tap)\n");
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct bench_opts *o,
		      bool guests)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->kind = VNIC_KIND_MACVTAP;
	o->runs = guests ? BENCH_GUESTS_DEFAULT_RUNS : BENCH_DEFAULT_RUNS;
	o->settle_ms = BENCH_DEFAULT_SETTLE_MS;
	while ((c = getopt_long(argc, argv, "n:c:k:e:r:m:s:f:o:juh", longopts,
				NULL)) != -1)
		if (parse_one(c, o))
			return -EINVAL;
	if (optind != argc)
		return -EINVAL;
	if (guests)
		return check_guests(o);
	if (o->guests) {
		fprintf(stderr, "vnic-bench: --count is for the guests scenario\n");
		return -EINVAL;
	}
	if (!o->nics) {
		fprintf(stderr, "vnic-bench: --nics is required\n");
		return -EINVAL;
	}
	return 0;
}

/* filters, filters-add, restart: their own options (scn_filters.c). */
static int main_filters(int argc, char **argv)
{
	struct filt_opts fo;

	if (filt_parse_args(argv[1], argc - 1, argv + 1, &fo)) {
		usage(stderr);
		return 2;
	}
	if (fo.out_dir && out_prepare(fo.out_dir))
		return 2;
	if (enter_netns())
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	return scn_filters(&fo);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bool guests;

	if (argc >= 2 && filt_is_scenario(argv[1]))
		return main_filters(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "growth"))
		return main_growth(argc - 1, argv + 1, enter_netns);
	if (argc >= 2 && !strcmp(argv[1], "all"))
		return main_all(argc - 1, argv + 1, argv[0]);

	guests = argc >= 2 && !strcmp(argv[1], "guests");
	if (argc < 2 || (strcmp(argv[1], "guest") && !guests)) {
		usage(argc < 2 || strcmp(argv[1], "--help") ? stderr : stdout);
		return argc < 2 || strcmp(argv[1], "--help") ? 2 : 0;
	}
	/* getopt sees the scenario's arguments only. */
	if (parse_args(argc - 1, argv + 1, &o, guests)) {
		usage(stderr);
		return 2;
	}
	/* A bad --out must fail now, not after minutes of runs. */
	if (o.out_dir && out_prepare(o.out_dir))
		return 2;
	if (enter_netns())
		return 1;
	/* Line-buffered even into a pipe: progress and rows interleave. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return guests ? scn_guests(&o) : scn_guest(&o);
}
