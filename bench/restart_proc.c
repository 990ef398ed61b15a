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
 * library's vnic_ctx_stats) are kept per run.
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
#define RP_TARGET_DBL	2.3	/* by prefix, per doubling of N */

enum { RP_FULL, RP_UNCH, RP_10, RP_50, RP_100, RP_FLUSHED, RP_NFTF, RP__N };

static const char *const rp_names[RP__N] = {
	"full-apply", "sync-unchanged", "sync-10pct", "sync-50pct",
	"sync-100pct", "sync-ip4s-flushed", "nft-f",
};
static const unsigned int rp_share[RP__N] = { [RP_10] = 10, [RP_50] = 50,
					      [RP_100] = 100 };

struct rp {
	const struct bench_opts *o;
	char vnicctl[4096], dir[64];
	const char *hook_opt[3];	/* "--hook-prefix", "nv", NULL */
	char err[256];
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

static int write_policy(struct rp *p, unsigned int n, unsigned int share)
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
static int spawn(struct rp *p, const char *const *argv, const char *out_path,
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
static int vnicctl(struct rp *p, const char *verb, unsigned int share,
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

static int nft_cmd(struct rp *p, const char *a1, const char *a2,
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

static int empty(struct rp *p, struct filt_env *e)
{
	int ret = nfnl_flush_ruleset(e);

	if (!ret)
		nfnl_barrier();
	if (ret)
		snprintf(p->err, sizeof(p->err), "flushing the ruleset: %s",
			 strerror(-ret));
	return ret;
}

/* One timed sample of row m, from the state the run left (A installed). */
static int one_row(struct rp *p, struct filt_env *e, struct bench_row *r,
		   unsigned int m)
{
	struct sample *s = bench_row_next(r);
	char nftf[128];
	int ret = 0;

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
		ret = vnicctl(p, "sync", rp_share[m], NULL, NULL, NULL) ?:
		      vnicctl(p, "sync", 0, NULL, &s->ms, s);
	}
	if (!ret)
		r->runs++;
	else
		snprintf(r->error, sizeof(r->error), "%s", p->err);
	usleep(p->o->settle_ms * 1000);
	return ret;
}

static void name_rows(struct bench_row *rows, unsigned int n, bool pfx)
{
	char full[64];
	unsigned int m;

	snprintf(full, sizeof(full), "vnicctl-%s-full-apply-%u",
		 pfx ? "prefix" : "name", n);
	for (m = 0; m < RP__N; m++) {
		char buf[64];

		snprintf(buf, sizeof(buf), "%s-%s-%s-%u",
			 m == RP_NFTF ? "anchor" : "vnicctl",
			 pfx ? "prefix" : "name", rp_names[m], n);
		rows[m].method = strdup(buf);
		rows[m].existing = n;
		rows[m].has_calls = m != RP_NFTF;
		rows[m].per_doubling = NAN;
		if (rp_share[m]) {
			rows[m].target.max_ratio = RP_TARGET_X;
			rows[m].target.ratio_to = strdup(full);
		}
	}
}

/* The rows of one size and hook mode, in a namespace of their own. */
static int one_size(struct rp *p, unsigned int n, bool pfx, struct bench_row *rows)
{
	struct bench_opts po = *p->o;
	struct filt_env e;
	unsigned int run, m;
	int ret;

	po.kind = VNIC_KIND_MACVLAN;
	po.nics_per_guest = 1;
	po.guests = n;
	p->hook_opt[0] = pfx ? "--hook-prefix" : NULL;
	p->hook_opt[1] = pfx ? "nv" : NULL;
	p->hook_opt[2] = NULL;
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	ret = filt_env_setup(&e, &po, n);
	for (m = 0; !ret && m < RP_NFTF; m++)
		if (m == RP_FULL || rp_share[m])
			ret = write_policy(p, n, rp_share[m]);
	if (!ret) {
		char nftf[128];

		snprintf(nftf, sizeof(nftf), "%s/p0.nft", p->dir);
		ret = vnicctl(p, "render", 0, nftf, NULL, NULL) ?:
		      vnicctl(p, "sync", 0, NULL, NULL, NULL);
	}
	for (run = 0; !ret && run < p->o->runs; run++) {
		progress("restart %s %u: run %u/%u", pfx ? "prefix" : "name",
			 n, run + 1, p->o->runs);
		for (m = 0; m < RP__N; m++)
			if (!rows[m].skip && !rows[m].error[0] &&
			    one_row(p, &e, &rows[m], m) && m != RP_NFTF)
				break;	/* the state is unknown: stop here */
	}
	if (ret)
		snprintf(rows[RP_FULL].error, sizeof(rows[RP_FULL].error),
			 "setup: %.240s", p->err[0] ? p->err : strerror(-ret));
	filt_env_free(&e);
	return 0;
}

/* Per doubling of N from the size before: (t2/t1)^(1/log2(n2/n1)). */
static void doubling_notes(struct bench_row *rows, const unsigned int *sizes,
			   unsigned int nsizes)
{
	unsigned int i, h, m;

	for (i = 1; i < nsizes; i++)
		for (h = 0; h < 2; h++)
			for (m = 0; m < RP_NFTF; m++) {
				struct bench_row *a = &rows[((i - 1) * 2 + h) * RP__N + m];
				struct bench_row *b = &rows[(i * 2 + h) * RP__N + m];
				double x = pow(row_median(b, MS) /
					       row_median(a, MS),
					       1.0 / log2((double)sizes[i] /
							  sizes[i - 1]));

				b->per_doubling = x;
				if (!isnan(x))
					snprintf(b->note, sizeof(b->note),
						 "%.2fx per doubling of N from %u%s",
						 x, sizes[i - 1], h && m != RP_UNCH ?
						 " (target <= 2.3x)" : "");
			}
}

int restart_proc_rows(const struct bench_opts *o, struct bench_row **out,
		      unsigned int *nout)
{
	unsigned int sizes[RP_MAX_SIZES], nsizes, i, h, m, nrows;
	struct bench_row *rows;
	char *slash, feat[96];
	struct rp p;
	ssize_t len;
	bool ok;

	*out = NULL;
	*nout = 0;
	if (parse_sizes(o->proc_guests, sizes, &nsizes) || !nsizes)
		return 0;
	memset(&p, 0, sizeof(p));
	p.o = o;
	len = readlink("/proc/self/exe", p.vnicctl, sizeof(p.vnicctl) - 16);
	if (len <= 0)
		return -errno;
	p.vnicctl[len] = 0;
	slash = strrchr(p.vnicctl, '/');
	strcpy(slash ? slash + 1 : p.vnicctl, "vnicctl");
	if (getenv("VNICCTL"))
		snprintf(p.vnicctl, sizeof(p.vnicctl), "%s", getenv("VNICCTL"));
	snprintf(p.dir, sizeof(p.dir), "/tmp/vnic-bench-restart.XXXXXX");
	if (!mkdtemp(p.dir))
		return -errno;
	/* Every vnicctl keeps the kernel's features as in production (the
	 * first, untimed sync writes the file), here, not in the host's /run. */
	snprintf(feat, sizeof(feat), "%s/nft-features", p.dir);
	setenv("VNICCTL_FEATURES_FILE", feat, 1);
	nrows = nsizes * 2 * RP__N;
	rows = calloc(nrows, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	ok = access(p.vnicctl, X_OK) == 0;
	for (i = 0; i < nsizes; i++)
		for (h = 0; h < 2; h++) {
			struct bench_row *r = &rows[(i * 2 + h) * RP__N];

			for (m = 0; m < RP__N; m++)
				bench_row_init(&r[m], NULL, o->runs);
			name_rows(r, sizes[i], h);
			for (m = 0; m < RP__N; m++)
				if (!ok)
					r[m].skip = "no vnicctl next to vnic-bench (or $VNICCTL)";
				else if (!bench_in_list(o->methods, r[m].method))
					r[m].skip = "not selected (--methods)";
			if (ok)
				one_size(&p, sizes[i], h, r);
		}
	doubling_notes(rows, sizes, nsizes);
	unsetenv("VNICCTL_FEATURES_FILE");
	if (!o->keep_files) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p.dir);
		if (system(cmd))
			fprintf(stderr, "vnic-bench: %s failed\n", cmd);
	}
	*out = rows;
	*nout = nrows;
	return 0;
}

void restart_proc_free(struct bench_row *rows, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		free((char *)rows[i].method);
		free((char *)rows[i].target.ratio_to);
		bench_row_free(&rows[i]);
	}
	free(rows);
}
