// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The public filter API (include/vnic/filter.h): one contract, two
 * backends.  A handle holds the backend's own handle and a table of its
 * operations; every call checks what is common and passes the rest on.
 * Options that belong to the other backend are refused, never ignored.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <vnic/filter.h>

#include "lib/internal.h"
#include "lib/testing.h"
#include "nft/nft.h"

/* The backends fill the same result struct under two names. */
/* The nft flags pass through as they are. */
_Static_assert((unsigned int)VNIC_FILTER_NO_OWNER == VNIC_NFT_NO_OWNER &&
	       (unsigned int)VNIC_FILTER_NO_PERSIST == VNIC_NFT_NO_PERSIST &&
	       (unsigned int)VNIC_FILTER_READ_ONLY == VNIC_NFT_READ_ONLY &&
	       (unsigned int)VNIC_FILTER_CLAIM_AT_COMMIT == VNIC_NFT_CLAIM_AT_COMMIT,
	       "vnic_filter_flags and vnic_nft_flags differ");
_Static_assert(sizeof(struct vnic_filter_result) == sizeof(struct vnic_nft_result),
	       "result layouts");
_Static_assert(offsetof(struct vnic_filter_result, writes) ==
	       offsetof(struct vnic_nft_result, writes), "result layouts");
_Static_assert(offsetof(struct vnic_filter_result, genid) ==
	       offsetof(struct vnic_nft_result, genid), "result layouts");
_Static_assert(offsetof(struct vnic_filter_result, repaired) ==
	       offsetof(struct vnic_nft_result, repaired), "result layouts");
_Static_assert(sizeof(struct vnic_filter_diff) == sizeof(struct vnic_nft_diff) &&
	       offsetof(struct vnic_filter_diff, removed) ==
	       offsetof(struct vnic_nft_diff, removed), "diff layouts");

#define RES(r) ((struct vnic_nft_result *)(r))

#define FILTER_FLAGS	(VNIC_FILTER_NO_OWNER | VNIC_FILTER_NO_PERSIST |	\
			 VNIC_FILTER_READ_ONLY | VNIC_FILTER_TCX |		\
			 VNIC_FILTER_CLAIM_AT_COMMIT)

struct filter_ops {
	void (*close)(void *h);
	uint32_t (*features)(const void *h);
	int (*apply)(void *h, const struct vnic_policy *p, struct vnic_filter_result *r);
	int (*sync)(void *h, const struct vnic_policy *p, struct vnic_filter_result *r);
	int (*remove)(void *h, const char *const *g, unsigned int n,
		      struct vnic_filter_result *r);
	int (*guests)(void *h, char ***names, unsigned int *count);
	int (*counter)(void *h, const char *g, uint64_t *pk, uint64_t *by);
	int (*render)(void *h, const struct vnic_policy *p, char **text);
	/* commit: 0 for a diff, 1 for a sync that reports its differences */
	int (*diff)(void *h, const struct vnic_policy *p, vnic_filter_diff_fn fn,
		    void *arg, struct vnic_filter_result *r, int commit);
};

struct vnic_filter {
	enum vnic_backend backend;
	struct vnic_ctx *ctx;
	const struct filter_ops *ops;
	void *h;
};

/* --- nft ------------------------------------------------------------------ */

static void nft_close(void *h) { vnic_nft_close(h); }
static uint32_t nft_features(const void *h) { return vnic_nft_features(h); }
static int nft_apply(void *h, const struct vnic_policy *p, struct vnic_filter_result *r)
{
	return vnic_nft_apply(h, p, RES(r));
}
static int nft_sync(void *h, const struct vnic_policy *p, struct vnic_filter_result *r)
{
	return vnic_nft_sync(h, p, RES(r));
}
static int nft_remove(void *h, const char *const *g, unsigned int n,
		      struct vnic_filter_result *r)
{
	return vnic_nft_remove(h, g, n, RES(r));
}
static int nft_guests(void *h, char ***names, unsigned int *count)
{
	return vnic_nft_guests(h, names, count);
}
static int nft_counter(void *h, const char *g, uint64_t *pk, uint64_t *by)
{
	return vnic_nft_counter(h, g, pk, by);
}
static int nft_render(void *h, const struct vnic_policy *p, char **text)
{
	return vnic_nft_render(h, p, text);
}

