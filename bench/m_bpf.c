// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The libvnic-bpf rows of the filter scenarios: the same policies through
 * vnic_filter_open with VNIC_BACKEND_BPF.  The nft rows end each run with
 * a ruleset flush; the bpf backend's state lives on the NICs (clsact
 * qdiscs, cls_bpf filters holding the programs and their maps), so these
 * rows end theirs by removing every guest through the library (untimed),
 * which takes the qdiscs off again: every run starts from bare NICs.
 *
 * No floor row: the batch tap that gives the nft rows theirs
 * (vnic_filter_set_batch_tap) refuses the bpf backend, and a floor of
 * the bench's own would have to encode cls_bpf filters around the
 * library's program fds and replay its map writes; said in the notes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filters.h"

int bpf_open(struct filt_env *e, struct vnic_filter **h, char *err,
	     size_t errlen)
{
	/* 0: the backend's default capacity (4096 NICs). */
	VNIC_OPTS(vnic_filter_opts, opts, .backend = VNIC_BACKEND_BPF,
		  .capacity = e->nnics > 4096 ? e->nnics : 0);
	int ret = vnic_filter_open(e->ctx, &opts, h);

	if (ret) {
		*h = NULL;
		return bench_lib_fail(e->ctx, "vnic_filter_open (bpf)", ret,
				      err, errlen);
	}
	return 0;
}

static void take(struct sample *s, const struct vnic_filter_result *res)
{
	s->writes = res->writes;
	s->messages = res->messages;
	s->batches = res->batches;
	s->changed = res->guests_changed;
}

/* Guests [first, first + count) out in one change; s: timed into it. */
static int remove_guests(struct filt_env *e, struct vnic_filter *h,
			 unsigned int first, unsigned int count,
			 struct sample *s, char *err, size_t errlen)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	char (*buf)[32] = calloc(count ? count : 1, sizeof(*buf));
	const char **names = calloc(count ? count : 1, sizeof(*names));
	unsigned int i;
	uint64_t t0;
	int ret;

	if (!buf || !names) {
		free(buf);
		free(names);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < count; i++) {
		filt_guest_name(first + i, buf[i]);
		names[i] = buf[i];
	}
	t0 = now_ns();
	ret = vnic_filter_remove(h, names, count, &res);
	if (s) {
		s->ms = ms_since(t0);
		take(s, &res);
	}
	if (ret)
		bench_lib_fail(e->ctx, "vnic_filter_remove (bpf)", ret, err,
			       errlen);
	free(buf);
	free(names);
	return ret;
}

int bpf_apply_row(struct filt_env *e, const struct vnic_policy *p,
		  unsigned int guests, bool time_remove, struct sample *s,
		  char *err, size_t errlen)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	struct sample scratch;
	struct vnic_filter *h;
	uint64_t t0;
	int ret, rret;

	ret = bpf_open(e, &h, err, errlen);
	if (ret)
		return ret;
	t0 = now_ns();
	ret = vnic_filter_apply(h, p, &res);
	if (!time_remove) {
		s->ms = ms_since(t0);
		if (!ret)
			take(s, &res);
	}
	if (ret)
		bench_lib_fail(e->ctx, "vnic_filter_apply (bpf)", ret, err,
			       errlen);
	/* Bare NICs again (a failed apply left nothing): timed or not. */
	rret = ret ? 0 : remove_guests(e, h, 0, guests,
				       time_remove ? s : &scratch, err, errlen);
	vnic_filter_close(h);
	return ret ?: rret;
}

/* Guests [0, count) in chunks of FILT_SETUP_CHUNK, untimed. */
static int install(struct filt_env *e, struct vnic_filter *h,
		   unsigned int count, char *err, size_t errlen)
{
	unsigned int first, n;
	int ret = 0;

	for (first = 0; first < count && !ret; first += n) {
		struct vnic_policy *p;

		n = count - first < FILT_SETUP_CHUNK ? count - first :
						       FILT_SETUP_CHUNK;
		progress("bpf: installing guests %u/%u (untimed)", first, count);
		ret = filt_policy(e, first, n, -1, &p, err, errlen);
		if (ret)
			break;
		ret = vnic_filter_apply(h, p, NULL);
		if (ret)
			bench_lib_fail(e->ctx, "vnic_filter_apply (bpf setup)",
				       ret, err, errlen);
		vnic_policy_free(p);
	}
	return ret;
}

static int add_remove(struct filt_env *e, struct vnic_filter *h,
		      const struct vnic_policy *one, unsigned int g,
		      struct bench_row *add, struct bench_row *rm)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	struct sample *s = bench_row_next(add);
	uint64_t t0 = now_ns();
	int ret = vnic_filter_apply(h, one, &res);

	s->ms = ms_since(t0);
	if (ret)
		return bench_lib_fail(e->ctx, "vnic_filter_apply (bpf)", ret,
				      add->error, sizeof(add->error));
	take(s, &res);
	add->runs++;
	ret = remove_guests(e, h, g, 1, bench_row_next(rm), rm->error,
			    sizeof(rm->error));
	if (!ret)
		rm->runs++;
	return ret;
}

int bpf_add_phase(struct filt_env *e, const struct vnic_policy *one,
		  unsigned int one_g, unsigned int existing, struct bench_row *add,
		  struct bench_row *rm)
{
	struct vnic_filter *h;
	unsigned int run;
	uint64_t t0;
	int ret;

