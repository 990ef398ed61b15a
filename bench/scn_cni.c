// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cni: vnic-cni next to the stock CNI plugins (issue 12 part 3), each
 * plugin executed as a runtime executes it: its own process, the CNI_*
 * environment, the network configuration on stdin, IPAM by the stock
 * host-local plugin for every row.  Each container is a namespace held by
 * a child (m_cni.c), made untimed, as the runtime makes the sandbox first.
 *
 *   <plugin>-add, -del   one attachment (eth0) per container, --runs of
 *                        them: ADD timed each, then DEL each; the rows'
 *                        runs alternate (run i of every row, then run
 *                        i + 1), so that the same load hits each
 *   <plugin>-82-add      82 attachments (eth0..eth81) into one container,
 *                        the total
 *   ipam-host-local-add, -del   host-local alone, executed as vnic-cni
 *                        executes it (veth row's configuration, the same
 *                        environment and stdin): the floor of any plugin
 *                        that delegates IPAM to it and waits for it
 *
 * at 0 and at --existing NICs in the host's namespace (veth pairs made by
 * ip -batch, untimed); then vnic-cni GC of --count stale attachments in
 * one call (valid list empty; "ipam": {} so that only NICs and filters go).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define CNI_ATTACH_MANY	82
#define CNI_TGT_PTP_X	0.5	/* vnic-cni veth ADD / stock ptp ADD */
#define CNI_TGT_FULL_X	1.2	/* ... at --existing / at 0 */
#define CNI_TGT_GC_MS	1000.0

enum { P_VETH, P_VMAC, P_PTP, P_MACV, P_IPAM, P_VPFX, P__N };

static const char *const p_names[P__N] = {
	"vnic-cni-veth", "vnic-cni-macvlan", "stock-ptp", "stock-macvlan",
	"ipam-host-local", "vnic-cni-veth-prefix",
};

/* The stock plugin each row executes; NULL: vnic-cni. */
static const char *const p_stock[P__N] = {
	[P_PTP] = "ptp", [P_MACV] = "macvlan", [P_IPAM] = "host-local",
};

struct cni_bench {
	const struct bench_opts *o;
	char dir[64];		/* stock plugins */
	char self[4096];	/* vnic-cni */
	char tmp[64];		/* dataDirs */
	char conf[P__N][512];
	unsigned int net;	/* distinct networks and subnets */
	bool json;
	int missed;
};

struct crow {
	char method[64];
	unsigned int existing;
	double *ms;
	unsigned int n;
	char error[256];
};

static const char *plugin_path(struct cni_bench *b, unsigned int p,
			       char *buf, size_t len)
{
	if (!p_stock[p])
		return b->self;
	snprintf(buf, len, "%s/%s", b->dir, p_stock[p]);
	return buf;
}

/* A network of its own per row and level: leases never collide.  The
 * IPAM row gets the veth row's configuration: host-local reads it on its
 * stdin exactly as vnic-cni passes it on (at 1.0.0 no field changes). */
static void make_conf(struct cni_bench *b, unsigned int p, bool l2,
		      char *out, size_t len)
{
	static const char *const extra[P__N] = {
		"\"type\":\"vnic-cni\"",
		"\"type\":\"vnic-cni\",\"mode\":\"macvlan\",\"master\":\"" ENV_LOWER "\"",
		"\"type\":\"ptp\"",
		"\"type\":\"macvlan\",\"master\":\"" ENV_LOWER "\"",
		"\"type\":\"vnic-cni\"",
		/* the host ends hooked by one prefix chain, in a table of
		 * its own: no hook per ADD (cni.rst, "hookPrefix") */
		"\"type\":\"vnic-cni\",\"hookPrefix\":true,\"table\":\"vnic_cni_pfx\"",
	};
	unsigned int n = b->net++;
	char ipam[256];

	/* The stock plugins speak up to 1.0.0; GC is 1.1.0's. */
	if (l2)
		snprintf(ipam, sizeof(ipam), "{}");
	else
		snprintf(ipam, sizeof(ipam),
			 "{\"type\":\"host-local\",\"dataDir\":\"%s/ipam\",\"ranges\":[[{\"subnet\":\"10.%u.%u.0/20\"}]]}",
			 b->tmp, 100 + n / 16, (n % 16) * 16);
	snprintf(out, len,
		 "{\"cniVersion\":\"%s\",\"name\":\"bn%u\",%s,\"dataDir\":\"%s/state\",\"ipam\":%s}",
		 l2 ? "1.1.0" : "1.0.0", n, extra[p], b->tmp, ipam);
}

