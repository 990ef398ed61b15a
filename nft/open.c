// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The handle's lifecycle: open (probe the kernel's features, read and check
 * the table, claim it), close, and what opening found.  Opening writes
 * nothing but the claim: a missing table is made by the first commit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/testing.h"
#include "nft/read.h"

static int claim_err(struct vnic_nft *n, int err, uint32_t flags)
{
	if (err == -EPERM || err == -EBUSY)
		return nfnl_set_err(n, err, "table netdev %s is owned by another process",
			       n->table);
	if (err == -EOPNOTSUPP)
		return nfnl_set_err(n, err, "table netdev %s cannot be claimed: it was "
			       "made without the owner and persist flags (flags "
			       "0x%x); open it without claiming (VNIC_NFT_NO_OWNER, "
			       "vnicctl --no-owner)", n->table, flags);
	if (err)
		return nfnl_set_err(n, err, "claiming table netdev %s", n->table);
	return 0;
}

/*
 * The claim's batch.  The claim is a commit, so it moves the generation
 * past the one the state element records, and the next process would read
 * the whole table back.  When the handle can vouch for the table (its state
 * element records the generation the kernel has: nothing committed since
 * libvnic's last commit), the claim passes that on: its batch is pinned to
 * that generation and rewrites the state element, the same but for g=, the
 * generation the claim makes.  Rewriting is a delete: the kernel frees the
 * old element after an RCU grace period, which the claimer's socket waits
 * for when it is released (nft_rcv_nl_event); see filters.rst.
 */
static int claim_batch(struct vnic_nft *n, struct nbatch *b, uint32_t vouch_gen)
{
	int err = layout_table(n, b, false);

	if (!err && vouch_gen) {
		n->state_gen = vouch_gen + 1;
		err = state_elem(n, b, 0, false);
		if (!err)
			err = state_elem(n, b, n->table_digest, true);
		n->state_gen = 0;
	}
	/* No generation check otherwise: claiming does not depend on what
	 * else the ruleset holds (and a busy host would keep it failing). */
	return err ?: nbatch_commit_res(n, b, vouch_gen ? vouch_gen : NO_GENID, NULL);
}

/*
 * An existing table claimed (owner flag), once it was checked: nothing is
 * written to a table that is not ours.  The kernel lets a process claim a
 * table that persists and has no owner; one made without those flags
 * (VNIC_NFT_NO_OWNER) cannot be claimed.  vouch_gen: the generation the
 * handle vouches for (0: none).
 */
static int claim_table(struct vnic_nft *n, const struct table_info *ti,
		       uint32_t vouch_gen)
{
	struct nbatch b;
	int err;

	nbatch_init(&b);
	err = claim_batch(n, &b, vouch_gen);
	nbatch_free(&b);
	/* Someone committed since the read: claim without vouching. */
	if (vouch_gen && (err == -ERESTART || err == -EINTR)) {
		nbatch_init(&b);
		err = claim_batch(n, &b, 0);
		nbatch_free(&b);
	}
	return claim_err(n, err, ti->flags);
}

/* Whether opening must write: to claim the table.  Not when this handle's
 * socket owns it already (a read again after a failed change): claiming
 * again would be a commit of its own, after a change that is to leave the
 * ruleset as it was. */
static bool open_claims(const struct vnic_nft *n, const struct table_info *ti)
{
	if ((ti->flags & NFT_TABLE_F_OWNER) && ti->owner == n->nl.portid &&
	    !n->replay)
		return false;
	return ti->exists && !(n->flags & (VNIC_NFT_READ_ONLY | VNIC_NFT_NO_OWNER));
}

/*
 * VNIC_NFT_CLAIM_AT_COMMIT: a table a commit can claim (no owner, the
 * persist flag ours has) waits for the first commit that writes, which
 * claims it in its batch; a sync that writes nothing then commits nothing
 * (the claim moves the generation, and the next process reads back unless
 * it vouched; vouching deletes, and that process waits a grace period when
 * it exits).  Any other table is claimed now, for the claim's error.
 */