/* The caller's callback, seen through nft's diff type (same layout). */
struct diff_tramp {
	vnic_filter_diff_fn fn;
	void *arg;
};

static int nft_diff_cb(const struct vnic_nft_diff *d, void *arg)
{
	const struct diff_tramp *t = arg;

	return t->fn((const struct vnic_filter_diff *)d, t->arg);
}

static int nft_diff(void *h, const struct vnic_policy *p, vnic_filter_diff_fn fn,
		    void *arg, struct vnic_filter_result *r, int commit)
{
	struct diff_tramp t = { fn, arg };
	vnic_nft_diff_fn cb = fn ? nft_diff_cb : NULL;

	return commit ? vnic_nft_sync_diff(h, p, cb, &t, RES(r))
		      : vnic_nft_diff(h, p, cb, &t, RES(r));
}

static const struct filter_ops nft_ops = {
	nft_close, nft_features, nft_apply, nft_sync, nft_remove, nft_guests,
	nft_counter, nft_render, nft_diff,
};

/* --- bpf ------------------------------------------------------------------ */

struct bpf_h {
	struct vnic_bpf *b;
	struct vnic_ctx *ctx;
};

static void bpf_close(void *h)
{
	vnic_bpf_close(((struct bpf_h *)h)->b);
	free(h);
}

/* The bpf backend's bits in the public numbering. */
static uint32_t bpf_features(const void *h)
{
	uint32_t in = vnic_bpf_features(((const struct bpf_h *)h)->b), out = 0;

	if (in & VNIC_BPF_FEAT_TCX)
		out |= VNIC_FILTER_FEAT_TCX;
	if (in & VNIC_BPF_FEAT_COOKIE)
		out |= VNIC_FILTER_FEAT_NETNS_COOKIE;
	return out;
}

static int bpf_apply(void *h, const struct vnic_policy *p, struct vnic_filter_result *r)
{
	return vnic_bpf_apply(((struct bpf_h *)h)->b, p, r);
}
static int bpf_sync(void *h, const struct vnic_policy *p, struct vnic_filter_result *r)
{
	return vnic_bpf_sync(((struct bpf_h *)h)->b, p, r);
}
static int bpf_remove(void *h, const char *const *g, unsigned int n,
		      struct vnic_filter_result *r)
{
	return vnic_bpf_remove(((struct bpf_h *)h)->b, g, n, r);
}
static int bpf_guests(void *h, char ***names, unsigned int *count)
{
	return vnic_bpf_guests(((struct bpf_h *)h)->b, names, count);
}
static int bpf_counter(void *h, const char *g, uint64_t *pk, uint64_t *by)
{
	return vnic_bpf_counter(((struct bpf_h *)h)->b, g, pk, by);
}
static int bpf_render(void *h, const struct vnic_policy *p, char **text)
{
	return vnic_set_err(((struct bpf_h *)h)->ctx, -EOPNOTSUPP, VNIC_STEP_VALIDATE, -1,
			    NULL, "the bpf backend has no text form (see "
			    "Documentation/bpf.rst for its maps)");
}

static int bpf_diff(void *h, const struct vnic_policy *p, vnic_filter_diff_fn fn,
		    void *arg, struct vnic_filter_result *r, int commit)
{
	struct vnic_bpf *b = ((struct bpf_h *)h)->b;

	return commit ? vnic_bpf_sync_diff(b, p, fn, arg, r) : vnic_bpf_diff(b, p, fn, arg, r);
}

static const struct filter_ops bpf_ops = {
	bpf_close, bpf_features, bpf_apply, bpf_sync, bpf_remove, bpf_guests,
	bpf_counter, bpf_render, bpf_diff,
};

/* --- open ------------------------------------------------------------------- */

