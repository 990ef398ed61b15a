// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The filter scenarios of issue 3:
 *
 *   filters      G guests x K NICs in one batch: libvnic (vnic_filter_apply)
 *                vs nft -f of the identical text (vnic_filter_render) vs one
 *                nft process per statement of it vs the per-guest-chain
 *                layout by nft -f, next to the kernel's cost of the hooks
 *   filters-add  one guest next to G installed guests, and next to none
 *   restart      a new process re-claims the persisted table: vnic_filter_sync
 *                of the unchanged state, and of one changed guest; then
 *                vnicctl as a new process at each --proc-guests size
 *                (restart_proc.c)
 *
 * Each is a table of methods (struct fmethod: name, group, what it needs,
 * prepare, run, release) run by one loop, methods_run(): group by group,
 * runs the outer loop and the group's methods the inner one, rotated (but
 * the vnicctl rows, whose order is their state's), as in the guest
 * scenario.  Every filters run starts from an empty ruleset
 * (flushed by the bench's own nfnetlink socket, untimed, then checked), in
 * the bench's own namespace, over NICs made once before any clock starts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filters.h"

/* ---- shared steps ---- */

/* Back to an empty ruleset, untimed, and make sure of it. */
static int reset_ruleset(struct filt_env *e, char *err, size_t errlen)
{
	unsigned int tables = 0;
	int ret = nfnl_flush_ruleset(e);

	if (!ret)
		ret = nfnl_count_tables(e, &tables);
	if (!ret && tables)
		ret = -EEXIST;
	if (ret)
		snprintf(err, errlen,
			 "resetting the ruleset: %s (%u tables left): later runs would be biased",
			 strerror(-ret), tables);
	/* Unregistering thousands of hooks leaves RCU work behind. */
	usleep(e->o->settle_ms * 1000);
	return ret;
}

static int nft_fail(const char *what, int ret, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s%s%s", what,
		 ret == -ECHILD ? "nft failed" : strerror(-ret),
		 ret == -ECHILD ? ": " : "",
		 ret == -ECHILD ? bench_last_error() : "");
	return ret;
}

/* A run that stopped before its report: the first reason, on stderr. */
static int setup_failed(const struct bench_opts *o, const struct bench_row *rows,
			unsigned int n, const char *err, int ret)
{
	unsigned int m;

	for (m = 0; m < n && !err[0]; m++)
		if (rows[m].error[0]) {
			fprintf(stderr, "vnic-bench: %s: %s: %s\n", o->scenario,
				rows[m].method, rows[m].error);
			return 1;
		}
	fprintf(stderr, "vnic-bench: %s: %s\n", o->scenario,
		err[0] ? err : strerror(-ret));
	return 1;
}

/* ---- the method model and the one run loop ---- */

struct filters;

/*
 * A method of a filter scenario: its row's name, the tool it needs (the
 * row is skipped without it), the untimed work before its first run, one
 * timed run, and the untimed work after its last.  Methods of one group
 * share what their prepare made: each group is prepared, run (runs outer,
 * its methods rotated unless ordered) and released before the next group.  A method without
 * a run is a row that a method of its group fills (a remove timed right
 * after its add, the open of a sync).
 */
struct fmethod {
	const char *name;
	unsigned int group;
	bool always;			/* --methods does not apply */
	bool result;			/* the row's has_result */
	bool ordered;			/* its group's rows are not rotated */
	const char *note;		/* the row's note to begin with */
	char needs;			/* 'n': nft(8), 'x': xtables variant arg */
	int (*prepare)(struct filters *f, unsigned int m, char *err,
		       size_t errlen);
	int (*run)(struct filters *f, unsigned int m, struct sample *s,
		   char *err, size_t errlen);
	/* 0, or negative to stop the scenario. */
	int (*release)(struct filters *f, unsigned int m);
	int arg;			/* the method's own: a job, a variant */
};

/* A scenario: its methods, the state its runs start from, its report. */
struct fscn {
	const char *name;
	const struct fmethod *m;
	unsigned int n;
	/* Untimed, after the NICs and the rows: 0 or a message in err. */
	int (*setup)(struct filters *f, char *err, size_t errlen);
	/* After each timed run: 0, or negative to stop. */
	int (*after)(struct filters *f);
	/* The ratio columns: to rows ratio[0] and ratio[1] (or none). */
	const char *ratio[2], *label[2];
	/* The report (NULL: report_rows of the rows): 0, or 1 when a target
	 * was missed. */
	int (*report)(struct filters *f, struct report_env *re);
};

struct filters {
	struct filt_env e;
	const struct fscn *sc;
	const struct fmethod *m;	/* sc's, or restart's with the vnicctl */
	unsigned int n;			/* rows (own, the table made) */
	struct fmethod *own;
	struct rproc *rp;
	int job;			/* restart: the child's (enum child_job) */
	struct bench_row *rows;
	unsigned int group;		/* the group being run */
	struct vnic_policy *p;
	/* filters: what its rows share, prepared once by filters_setup */
	char *text;			/* vnic_filter_render */
	size_t text_len;
	/* nft -f's files: the rendered text, the per-guest chains, the
	 * statements (nft-f-split) and nft-per-stmt's preload */
	char path[4][64];
	struct stmt_list stmts;
	unsigned int items, sample, sample_from;	/* nft-per-stmt */
	struct xt_set xt[XT__VARIANTS];			/* m_xt.c */
	double pfx_open_ms;		/* the last prefix open, untimed */
	/* The batches of libvnic's apply, by name and by prefix (floor.c);
	 * capture: where run_libvnic keeps them, NULL: nowhere. */
	struct floor_batches floor[2];
	struct floor_batches *capture;
	/* The *-table rows' context: its link table built and monitored. */
	struct vnic_ctx *tctx;
	double table_ms;		/* its build, untimed */
	/* filters-add: the guest added, the phase's handle, and each nft
	 * phase's batches (restart: the sync's reads, in floor[0]) */
	struct vnic_policy *one;
	struct vnic_filter *h;
	struct floor_batches afb[4];
};

/* A failure that says the kernel has no prefix hooks is a skip. */
static void row_failed(struct bench_row *r)
{
	if (!strcmp(r->error, PFX_SKIP)) {
		r->skip = PFX_SKIP;
		r->error[0] = '\0';
	} else {
		fprintf(stderr, "vnic-bench: %s: %s\n", r->method, r->error);
	}
}

static const char *m_active(void *ctx, unsigned int m)
{
	struct filters *f = ctx;
	const struct bench_row *r = &f->rows[m];

	return f->m[m].group != f->group || !f->m[m].run || r->skip ||
	       r->error[0] ? NULL : r->method;
}

static int m_once(void *ctx, unsigned int m, unsigned int run)
{
	struct filters *f = ctx;
	struct bench_row *r = &f->rows[m];

	if (f->m[m].run(f, m, bench_row_next(r), r->error,
			    sizeof(r->error)))
		row_failed(r);
	else
		r->runs++;
	return f->sc->after(f);
}

static int methods_run(struct filters *f)
{
	const struct fmethod *fm = f->m;
	struct bench_loop bl = { .runs = f->e.o->runs, .n = f->n, .ctx = f,
				 .active = m_active, .once = m_once };
	unsigned int m, last = 0;
	int ret = 0, r;

	for (m = 0; m < f->n; m++)
		if (fm[m].group > last)
			last = fm[m].group;
	for (f->group = 0; f->group <= last && !ret; f->group++) {
		bl.ordered = false;
		for (m = 0; m < f->n; m++) {
			struct bench_row *row = &f->rows[m];

			if (fm[m].group == f->group)
				bl.ordered |= fm[m].ordered;
			if (fm[m].group == f->group && fm[m].prepare &&
			    !row->skip && !row->error[0] &&
			    fm[m].prepare(f, m, row->error, sizeof(row->error)))
				row_failed(row);
		}
		ret = bench_rotate(&bl);
		for (m = 0; m < f->n; m++)
			if (fm[m].group == f->group && fm[m].release &&
			    !f->rows[m].skip && (r = fm[m].release(f, m)) &&
			    !ret)
				ret = r;
	}
	return ret;
}

/* ---- filters ---- */

enum { F_LIBVNIC, F_NFT_F, F_NFT_SPLIT, F_NFT_STMT, F_NFT_CHAINS, F_FLOOR,
       F_XT_RESTORE, F_XT_RULE = F_XT_RESTORE + XT__VARIANTS,
       F_LIBVNIC_PFX = F_XT_RULE + XT__VARIANTS, F_BFLOOR, F_BFLOOR_PFX,
       F_BPF, F_BPF_RM, F_BPF_FLOOR, F_BPF_RM_FLOOR, F_LIB_TBL, F_LIB_PFX_TBL,
       F__MAX };

static const struct fmethod fmethods[F__MAX];

