// SPDX-License-Identifier: LGPL-2.1-or-later
/* A string -> unsigned map (open addressing, linear probing, no removal). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/strmap.h"

/* FNV-1a: small, and good enough for names we check for equality anyway. */
uint64_t vnic_hash64(const void *p, size_t len, uint64_t h)
{
	const unsigned char *c = p;

	while (len--)
		h = (h ^ *c++) * 1099511628211ull;
	return h;
}

/*
 * vnic_hash64() of n <= VNIC_HASH_LANES byte strings, each from its own
 * h[i]: each byte's multiply waits for the one before, so one string runs
 * at the multiplier's latency; several interleaved keep it busy (a full
 * apply digests some 280 KB of policy).
 */
void vnic_hash64_n(const uint8_t *const *p, const size_t *len, uint64_t *h,
		   unsigned int n)
{
	uint64_t a = h[0], b = n > 1 ? h[1] : 0, c = n > 2 ? h[2] : 0,
		 d = n > 3 ? h[3] : 0;
	size_t i, common = len[0];
	const uint8_t *pa = p[0], *pb = n > 1 ? p[1] : pa,
		      *pc = n > 2 ? p[2] : pa, *pd = n > 3 ? p[3] : pa;

	for (i = 1; i < n; i++)
		if (len[i] < common)
			common = len[i];
	for (i = 0; i < common; i++) {
		a = (a ^ pa[i]) * 1099511628211ull;
		b = (b ^ pb[i]) * 1099511628211ull;
		c = (c ^ pc[i]) * 1099511628211ull;
		d = (d ^ pd[i]) * 1099511628211ull;
	}
	h[0] = vnic_hash64(pa + common, len[0] - common, a);
	if (n > 1)
		h[1] = vnic_hash64(pb + common, len[1] - common, b);
	if (n > 2)
		h[2] = vnic_hash64(pc + common, len[2] - common, c);
	if (n > 3)
		h[3] = vnic_hash64(pd + common, len[3] - common, d);
}

void strmap_init(struct strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void strmap_free(struct strmap *m)
{
	free(m->slots);
	strmap_init(m);
}

static uint32_t hash_of(const char *key)
{
	return (uint32_t)vnic_hash64(key, strlen(key), VNIC_HASH_INIT);
}

/* A slot whose hash differs is passed without reading its key: a key is
 * a pointer elsewhere, one cache miss per probe otherwise. */
static uint32_t slot_of(const struct strmap *m, const char *key, uint32_t h)
{
	uint32_t i;

	for (i = h & (m->cap - 1); m->slots[i].key; i = (i + 1) & (m->cap - 1))
		if (m->slots[i].hash == h && !strcmp(m->slots[i].key, key))
			break;
	return i;
}

/* Growing moves slots by their stored hash: keys are not compared (they
 * are unique) nor hashed again. */
static void move_in(struct strmap *m, const struct strmap_slot *s)
{
	uint32_t i;

	for (i = s->hash & (m->cap - 1); m->slots[i].key;
	     i = (i + 1) & (m->cap - 1))
		;
	m->slots[i] = *s;
	m->n++;
}

static int grow(struct strmap *m)
{
	struct strmap old = *m;
	uint32_t i;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		*m = old;
		return -ENOMEM;
	}
	m->n = 0;
	for (i = 0; i < old.cap; i++)
		if (old.slots[i].key)
			move_in(m, &old.slots[i]);
	free(old.slots);
	return 0;
}

int strmap_add(struct strmap *m, const char *key, uint32_t val)
{
	uint32_t i, h = hash_of(key);

	if ((m->n + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	i = slot_of(m, key, h);
	if (m->slots[i].key)
		return -EEXIST;
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->slots[i].hash = h;
	m->n++;
	return 0;
}

int strmap_put(struct strmap *m, const char *key, uint32_t val)
{
	uint32_t i, h = hash_of(key);

	if ((m->n + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	i = slot_of(m, key, h);
	m->slots[i].val = val;
	if (m->slots[i].key)
		return 0;
	m->slots[i].key = key;
	m->slots[i].hash = h;
	m->n++;
	return 1;
}

void strmap_prefetch(const struct strmap *m, const char *key)
{
	if (m->cap)
		__builtin_prefetch(&m->slots[hash_of(key) & (m->cap - 1)], 1);
}

int strmap_reserve(struct strmap *m, uint32_t n)
{
	while ((m->n + n) * 2 > m->cap)
		if (grow(m))
			return -ENOMEM;
	return 0;
}

int strmap_set(struct strmap *m, const char *key, uint32_t val)
{
	uint32_t i;

	if (!m->cap)
		return -ENOENT;
	i = slot_of(m, key, hash_of(key));
	if (!m->slots[i].key)
		return -ENOENT;
	m->slots[i].val = val;
	return 0;
}

int strmap_get(const struct strmap *m, const char *key, uint32_t *val)
{
	uint32_t i;

	if (!m->cap)
		return -ENOENT;
	i = slot_of(m, key, hash_of(key));
	if (!m->slots[i].key)
		return -ENOENT;
	*val = m->slots[i].val;
	return 0;
}
