// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A change: one batch built against the generation read just before, so
 * that a concurrent change elsewhere makes the commit fail (-EAGAIN) instead
 * of interleaving.  Guests are dropped and added from what the handle
 * remembers (elems.c), or, for guests known by name only, from the table
 * read back once per change (purge.c); the end of a change adds the table if it
 * is new, grows full sets, the hooks, prefix chains and the state element,
 * commits, and on failure reads the kernel's state back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nft/internal.h"

/* A new table's own messages (the table, its sets: about 1.2 KB): the room
 * a change keeps for them before its first message. */
#define CHANGE_HEAD_ROOM	(16 * 1024)

int change_drop(struct change *ch, struct installed *in, unsigned int keep)
{
	int err;

	if (in->g)
		err = guest_put(ch->n, &ch->b, in->g, in->ifindex, in->digest, false,
				keep);
	else
		err = purge_guest(ch->n, &ch->b, &ch->pr, in->name, keep);
	if (!err) {
		ch->digest ^= state_mix(in->name, in->digest);
		inst_forget(ch->n, in);
	}
	return err;
}

int change_add(struct change *ch, const struct pguest *g, const int *ifi,
	       uint64_t d, unsigned int keep)
{
	struct installed *in;
	int *copy = calloc(g->nn + 1, sizeof(*copy));
	int err = copy ? 0 : -ENOMEM;

	if (!err)
		err = guest_put(ch->n, &ch->b, g, ifi, d, true, keep);
	in = err ? NULL : inst_new(ch->n, g->name);
	if (!err && !in)
		err = -ENOMEM;
	if (err) {
		free(copy);
		return err;
	}
	memcpy(copy, ifi, g->nn * sizeof(*copy));
	in->g = pguest_dup(g);
	in->ifindex = copy;
	in->digest = d;
	ch->digest ^= state_mix(g->name, d);
	return in->g ? inst_claim(ch->n, (uint32_t)(in - ch->n->inst)) : -ENOMEM;
}

static bool same_to_devs(const struct vnic_nft *n, const struct pguest *a,
			 const struct pguest *b)
{
	unsigned int na, nb, i;
	const char **da = guest_to_devs(n, a, &na), **db = guest_to_devs(n, b, &nb);
	bool same = da && db && na == nb;

	for (i = 0; same && i < na; i++)
		same = !strcmp(da[i], db[i]);
	free(da);
	free(db);
	return same;
}

/* What a replacement of in by g keeps: the counter always, the custom
 * chain if both have one, the to-guest chain if its devices stay. */
unsigned int change_keep(struct vnic_nft *n, const struct installed *in,
			    const struct pguest *g)
{
	char ctr[80], chain[80];
	unsigned int keep = GP_KEEP_COUNTER;
	bool old_chain;

	guest_names(g->name, ctr, chain, sizeof(ctr));
	old_chain = in->g ? in->g->nr > 0 : devlist_has(&n->customs, chain);
	if (old_chain && g->nr)
		keep |= GP_KEEP_CHAIN;
	if (in->g && same_to_devs(n, in->g, g))
		keep |= GP_KEEP_TO;
	return keep;
}

/*
 * A change counts into a whole struct of ours (res NULL: the caller wants
 * none, and no generation is read for it); the caller's gets the fields it
 * knows, on success only (result_out()).
 */
void result_reset(struct vnic_nft_result *res)
{
	if (!res)
		return;
	memset(res, 0, sizeof(*res));
	res->sz = sizeof(*res);
}

int change_begin(struct vnic_nft *n, struct change *ch,
			struct vnic_nft_result *res)
{
	memset(ch, 0, sizeof(*ch));
	ch->n = n;
	ch->digest = n->table_digest;
	ch->res = res;
	nbatch_init(&ch->b);
	/* A new table's head goes before the change, built last. */
	if (n->pending)
		nbatch_head_room(&ch->b, CHANGE_HEAD_ROOM);
	result_reset(res);
	return 0;
}

/*
 * Sets the change would fill past their size grow first, in a commit of
 * their own: a new size takes effect at commit, so elements of the same
 * batch would still meet the old one.  That commit carries the generation
 * the change was built on and the change the one after it, so a change by
 * anyone else in between still fails the change.
 */
/* The size set s needs after the change being built: its size doubled
 * until the elements fit (0: unsized). */
static uint32_t fit_size(const struct vnic_nft *n, enum nset s)
{
	/* A mask's set holds at most every NIC: drops has them all. */
	unsigned int c = s < S__MAX ? s : S_CTR;
	int64_t need = (int64_t)n->nelem[c] + n->pend[c] + (s == S_GUESTS);
	uint64_t sz = n->size[s];

	while (sz && need > 0 && sz < (uint64_t)need)
		sz *= 2;
	return sz > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)sz;
}

static int grow_sets(struct change *ch, uint64_t *genid)
{
	struct vnic_nft *n = ch->n;
	uint32_t size[NSETS], now;
	unsigned int s, k = 0;
	struct nbatch b;
	int err = 0;

	nbatch_init(&b);
	for (s = 0; s < NSETS && !err; s++) {
		size[s] = fit_size(n, (enum nset)s);
		if (size[s] == n->size[s])
			continue;
		err = layout_set(n, &b, (enum nset)s, size[s]);
		k++;
	}
	if (!err && k)
		err = nbatch_commit_res(n, &b, *genid, ch->res);
	nbatch_free(&b);
	if (err || !k)
		return err;
	memcpy(n->size, size, sizeof(size));
	err = nfnl_genid(n, &now);
	if (!err && *genid != NO_GENID && now != (uint32_t)(*genid + 1))
		err = -ERESTART;	/* someone else's commit came between */
	if (*genid != NO_GENID)
		*genid = now;
	return err;
}

