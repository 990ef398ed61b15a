// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The shards of the shared base chains and their devices.  A netdev base
 * chain hooks at most 256 devices, so each of "in" and "eg" is split into
 * chains "in0", "in1", ... with the same rules.  A netdev base chain is
 * created with its first devices; after that, adding or removing devices
 * is a chain update (Linux 6.4).  A transaction may create or update a
 * chain once, so the changes of a whole batch are noted here and emitted
 * together at its end; a device removed and added back within one batch
 * cancels out.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libnftnl/chain.h>
#include <libnftnl/rule.h>

#include "nft/internal.h"

struct shard *shard_get(struct vnic_nft *n, enum nchain c, unsigned int k)
{
	struct shard *sh;

	if (k >= n->nshards[c]) {
		sh = realloc(n->shards[c], (k + 1) * sizeof(*sh));
		if (!sh)
			return NULL;
		memset(sh + n->nshards[c], 0, (k + 1 - n->nshards[c]) * sizeof(*sh));
		n->shards[c] = sh;
		for (; n->nshards[c] <= k; n->nshards[c]++)
			snprintf(sh[n->nshards[c]].name, sizeof(sh->name), "%s%u",
				 nchain_names[c], n->nshards[c]);
	}
	return &n->shards[c][k];
}

void shards_clear(struct vnic_nft *n)
{
	unsigned int c, k;

	for (c = 0; c < C__MAX; c++) {
		for (k = 0; k < n->nshards[c]; k++) {
			devlist_clear(&n->shards[c][k].devs);
			devlist_clear(&n->shards[c][k].add);
			devlist_clear(&n->shards[c][k].del);
		}
		free(n->shards[c]);
		n->shards[c] = NULL;
		n->nshards[c] = 0;
	}
}

static unsigned int live_count(const struct devlist *d)
{
	unsigned int i, k = 0;

	for (i = 0; i < d->n; i++)
		k += d->live[i];
	return k;
}

static unsigned int shard_load(const struct shard *sh)
{
	return live_count(&sh->devs) + live_count(&sh->add) - live_count(&sh->del);
}

static struct shard *shard_with(struct vnic_nft *n, enum nchain c,
				const char *dev, size_t list)
{
	unsigned int k;

	for (k = 0; k < n->nshards[c]; k++)
		if (devlist_has((const struct devlist *)
				((const char *)&n->shards[c][k] + list), dev))
			return &n->shards[c][k];
	return NULL;
}

#define IN(field) offsetof(struct shard, field)

/* A device to hook: the first shard with room takes it. */
static int note_add(struct vnic_nft *n, enum nchain c, const char *dev)
{
	struct shard *sh = shard_with(n, c, dev, IN(del));
	unsigned int k;

	if (sh) {			/* removed and added back: no change */
		devlist_del(&sh->del, dev);
		return 0;
	}
	if (shard_with(n, c, dev, IN(devs)) || shard_with(n, c, dev, IN(add)))
		return 0;
	for (k = 0; k < n->nshards[c]; k++)
		if (shard_load(&n->shards[c][k]) < SHARD_DEVS)
			break;
	sh = shard_get(n, c, k);
	return sh ? devlist_add(&sh->add, dev) : -ENOMEM;
}

static int note_del(struct vnic_nft *n, enum nchain c, const char *dev)
{
	struct shard *sh = shard_with(n, c, dev, IN(add));

	if (sh) {
		devlist_del(&sh->add, dev);
		return 0;
	}
	/* Only hooked devices: the kernel refuses removing another. */
	sh = shard_with(n, c, dev, IN(devs));
	return sh ? devlist_add(&sh->del, dev) : 0;
}

int shard_note_devs(struct vnic_nft *n, enum nchain c, const char **devs,
		      unsigned int ndevs, bool del)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < ndevs && !err; i++)
		err = del ? note_del(n, c, devs[i]) : note_add(n, c, devs[i]);
	return err;
}