static int run_libvnic(struct filters *f, bool pfx, struct sample *s,
		       char *err, size_t errlen)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	struct vnic_filter *h;
	uint64_t t0 = now_ns();
	int ret;

	ret = filt_open(&f->e, pfx, &h, err, errlen);
	if (ret)
		return ret;
	if (pfx)
		f->pfx_open_ms = ms_since(t0);
	if (f->capture)
		floor_capture(h, f->capture);
	t0 = now_ns();
	ret = vnic_filter_apply(h, f->p, &res);
	s->ms = ms_since(t0);
	if (ret)
		bench_lib_fail(f->e.ctx, "vnic_filter_apply", ret, err, errlen);
	else
		filt_take(s, &res);
	vnic_filter_close(h);
	return ret;
}

/* One nft process per statement in [from, to); their total time. */
static int run_stmts(struct filters *f, unsigned int from, unsigned int to,
		     double *ms, char *err, size_t errlen)
{
	const char *argv[3] = { NULL, NULL, NULL };
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret = 0;

	for (i = from; i < to && !ret; i++) {
		argv[1] = f->stmts.v[i];
		ret = nft_run(&f->e, argv);
	}
	*ms = ms_since(t0);
	if (ret) {
		char what[160];

		snprintf(what, sizeof(what), "nft '%.100s'", f->stmts.v[i - 1]);
		nft_fail(what, ret, err, errlen);
	}
	return ret;
}

/*
 * Structure (table, chains, sets) in full; then the items: all of them if
 * they are few, else a sample from the middle of the list, with what comes
 * before it preloaded (untimed, one nft -f) so that each sampled process
 * meets a half-full table, and the items' time scaled to all of them.
 */
static int run_stmt(struct filters *f, unsigned int m, struct sample *s,
		    char *err, size_t errlen)
{
	unsigned int ns = f->stmts.n_struct;
	double a, b;
	int ret;

	ret = run_stmts(f, 0, ns, &a, err, errlen);
	if (ret)
		return ret;
	if (f->sample_from > ns) {
		ret = nft_file(&f->e, f->path[3]);
		if (ret)
			return nft_fail("preloading nft -f", ret, err, errlen);
	}
	ret = run_stmts(f, f->sample_from, f->sample_from + f->sample, &b, err,
			errlen);
	if (ret)
		return ret;
	s->ms = a + b * f->items / f->sample;
	return 0;
}

/* Untimed, once per layout: libvnic's apply with its batches kept. */
static int prep_bfloor(struct filters *f, unsigned int m, char *err,
		       size_t errlen)
{
	bool pfx = m == F_BFLOOR_PFX;
	struct floor_batches *fb = &f->floor[pfx];
	struct bench_row *r = &f->rows[m];
	char rerr[256];
	struct sample s;
	size_t len = 0;
	unsigned int i;
	int ret;

	f->capture = fb;
	ret = run_libvnic(f, pfx, &s, err, errlen);
	f->capture = NULL;
	reset_ruleset(&f->e, rerr, sizeof(rerr));
	if (ret)
		return ret;
	for (i = 0; i < fb->n; i++)
		len += fb->v[i].len;
	snprintf(r->note, sizeof(r->note),
		 "the kernel's cost of libvnic's own change: the %u nf_tables batch(es) vnic_filter_apply sent (%zu bytes, captured untimed by the library's batch tap), sent again by the bench's socket, one sendmsg() each, to the last ack",
		 fb->n, len);
	return 0;
}

/* The xtables rows: restore per variant, then per rule per variant. */
static int run_xt(struct filters *f, unsigned int m, struct sample *s,
		  char *err, size_t errlen)
{
	int v = f->m[m].arg;

	return xt_filters_run(v, m >= F_XT_RULE, &f->xt[v],
			      f->e.o->stmt_sample, &f->rows[m], s);
}

static int run_lib(struct filters *f, unsigned int m, struct sample *s,
		   char *err, size_t errlen)
{
	return run_libvnic(f, m == F_LIBVNIC_PFX, s, err, errlen);
}

/*
 * libvnic-table, libvnic-prefix-table: a context whose link table is built
 * (vnic_ctx_refresh, untimed) and kept by its monitor, as a runtime that
 * names its NICs by the table has one; the NICs are found there.  Made
 * once, shared by both rows.
 */
static int prep_table(struct filters *f, unsigned int m, char *err,
		      size_t errlen)
{
	VNIC_OPTS(vnic_ctx_opts, copts, .owner = "vnicbench");
	uint64_t t0;
	int ret;

	if (f->tctx)
		return 0;
	ret = vnic_ctx_new(&copts, &f->tctx);
	if (ret) {
		f->tctx = NULL;
		return bench_lib_fail(NULL, "vnic_ctx_new", ret, err, errlen);
	}
	t0 = now_ns();
	ret = vnic_ctx_refresh(f->tctx);
	f->table_ms = ms_since(t0);
	return ret ? bench_lib_fail(f->tctx, "vnic_ctx_refresh", ret, err, errlen) : 0;
}

static int run_table(struct filters *f, unsigned int m, struct sample *s,
		     char *err, size_t errlen)
{
	struct vnic_ctx *own = f->e.ctx;
	int ret;

	/* run_libvnic() opens its handle on the env's context. */
	f->e.ctx = f->tctx;
	ret = run_libvnic(f, m == F_LIB_PFX_TBL, s, err, errlen);
	f->e.ctx = own;
	return ret;
}

static int release_table(struct filters *f, unsigned int m)
{
	if (f->tctx)
		vnic_ctx_free(f->tctx);
	f->tctx = NULL;
	return 0;
}

/*
 * The floor of a layout: the handle opened as libvnic's row opens it
 * (untimed: by prefix, that makes the prefix chains), then the batches
 * libvnic's apply sent, sent again.
 */
static int run_bfloor(struct filters *f, unsigned int m, struct sample *s,
		      char *err, size_t errlen)
{
	bool pfx = m == F_BFLOOR_PFX;
	struct floor_batches *fb = &f->floor[pfx];
	struct vnic_filter *h;
	int ret;

	ret = filt_open(&f->e, pfx, &h, err, errlen);
	if (ret)
		return ret;
	vnic_filter_close(h);
	ret = floor_replay(&f->e, fb, 0, fb->n, &s->ms);
	if (ret)
		snprintf(err, errlen, "sending libvnic's %u batches again: %s",
			 fb->n, strerror(-ret));
	return ret;
}

/* kernel-hook-floor: filters hooks every NIC, filters-add the new
 * guest's next to the G others. */
static int run_hook_floor(struct filters *f, unsigned int m,
			  struct sample *s, char *err, size_t errlen)
{
	bool add = f->sc->m != fmethods;
	unsigned int k = f->e.o->nics_per_guest, n = add ? k : f->e.nnics;
	int ret = nfnl_hook_floor(&f->e, add ? f->e.o->existing * k : 0, n,
				  &s->ms);

	if (ret)
		snprintf(err, errlen, "hooking %u NICs: %s", n, strerror(-ret));
	return ret;
}

/* nft-f, nft-f-split, nft-f-chains: one nft -f of their file. */
static int run_file(struct filters *f, unsigned int m, struct sample *s,
		    char *err, size_t errlen)
{
	uint64_t t0 = now_ns();
	int ret = nft_file(&f->e, f->path[f->m[m].arg]);

	s->ms = ms_since(t0);
	return ret ? nft_fail("nft -f", ret, err, errlen) : 0;
}

static int run_bpf(struct filters *f, unsigned int m, struct sample *s,
		   char *err, size_t errlen)
{
	return bpf_apply_row(&f->e, f->p, f->e.o->guests, m == F_BPF_RM, s,
			     err, errlen);
}

/* floor-bpf, floor-bpf-remove-all: the bpf rows' writes replayed. */
static int run_bpf_floor(struct filters *f, unsigned int m, struct sample *s,
			 char *err, size_t errlen)
{
	return bfloor_row(&f->e, f->p, f->e.o->guests, m == F_BPF_RM_FLOOR, s, err,
			  errlen);
}

#define F_ROW(n, nd, r, a)	{ .name = n, .needs = nd, .run = r, .arg = a }
#define F_BPF_ROW(n, r, nt)	{ .name = n, .run = r, .result = true, \
				  .note = nt }
