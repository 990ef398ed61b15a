// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * restart, as a user restarts (issue 14): every sync is a new process,
 * `vnicctl filter sync POLICY`, so nothing of the last run is in memory.
 * At each size of --proc-guests (a fresh namespace each: N guests of one
 * macvlan, an IPv4 and an IPv6 address, a rule on every 5th guest), hooks
 * by name and by --hook-prefix, the target policy A is reached:
 *
 *   full-apply       into an empty table
 *   sync-unchanged   A installed
 *   sync-Kpct        from a policy that differs from A in K% of the
 *                    guests (address and rule), installed untimed: the
 *                    target is A every time, so the ratio to full-apply is
 *                    to a full apply of the same target
 *   sync-ip4s-flushed  A installed, then `nft flush set netdev vnic ip4s`
 *   nft-f            the anchor: `nft -f` of `vnicctl filter render A`
 *
 * Each vnicctl runs with -s: its sendmsg, recvmsg and dump counts (the
 * library's vnic_ctx_stats) are kept per run.  The rows are methods of the
 * restart scenario (scn_filters.c), each size and hook mode a group that
 * methods_run() prepares (the namespace, the policies, A installed), runs
 * (each row leaves A installed) and releases.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/netlink.h>

#include "filters.h"

#define RP_MAX_SIZES	8
#define MS		offsetof(struct sample, ms)
#define RP_TARGET_X	1.2	/* sync changed / full apply of A */

enum { RP_FULL, RP_UNCH, RP_10, RP_50, RP_100, RP_FLUSHED, RP_NFTF, RP__N };
_Static_assert(RP__N == RP_ROWS, "filters.h says how many rows a group has");

static const char *const rp_names[RP__N] = {
	"full-apply", "sync-unchanged", "sync-10pct", "sync-50pct",
	"sync-100pct", "sync-ip4s-flushed", "nft-f",
};
static const unsigned int rp_share[RP__N] = { [RP_10] = 10, [RP_50] = 50,
					      [RP_100] = 100 };

struct rproc {
	const struct bench_opts *o;
	char vnicctl[4096], dir[64];
	const char *hook_opt[3];	/* "--hook-prefix", "nv", NULL */
	char err[256];
	unsigned int sizes[RP_MAX_SIZES], nsizes;
	char (*names)[64];		/* of every row */
	struct bench_opts po;		/* the open group's size */
	struct filt_env e;		/* its namespace */
	unsigned int group;		/* the open group + 1, 0: none */
	int setup;			/* its setup: 0 or -errno (in err) */
};

/* "100,1000,5000" -> sizes; "none" -> 0 sizes. */
static int parse_sizes(const char *s, unsigned int *v, unsigned int *n)
{
	char buf[128], *tok, *save;

	*n = 0;
	if (!s || !strcmp(s, "none"))
		return 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*n == RP_MAX_SIZES ||
		    bench_parse_uint("--proc-guests", tok, 1, 20000, &v[*n]))
			return -EINVAL;
		(*n)++;
	}
	return 0;
}

int restart_proc_check(const struct bench_opts *o)
{
	unsigned int v[RP_MAX_SIZES], n;

	return parse_sizes(o->proc_guests, v, &n);
}

/* Guest i of A (share 0) or of the policy that differs in share% of them. */
static json_t *rp_guest(unsigned int i, unsigned int share)
{
	bool changed = share && (i % 10) < share / 10;
	char name[32], ifn[16], mac[24], v4[32], v6[48];
	json_t *g, *nic;

	filt_guest_name(i, name);
	filt_nic_name(i, ifn);
	filt_nic_mac_str(i, mac);
	filt_nic_ipv4(i, changed, v4);
	filt_nic_ipv6(i, v6);
	nic = json_pack("{s:s, s:s, s:s, s:[s], s:[s]}", "ifname", ifn,
			"kind", "macvlan", "mac", mac, "ipv4", v4, "ipv6", v6);
	g = json_pack("{s:s, s:[o]}", "name", name, "nics", nic);
	/* A changed guest gets a rule where it had none: replacing a guest's
	 * rule in a new process fails today (ENOENT at commit; see
	 * Documentation/benchmarks.rst), so that change is left out. */
	if (g && (i % 5 == 0 || changed))
		json_object_set_new(g, "rules", i % 5 ?
			json_pack("[{s:s, s:i, s:s}]", "proto", "udp",
				  "dport", 53, "action", "drop") :
			json_pack("[{s:s, s:i, s:s}]", "proto", "tcp",
				  "dport", 22, "action", "accept"));
	return g;
}