static bool claim_later(const struct vnic_nft *n, const struct table_info *ti)
{
	bool persist = !(n->flags & VNIC_NFT_NO_PERSIST) &&
		       (n->features & VNIC_NFT_FEAT_PERSIST);

	return (n->flags & VNIC_NFT_CLAIM_AT_COMMIT) &&
	       !(ti->flags & NFT_TABLE_F_OWNER) &&
	       !!(ti->flags & NFT_TABLE_F_PERSIST) == persist;
}

/*
 * A pending claim, committed alone right before the first commit that
 * writes: the kernel refuses a table's flags changed in the transaction
 * that adds or changes a base chain's hooks (nft_table_pending_update()).
 * Pinned to *genid (NO_GENID: not pinned), which becomes the generation
 * after it; -ERESTART if anyone else committed meanwhile.  A claim takes
 * nothing away: no grace period for it when this process exits.
 */
int claim_commit(struct vnic_nft *n, uint64_t *genid)
{
	struct nbatch b;
	uint32_t now;
	int err;

	if (!n->claim_pending)
		return 0;
	nbatch_init(&b);
	err = layout_table(n, &b, false);
	if (!err)
		err = nbatch_commit(n, &b, *genid, NULL);
	nbatch_free(&b);
	if (err == -ERESTART || err == -EINTR)
		return err;
	if (err)
		return claim_err(n, err, n->tflags);
	n->claim_pending = false;
	err = nfnl_genid(n, &now);
	if (err || *genid == NO_GENID)
		return err;
	if (now != *genid + 1)
		return -ERESTART;
	/* Ours, and the only commit since: the handle still vouches. */
	if (n->clean && n->clean_gen == (uint32_t)*genid)
		n->clean_gen = now;
	*genid = now;
	return 0;
}

/* No table: no guests, and the sizes a new table gets.  A writing handle
 * makes the table with its first commit. */
static void open_empty(struct vnic_nft *n)
{
	unsigned int s;

	for (s = 0; s < S__MAX; s++)
		n->size[s] = layout_set_size(n, (enum nset)s);
	memset(n->swmasks, 0, sizeof(n->swmasks));
	memset(n->nelem, 0, sizeof(n->nelem));
	memset(n->pend, 0, sizeof(n->pend));
	inst_clear(n);
	shards_clear(n);
	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	n->pfx_shared = false;
	n->table_digest = 0;
	n->has_state = false;
	n->pending = !(n->flags & VNIC_NFT_READ_ONLY);
}

/* The table as the kernel has it, checked (check.c) and read. */
static int read_all(struct vnic_nft *n, struct table_info *ti)
{
	struct devlist names = { 0 };
	unsigned int count = 0;
	uint64_t digest = 0;
	int err = read_table(n, ti);

	if (err || !ti->exists)
		return err;
	err = read_state(n, ti);
	if (!err) {
		n->table_digest = ti->has_digest ? ti->digest : 0;
		n->has_state = ti->has_digest;
		/* Unknown counts (a table without them): from nothing; a
		 * set that is fuller than that refuses with ENFILE. */
		memset(n->nelem, 0, sizeof(n->nelem));
		memset(n->pend, 0, sizeof(n->pend));
		if (ti->has_counts)
			memcpy(n->nelem, ti->nelem, sizeof(ti->nelem));
	}
	if (!err)
		err = read_chains(n, &names);
	if (!err)
		err = check_chains(n, &names);
	devlist_clear(&names);
	if (!err)
		err = read_guests(n, &digest, &count);
	if (!err)
		err = check_state(n, ti, digest, count);
	return err;
}

/*
 * The table is read in several requests, so a commit by anyone else
 * between two of them makes the pieces disagree (a state digest that is
 * not the guests', a chain not there yet): check.c would call that damage.
 * Read again while the generation moves, a bounded number of times; the
 * error of a torn read is dropped, not the caller's earlier one.  *gen:
 * the generation before the read, then the one it saw.
 *
 * Every try torn (other writers committing faster than a read takes: four
 * processes changing guests at once did it), what the last one found is
 * no damage, and not a table that is not ours: -EAGAIN, as a commit that
 * lost such a race.  A torn read that found nothing wrong is returned as
 * it is: a change pins its commit to *gen, which then fails (-EAGAIN).
 */
#define READ_TRIES 5

static bool torn_error(int err)
{
	return err == -EUCLEAN || err == -EPERM || err == -ENOENT;
}