static const struct fmethod fmethods[F__MAX] = {
	[F_LIBVNIC] = { .name = "libvnic", .run = run_lib, .result = true },
	[F_NFT_F] = F_ROW("nft-f", 'n', run_file, 0),
	[F_NFT_SPLIT] = F_ROW("nft-f-split", 'n', run_file, 2),
	[F_NFT_STMT] = F_ROW("nft-per-stmt", 'n', run_stmt, 0),
	[F_NFT_CHAINS] = F_ROW("nft-f-chains", 'n', run_file, 1),
	[F_FLOOR] = F_ROW("kernel-hook-floor", 0, run_hook_floor, 0),
	[F_XT_RESTORE + XT_LEGACY] = F_ROW("xt-legacy-restore", 'x', run_xt,
					   XT_LEGACY),
	[F_XT_RESTORE + XT_NFT] = F_ROW("xt-nft-restore", 'x', run_xt, XT_NFT),
	[F_XT_RULE + XT_LEGACY] = F_ROW("xt-legacy-per-rule", 'x', run_xt,
					XT_LEGACY),
	[F_XT_RULE + XT_NFT] = F_ROW("xt-nft-per-rule", 'x', run_xt, XT_NFT),
	[F_LIBVNIC_PFX] = { .name = "libvnic-prefix", .run = run_lib,
			    .result = true },
	[F_BFLOOR] = { .name = "floor", .prepare = prep_bfloor,
		       .run = run_bfloor },
	[F_BFLOOR_PFX] = { .name = "floor-prefix", .prepare = prep_bfloor,
			   .run = run_bfloor },
	[F_BPF] = F_BPF_ROW("libvnic-bpf", run_bpf,
		"vnic_filter_open with VNIC_BACKEND_BPF (untimed) before, every guest removed by the library + close (untimed) after each run; its floor: floor-bpf"),
	[F_BPF_RM] = F_BPF_ROW("libvnic-bpf-remove-all", run_bpf,
		"vnic_filter_apply of every guest (untimed), then vnic_filter_remove of every guest in one change, timed: filters and clsact qdiscs off every NIC, map entries deleted"),
	[F_BPF_FLOOR] = F_BPF_ROW("floor-bpf", run_bpf_floor,
		"the clsact qdiscs, cls_bpf filters and map writes of a libvnic-bpf apply (captured by the bpf tap, untimed), replayed on the bare NICs: each tc batch in one sendmsg, map writes by bpf(2) (bench/floor_bpf.c)"),
	[F_BPF_RM_FLOOR] = F_BPF_ROW("floor-bpf-remove-all", run_bpf_floor,
		"the filter and qdisc deletions and map deletes of a libvnic-bpf remove of every guest, replayed the same way right after floor-bpf's apply"),
	[F_LIB_TBL] = { .name = "libvnic-table", .prepare = prep_table,
			.run = run_table, .release = release_table,
			.result = true },
	[F_LIB_PFX_TBL] = { .name = "libvnic-prefix-table", .prepare = prep_table,
			    .run = run_table, .release = release_table,
			    .result = true },
};

/* The text libvnic would install, rendered by a handle of its own. */
static int render(struct filters *f, double *ms, char *err, size_t errlen)
{
	struct vnic_filter *h;
	uint64_t t0;
	int ret;

	ret = filt_open(&f->e, false, &h, err, errlen);
	if (ret)
		return ret;
	t0 = now_ns();
	ret = vnic_filter_render(h, f->p, &f->text);
	*ms = ms_since(t0);
	if (ret) {
		f->text = NULL;
		bench_lib_fail(f->e.ctx, "vnic_filter_render", ret, err, errlen);
	}
	vnic_filter_close(h);
	if (!ret)
		f->text_len = strlen(f->text);
	return ret ?: reset_ruleset(&f->e, err, errlen);
}

static void first_difference(const char *a, const char *b, const char *an,
			     char *out, size_t outlen)
{
	unsigned int line = 1;
	const char *la = a, *lb = b;

	while (*a && *a == *b) {
		if (*a == '\n') {
			line++;
			la = a + 1;
			lb = b + 1;
		}
		a++;
		b++;
	}
	snprintf(out, outlen, "line %u: %s '%.*s' vs nft -f '%.*s'", line, an,
		 (int)strcspn(la, "\n") > 60 ? 60 : (int)strcspn(la, "\n"), la,
		 (int)strcspn(lb, "\n") > 60 ? 60 : (int)strcspn(lb, "\n"), lb);
}

/* Untimed: one process per statement gives what nft -f gives (when every
 * statement runs, i.e. nothing is extrapolated). */
static void check_stmts(struct filters *f, const char *want)
{
	struct bench_row *r = &f->rows[F_NFT_STMT];
	char *got = NULL, err[256] = "", diff[200];
	double ms;
	size_t len;

	if (r->skip || r->error[0] || !want || r->extrapolated)
		return;
	len = strlen(r->note);
	if (run_stmts(f, 0, f->stmts.n, &ms, err, sizeof(err)) ||
	    nft_list_ruleset(&f->e, &got))
		snprintf(r->note + len, sizeof(r->note) - len,
			 "; could not check the split: %.120s",
			 err[0] ? err : bench_last_error());
	else if (strcmp(got, want)) {
		first_difference(got, want, "statements", diff, sizeof(diff));
		snprintf(r->note + len, sizeof(r->note) - len,
			 "; the statements DIFFER from nft -f (%.100s)", diff);
	} else
		snprintf(r->note + len, sizeof(r->note) - len,
			 "; checked: same ruleset as nft -f");
	free(got);
	reset_ruleset(&f->e, err, sizeof(err));
}

/* The state element's generation (" g=N "): apply records the one its
 * commit made, the rendered text none, so it is no difference. */
static void mask_generation(char *t)
{
	char *p = t;

	while ((p = strstr(p, " g="))) {
		char *d = p + 3, *e = d;

		while (*e >= '0' && *e <= '9')
			e++;
		if (e > d && *e == ' ') {
			*d = 'G';
			memmove(d + 1, e, strlen(e) + 1);
		}
		p = d;
	}
}

/*
 * Untimed, once: does nft -f of the rendered text give what vnic_filter_apply
 * installs?  The anchors are only fair if it does.
 */
static void check_same(struct filters *f)
{
	struct bench_row *r = &f->rows[F_NFT_F];
	char *a = NULL, *b = NULL, err[256], diff[200];
	struct sample s;

	if (f->rows[F_NFT_F].skip)
		return;
	if (run_libvnic(f, false, &s, err, sizeof(err)) ||
	    nft_list_ruleset(&f->e, &a) || reset_ruleset(&f->e, err, sizeof(err)) ||
	    nft_file(&f->e, f->path[0]) || nft_list_ruleset(&f->e, &b)) {
		snprintf(r->note, sizeof(r->note),
			 "could not compare with libvnic's ruleset: %.180s",
			 err[0] ? err : bench_last_error());
	} else if ((mask_generation(a), mask_generation(b), strcmp(a, b))) {
		first_difference(a, b, "libvnic", diff, sizeof(diff));
		snprintf(r->note, sizeof(r->note),
			 "nft list ruleset DIFFERS after vnic_filter_apply and after nft -f of vnic_filter_render (%.150s)",
			 diff);
	} else {
		snprintf(r->note, sizeof(r->note),
			 "same ruleset as vnic_filter_apply (nft list ruleset compared, %zu bytes of text)",
			 f->text_len);
	}
	free(a);
	a = NULL;
	reset_ruleset(&f->e, err, sizeof(err));
	check_stmts(f, b);
	free(b);
}

static int prepare_stmts(struct filters *f, char *err, size_t errlen)
{
	struct bench_row *r = &f->rows[F_NFT_STMT];
	unsigned int ns, nsplit = 0;
	int ret;

	ret = stmt_split(f->text, FILT_NETDEV_MAX, &f->stmts, &nsplit, err,
			 errlen);
	if (!ret)
		ret = stmt_write(&f->stmts, 0, f->stmts.n, f->path[2],
				 sizeof(f->path[2]));
	if (ret) {
		if (!err[0])
			snprintf(err, errlen, "statements: %s", strerror(-ret));
		return ret;
	}
	if (nsplit) {
		struct bench_row *sr = &f->rows[F_NFT_SPLIT];

		snprintf(sr->note, sizeof(sr->note),
			 "the rendered text as %u commands in one nft -f, each base chain over %u devices (%u) split into chains of <= %u devices with the same rules: what nft -f can load when the text itself cannot",
			 f->stmts.n, FILT_NETDEV_MAX, nsplit, FILT_NETDEV_MAX);
	} else if (!f->rows[F_NFT_SPLIT].skip) {
		f->rows[F_NFT_SPLIT].skip =
			"no base chain over 255 devices: same as nft-f";
	}
	ns = f->stmts.n_struct;
	f->items = f->stmts.n - ns;
	f->sample = f->items < f->e.o->stmt_sample ? f->items :
						       f->e.o->stmt_sample;
	f->sample_from = ns + (f->items - f->sample) / 2;
	if (!f->sample) {
		snprintf(err, errlen, "the rendered text has no elements or rules");
		return -EINVAL;
	}
	if (f->sample < f->items) {
		r->extrapolated = true;
		r->sample_items = f->sample;
		r->total_items = f->items;
		ret = stmt_write(&f->stmts, ns, f->sample_from, f->path[3],
				 sizeof(f->path[3]));
		if (ret)
			return ret;
	}
	snprintf(r->note, sizeof(r->note),
		 "%u nft processes: %u structure statements, then %u items (%u elements/objects, %u rules)%s%s",
		 f->stmts.n, ns, f->items, f->stmts.n_elements, f->stmts.n_rules,
		 nsplit ? "; base chains split as in nft-f-split" : "",
		 r->extrapolated ? "" : ", all timed");
	if (r->extrapolated)
		snprintf(r->note + strlen(r->note),
			 sizeof(r->note) - strlen(r->note),
			 "; EXTRAPOLATED: structure timed in full, items %u..%u (the %u before preloaded untimed by nft -f) timed one process each and scaled by %u/%u",
			 f->sample_from - ns, f->sample_from - ns + f->sample - 1,
			 f->sample_from - ns, f->items, f->sample);
	return 0;
}