static const char **live_names(const struct devlist *d, unsigned int *n)
{
	const char **v = calloc(d->n + 1, sizeof(*v));
	unsigned int i;

	*n = 0;
	for (i = 0; v && i < d->n; i++)
		if (d->live[i])
			v[(*n)++] = d->names[i];
	return v;
}

static int chain_msg(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		     struct shard *sh, bool del)
{
	bool create = !del && !sh->ready;
	struct nftnl_chain *ch;
	unsigned int k, i;
	const char **devs = live_names(del ? &sh->del : &sh->add, &k);
	int err;

	if (!devs)
		return -ENOMEM;
	if (!k || (del && !sh->ready)) {
		free(devs);
		return 0;
	}
	ch = nftnl_chain_alloc();
	if (!ch) {
		free(devs);
		return -ENOMEM;
	}
	err = chain_id(ch, n->table, sh->name);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, nchain_hook((enum nchain)c));
	nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, 0);
	if (create) {
		if (nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, "filter") < 0)
			err = -ENOMEM;
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	}
	if (!err)
		err = chain_set_devices(ch, devs);
	if (err)
		nftnl_chain_free(ch);
	else
		err = PUT(b, del ? NFT_MSG_DELCHAIN : NFT_MSG_NEWCHAIN,
			  del ? 0 : NLM_F_CREATE, ch, chain);
	for (i = 0; !err && i < k; i++) {
		if (del)
			devlist_del(&sh->devs, devs[i]);
		else
			err = devlist_add(&sh->devs, devs[i]);
	}
	free(devs);
	if (!err && create) {
		err = rules_base_chain(n, b, c, sh->name);
		sh->ready = true;	/* re-read if the commit fails */
	}
	return err;
}

/* The whole chain goes: the kernel will not hook devices again into a
 * netdev chain whose device list was emptied.  Its rules go first. */
static int chain_delete(struct vnic_nft *n, struct nbatch *b, struct shard *sh)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_chain *ch;
	int err;

	if (!r)
		return -ENOMEM;
	err = rule_id(r, n->table, sh->name);
	if (err)
		nftnl_rule_free(r);
	else
		err = PUT(b, NFT_MSG_DELRULE, 0, r, rule);
	ch = err ? NULL : nftnl_chain_alloc();
	if (!ch)
		return err ? err : -ENOMEM;
	if (chain_id(ch, n->table, sh->name)) {
		nftnl_chain_free(ch);
		return -ENOMEM;
	}
	err = PUT(b, NFT_MSG_DELCHAIN, 0, ch, chain);
	devlist_clear(&sh->devs);
	sh->ready = false;
	return err;
}

int shards_flush(struct vnic_nft *n, struct nbatch *b)
{
	unsigned int c, k;
	int err = 0;

	for (c = 0; c < C__MAX && !err; c++) {
		for (k = 0; k < n->nshards[c] && !err; k++) {
			struct shard *sh = &n->shards[c][k];
			unsigned int adds = live_count(&sh->add);
			unsigned int dels = live_count(&sh->del);

			if (sh->ready && dels && !adds &&
			    dels == live_count(&sh->devs)) {
				err = chain_delete(n, b, sh);
				continue;
			}
			/* Add before removing: the chain never runs empty. */
			err = chain_msg(n, b, c, sh, false);
			if (!err)
				err = chain_msg(n, b, c, sh, true);
		}
	}
	shards_drop(n);
	return err;
}

/* A shard's devices outlive its guests' NICs, which come and go under
 * names of their own: without this it would hold every name it ever
 * hooked.  Between batches only, as devlist_compact(). */
void shards_compact(struct vnic_nft *n)
{
	unsigned int c, k;

	for (c = 0; c < C__MAX; c++)
		for (k = 0; k < n->nshards[c]; k++)
			devlist_compact(&n->shards[c][k].devs);
}

void shards_drop(struct vnic_nft *n)
{
	unsigned int c, k;

	for (c = 0; c < C__MAX; c++)
		for (k = 0; k < n->nshards[c]; k++) {
			devlist_clear(&n->shards[c][k].add);
			devlist_clear(&n->shards[c][k].del);
		}
}
