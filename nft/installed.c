// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the handle knows is installed: the guests it installed (with their
 * policy and ifindexes) or read back after a restart (by name and digest),
 * which guest each NIC belongs to, and the public readers of that state:
 * the guests and their drop counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libnftnl/set.h>

#include "nft/read.h"

void inst_clear(struct vnic_nft *n)
{
	unsigned int i;

	for (i = 0; i < n->ninst; i++) {
		pguest_free(n->inst[i].g);
		free(n->inst[i].ifindex);
	}
	free(n->inst);
	n->inst = NULL;
	n->ninst = n->capinst = n->nholes = 0;
	strmap_free(&n->inst_map);
	free(n->inst_keys);
	n->inst_keys = NULL;
	strmap_free(&n->nic_owner);
	for (i = 0; i < n->nkey_blocks; i++)
		free(n->nic_keys[i]);
	free(n->nic_keys);
	n->nic_keys = NULL;
	n->nnic_keys = n->nkey_blocks = 0;
}

/* A copy of ifname that nic_owner can borrow, in blocks that never move:
 * one allocation per NIC_KEYS_BLOCK NICs, not one per NIC. */
static const char *nic_key(struct vnic_nft *n, const char *ifname)
{
	unsigned int b = n->nnic_keys / NIC_KEYS_BLOCK;
	size_t len = strnlen(ifname, IFNAMSIZ - 1);
	char *key;

	if (b == n->nkey_blocks) {
		char **v = realloc(n->nic_keys, (b + 1) * sizeof(*v));

		if (!v)
			return NULL;
		n->nic_keys = v;
		v[b] = malloc(NIC_KEYS_BLOCK * IFNAMSIZ);
		if (!v[b])
			return NULL;
		n->nkey_blocks++;
	}
	key = n->nic_keys[b] + (n->nnic_keys++ % NIC_KEYS_BLOCK) * IFNAMSIZ;
	memcpy(key, ifname, len);
	key[len] = '\0';
	return key;
}

/* The guest at index i claims its NICs (nic_owner).  Each name is copied
 * first (into the blocks, cheap) and the copy given back when the NIC was
 * in the map already: one lookup per NIC. */
int inst_claim(struct vnic_nft *n, uint32_t i)
{
	const struct pguest *g = n->inst[i].g;
	unsigned int k;
	int r;

	for (k = 0; k < g->nn; k++)
		strmap_prefetch(&n->nic_owner, g->nics[k].ifname);
	for (k = 0; k < g->nn; k++) {
		const char *key = nic_key(n, g->nics[k].ifname);

		r = key ? strmap_put(&n->nic_owner, key, i) : -ENOMEM;
		if (r < 0)
			return r;
		if (!r)
			n->nnic_keys--;
	}
	return 0;
}

/* The installed guest (known in full) that has NIC ifname, or NULL. */
const struct installed *nic_owner(const struct vnic_nft *n,
					 const char *ifname)
{
	const struct installed *in;
	uint32_t i;
	unsigned int k;

	if (strmap_get(&n->nic_owner, ifname, &i))
		return NULL;
	in = &n->inst[i];
	for (k = 0; in->name[0] && in->g && k < in->g->nn; k++)
		if (!strcmp(in->g->nics[k].ifname, ifname))
			return in;
	return NULL;
}

struct installed *inst_find(struct vnic_nft *n, const char *name)
{
	uint32_t i;

	if (strmap_get(&n->inst_map, name, &i) || !n->inst[i].name[0])
		return NULL;
	return &n->inst[i];
}

/* The slot of key in inst_keys: its entry, or the free slot it goes to
 * (the table is at most half full).  An entry of a guest forgotten since
 * (inst_forget()) is reused by the next guest of that key. */
static uint32_t *key_slot(const struct vnic_nft *n, uint32_t key)
{
	uint32_t mask = 2 * n->capinst - 1, i;

	for (i = (key * 2654435761u) & mask; n->inst_keys[i];
	     i = (i + 1) & mask)
		if (n->inst[n->inst_keys[i] - 1].key == key)
			break;
	return &n->inst_keys[i];
}