static int prepare_chains(struct filters *f, char *err, size_t errlen)
{
	struct bench_row *r = &f->rows[F_NFT_CHAINS];
	unsigned int nrules;
	size_t len;
	char *text;
	int ret;

	ret = chains_render(&f->e, f->e.o->guests, &text, &len, &nrules);
	if (!ret)
		ret = nft_write_tmp(text, len, f->path[1],
				    sizeof(f->path[1]));
	free(text);
	if (ret) {
		snprintf(err, errlen, "per-guest chains: %s", strerror(-ret));
		return ret;
	}
	snprintf(r->note, sizeof(r->note),
		 "the bench's own text: %u guest chains, %u rules (10 per NIC, one jump per NIC from %u base chains of <= %u devices)",
		 f->e.o->guests, nrules,
		 (f->e.nnics + FILT_NETDEV_MAX - 1) / FILT_NETDEV_MAX,
		 FILT_NETDEV_MAX);
	return 0;
}

static void filters_targets(struct filters *f)
{
	static const unsigned int lib_rows[] = { F_LIBVNIC, F_LIBVNIC_PFX,
						 F_LIB_TBL, F_LIB_PFX_TBL };
	const struct bench_opts *o = f->e.o;
	unsigned int i;

	for (i = 0; i < sizeof(lib_rows) / sizeof(lib_rows[0]); i++) {
		struct bench_row *r = &f->rows[lib_rows[i]];
		bool pfx = lib_rows[i] == F_LIBVNIC_PFX ||
			   lib_rows[i] == F_LIB_PFX_TBL;

		/* The table changes how NICs are found, not the batches. */
		r->target.floor = fmethods[pfx ? F_BFLOOR_PFX : F_BFLOOR].name;
		r->target.max_ratio = TARGET_APPLY_X_NFT;
		r->target.ratio_to = fmethods[F_NFT_F].name;
		/* The millisecond target is stated for this size only. */
		if (o->guests == 1000 && o->nics_per_guest == 4)
			r->target.max_ms = TARGET_APPLY_MS;
	}
	/* Issue 11: bpf at most the nft by-name row, and 1.15x its floor. */
	f->rows[F_BPF].target.max_ratio = 1.0;
	f->rows[F_BPF].target.ratio_to = fmethods[F_LIBVNIC].name;
	f->rows[F_BPF].target.floor = fmethods[F_BPF_FLOOR].name;
	f->rows[F_BPF_RM].target.floor = fmethods[F_BPF_RM_FLOOR].name;
}

/* The text, the files and the notes every filters row shares. */
static int filters_prepare(struct filters *f, char *err, size_t errlen)
{
	struct bench_row *rows = f->rows;
	char rerr[256] = "";
	double render_ms;
	unsigned int m;
	int ret;

	for (m = 0; m < XT__VARIANTS; m++)
		if (!rows[F_XT_RESTORE + m].skip || !rows[F_XT_RULE + m].skip)
			xt_filters_prepare(&f->e, m, &f->xt[m],
					   &rows[F_XT_RESTORE + m],
					   &rows[F_XT_RULE + m]);
	snprintf(rows[F_FLOOR].note, sizeof(rows[F_FLOOR].note),
		 "not a filter: one raw nfnetlink batch creating a table and base chains (<= %u devices each, no rules) hooking all %u NICs, sendmsg to last ack: the part of any per-device-hook layout the kernel charges for hooks alone",
		 FILT_NETDEV_MAX, f->e.nnics);
	filters_targets(f);
	if (!rows[F_NFT_CHAINS].skip)
		prepare_chains(f, rows[F_NFT_CHAINS].error,
			       sizeof(rows[F_NFT_CHAINS].error));
	/* Without the text, the anchors that load it cannot run; the rest
	 * can. */
	ret = render(f, &render_ms, rerr, sizeof(rerr));
	if (!ret)
		ret = nft_write_tmp(f->text, f->text_len, f->path[0],
				    sizeof(f->path[0]));
	if (ret) {
		if (!rerr[0])
			snprintf(rerr, sizeof(rerr), "the rendered text: %s",
				 strerror(-ret));
		for (m = F_NFT_F; m <= F_NFT_STMT; m++)
			if (!rows[m].skip)
				snprintf(rows[m].error, sizeof(rows[m].error),
					 "%.200s", rerr);
		/* The ruleset must be empty all the same. */
		return reset_ruleset(&f->e, err, errlen);
	}
	if (!rows[F_NFT_STMT].skip || !rows[F_NFT_SPLIT].skip) {
		char serr[256] = "";

		if (prepare_stmts(f, serr, sizeof(serr)))
			for (m = F_NFT_SPLIT; m <= F_NFT_STMT; m++)
				if (!rows[m].skip)
					snprintf(rows[m].error,
						 sizeof(rows[m].error), "%s",
						 serr);
	}
	snprintf(rows[F_LIBVNIC].note, sizeof(rows[F_LIBVNIC].note),
		 "vnic_filter_open (untimed) before, vnic_filter_close + ruleset flush (untimed) after each run; vnic_filter_render of the same policy: %.2f ms, %zu bytes",
		 render_ms, f->text_len);
	check_same(f);
	return 0;
}

static int filters_setup(struct filters *f, char *err, size_t errlen)
{
	const struct bench_opts *o = f->e.o;
	uint64_t t0 = now_ns();
	struct sample s;
	int ret;

	ret = filt_policy(&f->e, 0, o->guests, -1, &f->p, err, errlen);
	if (!ret && !o->json)
		fprintf(stderr, "policy of %u guests built in %.1f ms (untimed)\n",
			o->guests, ms_since(t0));
	if (!ret)
		ret = filters_prepare(f, err, errlen);
	if (ret)
		return ret;
	/* Warm-up, untimed: slab caches, the first table's work. */
	if (!f->rows[F_LIBVNIC].skip &&
	    run_libvnic(f, false, &s, err, errlen))
		fprintf(stderr, "vnic-bench: warm-up: %s\n", err);
	err[0] = '\0';
	return reset_ruleset(&f->e, err, errlen);
}

/* After every run, the ruleset emptied (a failure there ends all). */
static int filters_after(struct filters *f)
{
	char err[256];

	if (!reset_ruleset(&f->e, err, sizeof(err)))
		return 0;
	fprintf(stderr, "vnic-bench: %s\n", err);
	return -EIO;
}

static int filters_report(struct filters *f, struct report_env *re)
{
	struct bench_row *lv = &f->rows[F_LIBVNIC];

	if (f->rows[F_LIBVNIC_PFX].runs)
		snprintf(f->rows[F_LIBVNIC_PFX].note,
			 sizeof(f->rows[F_LIBVNIC_PFX].note),
			 "hook_prefixes {\"nv\"}: no per-NIC hook; vnic_filter_open (untimed) makes the two prefix chains once per table, hooking all %u NICs at once: %.1f ms in the last run",
			 f->e.nnics, f->pfx_open_ms);
	if (f->rows[F_LIB_TBL].runs || f->rows[F_LIB_PFX_TBL].runs)
		for (unsigned int m = F_LIB_TBL; m <= F_LIB_PFX_TBL; m++)
			snprintf(f->rows[m].note, sizeof(f->rows[m].note),
				 "as libvnic%s, on a context whose link table was built before (vnic_ctx_refresh, untimed: %.1f ms) and is kept by its RTNLGRP_LINK monitor, as a runtime naming by VNIC_NAMING_CACHE has one: the %u NICs are found there, not by SIOCGIFINDEX",
				 m == F_LIB_PFX_TBL ? "-prefix" : "", f->table_ms,
				 f->e.nnics);
	/* The rendered text would not load: the same ruleset with its base
	 * chains split is the nearest nft -f there is. */
	if (!f->rows[F_NFT_F].runs && f->rows[F_NFT_SPLIT].runs) {
		re->ratio_b = lv->target.ratio_to = fmethods[F_NFT_SPLIT].name;
		re->label_b = "x_nft-f-sp";
		snprintf(lv->note + strlen(lv->note),
			 sizeof(lv->note) - strlen(lv->note),
			 "; nft -f of the rendered text failed, so the ratio target is judged against nft-f-split");
	}
	return report_rows(re, f->rows, F__MAX, f->e.o->json) ? 1 : 0;
}

