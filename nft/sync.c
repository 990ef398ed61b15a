// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sync: make the table exactly what a clean apply of a policy makes, and
 * diff: say what a sync would change.  Nothing is read back only when the
 * kernel proves the table is as libvnic's last commit left it; otherwise
 * diff.c reads it once and commits the difference, repairs included.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nft/read.h"

static uint64_t policy_digest(const struct vnic_policy *p, const struct resolved *r)
{
	uint64_t d = 0;
	unsigned int i;

	for (i = 0; i < p->n; i++)
		d ^= state_mix(p->g[i]->name,
			       r->digest[i]);
	return d;
}

/* After diff.c committed p exactly: the handle knows p's guests. */
static int adopt(struct vnic_nft *n, const struct vnic_policy *p,
		 const struct resolved *r)
{
	unsigned int i;
	int err = 0;

	inst_clear(n);
	for (i = 0; i < p->n && !err; i++) {
		const int *ifi = &r->ifi[r->off[i]];
		struct installed *in = inst_new(n, p->g[i]->name);

		if (!in)
			return -ENOMEM;
		in->digest = r->digest[i];
		in->g = pguest_dup(p->g[i]);
		in->ifindex = calloc(p->g[i]->nn + 1, sizeof(*in->ifindex));
		if (!in->g || !in->ifindex)
			return -ENOMEM;
		memcpy(in->ifindex, ifi, p->g[i]->nn * sizeof(*ifi));
		err = inst_claim(n, (uint32_t)(in - n->inst));
	}
	return err;
}

/*
 * Nothing is read back only when the kernel proves the table is as
 * libvnic's last commit left it: the generation is still the one that
 * commit made (no transaction of anyone's since, see filters.rst) and the
 * policy is what that commit installed.  Otherwise diff.c reads the table
 * once and commits the difference, repairs included.
 */
static int sync_once(struct vnic_nft *n, const struct vnic_policy *p,
		     vnic_nft_diff_fn fn, void *arg, bool commit,
		     struct vnic_nft_result *res)
{
	struct resolved r;
	uint32_t genid = 0;
	int err;

	memset(&r, 0, sizeof(r));
	if (!n || !p)
		return -EINVAL;
	err = vnic_policy_check(p);
	if (!err && commit && (n->flags & VNIC_NFT_READ_ONLY))
		err = vnic_set_err(n->ctx, -EROFS, VNIC_STEP_VALIDATE, -1, NULL,
				   "table %s was opened read-only", n->table);
	if (!err)
		err = resolve_policy(n, p, &r);
	if (!err)
		err = nfnl_genid(n, &genid);
	if (err)
		goto out;
	if (n->clean && genid == n->clean_gen && n->has_state &&
	    n->table_digest == policy_digest(p, &r)) {
		result_reset(res);
		if (res) {
			res->guests_unchanged = p->n;
			res->genid = genid;
		}
		goto out;
	}
	n->change_nics = r.off[p->n];
	err = diff_sync(n, p, &r, commit, fn, arg, res);
	/* After the commit, what fails is the handle's memory of it, not the
	 * sync: the handle reads the table again before it is used. */
	if (!err && commit && adopt(n, p, &r)) {
		inst_clear(n);
		n->stale = true;
		n->clean = false;
	} else if (!commit) {
		n->stale = true;
	}
out:
	resolved_free(&r);
	return err;
}

static int sync_diff(struct vnic_nft *n, const struct vnic_policy *p,
		     vnic_nft_diff_fn fn, void *arg, bool commit,
		     struct vnic_nft_result *res, const char *what)
{
	struct vnic_nft_result r, *rp = res ? &r : NULL;
	int err = result_check(n, res);

	if (err)
		return err;
	vnic_clear_err(n->ctx);
	err = sync_once(n, p, fn, arg, commit, rp);
	if (redo(n, err))
		err = sync_once(n, p, fn, arg, commit, rp);
	if (err)
		err = vnic_err_fallback(n->ctx, err, VNIC_STEP_DUMP, what);
	return result_out(res, rp, err);
}

int vnic_nft_sync(struct vnic_nft *n, const struct vnic_policy *p,
			      struct vnic_nft_result *res)
{
	return sync_diff(n, p, NULL, NULL, true, res, "syncing the policy");
}

int vnic_nft_sync_diff(struct vnic_nft *n, const struct vnic_policy *p,
				   vnic_nft_diff_fn fn, void *arg,
				   struct vnic_nft_result *res)
{
	return sync_diff(n, p, fn, arg, true, res, "syncing the policy");
}

int vnic_nft_diff(struct vnic_nft *n, const struct vnic_policy *p,
			      vnic_nft_diff_fn fn, void *arg,
			      struct vnic_nft_result *res)
{
	struct vnic_nft_result r, *rp = res ? &r : NULL;
	int err = result_check(n, res);

	if (err)
		return err;
	vnic_clear_err(n->ctx);
	/* Without a policy: the table against its own state (filter show). */
	err = p ? sync_once(n, p, fn, arg, false, rp) :
		  diff_sync(n, NULL, NULL, false, fn, arg, rp);
	if (err)
		err = vnic_err_fallback(n->ctx, err, VNIC_STEP_DUMP,
					"comparing the table");
	return result_out(res, rp, err);
}