const struct installed *inst_by_key(const struct vnic_nft *n, uint32_t key)
{
	const struct installed *in;
	uint32_t v;

	if (!n->inst_keys)
		return NULL;
	v = *key_slot(n, key);
	in = v ? &n->inst[v - 1] : NULL;
	return in && in->name[0] ? in : NULL;
}

/* The maps borrow inst[].name and index inst[]: the array moves only by
 * realloc and inst_compact(), so they are rebuilt then. */
static int inst_rehash(struct vnic_nft *n)
{
	unsigned int i;
	int err = 0;

	strmap_free(&n->inst_map);
	free(n->inst_keys);
	n->inst_keys = calloc(2 * n->capinst, sizeof(*n->inst_keys));
	if (!n->inst_keys)
		return -ENOMEM;
	for (i = 0; i < n->ninst && !err; i++) {
		if (!n->inst[i].name[0])
			continue;
		err = strmap_add(&n->inst_map, n->inst[i].name, i);
		*key_slot(n, n->inst[i].key) = i + 1;
	}
	return err;
}

/* Room for more guests: a change reserves its policy's at once, so that
 * the map is not rebuilt at each doubling; nics: their NICs. */
int inst_reserve(struct vnic_nft *n, unsigned int more, unsigned int nics)
{
	unsigned int cap = n->capinst ? n->capinst : 64;
	struct installed *in;

	if (strmap_reserve(&n->nic_owner, nics))
		return -ENOMEM;
	while (cap - n->ninst < more)
		cap *= 2;
	if (cap == n->capinst)
		return 0;
	in = realloc(n->inst, cap * sizeof(*in));
	if (!in)
		return -ENOMEM;
	n->inst = in;
	n->capinst = cap;
	return inst_rehash(n);
}

struct installed *inst_new(struct vnic_nft *n, const char *name)
{
	size_t len = strnlen(name, sizeof(n->inst->name) - 1);
	struct installed *in;

	if (n->ninst == n->capinst && inst_reserve(n, 1, 0))
		return NULL;
	in = &n->inst[n->ninst];
	memset(in, 0, sizeof(*in));
	memcpy(in->name, name, len);
	in->key = guest_key(in->name);
	if (strmap_add(&n->inst_map, in->name, n->ninst))
		return NULL;
	*key_slot(n, in->key) = ++n->ninst;
	return in;
}

void inst_forget(struct vnic_nft *n, struct installed *in)
{
	pguest_free(in->g);
	free(in->ifindex);
	in->g = NULL;
	in->ifindex = NULL;
	in->name[0] = '\0';	/* a hole; the map entry no longer matches */
	n->nholes++;
}

/* The holes are dropped once there are at least this many and they are
 * most of the array: each compaction then costs no more than the changes
 * that made its holes. */
#define INST_HOLES_MIN 64

/* nic_owner and its key blocks again, from the live guests in order (the
 * last to claim a NIC still wins); blocks no copy needs are freed. */
static int nic_owner_rebuild(struct vnic_nft *n)
{
	unsigned int i, used;
	int err = 0;

	strmap_free(&n->nic_owner);
	n->nnic_keys = 0;
	for (i = 0; i < n->ninst && !err; i++)
		if (n->inst[i].g)
			err = inst_claim(n, i);
	used = (n->nnic_keys + NIC_KEYS_BLOCK - 1) / NIC_KEYS_BLOCK;
	while (n->nkey_blocks > used)
		free(n->nic_keys[--n->nkey_blocks]);
	return err;
}

/*
 * A long-running handle applies and removes guests for days: each removal
 * (or replacement) leaves a hole, and the maps keep entries for it, so
 * what the handle holds would grow with every guest it ever applied.  Only
 * between changes, when no index into inst is held: the live guests move
 * down, the array shrinks to twice their number (at least 64) and the maps
 * are made again.  If that fails the handle reads the table before its
 * next change, as after any failure to record a commit.
 */
