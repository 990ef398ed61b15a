// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The NICs of a policy resolved to their ifindexes (elements are keyed by
 * ifindex, so a NIC renamed or made again is a different NIC), and a
 * guest's digest over the rendering's version, its policy and those
 * ifindexes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nft/internal.h"

void resolved_free(struct resolved *r)
{
	free(r->ifi);
	free(r->off);
	free(r->digest);
}

/* The socket for SIOCGIFINDEX/SIOCGIFNAME, made in the context's netns. */
int ifsock_get(struct vnic_nft *n)
{
	int fd = vnic_ifsock(n->ctx, &n->ifsock);

	return fd < 0 ? fd : 0;
}

/* Guest i's digest bytes and ifindexes into bytes[j] (grown as needed). */
static int digest_input(const struct vnic_policy *p, const struct resolved *r,
			unsigned int i, uint8_t **bytes, size_t *cap, size_t *len)
{
	const struct pguest *g = p->g[i];
	size_t ilen = g->nn * sizeof(*r->ifi), need = pguest_digest_len(g) + ilen;

	if (need > *cap) {
		uint8_t *v = realloc(*bytes, need);

		if (!v)
			return -ENOMEM;
		*bytes = v;
		*cap = need;
	}
	*len = pguest_digest_bytes(g, *bytes);
	memcpy(*bytes + *len, &r->ifi[r->off[i]], ilen);
	*len += ilen;
	return 0;
}

/*
 * Every guest's digest into r->digest, four guests at a time:
 * FNV-1a is a chain of multiplies, one byte after the other, which a single
 * guest leaves mostly waiting (at 1,000 guests it was a seventh of the
 * batch's building).
 */
static int digests(const struct vnic_policy *p, struct resolved *r,
		   uint32_t version)
{
	/* Version 0 hashes nothing: the digests of libraries before it. */
	uint64_t seed = version ? vnic_hash64(&version, sizeof(version),
					      VNIC_HASH_INIT) : VNIC_HASH_INIT;
	uint8_t *bytes[VNIC_HASH_LANES] = { NULL };
	size_t cap[VNIC_HASH_LANES] = { 0 }, len[VNIC_HASH_LANES];
	unsigned int i, j, k;
	int err = 0;

	for (i = 0; i < p->n && !err; i += k) {
		k = p->n - i < VNIC_HASH_LANES ? p->n - i : VNIC_HASH_LANES;
		for (j = 0; j < k && !err; j++) {
			err = digest_input(p, r, i + j, &bytes[j], &cap[j], &len[j]);
			r->digest[i + j] = seed;
		}
		if (!err)
			vnic_hash64_n((const uint8_t *const *)bytes, len,
				      &r->digest[i], k);
	}
	for (j = 0; j < VNIC_HASH_LANES; j++)
		free(bytes[j]);
	return err;
}

/*
 * The guests set is keyed by a 32-bit hash of each guest's name
 * (guest_key()), so two names among N guests share a key with a chance of
 * about N^2 / 2^33 (1% at 10,000): vm337081 and vm523190 do.  Installed
 * together, one element would stand for both guests: the commit fails on
 * it, or a sync writes one of them and the table no longer reads back.  So
 * a guest whose key another guest of the policy, or an installed guest the
 * change keeps, has is refused before anything is sent, naming both.
 */
static int keys_clash(struct vnic_nft *n, const char *a, const char *b,
		      uint32_t key)
{
	return vnic_set_err(n->ctx, -EEXIST, VNIC_STEP_VALIDATE, -1, NULL,
			    "guests %s and %s have the same key 0x%08x in the "
			    "guests set (a hash of the name): one table cannot "
			    "hold both, rename one; nothing was changed",
			    a, b, key);
}

/* Two guests of p with one key. */
static int keys_unique(struct vnic_nft *n, const struct vnic_policy *p)
{
	unsigned int size = 16, i, h;
	uint32_t *set, *keys;
	int err = 0;

	while (size < 2 * p->n)
		size *= 2;
	set = calloc(size, sizeof(*set));	/* guest index + 1, 0: free */
	keys = calloc(p->n + 1, sizeof(*keys));
	if (!set || !keys)
		err = -ENOMEM;
	for (i = 0; i < p->n && !err; i++) {
		keys[i] = guest_key(p->g[i]->name);
		for (h = (keys[i] * 2654435761u) & (size - 1);
		     set[h] && keys[set[h] - 1] != keys[i]; h = (h + 1) & (size - 1))
			;
		if (set[h])
			err = keys_clash(n, p->g[set[h] - 1]->name, p->g[i]->name,
					 keys[i]);
		set[h] = i + 1;
	}
	free(set);
	free(keys);
	return err;
}

int keys_untaken(struct vnic_nft *n, const struct vnic_policy *p)
{
	const struct installed *in;
	unsigned int i;

	for (i = 0; i < p->n; i++) {
		in = inst_by_key(n, guest_key(p->g[i]->name));
		if (in && strcmp(in->name, p->g[i]->name))
			return keys_clash(n, in->name, p->g[i]->name, in->key);
	}
	return 0;
}

/*
 * A guest's to-guest chain (to_NAME) hooks its veth and tap NICs with
 * no-promisc by name, and a netdev chain hooks at most SHARD_DEVS devices
 * (the kernel's NFT_NETDEVICE_MAX): the commit of a guest with more failed
 * with the kernel's EFBIG, "File too large".  Refused before anything is
 * sent, saying what to do.  (The shared chains are sharded instead: their
 * devices are many guests'.)
 */
static int to_chains_fit(struct vnic_nft *n, const struct vnic_policy *p)
{
	unsigned int i, k;

	for (i = 0; i < p->n; i++) {
		k = guest_to_count(n, p->g[i]);
		if (k > SHARD_DEVS)
			return vnic_set_err(n->ctx, -E2BIG, VNIC_STEP_VALIDATE, -1,
					    NULL, "guest %s: %u of its NICs (veth "
					    "and tap with no-promisc) would be "
					    "hooked by name on its chain to_%s, "
					    "which hooks at most %u devices: hook "
					    "them by a name prefix, or turn "
					    "no-promisc off on %u of them; nothing "
					    "was changed", p->g[i]->name, k,
					    p->g[i]->name, SHARD_DEVS,
					    k - SHARD_DEVS);
	}
	return 0;
}

/*
 * Every NIC of p by name (policy_resolve_nics(): from the context's link
 * table when it is exact, else SIOCGIFINDEX on a socket of the context's
 * namespace, which costs a name lookup where an RTM_GETLINK reply carries
 * the whole link), then every guest's digest.  A NIC that does not exist
 * fails here, before anything is sent.
 */
int resolve_policy(struct vnic_nft *n, const struct vnic_policy *p,
		   struct resolved *r)
{
	int err = keys_unique(n, p) ?: to_chains_fit(n, p);

	if (!err)
		err = policy_resolve_nics(n->ctx, p, &n->ifsock, &r->ifi, &r->off);
	if (err)
		return err;
	r->digest = calloc(p->n + 1, sizeof(*r->digest));
	if (!r->digest)
		return -ENOMEM;
	return digests(p, r, n->render_version);
}