static int read_stable(struct vnic_nft *n, struct table_info *ti, uint32_t *gen)
{
	const struct vnic_err saved = n->ctx->err;
	unsigned int i;
	uint32_t g;
	int err, gerr;

	/* A replay (fuzzing, seeds) has no other writer, and its recorded
	 * replies follow the requests of one read. */
	if (n->replay)
		return read_all(n, ti);
	for (i = 1;; i++) {
		err = read_all(n, ti);
		gerr = nfnl_genid(n, &g);
		if (gerr)
			return err ? err : gerr;
		if (g == *gen)
			return err;
		if (i == READ_TRIES)
			break;
		*gen = g;
		n->ctx->err = saved;
	}
	if (!torn_error(err))
		return err;
	n->damage[0] = '\0';
	n->ctx->err = saved;
	return vnic_set_err(n->ctx, -EAGAIN, VNIC_STEP_DUMP, -1, NULL,
			    "table netdev %s changed during each of %u reads of "
			    "it (other processes committing): try again",
			    n->table, READ_TRIES);
}

/*
 * A table of libvnic's (its comment says so) that check.c finds damaged is
 * opened all the same, knowing nothing installed: a sync reads it whole and
 * repairs it (diff.c); apply, remove and the guests' list refuse it, saying
 * what is wrong.
 */
static int open_damaged(struct vnic_nft *n)
{
	if (!n->damage[0])	/* not said by check.c's damaged() */
		snprintf(n->damage, sizeof(n->damage), "%.383s", n->ctx->err.msg);
	vnic_clear_err(n->ctx);
	inst_clear(n);
	shards_clear(n);
	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	memset(n->nelem, 0, sizeof(n->nelem));
	n->table_digest = 0;
	n->has_state = false;
	n->damaged = true;
	return 0;
}


bool owner_volatile(const struct vnic_nft *n, uint32_t flags, uint32_t owner)
{
	return (flags & NFT_TABLE_F_OWNER) && !(flags & NFT_TABLE_F_PERSIST) &&
	       owner != n->nl.portid;
}

static bool can_prefix(const struct vnic_nft *n)
{
	return (n->features & VNIC_NFT_FEAT_PREFIX_HOOK) &&
	       !(n->flags & VNIC_NFT_READ_ONLY);
}

/*
 * Read (and check) the table, then claim it.  Opening writes nothing else:
 * a missing table, and the chains of asked hook prefixes, are made by the
 * first commit, in its batch, so a command that fails leaves the ruleset
 * as it was.  A claim that is not the only commit since the read (someone
 * changed the table meanwhile) makes it read again.
 */
int open_state(struct vnic_nft *n)
{
	/* Zeroed: a failed generation read (any errno, -EUCLEAN too) leaves
	 * it unread. */
	struct table_info ti = { 0 };
	uint32_t g0 = 0, g1 = 0;
	int err = nfnl_genid(n, &g0);

	n->pending = false;
	n->damaged = n->clean = n->claim_pending = false;
	n->damage[0] = '\0';
	n->damage_final = false;
	if (!err)
		err = read_stable(n, &ti, &g0);
	if (err == -EUCLEAN && ti.comment_ours)
		err = open_damaged(n);
	/* Asked prefixes against the installed ones before the claim
	 * writes; again after a read the claim made. */
	if (!err)
		err = prefix_plan(n, can_prefix(n));
	/* libvnic's last commit wrote its generation into the state. */
	n->view_volatile = !err && ti.exists &&
			   owner_volatile(n, ti.flags, ti.owner);
	n->clean = !err && !n->damaged && ti.exists && ti.has_digest &&
		   ti.state_gen && ti.state_gen == g0 && !n->view_volatile;
	n->clean_gen = g0;
	if (!err && open_claims(n, &ti) && claim_later(n, &ti)) {
		n->claim_pending = true;
	} else if (!err && open_claims(n, &ti) && !n->damaged) {
		/* A damaged table is claimed once a sync repaired it. */
		/* The state's counts are rewritten as read: known, or no
		 * vouching. */
		err = claim_table(n, &ti, n->clean && ti.has_counts ? g0 : 0);
		if (!err)
			err = nfnl_genid(n, &g1);
		if (!err && g1 - g0 > 1)
			err = read_all(n, &ti);
		/* The claim is a commit: the only one since, or not clean. */
		n->clean = n->clean && g1 == g0 + 1;
		n->clean_gen = g1;
	}
	if (!err && !ti.exists)
		open_empty(n);
	if (!err)
		err = prefix_plan(n, can_prefix(n));
	n->stale = err != 0;
	if (err && !n->ctx->err.err)
		nfnl_set_err(n, err, "reading table netdev %s", n->table);
	return err;
}

