// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The public changes: apply (add or replace guests), remove (sync, which
 * makes the table hold exactly a policy, is sync.c).  Each checks its input, then builds
 * one change (change.c); a change whose prefix chains the kernel refused
 * is built once more without them.  And the guests installed, read again
 * first when the handle's view went stale, as a change does.
 */
#include <errno.h>
#include <string.h>

#include "nft/read.h"

/* What a NIC of the default policy adds to a batch: 183 bytes (732 KB for
 * 4,000), so a large apply's buffer is sized once. */
#define APPLY_BYTES_PER_NIC	192

int result_check(struct vnic_nft *n, const struct vnic_nft_result *res)
{
	if (!n)
		return -EINVAL;
	return res ? vnic_out_check(n->ctx, res, VNIC_SZ_0_1(vnic_nft_result, writes),
				    "vnic_filter_result") : 0;
}

int result_out(struct vnic_nft_result *res, const struct vnic_nft_result *r,
		      int err)
{
	if (!err && res)
		vnic_out_copy(res, r, sizeof(*r));
	return err;
}

/* A NIC of p that an installed guest p does not replace has: refused.
 * Looked up per NIC of p, so the cost does not grow with the table. */
static int check_claims(struct vnic_nft *n, const struct vnic_policy *p)
{
	unsigned int i, k;
	uint32_t gi;

	for (i = 0; i < p->n; i++)
		for (k = 0; k < p->g[i]->nn; k++) {
			const char *nic = p->g[i]->nics[k].ifname;
			const struct installed *in = nic_owner(n, nic);

			if (in && policy_find(p, in->name, &gi))
				return vnic_set_err(n->ctx, -EEXIST, VNIC_STEP_VALIDATE,
						    -1, NULL, "NIC %s belongs to installed "
						    "guest %s", nic, in->name);
		}
	return 0;
}

/* Add what is new, replace what changed, leave what is equal. */
static int apply_guests(struct change *ch, const struct vnic_policy *p,
			const struct resolved *r, struct vnic_nft_result *res)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < p->n && !err; i++) {
		const struct pguest *g = p->g[i];
		const int *ifi = &r->ifi[r->off[i]];
		struct installed *in = inst_find(ch->n, g->name);
		unsigned int keep = 0;

		if (in && in->digest == r->digest[i]) {
			if (res)
				res->guests_unchanged++;
			continue;
		}
		if (in) {
			keep = change_keep(ch->n, in, g);
			err = change_drop(ch, in, keep);
		}
		if (!err)
			err = change_add(ch, g, ifi, r->digest[i], keep);
		if (!err && res) {
			if (in)
				res->guests_changed++;
			else
				res->guests_added++;
		}
	}
	return err;
}

/*
 * Whether only this handle can write the table: it claimed it at open (or
 * makes it, owned, with its first commit).  Not with VNIC_NFT_NO_OWNER,
 * VNIC_NFT_READ_ONLY (it inspects a table others write) or a claim
 * deferred to the commit (VNIC_NFT_CLAIM_AT_COMMIT).
 */
static bool owns(const struct vnic_nft *n)
{
	return !n->claim_pending &&
	       !(n->flags & (VNIC_NFT_NO_OWNER | VNIC_NFT_READ_ONLY));
}

/*
 * A handle that does not own the table may be behind another writer of it
 * (vnic-cni opens before its IPAM plugin runs): one that committed since
 * the handle's view was read makes it read again.  A table another process
 * owns without the persist flag is read every time: it goes with that
 * process, and no generation moves.
 */
static int view_fresh(struct vnic_nft *n)
{
	uint32_t g;
	int err;

	if (owns(n))
		return 0;
	if (n->view_volatile)
		return open_state(n);
	err = nfnl_genid(n, &g);
	return err || g == n->clean_gen ? err : open_state(n);
}

/*
 * The generation a change's batch is pinned to.  An owner pins to the
 * generation now: others' commits can only be elsewhere in the ruleset.
 * Any other handle pins to the one its view was read at, so that a commit
 * made to the table after that (between view_fresh() and the batch) fails
 * the batch (-EAGAIN) instead of being overwritten by a state element that
 * does not know that writer's guests.
 */
static int pin_genid(struct vnic_nft *n, uint32_t *genid)
{
	if (owns(n))
		return nfnl_genid(n, genid);
	*genid = n->clean_gen;
	return 0;
}

static int prepare(struct vnic_nft *n, const struct vnic_policy *p,
		   struct vnic_nft_result *res, struct resolved *r, uint32_t *genid)
{
	int err;