static int write_policy(struct rproc *p, unsigned int n, unsigned int share)
{
	json_t *gs = json_array(), *doc;
	char path[128];
	unsigned int i;
	int ret;

	for (i = 0; gs && i < n; i++)
		if (json_array_append_new(gs, rp_guest(i, share)))
			break;
	doc = json_pack("{s:o}", "guests", gs);
	snprintf(path, sizeof(path), "%s/p%u.json", p->dir, share);
	ret = doc && i == n ? json_dump_file(doc, path, JSON_COMPACT) : -1;
	json_decref(doc);
	if (ret)
		snprintf(p->err, sizeof(p->err), "writing %s failed", path);
	return ret ? -EIO : 0;
}

/* The counts vnicctl -s prints on stderr, NAN where missing. */
static void parse_stats(const char *text, struct sample *s)
{
	const char *l = strstr(text, "stats: ");
	unsigned long long snd, rcv, rq, io, dumps;

	s->sendmsg = s->recvmsg = s->dumps = NAN;
	if (l && sscanf(l, "stats: sendmsg %llu recvmsg %llu requests %llu ioctls %llu dumps %llu",
			&snd, &rcv, &rq, &io, &dumps) == 5) {
		s->sendmsg = (double)snd;
		s->recvmsg = (double)rcv;
		s->dumps = (double)dumps;
	}
}

struct exec_arg {
	const char *const *argv;
	const char *out_path;
};