/* One plugin exec, timed into *ms (if set): 0, or the plugin's message
 * in err. */
static int call(struct cni_bench *b, const char *plugin, const char *verb,
		const char *cid, const char *ifname, const char *netns,
		const char *conf, double *ms, char *err, size_t errlen)
{
	struct cni_cmd c = { plugin, b->dir, verb, cid, ifname, netns, conf };
	uint64_t t0 = now_ns();
	char out[512];
	int ret = cni_exec(&c, out, sizeof(out));

	if (ms)
		*ms = ms_since(t0);
	if (ret)
		snprintf(err, errlen, "%s %s: %.200s", strrchr(plugin, '/') + 1,
			 verb, ret == -ECHILD ? out : strerror(-ret));
	return ret;
}

static bool row_init(struct cni_bench *b, struct crow *r, const char *name,
		     const char *suffix, unsigned int existing,
		     unsigned int nmax)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->method, sizeof(r->method), "%s%s", name, suffix);
	r->existing = existing;
	r->ms = calloc(nmax, sizeof(double));
	return bench_in_list(b->o->methods, name);
}

/* One per-attachment row of a level: its plugin, network, containers. */
struct prow {
	unsigned int p, net;
	const char *plugin;
	char path[256];
	struct cni_target *t;
	struct crow *add, *del;
	bool stopped;		/* an ADD failed: no more runs */
};

static void prow_init(struct cni_bench *b, struct prow *w, unsigned int p,
		      struct crow *add, struct crow *del)
{
	memset(w, 0, sizeof(*w));
	w->p = p;
	w->add = add;
	w->del = del;
	w->plugin = plugin_path(b, p, w->path, sizeof(w->path));
	make_conf(b, p, false, b->conf[p], sizeof(b->conf[p]));
	w->net = b->net;
	w->t = calloc(b->o->runs, sizeof(*w->t));
	w->stopped = !w->t || !add->ms || !del->ms;
	if (w->stopped)
		snprintf(add->error, sizeof(add->error), "%s", strerror(ENOMEM));
}

/* Run i of a row: a fresh container, ADD eth0 into it, timed. */
static void add_one(struct cni_bench *b, struct prow *w, unsigned int i)
{
	struct crow *add = w->add;
	char cid[32];
	int ret;

	if (w->stopped)
		return;
	w->t[i].nsfd = -1;
	snprintf(cid, sizeof(cid), "bc%u-%u", w->net, i);
	ret = cni_target_start(&w->t[i]);
	if (ret)
		snprintf(add->error, sizeof(add->error),
			 "container netns: %s", strerror(-ret));
	else if (!(ret = call(b, w->plugin, "ADD", cid, "eth0", w->t[i].path,
			      b->conf[w->p], &add->ms[i], add->error,
			      sizeof(add->error))))
		add->n++;
	w->stopped = ret;
	usleep(b->o->settle_ms * 1000);
}

static void del_one(struct cni_bench *b, struct prow *w, unsigned int i)
{
	struct crow *del = w->del;
	char cid[32];

	if (i >= w->add->n)
		return;
	snprintf(cid, sizeof(cid), "bc%u-%u", w->net, i);
	if (!call(b, w->plugin, "DEL", cid, "eth0", w->t[i].path,
		  b->conf[w->p], &del->ms[i], del->error, sizeof(del->error)))
		del->n++;
}

/*
 * --runs containers per row, ADD eth0 into each timed, then DEL each
 * timed; run i of every row before run i + 1 of any, so that a burst of
 * load (the machine is shared) hits every row alike, and the ratios of
 * the verdicts compare plugins under the same load.
 */
static void per_attach(struct cni_bench *b, struct prow *v, unsigned int n)
{
	unsigned int runs = b->o->runs, i, k;

	for (i = 0; i < runs; i++)
		for (k = 0; k < n; k++)
			add_one(b, &v[k], i);
	for (i = 0; i < runs; i++)
		for (k = 0; k < n; k++)
			del_one(b, &v[k], i);
	for (k = 0; k < n; k++) {
		for (i = 0; v[k].t && i < runs; i++)
			if (v[k].t[i].pid)
				cni_target_stop(&v[k].t[i]);
		free(v[k].t);
	}
}

/*
 * 82 attachments into one container, the total; DEL untimed.  Each
 * attachment is a network of its own, as a runtime attaches a container to
 * several networks: ptp routes each attachment's gateway through its
 * interface in the container, and a second attachment of one network (the
 * same gateway) fails with EEXIST.
 */