/* ---- filters-add ---- */

/*
 * The same four rows with NICs hooked by name, then by prefix; their
 * floors; the bpf rows.  A phase is a layout (name, prefix, bpf) next to
 * none or next to G installed guests: group 2 * phase, and for an nft
 * phase its floor in the group after (libvnic's handle closed).
 */
enum { A_ADD_G, A_ADD_NONE, A_RM_G, A_RM_NONE, A_FLOOR, A_PFX,
       A_BF = A_PFX + 4, A_BPF = A_BF + 4, A__MAX = A_BPF + 4 };

static unsigned int a_phase(const struct filters *f, unsigned int m)
{
	return f->m[m].group / 2;
}

/* Phases next to G are the odd ones. */
static unsigned int a_existing(const struct filters *f, unsigned int p)
{
	return p & 1 ? f->e.o->existing : 0;
}

/* Add guest 'one' and remove it again, each timed, on the open handle. */
static int add_remove(struct filters *f, struct sample *s,
		      struct bench_row *rm, char *err, size_t errlen)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	uint64_t t0 = now_ns();
	int ret = vnic_filter_apply(f->h, f->one, &res);

	s->ms = ms_since(t0);
	if (ret)
		return bench_lib_fail(f->e.ctx, "vnic_filter_apply", ret, err,
				      errlen);
	filt_take(s, &res);
	ret = filt_remove(&f->e, f->h, f->e.o->existing, 1, bench_row_next(rm),
			  rm->error, sizeof(rm->error));
	if (ret)
		snprintf(err, errlen, "%s", rm->error);
	else
		rm->runs++;
	return ret;
}

/* A phase: its handle, 'existing' guests installed, and a warm-up. */
static int add_prepare(struct filters *f, unsigned int m, char *err,
		       size_t errlen)
{
	unsigned int p = a_phase(f, m), existing = a_existing(f, p), batches,
		     messages;
	struct bench_row *r = &f->rows[m], wr;
	char werr[256];
	struct sample ws;
	uint64_t t0;
	int ret;

	ret = reset_ruleset(&f->e, err, errlen);
	if (!ret)
		ret = p >= 4 ? bpf_open(&f->e, &f->h, err, errlen) :
		      filt_open(&f->e, p >= 2, &f->h, err, errlen);
	if (ret == -EOPNOTSUPP && p < 4)
		r[2].skip = f->rows[A_BF + 5 - p].skip = PFX_SKIP;
	else if (ret)
		snprintf(r[2].error, sizeof(r[2].error), "%s", err);
	if (ret)
		return ret;
	t0 = now_ns();
	ret = filt_install(&f->e, f->h, existing, &batches, &messages, err,
			   errlen);
	if (!ret && existing)
		snprintf(r->note, sizeof(r->note),
			 "%u existing guests installed first%s (untimed, vnic_filter_apply of %u guests at a time): %.1f ms, %u messages in %u batches",
			 existing, p >= 4 ? " by the bpf backend" : "",
			 FILT_SETUP_CHUNK, ms_since(t0), messages, batches);
	/* Warm-up, untimed: the first add may create shared structure.
	 * nft: a second one, its batches kept for the floor (the first may
	 * have made the table, which the timed adds find made). */
	if (ret)
		return ret;
	bench_row_init(&wr, "warm", 2);
	ret = add_remove(f, &ws, &wr, werr, sizeof(werr));
	if (!ret && p < 4) {
		floor_capture(f->h, &f->afb[p]);
		ret = add_remove(f, &ws, &wr, werr, sizeof(werr));
		floor_capture(f->h, NULL);
	}
	bench_row_free(&wr);
	if (ret)
		snprintf(err, errlen, "warm-up: %.200s", werr);
	return ret;
}

static int add_run(struct filters *f, unsigned int m, struct sample *s,
		   char *err, size_t errlen)
{
	return add_remove(f, s, &f->rows[m + 2], err, errlen);
}

/* The phase's handle closed (bpf: its guests removed first, else the
 * bench stops: the next phase needs bare NICs). */
static int add_release(struct filters *f, unsigned int m)
{
	unsigned int p = a_phase(f, m), count, existing = a_existing(f, p);
	struct bench_row *r = &f->rows[m];
	int ret = 0;

	if (!f->h)
		return 0;
	count = filt_count_guests(f->h);
	if (p < 4 && count != existing)
		fprintf(stderr,
			"vnic-bench: vnic_filter_guests says %u guests are installed, not %u\n",
			count, existing);
	if (p >= 4 && existing) {
		char err[256] = "";

		ret = filt_remove(&f->e, f->h, 0, existing, NULL, err,
				  sizeof(err));
		if (ret && !r->error[0])
			snprintf(r->error, sizeof(r->error), "%s", err);
	}
	vnic_filter_close(f->h);
	f->h = NULL;
	return ret ? -EIO : 0;
}

/*
 * The floor of one add, after libvnic's runs and its handle closed (the
 * table libvnic owned takes the bench's batches then): the add batch of
 * the phase's warm-up, sent again, timed; then its remove batch, untimed.
 */
static int add_floor(struct filters *f, unsigned int m, struct sample *s,
		     char *err, size_t errlen)
{
	struct floor_batches *fb = &f->afb[a_phase(f, m)];
	double ms;
	int ret;

	ret = floor_replay(&f->e, fb, 0, 1, &s->ms);
	if (!ret)
		ret = floor_replay(&f->e, fb, 1, fb->n, &ms);
	if (ret) {
		snprintf(err, errlen, "sending libvnic's batches again: %s",
			 strerror(-ret));
		return ret;
	}
	snprintf(f->rows[m].note, sizeof(f->rows[m].note),
		 "the kernel's cost of libvnic's own add: its add batch (%zu bytes, captured untimed by the library's batch tap) sent again by the bench's socket, one sendmsg() to the last ack, after libvnic's runs and its handle closed; then its remove batch, untimed",
		 fb->v[0].len);
	return 0;
}

#define A_LIB(n, g, a)	{ .name = n, .group = g, .always = a, .result = true, \
			  .prepare = add_prepare, .run = add_run, \
			  .release = add_release }
#define A_PAIR(n, g, a)	{ .name = n, .group = g, .always = a, .result = true }
#define A_FL(n, g)	{ .name = n, .group = g, .always = true, .run = add_floor }
static const struct fmethod a_methods[A__MAX] = {
	A_LIB("libvnic-add-next-to-G", 2, true),
	A_LIB("libvnic-add-next-to-none", 0, true),
	A_PAIR("libvnic-remove-next-to-G", 2, true),
	A_PAIR("libvnic-remove-next-to-none", 0, true),
	{ .name = "kernel-hook-floor", .group = 2, .always = true,
	  .run = run_hook_floor },
	A_LIB("libvnic-prefix-add-next-to-G", 6, true),
	A_LIB("libvnic-prefix-add-next-to-none", 4, true),
	A_PAIR("libvnic-prefix-remove-next-to-G", 6, true),
	A_PAIR("libvnic-prefix-remove-next-to-none", 4, true),
	A_FL("floor-add-next-to-G", 3), A_FL("floor-add-next-to-none", 1),
	A_FL("floor-prefix-add-next-to-G", 7),
	A_FL("floor-prefix-add-next-to-none", 5),
	A_LIB("libvnic-bpf-add-next-to-G", 10, false),
	A_LIB("libvnic-bpf-add-next-to-none", 8, false),
	A_PAIR("libvnic-bpf-remove-next-to-G", 10, false),
	A_PAIR("libvnic-bpf-remove-next-to-none", 8, false),
};

static int add_setup(struct filters *f, char *err, size_t errlen)
{
	const struct bench_opts *o = f->e.o;
	unsigned int G = o->existing, m;

	for (m = 0; m < A__MAX; m++) {
		struct bench_row *r = &f->rows[m];

		r->existing = a_existing(f, a_phase(f, m));
	}
	for (m = A_ADD_G; m <= A_PFX; m += A_PFX) {
		f->rows[m].target.max_ms = TARGET_ADD_MS;
		f->rows[m].target.max_ratio = TARGET_ADD_X_EMPTY;
		f->rows[m].target.ratio_to = a_methods[m + A_ADD_NONE].name;
		f->rows[m].target.floor = a_methods[A_BF + (m ? 2 : 0)].name;
	}
	snprintf(f->rows[A_FLOOR].note, sizeof(f->rows[A_FLOOR].note),
		 "not libvnic: one raw nfnetlink batch creating a table and a base chain hooking the new guest's %u NICs, sendmsg to last ack (table deleted untimed): the kernel's cost of per-device hooks with %u netdevs in the namespace",
		 o->nics_per_guest, (G + 1) * o->nics_per_guest);
	return filt_policy(&f->e, G, 1, -1, &f->one, err, errlen);
}

