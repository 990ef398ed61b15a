// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Link names to ifindexes.  A lookup is one hash and, for most, one
 * compare (the stored hash is checked first); removal shifts the probe run
 * back, so the map never fills with tombstones however often links come
 * and go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/namemap.h"

#define NM_MIN_CAP	256

/* FNV-1a over the name's first VNIC_IFNAME_MAX bytes at most. */
static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;
	unsigned int i;

	for (i = 0; i < VNIC_IFNAME_MAX && name[i]; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	return h;
}

static struct namemap_slot *find(const struct namemap *m, const char *name,
				 uint32_t h)
{
	uint32_t i, mask = m->cap - 1;

	if (!m->cap)
		return NULL;
	for (i = h & mask; m->slots[i].ifindex; i = (i + 1) & mask)
		if (m->slots[i].hash == h &&
		    !strncmp(m->slots[i].name, name, VNIC_IFNAME_MAX))
			return &m->slots[i];
	return NULL;
}

/* The empty slot where an entry of hash h goes (the map has room). */
static struct namemap_slot *free_slot(struct namemap *m, uint32_t h)
{
	uint32_t i, mask = m->cap - 1;

	for (i = h & mask; m->slots[i].ifindex; i = (i + 1) & mask)
		;
	return &m->slots[i];
}

static int grow(struct namemap *m)
{
	struct namemap_slot *old = m->slots;
	uint32_t i, oldcap = m->cap, cap = oldcap ? oldcap * 2 : NM_MIN_CAP;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = cap;
	for (i = 0; i < oldcap; i++)
		if (old[i].ifindex)
			*free_slot(m, old[i].hash) = old[i];
	free(old);
	return 0;
}

void namemap_free(struct namemap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

void namemap_clear(struct namemap *m)
{
	if (m->slots)
		memset(m->slots, 0, m->cap * sizeof(*m->slots));
	m->n = 0;
}

int namemap_put(struct namemap *m, const char *name, int ifindex)
{
	uint32_t h = name_hash(name);
	struct namemap_slot *s = find(m, name, h);

	if (s) {
		s->ifindex = ifindex;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	s = free_slot(m, h);
	s->ifindex = ifindex;
	s->hash = h;
	memset(s->name, 0, sizeof(s->name));
	strncpy(s->name, name, VNIC_IFNAME_MAX);
	m->n++;
	return 0;
}

void namemap_del(struct namemap *m, const char *name, int ifindex)
{
	struct namemap_slot *s = find(m, name, name_hash(name));
	uint32_t mask = m->cap - 1, i, j;

	if (!s || s->ifindex != ifindex)
		return;
	i = j = (uint32_t)(s - m->slots);
	for (;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (!m->slots[j].ifindex)
			break;
		/* An entry may move back to i unless its home lies in
		 * (i, j]: then i is before where its probe starts. */
		home = m->slots[j].hash & mask;
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && home <= i && home > j)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].ifindex = 0;
	m->n--;
}

int namemap_get(const struct namemap *m, const char *name)
{
	const struct namemap_slot *s;

	if (strnlen(name, VNIC_IFNAME_MAX + 1) > VNIC_IFNAME_MAX)
		return 0;
	s = find(m, name, name_hash(name));

	return s ? s->ifindex : 0;
}