static void exec_child(void *arg, int fd)
{
	struct exec_arg *a = arg;
	int out = open(a->out_path ? a->out_path : "/dev/null",
		       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (out < 0 || dup2(out, 1) < 0 || dup2(fd, 2) < 0)
		_exit(126);
	execv(a->argv[0], (char *const *)a->argv);
	_exit(127);
}

/*
 * Run argv (argv[0] a path), stdout into out_path (NULL: /dev/null),
 * stderr kept; timed from fork to reap.  0 or a message in p->err.
 */
static int spawn(struct rproc *p, const char *const *argv, const char *out_path,
		 double *ms, struct sample *s)
{
	struct exec_arg a = { argv, out_path };
	char text[4096];
	struct bench_child c = { .run = exec_child, .arg = &a, .out = text,
				 .len = sizeof(text), .text = true };
	int ret = bench_child(&c);
	const char *tool = strrchr(argv[0], '/');

	if (ret && ret != -ECHILD)
		return ret;
	if (ms)
		*ms = c.ms;
	if (s)
		parse_stats(text, s);
	if (ret) {
		text[strcspn(text, "\n")] = 0;
		snprintf(p->err, sizeof(p->err), "%.40s %.8s: exit %d: %.180s",
			 tool ? tool + 1 : argv[0], argv[1],
			 WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128,
			 text);
	}
	return ret;
}

/* vnicctl [-s] [--hook-prefix nv] filter VERB policy<share>.json */
static int vnicctl(struct rproc *p, const char *verb, unsigned int share,
		   const char *out_path, double *ms, struct sample *s)
{
	const char *argv[10];
	char path[128];
	unsigned int a = 0, i;

	snprintf(path, sizeof(path), "%s/p%u.json", p->dir, share);
	argv[a++] = p->vnicctl;
	argv[a++] = "-s";
	for (i = 0; p->hook_opt[i]; i++)
		argv[a++] = p->hook_opt[i];
	argv[a++] = "filter";
	argv[a++] = verb;
	argv[a++] = path;
	argv[a] = NULL;
	return spawn(p, argv, out_path, ms, s);
}

static int nft_cmd(struct rproc *p, const char *a1, const char *a2,
		   const char *a3, const char *a4, const char *a5, double *ms)
{
	const char *argv[] = { "/usr/sbin/nft", a1, a2, a3, a4, a5, NULL };

	return spawn(p, argv, NULL, ms, NULL);
}

/*
 * The flush leaves what it deleted to the kernel's deferred destruction,
 * which waits for an RCU grace period; the release of any nfnetlink socket
 * of the namespace waits for it (nft_rcv_nl_event), vnicctl's exit too.
 * Releasing one here first keeps the flush's wait out of the next row.
 */
static void nfnl_barrier(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);

	if (fd < 0)
		return;
	/* Bound (nl_pid 0: the kernel picks one): released, it notifies. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		fprintf(stderr, "vnic-bench: restart: binding a netfilter socket failed\n");
	close(fd);
}

static int empty(struct rproc *p, struct filt_env *e)
{
	int ret = nfnl_flush_ruleset(e);

	if (!ret)
		nfnl_barrier();
	if (ret)
		snprintf(p->err, sizeof(p->err), "flushing the ruleset: %s",
			 strerror(-ret));
	return ret;
}

/* One timed run of row i, from the state every row leaves: A installed. */
int rproc_run(struct rproc *p, unsigned int i, struct sample *s, char *err,
	      size_t errlen)
{
	unsigned int m = i % RP__N;
	struct filt_env *e = &p->e;
	char nftf[128];
	int ret;

	p->err[0] = '\0';
	switch (m) {
	case RP_FULL:
		ret = empty(p, e) ?: vnicctl(p, "sync", 0, NULL, &s->ms, s);
		break;
	case RP_UNCH:
		ret = vnicctl(p, "sync", 0, NULL, &s->ms, s);
		break;
	case RP_FLUSHED:
		ret = nft_cmd(p, "flush", "set", "netdev", FILT_TABLE, "ip4s",
			      NULL) ?: vnicctl(p, "sync", 0, NULL, &s->ms, s);
		break;
	case RP_NFTF:
		snprintf(nftf, sizeof(nftf), "%s/p0.nft", p->dir);
		ret = empty(p, e) ?: nft_cmd(p, "-f", nftf, NULL, NULL, NULL,
					     &s->ms);
		/* Back to A as libvnic has it, untimed. */
		ret = ret ?: empty(p, e) ?: vnicctl(p, "sync", 0, NULL, NULL,
						   NULL);
		break;
	default:
		/* The untimed sync's keeper (tools/linger.c) waits out its
		 * grace period holding the kernel's commit lock; a sync after
		 * a restart has no sync just before it: wait it out here. */
		ret = vnicctl(p, "sync", rp_share[m], NULL, NULL, NULL);
		if (!ret)
			nfnl_barrier();
		ret = ret ?: vnicctl(p, "sync", 0, NULL, &s->ms, s);
	}
	if (ret)
		snprintf(err, errlen, "%s", p->err[0] ? p->err : strerror(-ret));
	return ret;
}

/* Row i's group: its size and hook mode in a namespace of its own, the
 * policies written, A rendered and installed; made once a group. */
int rproc_prepare(struct rproc *p, unsigned int i, char *err, size_t errlen)
{
	unsigned int g = i / RP__N, n = p->sizes[g / 2], m;
	bool pfx = g % 2;
	char nftf[128];
	int ret;

	if (p->group == g + 1)
		goto out;
	rproc_release(p);
	p->group = g + 1;
	p->err[0] = '\0';
	p->po = *p->o;
	p->po.kind = VNIC_KIND_MACVLAN;
	p->po.nics_per_guest = 1;
	p->po.guests = n;
	p->hook_opt[0] = pfx ? "--hook-prefix" : NULL;
	p->hook_opt[1] = pfx ? "nv" : NULL;
	p->hook_opt[2] = NULL;
	ret = unshare(CLONE_NEWNET) < 0 ? -errno :
	      filt_env_setup(&p->e, &p->po, n);
	for (m = 0; !ret && m < RP_NFTF; m++)
		if (m == RP_FULL || rp_share[m])
			ret = write_policy(p, n, rp_share[m]);
	snprintf(nftf, sizeof(nftf), "%s/p0.nft", p->dir);
	ret = ret ?: vnicctl(p, "render", 0, nftf, NULL, NULL) ?:
	      vnicctl(p, "sync", 0, NULL, NULL, NULL);
	p->setup = ret;
out:
	if (p->setup)
		snprintf(err, errlen, "setup: %.240s",
			 p->err[0] ? p->err : strerror(-p->setup));
	return p->setup;
}

void rproc_release(struct rproc *p)
{
	if (p->group)
		filt_env_free(&p->e);
	p->group = 0;
}

const char *rproc_name(const struct rproc *p, unsigned int i)
{
	return p->names[i];
}

/* Row i's name, targets and why it is skipped. */
void rproc_row(const struct rproc *p, unsigned int i, struct bench_row *r)
{
	unsigned int g = i / RP__N, m = i % RP__N;

	r->existing = p->sizes[g / 2];
	r->has_calls = m != RP_NFTF;
	r->per_doubling = NAN;
	if (rp_share[m]) {
		r->target.max_ratio = RP_TARGET_X;
		r->target.ratio_to = p->names[g * RP__N + RP_FULL];
	}
	if (access(p->vnicctl, X_OK))
		r->skip = "no vnicctl next to vnic-bench (or $VNICCTL)";
	else if (!bench_in_list(p->o->methods, r->method))
		r->skip = "not selected (--methods)";
}

/* Per doubling of N from the size before: (t2/t1)^(1/log2(n2/n1)). */
void rproc_notes(const struct rproc *p, struct bench_row *rows)
{
	unsigned int i, h, m;

	for (i = 1; i < p->nsizes; i++)
		for (h = 0; h < 2; h++)
			for (m = 0; m < RP_NFTF; m++) {
				struct bench_row *a = &rows[((i - 1) * 2 + h) * RP__N + m];
				struct bench_row *b = &rows[(i * 2 + h) * RP__N + m];
				double x = pow(row_median(b, MS) /
					       row_median(a, MS),
					       1.0 / log2((double)p->sizes[i] /
							  p->sizes[i - 1]));

				b->per_doubling = x;
				if (!isnan(x))
					snprintf(b->note, sizeof(b->note),
						 "%.2fx per doubling of N from %u%s",
						 x, p->sizes[i - 1], h && m != RP_UNCH ?
						 " (target <= 2.3x)" : "");
			}
}

int rproc_new(const struct bench_opts *o, struct rproc **out,
	      unsigned int *nrows)
{
	static const char *const hook[2] = { "name", "prefix" };
	struct rproc *p = calloc(1, sizeof(*p));
	char *slash, feat[96];
	unsigned int i;
	ssize_t len;

	*out = NULL;
	*nrows = 0;
	if (!p)
		return -ENOMEM;
	p->o = o;
	if (parse_sizes(o->proc_guests, p->sizes, &p->nsizes) || !p->nsizes) {
		free(p);
		return 0;
	}
	len = readlink("/proc/self/exe", p->vnicctl, sizeof(p->vnicctl) - 16);
	p->names = calloc(p->nsizes * 2 * RP__N, sizeof(*p->names));
	snprintf(p->dir, sizeof(p->dir), "/tmp/vnic-bench-restart.XXXXXX");
	if (len <= 0 || !p->names || !mkdtemp(p->dir)) {
		p->dir[0] = '\0';
		rproc_free(p);
		return -ENOMEM;
	}
	p->vnicctl[len] = 0;
	slash = strrchr(p->vnicctl, '/');
	strcpy(slash ? slash + 1 : p->vnicctl, "vnicctl");
	if (getenv("VNICCTL"))
		snprintf(p->vnicctl, sizeof(p->vnicctl), "%s", getenv("VNICCTL"));
	/* Every vnicctl keeps the kernel's features as in production (the
	 * first, untimed sync writes the file), here, not in the host's /run. */
	snprintf(feat, sizeof(feat), "%s/nft-features", p->dir);
	setenv("VNICCTL_FEATURES_FILE", feat, 1);
	for (i = 0; i < p->nsizes * 2 * RP__N; i++)
		snprintf(p->names[i], sizeof(p->names[i]), "%s-%s-%s-%u",
			 i % RP__N == RP_NFTF ? "anchor" : "vnicctl",
			 hook[i / RP__N % 2], rp_names[i % RP__N],
			 p->sizes[i / RP__N / 2]);
	*out = p;
	*nrows = p->nsizes * 2 * RP__N;
	return 0;
}

void rproc_free(struct rproc *p)
{
	char cmd[128];

	if (!p)
		return;
	rproc_release(p);
	unsetenv("VNICCTL_FEATURES_FILE");
	if (p->dir[0] && !p->o->keep_files) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
		if (system(cmd))
			fprintf(stderr, "vnic-bench: %s failed\n", cmd);
	}
	free(p->names);
	free(p);
}