static int settle(struct filters *f)
{
	usleep(f->e.o->settle_ms * 1000);
	return 0;
}

/* ---- restart ---- */

enum { R_OPEN, R_SYNC, R_OPEN_SYNC, R_SYNC_CHANGED, R_REAPPLY, R_XT,
       R_BPF = R_XT + XT__VARIANTS, R_FLOOR, R__MAX };

/* What a child reports through its pipe. */
struct child_out {
	int ret;
	char err[256];
	double open_ms, ms;
	struct vnic_filter_result res;
	uint32_t gen_open, gen0, gen1;	/* before open, before, after */
	bool have_gen;
};

/* JOB_CAPTURE: an untimed JOB_SYNC whose requests are kept (floor.c),
 * run by the bench itself; JOB_BPF: a JOB_SYNC by a bpf handle. */
enum child_job { JOB_SYNC, JOB_SYNC_CHANGED, JOB_REAPPLY, JOB_CAPTURE,
		 JOB_BPF };

/*
 * The restarted daemon: a new context, a new handle (in a new process but
 * for JOB_CAPTURE).  e->ctx and e->nfnl are the caller's to restore.
 */
static void restarted(struct filters *f, enum child_job job,
		      struct child_out *o)
{
	struct filt_env *e = &f->e;
	VNIC_OPTS(vnic_ctx_opts, copts, .owner = "vnicbench",
		  .flags = VNIC_CTX_NO_MONITOR);
	struct vnic_policy *p = NULL, *orig = NULL;
	struct child_out out;
	struct vnic_filter *h = NULL;
	uint64_t t0;

	memset(&out, 0, sizeof(out));
	out.res.sz = sizeof(out.res);
	e->ctx = NULL;
	e->nfnl = NULL;
	out.ret = vnic_ctx_new(&copts, &e->ctx);
	if (out.ret) {
		e->ctx = NULL;
		snprintf(out.err, sizeof(out.err), "vnic_ctx_new: %s",
			 vnic_strerror(out.ret));
		goto done;
	}
	out.ret = filt_policy(e, 0, e->o->guests,
			      job == JOB_SYNC_CHANGED ? 0 : -1, &p, out.err,
			      sizeof(out.err));
	if (!out.ret && job == JOB_SYNC_CHANGED)
		out.ret = filt_policy(e, 0, e->o->guests, -1, &orig, out.err,
				      sizeof(out.err));
	if (out.ret)
		goto done;
	out.have_gen = job != JOB_BPF && job != JOB_CAPTURE &&
		       filt_nfnl_open(e) == 0 && nfnl_genid(e, &out.gen_open) == 0;
	t0 = now_ns();
	out.ret = job == JOB_BPF ? bpf_open(e, &h, out.err, sizeof(out.err)) :
		  filt_open(e, false, &h, out.err, sizeof(out.err));
	out.open_ms = ms_since(t0);
	if (out.ret)
		goto done;
	/* Claiming the table is a write of its own: counted apart. */
	if (out.have_gen)
		out.have_gen = nfnl_genid(e, &out.gen0) == 0;
	if (job == JOB_CAPTURE)
		floor_capture(h, &f->floor[0]);
	t0 = now_ns();
	out.ret = job == JOB_REAPPLY ? vnic_filter_apply(h, p, &out.res) :
				       vnic_filter_sync(h, p, &out.res);
	out.ms = ms_since(t0);
	if (job == JOB_CAPTURE)
		floor_capture(h, NULL);
	if (out.ret) {
		bench_lib_fail(e->ctx, job == JOB_REAPPLY ? "vnic_filter_apply" : "vnic_filter_sync",
			 out.ret, out.err, sizeof(out.err));
		goto done;
	}
	if (out.have_gen)
		out.have_gen = nfnl_genid(e, &out.gen1) == 0;
	if (orig) {
		struct vnic_filter_result back = { .sz = sizeof(back) };

		/* Back to the state every run starts from, untimed. */
		out.ret = vnic_filter_sync(h, orig, &back);
		if (out.ret)
			bench_lib_fail(e->ctx, "vnic_filter_sync (back)", out.ret, out.err,
				 sizeof(out.err));
	}
done:
	if (h)
		vnic_filter_close(h);
	if (p)
		vnic_policy_free(p);
	if (orig)
		vnic_policy_free(orig);
	if (e->ctx)
		vnic_ctx_free(e->ctx);
	*o = out;
}

static void child(void *arg, int fd)
{
	struct filters *f = arg;
	struct child_out out;

	restarted(f, f->job, &out);
	bench_child_send(fd, &out, sizeof(out));
}

static int run_child(struct filters *f, enum child_job job,
		     struct child_out *out)
{
	struct bench_child c = { .run = child, .arg = f, .out = out,
				 .len = sizeof(*out) };

	f->job = job;
	return bench_child_result(&c, &out->ret, out->err, sizeof(out->err));
}

static void child_sample(struct bench_row *r, const struct child_out *c, double ms,
			 uint32_t gen_from, uint32_t gen_to, bool result)
{
	struct sample *s = bench_row_next(r);

	s->ms = ms;
	if (result)
		filt_take(s, &c->res);
	if (c->have_gen)
		s->genid_delta = (double)(gen_to - gen_from);
	r->runs++;
}

/* One new process of the job: its row, and for the unchanged sync the
 * open and the open + sync of the same process. */
static int restart_job(struct filters *f, unsigned int m, struct sample *s,
		       char *err, size_t errlen)
{
	enum child_job job = (enum child_job)f->m[m].arg;
	struct child_out c;
	int ret = run_child(f, job, &c);
	unsigned int i;

	if (ret) {
		snprintf(err, errlen, "%s", c.err);
		/* Its rows of the same process fail with it. */
		for (i = R_OPEN; job == JOB_SYNC && i <= R_OPEN_SYNC; i += 2)
			snprintf(f->rows[i].error, sizeof(f->rows[i].error),
				 "%s", c.err);
		return ret;
	}
	/* bpf: its open and sync, both timed. */
	s->ms = job == JOB_BPF ? c.open_ms + c.ms : c.ms;
	filt_take(s, &c.res);
	if (c.have_gen)
		s->genid_delta = (double)(c.gen1 - c.gen0);
	if (job == JOB_SYNC) {
		child_sample(&f->rows[R_OPEN], &c, c.open_ms, c.gen_open,
			     c.gen0, false);
		child_sample(&f->rows[R_OPEN_SYNC], &c, c.open_ms + c.ms,
			     c.gen_open, c.gen1, true);
	}
	return 0;
}

/*
 * The floor of the unchanged sync: the requests a sync of a new process
 * sends, kept by an untimed sync of a new context and handle in the bench
 * itself (the library keeps nothing between contexts), sent again by the
 * bench's socket, each to its last reply.
 */
static int restart_floor_capture(struct filters *f, unsigned int m,
				 char *err, size_t errlen)
{
	struct floor_batches *fb = &f->floor[0];
	struct vnic_ctx *ctx = f->e.ctx;
	struct mnl_socket *nfnl = f->e.nfnl;
	struct bench_row *r = &f->rows[m];
	unsigned int i, reads = 0;
	struct child_out c;
	size_t bytes = 0;

	fb->requests = true;
	restarted(f, JOB_CAPTURE, &c);
	f->e.ctx = ctx;
	f->e.nfnl = nfnl;
	if (c.ret || fb->err || !fb->n) {
		snprintf(err, errlen, "capturing libvnic's requests: %.200s",
			 c.ret ? c.err : fb->err ? "out of memory" : "none sent");
		return -EIO;
	}
	for (i = 0; i < fb->n; i++) {
		reads += fb->v[i].request;
		bytes += fb->v[i].len;
	}
	snprintf(r->note, sizeof(r->note),
		 "the kernel's cost of libvnic's unchanged sync: the %u requests (%u reads, %u batches; %zu bytes) a sync by a new context and handle sent, as a new process does (captured untimed by the library's tap), each sent again by the bench's socket, one sendmsg() each, to its last reply (unparsed)",
		 fb->n, reads, fb->n - reads, bytes);
	return 0;
}

static int restart_floor_run(struct filters *f, unsigned int m,
			     struct sample *s, char *err, size_t errlen)
{
	int ret = floor_replay(&f->e, &f->floor[0], 0, f->floor[0].n, &s->ms);

