// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The "guest" scenario: one guest's NICs, made by each method in turn.
 *
 * Runs are the outer loop and methods the inner one, so that a drift of
 * the machine over the bench (page cache, the other core's load) spreads
 * over every method instead of landing on the last ones.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static const struct method *const methods[] = {
	&method_floor,
	&method_floor_tagged,
	&method_libvnic_kernel,
	&method_libvnic_cache,
	&method_libvnic_explicit,
	&method_ip_link_add,
	&method_ip_batch,
	&method_ioctl_probe,
	&method_cni_macvlan,
};

#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

/* Whether name is one of list's comma-separated words (NULL: all are). */
static bool selected(const struct bench_opts *o, const char *name)
{
	return bench_in_list(o->methods, name);
}

/* All-or-nothing means all: every NIC must be there after success... */
static int check_created(struct guest_env *e, const struct method *m,
			 struct result *res)
{
	unsigned int want = e->o->nics * env_links_per_nic(e->o), got, here;
	int ret = env_count_new(e, &here);

	/* A method that puts its NICs elsewhere counts them there, and
	 * must leave nothing behind here. */
	if (!ret && m->count && here) {
		snprintf(res->error, sizeof(res->error),
			 "%u links left in the bench's namespace", here);
		return -EPROTO;
	}
	got = here;
	if (!ret && m->count)
		ret = m->count(e, &got);
	if (ret || got == want)
		return ret;
	snprintf(res->error, sizeof(res->error),
		 "reported success but %u links were created, not %u", got,
		 want);
	return -EPROTO;
}

/* ...and nothing after a failure: a leak here is a rollback bug. */
static void check_rolled_back(struct guest_env *e, const struct method *m)
{
	unsigned int got;

	if (m->libvnic && env_count_new(e, &got) == 0 && got)
		fprintf(stderr,
			"vnic-bench: %s: the failed create left %u links behind\n",
			m->name, got);
}

/* One timed run; a method's failure ends its runs, a failed restore all. */
static int run_once(struct guest_env *e, const struct method *m,
		    struct result *res, bool *fatal)
{
	struct sample *s = &res->samples[res->runs];
	unsigned int deleted = 0;
	uint64_t t0;
	int ret;

	sample_init(s);
	e->run = res->runs;
	e->destroy_ms = NAN;
	ret = m->run(e, s, res->error, sizeof(res->error));
	if (ret)
		check_rolled_back(e, m);
	else
		ret = check_created(e, m, res);
	if (m->release)
		m->release(e);
	s->destroy_ms = e->destroy_ms;
	if (!ret)
		res->runs++;
	t0 = now_ns();
	*fatal = env_restore(e, &deleted) != 0;
	s->cleanup_ms = ms_since(t0);
	/* Unregistering leaves work behind (RCU callbacks, kobject and
	 * /dev/tapN release in kworkers); on two cores it would run inside
	 * the next method's timing. */
	usleep(e->o->settle_ms * 1000);
	if (!ret && m->libvnic && deleted && e->run == 0)
		fprintf(stderr,
			"vnic-bench: %s: vnic_guest_destroy left %u links behind\n",
			m->name, deleted);
	return ret;
}

static void init_results(const struct guest_env *e, struct result *res,
			 unsigned int *nres)
{
	unsigned int i;

	*nres = 0;
	for (i = 0; i < NMETHODS; i++) {
		struct result *r = &res[*nres];

		if (!selected(e->o, methods[i]->name))
			continue;
		memset(r, 0, sizeof(*r));
		r->method = methods[i]->name;
		r->libvnic = methods[i]->libvnic;
		r->skip = methods[i]->skip ? methods[i]->skip(e) : NULL;
		r->samples = calloc(e->o->runs, sizeof(*r->samples));
		if (!r->samples)
			snprintf(r->error, sizeof(r->error), "out of memory");
		(*nres)++;
	}
}

static const struct method *method_of(const struct result *r)
{
	unsigned int i;

	for (i = 0; i < NMETHODS; i++)
		if (!strcmp(methods[i]->name, r->method))
			return methods[i];
	return NULL;
}

/*
 * One untimed floor first: the first creation in a fresh namespace pays
 * for slab caches and sysfs directories that every later one finds ready,
 * and would otherwise land in run 1 of whichever method comes first.
 */
int bench_warm_up(struct guest_env *e)
{
	struct sample s;
	unsigned int deleted;
	char err[256];

	sample_init(&s);
	if (method_floor.run(e, &s, err, sizeof(err)))
		fprintf(stderr, "vnic-bench: warm-up: %s\n", err);
	method_floor.release(e);
	return env_restore(e, &deleted);
}

struct loop {
	struct guest_env *e;
	struct result *res;
};

static const char *active(void *ctx, unsigned int i)
{
	const struct result *r = &((struct loop *)ctx)->res[i];

	return r->skip || r->error[0] ? NULL : r->method;
}

/* A failed restore ends everything. */
static int once(void *ctx, unsigned int i, unsigned int run)
{
	struct loop *l = ctx;
	struct result *r = &l->res[i];
	bool fatal = false;

	if (run_once(l->e, method_of(r), r, &fatal))
		fprintf(stderr, "vnic-bench: %s: %s\n", r->method, r->error);
	return fatal ? -EIO : 0;
}

static int run_all(struct guest_env *e, struct result *res, unsigned int nres)
{
	struct loop l = { e, res };
	struct bench_loop bl = { .runs = e->o->runs, .n = nres, .ctx = &l,
				 .active = active, .once = once };

	return bench_warm_up(e) ? -EIO : bench_rotate(&bl);
}

static int run(const struct bench_opts *o)
{
	struct result res[NMETHODS];
	struct report_env re;
	struct guest_env e;
	unsigned int nres, i;
	uint64_t t0;
	const char *names[NMETHODS];
	int ret;

	for (i = 0; i < NMETHODS; i++)
		names[i] = methods[i]->name;
	if (bench_check_methods(o->methods, names, NMETHODS))
		return 2;
	report_env_init(&re, "guest", o);
	report_header(&re, o->json);
	t0 = now_ns();
	ret = env_setup(&e, o);
	if (ret) {
		fprintf(stderr, "vnic-bench: setup: %s\n", strerror(-ret));
		env_free(&e);
		return 1;
	}
	if (!o->json)
		fprintf(stderr, "baseline: %u links (%u existing), set up in %.0f ms\n",
			e.base.n, o->existing, ms_since(t0));
	init_results(&e, res, &nres);
	ret = run_all(&e, res, nres);
	if (!ret)
		ret = report_results(&re, res, nres, o->json);
	else
		fprintf(stderr, "vnic-bench: aborted: the baseline could not be restored\n");
	for (i = 0; i < nres; i++)
		free(res[i].samples);
	t0 = now_ns();
	env_free(&e);
	if (!o->json)
		fprintf(stderr, "baseline deleted in %.0f ms\n", ms_since(t0));
	return ret ? 1 : 0;
}

static void defaults(struct bench_opts *o)
{
	o->kind = VNIC_KIND_MACVTAP;
}

static int check(struct bench_opts *o)
{
	if (!o->nics) {
		fprintf(stderr, "vnic-bench: --nics is required\n");
		return -EINVAL;
	}
	if (o->existing > BENCH_MAX_NICS) {
		fprintf(stderr, "vnic-bench: --existing: at most %u\n",
			BENCH_MAX_NICS);
		return -EINVAL;
	}
	return 0;
}

const struct scenario scn_guest = {
	.name = "guest",
	.usage =
		"guest --nics N [--kind macvtap|macvlan|veth|tap] [--existing N]\n"
		"      [--runs R] [--json] [--up] [--settle MS] [--fill-lower same|other]\n"
		"      [--methods floor,libvnic-kernel,...] [--out DIR]\n"
		"  Creates one guest's N NICs with each method, R times, and reports\n"
		"  medians next to the kernel floor.\n"
		"  Methods: floor floor-tagged libvnic-kernel libvnic-cache\n"
		"           libvnic-explicit ip-link-add ip-batch ioctl-probe\n"
		"           cni-macvlan (--kind macvlan: the CNI plugin, one exec per\n"
		"           NIC into a target netns, as container runtimes do)\n"
		"  --existing N  start every run next to N macvlans (e.g. 4000)\n"
		"  --fill-lower same|other  the existing macvlans sit on the NICs'\n"
		"                lower (default) or on another device\n"
		"  --up          bring every NIC up, in every method\n"
		"  --settle MS   idle after each untimed cleanup (default 50)\n",
	.opts = O_NICS | O_KIND | O_EXISTING | O_RUNS | O_JSON | O_UP |
		O_SETTLE | O_FILL | O_METHODS | O_OUT,
	.kinds = KBIT(MACVTAP) | KBIT(MACVLAN) | KBIT(VETH) | KBIT(TAP),
	.defaults = defaults,
	.check = check,
	.run = run,
};