/* The handle; replay (fuzzing, seeds) stands in for the kernel or records. */
static int nft_open(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
		    struct nfnl_replay *replay, struct vnic_nft **out)
{
	const struct vnic_nft_opts o = *opts;
	struct vnic_nft *n;
	int err;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->ctx = ctx;
	n->replay = replay;
	n->flags = o.flags;
	n->capacity = o.capacity ? o.capacity : NFT_DEFAULT_CAPACITY;
	n->ifsock = -1;
	n->render_version = NFT_RENDER_VERSION;
	snprintf(n->table, sizeof(n->table), "%s", o.table ? o.table : NFT_DEFAULT_TABLE);
	err = prefix_ask(n, o.hook_prefixes);
	if (err) {
		free(n);
		return err;
	}
	err = nfnl_open(n);
	if (err)
		vnic_set_err(ctx, err, VNIC_STEP_SOCKET, -1, NULL, "nfnetlink socket");
	/* Known from an earlier handle: no probe, whose abort costs a grace
	 * period (vnic_filter_opts.features). */
	if (!err && o.features)
		n->features = o.features;
	else if (!err) {
		err = nft_probe(n, &n->features);
		if (err)
			vnic_set_err(ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				     "probing the features of nf_tables");
	}
	if (!err)
		err = open_state(n);
	if (err) {
		vnic_nft_close(n);
		return err;
	}
	*out = n;
	return 0;
}

int vnic_nft_open(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
			      struct vnic_nft **out)
{
	struct vnic_nft_opts o;
	int err;

	if (!ctx || !out)
		return -EINVAL;
	vnic_clear_err(ctx);
	err = vnic_opts_copy(&o, sizeof(o), opts);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL, "vnic_nft_opts");
	if (o.table && !vnic_valid_tag(o.table, 32))
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "table name '%s' must be 1..32 of [A-Za-z0-9_.-]",
				    o.table);
	if (o.features & ~NFT_FEAT_ALL)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "features 0x%x: bits 0x%x are no nft feature",
				    o.features, o.features & ~NFT_FEAT_ALL);
	if (o.capacity > NFT_MAX_CAPACITY)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "capacity %u is over %u NICs", o.capacity,
				    NFT_MAX_CAPACITY);
	return vnic_err_fallback(ctx, nft_open(ctx, &o, NULL, out),
				 VNIC_STEP_SOCKET, "the nftables handle");
}

int nft_open_replay(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
		    struct nfnl_replay *replay, struct vnic_nft **out)
{
	vnic_clear_err(ctx);
	return nft_open(ctx, opts, replay, out);
}

int vnic_nft_set_before_commit(struct vnic_nft *n, void (*fn)(void *arg),
					   void *arg)
{
	if (!n)
		return -EINVAL;
	n->before_commit = fn;
	n->before_commit_arg = arg;
	return 0;
}

int vnic_nft_set_render_version(struct vnic_nft *n, uint32_t version)
{
	if (!n)
		return -EINVAL;
	n->render_version = version;
	return 0;
}

int vnic_nft_set_batch_tap(struct vnic_nft *n,
				       void (*fn)(void *arg, const void *buf,
						  size_t len),
				       void *arg)
{
	if (!n)
		return -EINVAL;
	n->batch_tap = fn;
	n->batch_tap_arg = arg;
	return 0;
}

void vnic_nft_close(struct vnic_nft *n)
{

	if (!n)
		return;
	inst_clear(n);
	shards_clear(n);
	guest_adds_drop(n);
	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	shards_drop(n);
	nl_close(&n->nl);
	if (n->ifsock >= 0)
		close(n->ifsock);
	free(n);
}

uint32_t vnic_nft_features(const struct vnic_nft *n)
{
	return n ? n->features : 0;
}