void inst_compact(struct vnic_nft *n)
{
	unsigned int i, k = 0, cap = 64;
	struct installed *in;

	if (n->nholes < INST_HOLES_MIN || 2 * n->nholes <= n->ninst)
		return;
	for (i = 0; i < n->ninst; i++)
		if (n->inst[i].name[0])
			n->inst[k++] = n->inst[i];
	n->ninst = k;
	n->nholes = 0;
	while (cap < 2 * k)
		cap *= 2;
	if (cap < n->capinst && (in = realloc(n->inst, cap * sizeof(*in)))) {
		n->inst = in;
		n->capinst = cap;
	}
	if (inst_rehash(n) || nic_owner_rebuild(n)) {
		inst_clear(n);
		n->stale = true;
		n->clean = false;
	}
}

/* Order-independent digest of the whole state: XOR of these. */
uint64_t state_mix(const char *name, uint64_t digest)
{
	return vnic_hash64(&digest, sizeof(digest),
			   vnic_hash64(name, strlen(name), VNIC_HASH_INIT));
}

/* --- reading back after a restart -------------------------------------- */

/* Every element but the state's is a guest's "NAME DIGEST": another one
 * means the table is not (only) ours (check.c). */
static int guests_elem_cb(const struct relem *e, void *data)
{
	struct vnic_nft *n = data;
	const char *c = ud_comment(e->ud, e->udlen);
	uint32_t klen = e->klen, key = 0;
	const void *k = e->key;
	char name[POLICY_GUEST_MAX + 1] = "";
	unsigned long long d = 0;
	struct installed *in;
	bool parsed;
	int err;

	if (k && klen == sizeof(key))
		memcpy(&key, k, sizeof(key));
	parsed = c && sscanf(c, "%64s %llx", name, &d) == 2 &&
		 strcmp(name, "libvnic-state");
	err = check_guest_elem(n, key, name, parsed);
	if (err || key == STATE_KEY)
		return err;
	in = inst_find(n, name) ? inst_find(n, name) : inst_new(n, name);
	if (!in)
		return -ENOMEM;
	in->digest = d;
	return 0;
}

/* The guests, and the digest and count the state element must have. */
int read_guests(struct vnic_nft *n, uint64_t *digest, unsigned int *count)
{
	unsigned int i;
	int err;

	inst_clear(n);
	*digest = 0;
	*count = 0;
	err = read_elems(n, S_GUESTS, guests_elem_cb, n);
	for (i = 0; !err && i < n->ninst; i++) {
		*digest ^= state_mix(n->inst[i].name, n->inst[i].digest);
		++*count;
	}
	return err;
}

int inst_names(const struct vnic_nft *n, char ***names, unsigned int *count)
{
	unsigned int i, k = 0;
	size_t bytes = 0;
	char **out, *s;

	for (i = 0; i < n->ninst; i++)
		if (n->inst[i].name[0])
			bytes += strlen(n->inst[i].name) + 1, k++;
	out = malloc((k + 1) * sizeof(*out) + bytes);
	if (!out)
		return -ENOMEM;
	s = (char *)(out + k + 1);
	for (i = 0, k = 0; i < n->ninst; i++) {
		if (!n->inst[i].name[0])
			continue;
		out[k++] = strcpy(s, n->inst[i].name);
		s += strlen(s) + 1;
	}
	out[k] = NULL;
	*names = out;
	*count = k;
	return 0;
}

int vnic_nft_counter(struct vnic_nft *n, const char *guest,
				 uint64_t *packets, uint64_t *bytes)
{
	char ctr[80], chain[80];
	uint64_t p, b;
	int err;

	if (!n || !guest || !packets || !bytes)
		return -EINVAL;
	vnic_clear_err(n->ctx);
	guest_names(guest, ctr, chain, sizeof(ctr));
	err = read_counter(n, ctr, &p, &b);
	if (err)
		return vnic_set_err(n->ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "counter of guest %s", guest);
	*packets = p;
	*bytes = b;
	return 0;
}