	if (ret)
		snprintf(err, errlen, "sending libvnic's requests again: %s",
			 strerror(-ret));
	return ret;
}

/* bpf: the guests installed by a bpf handle, which lets them go. */
static int restart_bpf_prepare(struct filters *f, unsigned int m, char *err,
			       size_t errlen)
{
	unsigned int batches, messages;
	int ret = bpf_open(&f->e, &f->h, err, errlen);

	if (!ret)
		ret = filt_install(&f->e, f->h, f->e.o->guests, &batches,
				   &messages, err, errlen);
	if (f->h)
		vnic_filter_close(f->h);
	f->h = NULL;
	return ret;
}

/* A new handle finds them all, and removes them (they go with the NICs
 * otherwise). */
static int restart_bpf_release(struct filters *f, unsigned int m)
{
	struct bench_row *r = &f->rows[m];
	struct vnic_filter *h;
	unsigned int found;
	size_t len = strlen(r->note);

	if (bpf_open(&f->e, &h, r->error, sizeof(r->error)))
		return 0;
	found = filt_count_guests(h);
	if (found != f->e.o->guests)
		snprintf(r->note + len, sizeof(r->note) - len,
			 "; after the runs a new handle found %u of the %u guests installed (its read-back of the NICs lost the rest): not removed, they go with the NICs",
			 found, f->e.o->guests);
	else
		filt_remove(&f->e, h, 0, found, NULL, r->error,
			    sizeof(r->error));
	vnic_filter_close(h);
	return 0;
}

/* xtables: after libvnic's rows, whose persisted table is flushed here. */
static int restart_xt_prepare(struct filters *f, unsigned int m, char *err,
			      size_t errlen)
{
	return reset_ruleset(&f->e, err, errlen) ?:
	       xt_restart_prepare(&f->e, m - R_XT, &f->xt[m - R_XT],
				  &f->rows[m]);
}

static int restart_xt_run(struct filters *f, unsigned int m,
			  struct sample *s, char *err, size_t errlen)
{
	return xt_restart_run(m - R_XT, &f->xt[m - R_XT], &f->rows[m], s);
}

static int restart_xt_release(struct filters *f, unsigned int m)
{
	struct bench_row *r = &f->rows[m];

	if (!xt_restart_release(&f->e, m - R_XT, &f->xt[m - R_XT]) &&
	    !r->error[0])
		reset_ruleset(&f->e, r->error, sizeof(r->error));
	return 0;
}

/* libvnic-open, libvnic-open+sync-unchanged: filled by the sync's run. */
#define R_LIB(n, j, r, nt)	{ .name = n, .always = true, .run = r, \
				  .arg = j, .result = true, .note = nt }
#define R_XT_ROW(n, g)	{ .name = n, .group = g, .needs = 'x', .arg = g - 2, \
			  .prepare = restart_xt_prepare, .run = restart_xt_run, \
			  .release = restart_xt_release, .result = true }
static const struct fmethod r_methods[R__MAX] = {
	/* Its genid_delta says whether re-claiming the table wrote. */
	[R_OPEN] = R_LIB("libvnic-open", 0, NULL,
		"vnic_filter_open of the persisted table in a new process; its genid_delta (JSON) counts the commit that re-claims the table"),
	[R_SYNC] = R_LIB("libvnic-sync-unchanged", JOB_SYNC, restart_job,
		"each run a new process: vnic_ctx_new, vnic_filter_open of the persisted table (row libvnic-open), vnic_filter_sync; genid_delta by the bench's own NFT_MSG_GETGEN around the sync (around the open in libvnic-open)"),
	[R_OPEN_SYNC] = R_LIB("libvnic-open+sync-unchanged", 0, NULL, NULL),
	[R_SYNC_CHANGED] = R_LIB("libvnic-sync-1-changed", JOB_SYNC_CHANGED,
		restart_job,
		"guest g0's first NIC has another IPv4; synced back untimed in the same process"),
	[R_REAPPLY] = R_LIB("libvnic-reapply-all", JOB_REAPPLY, restart_job,
		"the rebuild a daemon without a digest does: vnic_filter_apply of every guest onto the persisted table"),
	[R_XT + XT_LEGACY] = R_XT_ROW("xt-legacy-restore-all", 2),
	[R_XT + XT_NFT] = R_XT_ROW("xt-nft-restore-all", 3),
	[R_BPF] = { .name = "libvnic-bpf-open+sync-unchanged", .group = 1,
		    .prepare = restart_bpf_prepare, .run = restart_job,
		    .arg = JOB_BPF, .release = restart_bpf_release,
		    .result = true },
	[R_FLOOR] = { .name = "floor-sync-unchanged",
		      .prepare = restart_floor_capture,
		      .run = restart_floor_run },
};

static void restart_rows(struct filters *f)
{
	const struct bench_opts *o = f->e.o;
	struct bench_row *rows = f->rows;
	unsigned int m;

	for (m = 0; m < R__MAX; m++)
		rows[m].existing = o->guests;
	for (; m < f->n; m++)
		rproc_row(f->rp, m - R__MAX, &rows[m]);
	rows[R_SYNC].target.zero_writes = true;
	rows[R_SYNC].target.floor = r_methods[R_FLOOR].name;
	rows[R_BPF].target.zero_writes = true;
	/* The millisecond target is stated for 100 guests. */
	if (o->guests <= 100)
		rows[R_SYNC].target.max_ms = rows[R_BPF].target.max_ms =
			TARGET_RESTART_MS;
	snprintf(rows[R_BPF].note, sizeof(rows[R_BPF].note),
		 "each run a new process: vnic_ctx_new, vnic_filter_open with VNIC_BACKEND_BPF (adopting the programs and maps through the kernel, no bpffs: one walk of the loaded programs by id, then their maps by id), vnic_filter_sync of the unchanged %u guests; both timed",
		 o->guests);
}

/* Install the state every run restarts from, and let the table go. */
static int restart_setup(struct filters *f, char *err, size_t errlen)
{
	unsigned int tables = 0, batches, messages;
	struct bench_row *row = &f->rows[R_SYNC];
	struct vnic_filter *h;
	uint64_t t0;
	int ret;

	restart_rows(f);
	ret = filt_open(&f->e, false, &h, err, errlen);
	if (ret)
		return ret;
	t0 = now_ns();
	ret = filt_install(&f->e, h, f->e.o->guests, &batches, &messages, err,
			   errlen);
	if (!ret)
		snprintf(row->note + strlen(row->note),
			 sizeof(row->note) - strlen(row->note),
			 "; installed first (untimed, %u guests per vnic_filter_apply): %.1f ms; kernel features 0x%x",
			 FILT_SETUP_CHUNK, ms_since(t0), vnic_filter_features(h));
	vnic_filter_close(h);
	if (!ret)
		ret = nfnl_count_tables(&f->e, &tables);
	if (!ret && !tables) {
		snprintf(err, errlen,
			 "the table did not outlive its handle (persist flag?): nothing to restart from");
		ret = -ENOENT;
	}
	return ret;
}

/* restart's rows of new vnicctl processes (restart_proc.c): a group per
 * size and hook mode, after the rows of its own. */
static int proc_prepare(struct filters *f, unsigned int m, char *err,
			size_t errlen)
{
	return rproc_prepare(f->rp, m - R__MAX, err, errlen);
}

static int proc_run(struct filters *f, unsigned int m, struct sample *s,
		    char *err, size_t errlen)
{
	return rproc_run(f->rp, m - R__MAX, s, err, errlen);
}

static int proc_release(struct filters *f, unsigned int m)
{
	rproc_release(f->rp);
	return 0;
}

/* Ordered as the rows of a group were written: each starts from A. */
static int proc_methods(struct filters *f)
{
	unsigned int n, i;
	int ret = rproc_new(f->e.o, &f->rp, &n);

	if (ret || !n)
		return ret;
	f->own = calloc(R__MAX + n, sizeof(*f->own));
	if (!f->own)
		return -ENOMEM;
	memcpy(f->own, r_methods, sizeof(r_methods));
	for (i = 0; i < n; i++)
		f->own[R__MAX + i] = (struct fmethod){
			.name = rproc_name(f->rp, i), .group = 4 + i / RP_ROWS,
			.always = true, .ordered = true, .prepare = proc_prepare,
			.run = proc_run, .release = proc_release };
	f->m = f->own;
	f->n = R__MAX + n;
	return 0;
}

static int restart_report(struct filters *f, struct report_env *re)
{
	if (f->rp)
		rproc_notes(f->rp, f->rows + R__MAX);
	return report_rows(re, f->rows, f->n, f->e.o->json) ? 1 : 0;
}

/* ---- the three scenarios ---- */

static unsigned int guests_of(const struct bench_opts *o)
{
	return !strcmp(o->scenario, "filters-add") ? o->existing + 1 : o->guests;
}