	add->existing = rm->existing = existing;
	add->has_result = rm->has_result = true;
	if (add->skip)
		return 0;
	ret = bpf_open(e, &h, add->error, sizeof(add->error));
	if (ret)
		return 0;	/* the row's own failure */
	t0 = now_ns();
	ret = install(e, h, existing, add->error, sizeof(add->error));
	if (!ret && existing)
		snprintf(add->note, sizeof(add->note),
			 "%u existing guests installed first by the bpf backend (untimed, %u guests per vnic_filter_apply): %.1f ms",
			 existing, FILT_SETUP_CHUNK, ms_since(t0));
	/* Warm-up, untimed: the first add of a handle. */
	if (!ret) {
		struct bench_row wa, wr;

		bench_row_init(&wa, "warm", 1);
		bench_row_init(&wr, "warm", 1);
		ret = add_remove(e, h, one, one_g, &wa, &wr);
		if (ret)
			snprintf(add->error, sizeof(add->error), "warm-up: %.200s",
				 wa.error[0] ? wa.error : wr.error);
		bench_row_free(&wa);
		bench_row_free(&wr);
	}
	for (run = 0; run < e->o->runs && !ret; run++) {
		progress("%s run %u/%u", add->method, run + 1, e->o->runs);
		ret = add_remove(e, h, one, one_g, add, rm);
		usleep(e->o->settle_ms * 1000);
	}
	/* Bare NICs for the next phase; failing that, the bench stops. */
	if (existing) {
		char err[256] = "";

		if (remove_guests(e, h, 0, existing, NULL, err, sizeof(err))) {
			if (!add->error[0])
				snprintf(add->error, sizeof(add->error), "%s", err);
			vnic_filter_close(h);
			return -EIO;
		}
	}
	vnic_filter_close(h);
	return 0;
}

/* ---- restart ---- */

struct bpf_child {
	int ret;
	char err[240];
	double ms;
	struct vnic_filter_result res;
};

/* A new process: a new context, a new bpf handle, a sync of the state. */
static void restart_child(void *arg, int fd)
{
	VNIC_OPTS(vnic_ctx_opts, copts, .owner = "vnicbench",
		  .flags = VNIC_CTX_NO_MONITOR);
	struct bpf_child out = { .res = { .sz = sizeof(out.res) } };
	struct vnic_policy *p = NULL;
	struct vnic_filter *h = NULL;
	struct filt_env *e = arg;
	uint64_t t0;

	e->ctx = NULL;
	out.ret = vnic_ctx_new(&copts, &e->ctx);
	if (!out.ret)
		out.ret = filt_policy(e, 0, e->o->guests, -1, &p, out.err,
				      sizeof(out.err));
	t0 = now_ns();
	if (!out.ret)
		out.ret = bpf_open(e, &h, out.err, sizeof(out.err));
	if (!out.ret) {
		out.ret = vnic_filter_sync(h, p, &out.res);
		if (out.ret)
			bench_lib_fail(e->ctx, "vnic_filter_sync (bpf)", out.ret,
				       out.err, sizeof(out.err));
	}
	out.ms = ms_since(t0);
	if (h)
		vnic_filter_close(h);
	bench_child_send(fd, &out, sizeof(out));
}

static int restart_once(struct filt_env *e, struct bench_row *r)
{
	struct bpf_child c;
	struct bench_child bc = { .run = restart_child, .arg = e, .out = &c,
				  .len = sizeof(c) };
	struct sample *s;
	int ret = bench_child_result(&bc, &c.ret, c.err, sizeof(c.err));

	if (ret) {
		snprintf(r->error, sizeof(r->error), "%s", c.err);
		return ret;
	}
	s = bench_row_next(r);
	take(s, &c.res);
	s->ms = c.ms;
	r->runs++;
	return 0;
}

static unsigned int count_guests(struct vnic_filter *h)
{
	unsigned int n = 0;
	char **names;

	if (vnic_filter_guests(h, &names, &n))
		return 0;
	free(names);
	return n;
}

void bpf_restart_row(struct filt_env *e, struct bench_row *r)
{
	struct vnic_filter *h;
	unsigned int run, found;

	r->existing = e->o->guests;
	r->has_result = true;
	r->target.zero_writes = true;
	if (e->o->guests <= 100)
		r->target.max_ms = TARGET_RESTART_MS;
	if (r->skip || bpf_open(e, &h, r->error, sizeof(r->error)))
		return;
	if (!install(e, h, e->o->guests, r->error, sizeof(r->error))) {
		vnic_filter_close(h);
		h = NULL;
		for (run = 0; run < e->o->runs; run++) {
			progress("%s run %u/%u", r->method, run + 1, e->o->runs);
			if (restart_once(e, r))
				break;
			usleep(e->o->settle_ms * 1000);
		}
		snprintf(r->note, sizeof(r->note),
			 "each run a new process: vnic_ctx_new, vnic_filter_open with VNIC_BACKEND_BPF (adopting the programs and maps through the kernel: filter dump, program id, map ids), vnic_filter_sync of the unchanged %u guests; both timed",
			 e->o->guests);
		if (bpf_open(e, &h, r->error, sizeof(r->error)))
			return;
	}
	found = count_guests(h);
	if (found != e->o->guests)
		snprintf(r->note + strlen(r->note),
			 sizeof(r->note) - strlen(r->note),
			 "; after the runs a new handle found %u of the %u guests installed (its read-back of the NICs lost the rest): not removed, they go with the NICs",
			 found, e->o->guests);
	else
		remove_guests(e, h, 0, e->o->guests, NULL, r->error,
			      sizeof(r->error));
	vnic_filter_close(h);
}