static void many(struct cni_bench *b, unsigned int p, struct crow *r)
{
	struct cni_target t = { .nsfd = -1 };
	char path[256], ifn[16], (*conf)[512];
	const char *plugin = plugin_path(b, p, path, sizeof(path));
	unsigned int i, made = 0;
	uint64_t t0;
	int ret;

	conf = calloc(CNI_ATTACH_MANY, sizeof(*conf));
	ret = conf ? cni_target_start(&t) : -ENOMEM;
	if (ret)
		snprintf(r->error, sizeof(r->error), "container netns: %s",
			 strerror(-ret));
	for (i = 0; !ret && i < CNI_ATTACH_MANY; i++)
		make_conf(b, p, false, conf[i], sizeof(conf[i]));
	t0 = now_ns();
	for (i = 0; !ret && i < CNI_ATTACH_MANY; i++) {
		snprintf(ifn, sizeof(ifn), "eth%u", i);
		ret = call(b, plugin, "ADD", "bm", ifn, t.path, conf[i], NULL,
			   r->error, sizeof(r->error));
		made += !ret;
	}
	if (!ret)
		r->ms[r->n++] = ms_since(t0);
	for (i = 0; i < made; i++) {
		char e[256];

		snprintf(ifn, sizeof(ifn), "eth%u", i);
		call(b, plugin, "DEL", "bm", ifn, t.path, conf[i], NULL, e,
		     sizeof(e));
	}
	if (t.pid)
		cni_target_stop(&t);
	free(conf);
}

/* --count stale attachments of one container, then one GC call. */
static void gc_row(struct cni_bench *b, struct crow *r)
{
	struct cni_target t = { .nsfd = -1 };
	char conf[512], gcconf[600], ifn[16], cid[32];
	unsigned int i;
	int ret;

	make_conf(b, P_VETH, true, conf, sizeof(conf));
	ret = cni_target_start(&t);
	for (i = 0; !ret && i < b->o->guests; i++) {
		progress("cni gc: attachment %u/%u (untimed)", i + 1,
			 b->o->guests);
		snprintf(ifn, sizeof(ifn), "e%u", i);
		snprintf(cid, sizeof(cid), "g%u", i);
		ret = call(b, b->self, "ADD", cid, ifn, t.path, conf, NULL,
			   r->error, sizeof(r->error));
	}
	/* The same network, every attachment stale. */
	snprintf(gcconf, sizeof(gcconf), "%.*s,\"cni.dev/valid-attachments\":[]}",
		 (int)strlen(conf) - 1, conf);
	if (!ret && !call(b, b->self, "GC", "", "", "", gcconf, &r->ms[0],
			  r->error, sizeof(r->error)))
		r->n = 1;
	if (t.pid)
		cni_target_stop(&t);
}

/* The runs a row's figures are over: none when it failed in any (the
 * runs before the failure are not trusted either: report.c's rule). */
static unsigned int good_runs(const struct crow *r)
{
	return r->error[0] ? 0 : r->n;
}

static double median(const struct crow *r)
{
	struct summary s;

	summarize(r->ms, good_runs(r), &s);
	return good_runs(r) ? s.median : NAN;
}

static void print_row(struct cni_bench *b, const struct crow *r,
		      const char *note)
{
	unsigned int n = good_runs(r);
	struct summary s;
	struct json j;

	summarize(r->ms, n, &s);
	if (b->json) {
		json_begin(&j, stdout);
		json_str(&j, "scenario", "cni");
		json_str(&j, "method", r->method);
		json_uint(&j, "existing", r->existing);
		json_uint(&j, "runs", n);
		json_num(&j, "median_ms", n ? s.median : NAN);
		json_num(&j, "min_ms", n ? s.min : NAN);
		json_num(&j, "max_ms", n ? s.max : NAN);
		json_bool(&j, "noisy", n && summary_noisy(&s));
		json_nums(&j, "samples_ms", r->ms, n);
		if (r->error[0])
			json_str(&j, "error", r->error);
		if (note)
			json_str(&j, "note", note);
		json_end(&j);
		return;
	}
	if (!n) {
		printf("%-28s %8u  %s%s\n", r->method, r->existing,
		       r->error[0] ? "FAILED: " : "",
		       r->error[0] ? r->error : "not run");
		return;
	}
	printf("%-28s %8u %4u %9.2f %9.2f %9.2f%s\n", r->method, r->existing,
	       n, s.median, s.min, s.max,
	       summary_noisy(&s) ? "  NOISY" : "");
}