static const struct fscn fscns[] = {
	{ "filters", fmethods, F__MAX, filters_setup, filters_after,
	  { "libvnic", "nft-f" }, { "x_libvnic", "x_nft-f" }, filters_report },
	{ "filters-add", a_methods, A__MAX, add_setup, settle,
	  { "libvnic-add-next-to-none" }, { "x_none" }, NULL },
	{ "restart", r_methods, R__MAX, restart_setup, settle,
	  { "libvnic-reapply-all", "floor-sync-unchanged" },
	  { "x_reapply", "x_floor" }, restart_report },
};

static void filters_free(struct filters *f)
{
	unsigned int m;

	if (!f->e.o->keep_files) {
		for (m = 0; m < 4; m++)
			if (f->path[m][0])
				unlink(f->path[m]);
	} else if (!f->e.o->json && f->path[0][0]) {
		fprintf(stderr, "kept: %s (rendered) %s (per-guest chains)\n",
			f->path[0], f->path[1]);
	}
	for (m = 0; m < XT__VARIANTS; m++) {
		if (!f->e.o->keep_files)
			xt_set_unlink(&f->xt[m]);
		xt_set_free(&f->xt[m]);
	}
	stmt_free(&f->stmts);
	for (m = 0; m < 2; m++)
		floor_free(&f->floor[m]);
	for (m = 0; m < 4; m++)
		floor_free(&f->afb[m]);
	free(f->text);
	if (f->h)
		vnic_filter_close(f->h);
	if (f->p)
		vnic_policy_free(f->p);
	if (f->one)
		vnic_policy_free(f->one);
	for (m = 0; f->rows && m < f->n; m++)
		bench_row_free(&f->rows[m]);
	free(f->rows);
	free(f->own);
	rproc_free(f->rp);
	filt_env_free(&f->e);
}

static int run_scn(const struct fscn *sc, const struct bench_opts *o,
		   struct report_env *re)
{
	struct filters f = { .sc = sc };
	char err[256] = "";
	unsigned int m;
	int ret;

	f.e.o = o;
	f.m = sc->m;
	f.n = sc->n;
	ret = sc->m == r_methods ? proc_methods(&f) : 0;
	f.rows = calloc(f.n, sizeof(*f.rows));
	if (!ret)
		ret = f.rows ? filt_env_setup(&f.e, o, guests_of(o) *
					      o->nics_per_guest) : -ENOMEM;
	for (m = 0; f.rows && m < f.n; m++) {
		bench_row_init(&f.rows[m], f.m[m].name, o->runs);
		f.rows[m].has_result = f.m[m].result;
		if (f.m[m].note)
			snprintf(f.rows[m].note, sizeof(f.rows[m].note), "%s",
				 f.m[m].note);
		if (!f.m[m].always && !bench_in_list(o->methods, f.m[m].name))
			f.rows[m].skip = "not selected (--methods)";
		else if (f.m[m].needs)
			f.rows[m].skip = f.m[m].needs == 'x' ?
					 xt_skip(f.m[m].arg) : (f.e.nft_path[0] ? NULL : FILT_NFT_MISSING);
	}
	if (!ret)
		ret = sc->setup(&f, err, sizeof(err));
	if (!ret)
		ret = methods_run(&f);
	re->ratio_a = sc->ratio[0];
	re->ratio_b = sc->ratio[1];
	re->label_a = sc->label[0];
	re->label_b = sc->label[1];
	if (ret)
		ret = setup_failed(o, f.rows, f.n, err, ret);
	else if (sc->report)
		ret = sc->report(&f, re);
	else
		ret = report_rows(re, f.rows, f.n, o->json) ? 1 : 0;
	filters_free(&f);
	return ret;
}

static int run(const struct bench_opts *o)
{
	struct report_env re;
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret;

	for (i = 0; strcmp(fscns[i].name, o->scenario); i++)
		;
	report_env_init(&re, o, !strcmp(o->scenario, "filters-add") ? 1 :
				 o->guests, !strcmp(o->scenario, "restart") ?
				 o->guests : o->existing);
	report_header(&re, o->json);
	ret = run_scn(&fscns[i], o, &re);
	if (!o->json)
		fprintf(stderr, "total %.1f s, NICs deleted\n",
			ms_since(t0) / 1000.0);
	return ret;
}

static void defaults(struct bench_opts *o)
{
	o->nics_per_guest = FILT_DEFAULT_NICS_PER_GUEST;
	o->kind = VNIC_KIND_MACVLAN;
	o->stmt_sample = FILT_DEFAULT_STMT_SAMPLE;
	o->guests = !strcmp(o->scenario, "restart") ?
		    FILT_DEFAULT_RESTART_GUESTS : FILT_DEFAULT_GUESTS;
	if (!strcmp(o->scenario, "filters-add"))
		o->existing = FILT_DEFAULT_EXISTING;
	o->proc_guests = "100,1000,5000";
}

static int check(struct bench_opts *o)
{
	if ((unsigned long)guests_of(o) * o->nics_per_guest >
	    BENCH_MAX_FILTER_NICS) {
		fprintf(stderr, "vnic-bench: at most %u NICs\n",
			BENCH_MAX_FILTER_NICS);
		return -EINVAL;
	}
	return restart_proc_check(o);
}

#define FILT_OPTS	(O_NPG | O_RUNS | O_KIND | O_SETTLE | O_KEEP | O_OUT | \
			 O_JSON | O_METHODS)
#define FILT_KINDS	(KBIT(MACVLAN) | KBIT(MACVTAP) | KBIT(VETH))
#define FILT_SCENARIO(n, u, o)						\
	{ .name = n, .usage = u, .opts = FILT_OPTS | (o),		\
	  .kinds = FILT_KINDS, .defaults = defaults, .check = check,	\
	  .run = run }

const struct scenario scn_filters = FILT_SCENARIO("filters",
	"filters [--guests G] [--nics-per-guest K] [--runs R] [--json]\n"
	"        [--methods floor,libvnic,floor-prefix,libvnic-prefix,\n"
	"                   libvnic-table,libvnic-prefix-table,\n"
	"                   nft-f,nft-f-split,nft-per-stmt,nft-f-chains,\n"
	"                   kernel-hook-floor,floor-bpf,libvnic-bpf,\n"
	"                   floor-bpf-remove-all,libvnic-bpf-remove-all,\n"
	"                   xt-legacy-restore,xt-nft-restore,\n"
	"                   xt-legacy-per-rule,xt-nft-per-rule]\n"
	"        [--stmt-sample N]\n"
	"  G guests (default 1000) x K NICs (default 4) with a clean-traffic\n"
	"  policy (MAC, one IPv4, one IPv6 per NIC), one batch, by libvnic,\n"
	"  by the very batch libvnic sends, pre-encoded (floor), by nft -f of\n"
	"  the same text, by one nft process per statement (over --stmt-sample\n"
	"  items, default 200: the structure in full, that many items from the\n"
	"  middle timed, the rest EXTRAPOLATED), by the per-guest-chain layout,\n"
	"  and the kernel's cost of the hooks alone; *-prefix: hooked by name\n"
	"  prefix (Linux 6.17); *-table: on a context whose link table is\n"
	"  built, which finds the NICs without SIOCGIFINDEX; *-bpf: the tc\n"
	"  eBPF backend, its apply and its remove of every guest, each next\n"
	"  to its pre-encoded floor; xt-*: an equivalent iptables/ip6tables/\n"
	"  arptables ruleset (one chain per NIC, see\n"
	"  Documentation/benchmarks.rst) by *-restore and by one process\n"
	"  per rule (sampled as nft-per-stmt)\n",
	O_GUESTS | O_STMT_SAMPLE);
const struct scenario scn_filters_add = FILT_SCENARIO("filters-add",
	"filters-add [--existing G] [--nics-per-guest K] [--runs R] [--json]\n"
	"  One guest added next to G installed (default 10000) and next to\n"
	"  none; makes (G+1)*K NICs first (about 10 s for 40,000)\n",
	O_EXISTING);
const struct scenario scn_restart = FILT_SCENARIO("restart",
	"restart [--guests G] [--nics-per-guest K] [--runs R] [--json]\n"
	"  G installed guests (default 100); a new process re-opens the\n"
	"  persisted table and syncs the unchanged state, and one change;\n"
	"  [--proc-guests N,N,...] (default 100,1000,5000; none: skip): at each\n"
	"  size, hooks by name and by prefix, vnicctl filter sync as a new\n"
	"  process: full apply, unchanged, 10/50/100% changed, a set flushed;\n"
	"  the anchor nft -f of vnicctl filter render\n"
	"  (filters, filters-add, restart: [--kind macvlan|macvtap|veth]\n"
	"   [--settle MS] [--keep-files] [--out DIR])\n",
	O_GUESTS | O_PROC);