	memset(r, 0, sizeof(*r));
	if (!n || !p)
		return -EINVAL;
	err = vnic_policy_check(p);
	if (!err && (n->flags & VNIC_NFT_READ_ONLY))
		err = vnic_set_err(n->ctx, -EROFS, VNIC_STEP_VALIDATE, -1, NULL,
				   "table %s was opened read-only", n->table);
	/* A table missing at open may have been made since: read it. */
	if (!err && (n->stale || n->pending))
		err = open_state(n);
	else if (!err)
		err = view_fresh(n);
	if (!err)
		err = refuse_damaged(n);
	if (!err)
		err = check_claims(n, p);
	if (!err)
		err = resolve_policy(n, p, r);
	if (!err)
		err = keys_untaken(n, p);
	if (!err)
		n->change_nics = r->off[p->n];
	if (!err)
		err = pin_genid(n, genid);
	if (!err)
		err = inst_reserve(n, p->n, r->off[p->n]);
	return err;
}

/* A change whose prefix chains the kernel refused is built again without
 * them (once: the feature is off by then). */
bool redo(struct vnic_nft *n, int err)
{
	if (!err || !n || !n->pfx_refused)
		return false;
	n->pfx_refused = false;
	vnic_clear_err(n->ctx);
	return true;
}

static int apply_once(struct vnic_nft *n, const struct vnic_policy *p,
		      struct vnic_nft_result *res)
{
	struct resolved r;
	struct change ch;
	uint32_t genid = 0;
	int err = prepare(n, p, res, &r, &genid);

	if (!err) {
		change_begin(n, &ch, res);
		err = nbatch_expect(&ch.b, (size_t)r.off[p->n] * APPLY_BYTES_PER_NIC);
		if (!err)
			err = apply_guests(&ch, p, &r, res);
		err = change_end(&ch, err, genid);
	}
	resolved_free(&r);
	return err;
}

int vnic_nft_apply(struct vnic_nft *n, const struct vnic_policy *p,
			       struct vnic_nft_result *res)
{
	struct vnic_nft_result r, *rp = res ? &r : NULL;
	int err = result_check(n, res);

	if (err)
		return err;
	err = apply_once(n, p, rp);
	if (redo(n, err))
		err = apply_once(n, p, rp);
	if (err)
		err = vnic_err_fallback(n->ctx, err, VNIC_STEP_DUMP,
					"applying the policy");
	return result_out(res, rp, err);
}

static int remove_once(struct vnic_nft *n, const char *const *guests,
		       unsigned int count, struct vnic_nft_result *res)
{
	struct change ch;
	uint32_t genid = 0;
	unsigned int i;
	int err = 0;

	if (!n || (count && !guests))
		return -EINVAL;
	vnic_clear_err(n->ctx);
	if (n->flags & VNIC_NFT_READ_ONLY)
		return vnic_set_err(n->ctx, -EROFS, VNIC_STEP_VALIDATE, -1, NULL,
				    "table %s was opened read-only", n->table);
	if ((n->stale || n->pending) && (err = open_state(n)))
		return err;
	if ((err = view_fresh(n)) || (err = refuse_damaged(n)))
		return err;
	for (i = 0; i < count; i++)
		if (!guests[i] || !inst_find(n, guests[i]))
			return vnic_set_err(n->ctx, -ENOENT, VNIC_STEP_VALIDATE, -1,
					    NULL, "guest %s is not installed",
					    guests[i] ? guests[i] : "(null)");
	err = pin_genid(n, &genid);
	if (err)
		return err;
	change_begin(n, &ch, res);
	for (i = 0; i < count && !err; i++) {
		struct installed *in = inst_find(n, guests[i]);

		if (!in)
			continue;	/* named twice */
		err = change_drop(&ch, in, 0);
		if (!err && res)
			res->guests_removed++;
	}
	return change_end(&ch, err, genid);
}

int vnic_nft_remove(struct vnic_nft *n, const char *const *guests,
				unsigned int count, struct vnic_nft_result *res)
{
	struct vnic_nft_result r, *rp = res ? &r : NULL;
	int err = result_check(n, res);

	if (err)
		return err;
	err = remove_once(n, guests, count, rp);
	if (redo(n, err))
		err = remove_once(n, guests, count, rp);
	if (err)
		err = vnic_err_fallback(n->ctx, err, VNIC_STEP_DUMP,
					"removing guests");
	return result_out(res, rp, err);
}

int vnic_nft_guests(struct vnic_nft *n, char ***names, unsigned int *count)
{
	int err;

	if (!n || !names || !count)
		return -EINVAL;
	/* What the handle knows went stale (a sync that committed but could
	 * not record it, a failed change), or another process committed
	 * since a handle that does not own the table read it: the kernel's,
	 * read again. */
	err = n->stale ? open_state(n) : view_fresh(n);
	if (err)
		return err;
	/* A damaged table's guests are not known: say what is wrong. */
	if (refuse_damaged(n))
		return -EUCLEAN;
	return inst_names(n, names, count);
}
