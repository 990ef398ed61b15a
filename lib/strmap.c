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

void strmap_init(struct strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void strmap_free(struct strmap *m)
{
	free(m->slots);
	strmap_init(m);
}

static uint32_t slot_of(const struct strmap *m, const char *key)
{
	uint32_t i = (uint32_t)vnic_hash64(key, strlen(key), VNIC_HASH_INIT);

	for (i &= m->cap - 1; m->slots[i].key; i = (i + 1) & (m->cap - 1))
		if (!strcmp(m->slots[i].key, key))
			break;
	return i;
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
			strmap_add(m, old.slots[i].key, old.slots[i].val);
	free(old.slots);
	return 0;
}

int strmap_add(struct strmap *m, const char *key, uint32_t val)
{
	uint32_t i;

	if ((m->n + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	i = slot_of(m, key);
	if (m->slots[i].key)
		return -EEXIST;
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->n++;
	return 0;
}

int strmap_set(struct strmap *m, const char *key, uint32_t val)
{
	uint32_t i;

	if (!m->cap)
		return -ENOENT;
	i = slot_of(m, key);
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
	i = slot_of(m, key);
	if (!m->slots[i].key)
		return -ENOENT;
	*val = m->slots[i].val;
	return 0;
}