static int open_nft(struct vnic_ctx *ctx, const struct vnic_filter_opts *o, void **h)
{
	struct vnic_nft_opts n = { .sz = sizeof(n), .table = o->table,
				   .flags = o->flags, .hook_prefixes = o->hook_prefixes,
				   .capacity = o->capacity, .features = o->features };
	struct vnic_nft *nft;
	int err;

	if (o->flags & VNIC_FILTER_TCX)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_opts: VNIC_FILTER_TCX is a bpf backend flag");
	err = vnic_nft_open(ctx, &n, &nft);
	if (!err)
		*h = nft;
	return err;
}

static int open_bpf(struct vnic_ctx *ctx, const struct vnic_filter_opts *o, void **h)
{
	struct vnic_bpf_opts b = { .sz = sizeof(b), .capacity = o->capacity,
				   .flags = o->flags & VNIC_FILTER_TCX ? VNIC_BPF_TCX : 0 };
	struct bpf_h *bh;
	int err;

	if (o->table || o->hook_prefixes || o->features ||
	    (o->flags & ~VNIC_FILTER_TCX))
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_opts: %s is an nft backend option",
				    o->table ? "table" : o->hook_prefixes ? "hook_prefixes"
				    : o->features ? "features"
				    : "a flag other than VNIC_FILTER_TCX");
	bh = calloc(1, sizeof(*bh));
	if (!bh)
		return -ENOMEM;
	bh->ctx = ctx;
	err = vnic_bpf_open(ctx, &b, &bh->b);
	if (err) {
		free(bh);
		return err;
	}
	*h = bh;
	return 0;
}

VNIC_EXPORT int vnic_filter_open(struct vnic_ctx *ctx, const struct vnic_filter_opts *opts,
				 struct vnic_filter **out)
{
	struct vnic_filter_opts o;
	struct vnic_filter *f;
	int err;