static void verdict(struct cni_bench *b, const char *what, double x,
		    double max, const char *unit, const char *note)
{
	/* the floor's target is made of figures too: a row not run
	 * leaves it NaN, not measured rather than missed */
	bool measured = !isnan(x) && !isnan(max), ok = measured && x <= max;

	b->missed |= !ok;
	if (b->json) {
		struct json j;

		json_begin(&j, stdout);
		json_str(&j, "scenario", "cni");
		json_str(&j, "verdict", what);
		json_num(&j, "value", x);
		json_num(&j, "target", max);
		json_bool(&j, "meets_target", ok);
		if (note)
			json_str(&j, "note", note);
		json_end(&j);
		return;
	}
	printf("verdict: %s %.2f%s (<= %.2f%s): target %s\n", what, x, unit,
	       max, unit, !measured ? "NOT MEASURED" : ok ? "MET" : "MISSED");
	if (note)
		printf("  (%s)\n", note);
}

/* ADD/DEL rows and 82-attachment rows of one level of existing NICs (the
 * IPAM row has none of 82: host-local alone makes no interface).  With
 * 'failed', the level could not be made: its rows fail with that, unrun. */
static void level(struct cni_bench *b, unsigned int existing,
		  struct crow *rows, const char *failed)
{
	struct prow v[P__N];
	unsigned int p, n = 0, k;
	bool on[P__N];

	for (p = 0; p < P__N; p++) {
		struct crow *r = &rows[p * 3];

		on[p] = row_init(b, &r[0], p_names[p], "-add", existing,
				 b->o->runs);
		row_init(b, &r[1], p_names[p], "-del", existing, b->o->runs);
		row_init(b, &r[2], p_names[p], "-82-add", existing, 1);
		for (k = 0; failed && on[p] && k < 3; k++)
			snprintf(r[k].error, sizeof(r[k].error), "%s", failed);
		on[p] &= !failed;
		if (on[p])
			prow_init(b, &v[n++], p, &r[0], &r[1]);
	}
	progress("cni: one attachment per container, %u rows at %u existing",
		 n, existing);
	per_attach(b, v, n);
	for (p = 0; p < P__N; p++) {
		if (!on[p] || p == P_IPAM)
			continue;
		progress("cni: %s-82-add at %u existing", p_names[p], existing);
		many(b, p, &rows[p * 3 + 2]);
	}
	for (p = 0; p < P__N * 3; p++)
		if (p != P_IPAM * 3 + 2)
			print_row(b, &rows[p], NULL);
}

static int fill(unsigned int nics)
{
	char path[64], cmd[128];
	FILE *f = bench_tmpfile("cni-fill", path, sizeof(path));
	unsigned int i;
	int ret;

	if (!f)
		return -errno;
	for (i = 0; i < nics / 2; i++)
		fprintf(f, "link add fill%u type veth peer name fillp%u\n", i, i);
	ret = bench_tmpfile_close(f, path);
	if (ret)
		return ret;
	snprintf(cmd, sizeof(cmd), "ip -batch %s", path);
	ret = system(cmd);
	unlink(path);
	return ret ? -ECHILD : 0;
}