static void counts_done(struct vnic_nft *n, bool committed)
{
	unsigned int s;

	for (s = 0; s < NSETS; s++) {
		if (committed && s < S__MAX)
			n->nelem[s] = (uint32_t)((int64_t)n->nelem[s] + n->pend[s]);
		n->pend[s] = 0;
	}
}

/*
 * A table that does not exist yet is made in the change's batch: the table
 * and its sets, sized for what the change adds, go before the change's
 * messages.  NLM_F_EXCL and the generation make a table someone else made
 * meanwhile fail the commit rather than be taken over.
 */
static int prepend_table(struct change *ch)
{
	struct vnic_nft *n = ch->n;
	struct nbatch head;
	unsigned int s;
	int err;

	for (s = 0; s < S__MAX; s++)
		n->size[s] = fit_size(n, (enum nset)s);
	nbatch_init(&head);
	err = layout_table(n, &head, true);
	if (!err)
		err = layout_skeleton(n, &head);
	if (!err)
		err = nbatch_prepend(&ch->b, &head);
	nbatch_free(&head);
	return err;
}

/* The chains of the asked prefixes, after the change's messages (their
 * rules jump to the switch chains the change may make). */
static int append_prefixes(struct change *ch, unsigned int *count)
{
	return prefix_build(ch->n, &ch->b, count);
}

/* Commit: the table if it is new, the guest changes, the hooks, the prefix
 * chains, the new state element, all in one batch (after the sets of an
 * existing table grew if they must).  On failure the kernel kept the old
 * state: so does the handle, by reading it back. */
int change_end(struct change *ch, int err, uint64_t genid)
{
	struct vnic_nft *n = ch->n;
	bool wrote = ch->b.msgs, proven = false;
	unsigned int npfx = 0;

	if (!err && wrote) {
		err = guest_adds_flush(n, &ch->b);
		if (!err)
			err = shards_flush(n, &ch->b);
		if (!err)
			err = append_prefixes(ch, &npfx);
		if (!err && !n->pending)
			err = grow_sets(ch, &genid);
		/* A pending claim commits first: the state records the
		 * generation after both. */
		if (!err && !n->pending)
			err = claim_commit(n, &genid);
		/* The generation this commit makes, when the handle can vouch
		 * for the whole table after it: a table it makes, or one as
		 * its last commit left it (nothing committed since). */
		proven = genid != NO_GENID && (n->pending ||
			 (n->clean && (uint32_t)genid == n->clean_gen));
		n->state_gen = proven ? (uint32_t)genid + 1 : 0;
		if (!err && n->has_state)
			err = state_elem(n, &ch->b, 0, false);
		if (!err)
			err = state_elem(n, &ch->b, ch->digest, true);
		n->state_gen = 0;
		if (!err && n->pending)
			err = prepend_table(ch);
		if (!err && n->before_commit)
			n->before_commit(n->before_commit_arg);
		if (!err)
			err = nbatch_commit_res(n, &ch->b, genid, ch->res);
		if (npfx && (err == -EINVAL || err == -EOPNOTSUPP)) {
			/* No NFTA_DEVICE_PREFIX here: the caller builds the
			 * change again with every NIC hooked by name. */
			n->features &= ~VNIC_NFT_FEAT_PREFIX_HOOK;
			n->pfx_refused = true;
			n->ctx->err.extack[0] = '\0';
		}
		if (err == -EEXIST && n->pending) {
			nfnl_set_err(n, err, "table netdev %s was made by someone else "
				"while this commit was built", n->table);
		} else if (err == -EEXIST) {
			/* A guest read back is known by name only, so a NIC it
			 * has is not refused up front: its elements are. */
			nfnl_set_err(n, err, "commit to table netdev %s: an element of "
				"this change exists already: a NIC of the policy "
				"belongs to another installed guest", n->table);
		} else if (err == -ERESTART || err == -EINTR) {
			err = -EAGAIN;
			nfnl_set_err(n, err, "the ruleset of table %s changed while this "
				"commit was built", n->table);
		} else if (err == -ENFILE) {
			nfnl_set_err(n, err, "a set of table netdev %s is full: its size "
				"could not be raised (a kernel before 6.5, or "
				"elements added by another process)", n->table);
		} else if (err) {
			nfnl_set_err(n, err, "commit to table netdev %s", n->table);
		}
	}
	nbatch_free(&ch->b);
	purge_read_free(ch->pr);
	ch->pr = NULL;
	guest_adds_drop(n);
	shards_drop(n);
	counts_done(n, !err && wrote);
	if (err) {
		/* The kernel's state is the truth.  Reading it may fail too:
		 * then the handle is stale and reads before its next change,
		 * and the commit's error stays the one reported. */
		(void)open_state(n);
		return err;
	}
	if (wrote) {
		prefix_done(n, true);
		n->pending = n->claim_pending = false;
	}
	n->table_digest = ch->digest;
	n->has_state = n->has_state || wrote;
	/* Its state element recorded the generation it made if proven. */
	if (wrote) {
		n->clean = proven;
		n->clean_gen = (uint32_t)genid + 1;
	}
	/* What it forgot: no index into inst or a list is held past here. */
	inst_compact(n);
	devlist_compact(&n->customs);
	devlist_compact(&n->tochains);
	shards_compact(n);
	if (ch->res && (err = nfnl_genid(n, &ch->res->genid)))
		return vnic_set_err(n->ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "the change is committed, but reading the "
				    "ruleset generation after it failed");
	return 0;
}