	if (!ctx)
		return -EINVAL;
	vnic_clear_err(ctx);
	if (!out)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_open: NULL out");
	err = vnic_opts_copy(&o, sizeof(o), opts);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL, "vnic_filter_opts");
	if (o.backend != VNIC_BACKEND_NFT && o.backend != VNIC_BACKEND_BPF)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_opts: unknown backend %d", (int)o.backend);
	/* A newer caller's flag this library lacks: never ignored (a
	 * read-only open that claimed the table would be worse than none). */
	if (o.flags & ~(uint32_t)FILTER_FLAGS)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_opts: unknown flags 0x%x",
				    o.flags & ~(uint32_t)FILTER_FLAGS);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->backend = o.backend;
	f->ctx = ctx;
	f->ops = o.backend == VNIC_BACKEND_BPF ? &bpf_ops : &nft_ops;
	err = o.backend == VNIC_BACKEND_BPF ? open_bpf(ctx, &o, &f->h)
					    : open_nft(ctx, &o, &f->h);
	if (err) {
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

VNIC_EXPORT void vnic_filter_close(struct vnic_filter *f)
{
	if (!f)
		return;
	f->ops->close(f->h);
	free(f);
}

VNIC_EXPORT uint32_t vnic_filter_features(const struct vnic_filter *f)
{
	return f ? f->ops->features(f->h) : 0;
}

VNIC_EXPORT enum vnic_backend vnic_filter_backend(const struct vnic_filter *f)
{
	return f ? f->backend : VNIC_BACKEND_NFT;
}

/*
 * Every operation starts with the context's last failure cleared, so that a
 * call that succeeds leaves "" (context.h) whatever the backend does: a
 * read such as vnic_filter_guests() after a failed change said the
 * change's failure.
 */
static struct vnic_filter *begin(struct vnic_filter *f)
{
	if (f)
		vnic_clear_err(f->ctx);
	return f;
}

VNIC_EXPORT int vnic_filter_apply(struct vnic_filter *f, const struct vnic_policy *p,
				  struct vnic_filter_result *res)
{
	if (!begin(f))
		return -EINVAL;
	if (!p)
		return vnic_null_arg(f->ctx, __func__, "policy");
	return f->ops->apply(f->h, p, res);
}

VNIC_EXPORT int vnic_filter_remove(struct vnic_filter *f, const char *const *guests,
				   unsigned int count, struct vnic_filter_result *res)
{
	if (!begin(f))
		return -EINVAL;
	if (count && !guests)
		return vnic_null_arg(f->ctx, __func__, "guest list");
	return f->ops->remove(f->h, guests, count, res);
}

VNIC_EXPORT int vnic_filter_sync(struct vnic_filter *f, const struct vnic_policy *p,
				 struct vnic_filter_result *res)
{
	if (!begin(f))
		return -EINVAL;
	if (!p)
		return vnic_null_arg(f->ctx, __func__, "policy");
	return f->ops->sync(f->h, p, res);
}

VNIC_EXPORT int vnic_filter_diff(struct vnic_filter *f, const struct vnic_policy *p,
				 vnic_filter_diff_fn fn, void *arg,
				 struct vnic_filter_result *res)
{
	return begin(f) ? f->ops->diff(f->h, p, fn, arg, res, 0) : -EINVAL;
}

VNIC_EXPORT int vnic_filter_sync_diff(struct vnic_filter *f, const struct vnic_policy *p,
				      vnic_filter_diff_fn fn, void *arg,
				      struct vnic_filter_result *res)
{
	if (!begin(f))
		return -EINVAL;
	if (!p)
		return vnic_null_arg(f->ctx, __func__, "policy");
	return f->ops->diff(f->h, p, fn, arg, res, 1);
}

VNIC_EXPORT int vnic_filter_guests(struct vnic_filter *f, char ***names,
				   unsigned int *count)
{
	if (!begin(f))
		return -EINVAL;
	if (!names || !count)
		return vnic_null_arg(f->ctx, __func__, names ? "count" : "names");
	return f->ops->guests(f->h, names, count);
}

VNIC_EXPORT int vnic_filter_counter(struct vnic_filter *f, const char *guest,
				    uint64_t *packets, uint64_t *bytes)
{
	if (!begin(f))
		return -EINVAL;
	if (!guest || !packets || !bytes)
		return vnic_null_arg(f->ctx, __func__, !guest ? "guest" :
				     !packets ? "packets" : "bytes");
	return f->ops->counter(f->h, guest, packets, bytes);
}

VNIC_EXPORT int vnic_filter_render(struct vnic_filter *f, const struct vnic_policy *p,
				   char **text)
{
	if (!begin(f))
		return -EINVAL;
	if (!p || !text)
		return vnic_null_arg(f->ctx, __func__, p ? "text" : "policy");
	return f->ops->render(f->h, p, text);
}

/* --- test hooks ---------------------------------------------------------------- */

VNIC_EXPORT int vnic_filter_set_before_commit(struct vnic_filter *f, void (*fn)(void *arg),
					      void *arg)
{
	if (!f)
		return -EINVAL;
	if (f->backend != VNIC_BACKEND_NFT)
		return vnic_set_err(f->ctx, -EOPNOTSUPP, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_set_before_commit: nft backend only");
	return vnic_nft_set_before_commit(f->h, fn, arg);
}

VNIC_EXPORT int vnic_filter_set_render_version(struct vnic_filter *f, uint32_t version)
{
	if (!f)
		return -EINVAL;
	if (f->backend == VNIC_BACKEND_BPF)
		return vnic_bpf_set_render_version(((struct bpf_h *)f->h)->b, version);
	return vnic_nft_set_render_version(f->h, version);
}

VNIC_EXPORT int vnic_filter_set_batch_tap(struct vnic_filter *f,
					  void (*fn)(void *arg, const void *buf,
						     size_t len),
					  void *arg)
{
	if (!f)
		return -EINVAL;
	if (f->backend != VNIC_BACKEND_NFT)
		return vnic_set_err(f->ctx, -EOPNOTSUPP, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_set_batch_tap: nft backend only");
	return vnic_nft_set_batch_tap(f->h, fn, arg);
}

VNIC_EXPORT int vnic_filter_set_bpf_tap(struct vnic_filter *f, const struct vnic_bpf_tap *tap)
{
	if (!f)
		return -EINVAL;
	if (f->backend != VNIC_BACKEND_BPF)
		return vnic_set_err(f->ctx, -EOPNOTSUPP, VNIC_STEP_VALIDATE, -1, NULL,
				    "vnic_filter_set_bpf_tap: bpf backend only");
	return vnic_bpf_set_tap(((struct bpf_h *)f->h)->b, tap);
}