static int run(const struct bench_opts *o)
{
	struct cni_bench b = { .o = o, .json = o->json };
	struct crow rows[2][P__N * 3], gc;
	char cmd[128], *slash;
	double veth, ptp, ipam;
	ssize_t n;
	unsigned int l, i;

	cni_find(b.dir, sizeof(b.dir));
	n = readlink("/proc/self/exe", b.self, sizeof(b.self) - 16);
	if (n <= 0 || !b.dir[0]) {
		fprintf(stderr, "vnic-bench: cni: %s\n", b.dir[0] ?
			"/proc/self/exe" : "no stock CNI plugins in /usr/lib/cni or /opt/cni/bin");
		return 1;
	}
	b.self[n] = 0;
	slash = strrchr(b.self, '/');
	strcpy(slash + 1, "vnic-cni");
	if (getenv("VNIC_CNI"))
		snprintf(b.self, sizeof(b.self), "%s", getenv("VNIC_CNI"));
	snprintf(b.tmp, sizeof(b.tmp), "/tmp/vnic-bench-cni.XXXXXX");
	if (access(b.self, X_OK) || !mkdtemp(b.tmp)) {
		fprintf(stderr, "vnic-bench: cni: no %s (make all)\n", b.self);
		return 1;
	}
	if (system("ip link set lo up && ip link add " ENV_LOWER
		   " type veth peer name lower1 && ip link set " ENV_LOWER
		   " up && ip link set lower1 up")) {
		fprintf(stderr, "vnic-bench: cni: cannot make " ENV_LOWER "\n");
		return 1;
	}
	if (!o->json)
		printf("vnic-bench cni: %u attachments per row, 0 and %u existing NICs, GC of %u; machine shared, figures noisy\n"
		       "%-28s %8s %4s %9s %9s %9s\n", o->runs, o->existing,
		       o->guests, "method", "existing", "n", "median", "min",
		       "max");
	level(&b, 0, rows[0], NULL);
	/* Rows said to be next to E NICs must be: else they fail. */
	snprintf(cmd, sizeof(cmd), "making the %u existing NICs (ip -batch) failed",
		 o->existing);
	level(&b, o->existing, rows[1],
	      o->existing && fill(o->existing) ? cmd : NULL);
	row_init(&b, &gc, "vnic-cni-gc", "", 0, 1);
	snprintf(gc.method, sizeof(gc.method), "vnic-cni-gc-%u-stale",
		 o->guests);
	if (bench_in_list(o->methods, "vnic-cni-gc"))
		gc_row(&b, &gc);
	print_row(&b, &gc, "one GC call, valid-attachments empty, \"ipam\": {}");
	veth = median(&rows[0][P_VETH * 3]);
	ptp = median(&rows[0][P_PTP * 3]);
	ipam = median(&rows[0][P_IPAM * 3]);
	verdict(&b, "vnic-cni-veth-add / stock-ptp-add at 0 existing",
		veth / ptp, CNI_TGT_PTP_X, "x", NULL);
	/* The same target, said against the floor: below 1x, host-local
	 * alone costs more than half of ptp's ADD. */
	verdict(&b, "vnic-cni-veth-add / ipam-host-local-add at 0 existing",
		veth / ipam, CNI_TGT_PTP_X * ptp / ipam, "x",
		"target: 0.5 x stock-ptp-add / ipam-host-local-add, the first "
		"target over host-local alone; below 1x no plugin that waits "
		"for host-local can meet it");
	verdict(&b, "vnic-cni-veth-add at --existing / at 0",
		median(&rows[1][P_VETH * 3]) / veth, CNI_TGT_FULL_X, "x", NULL);
	verdict(&b, "vnic-cni-veth-prefix-add at --existing / at 0",
		median(&rows[1][P_VPFX * 3]) / median(&rows[0][P_VPFX * 3]),
		CNI_TGT_FULL_X, "x",
		"hookPrefix: since Linux 6.16 a hook by name compares its name "
		"with every device of the namespace; a prefix chain hooks "
		"every host end once");
	verdict(&b, "vnic-cni GC of the stale attachments", median(&gc),
		CNI_TGT_GC_MS, " ms", NULL);
	for (l = 0; l < 2; l++)
		for (i = 0; i < P__N * 3; i++)
			free(rows[l][i].ms);
	free(gc.ms);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b.tmp);
	if (system(cmd))
		fprintf(stderr, "vnic-bench: %s failed\n", cmd);
	return b.missed ? 1 : 0;
}

static void defaults(struct bench_opts *o)
{
	o->runs = 11;
	o->existing = 4000;
	o->guests = 1000;
	o->settle_ms = 0;
}

const struct scenario scn_cni = {
	.name = "cni",
	.usage =
		"cni [--runs R] [--existing E] [--count G] [--json]\n"
		"    [--methods vnic-cni-veth,vnic-cni-macvlan,stock-ptp,stock-macvlan,\n"
		"               ipam-host-local,vnic-cni-veth-prefix,vnic-cni-gc]\n"
		"  Each CNI plugin executed as a runtime does (host-local IPAM): ADD\n"
		"  and DEL of one attachment, R containers (default 11), the rows'\n"
		"  runs alternated, and 82 attachments into one container, at 0 and\n"
		"  at E existing NICs (default 4000); host-local alone as vnic-cni\n"
		"  executes it; vnic-cni veth with hookPrefix (a prefix chain, no\n"
		"  hook per ADD); then vnic-cni GC of G stale attachments (1000)\n",
	.opts = O_RUNS | O_EXISTING | O_COUNT | O_JSON | O_METHODS | O_SETTLE,
	.defaults = defaults,
	.run = run,
};
