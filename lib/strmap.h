/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A string -> unsigned map (open addressing), for O(1) name lookups. */
#ifndef VNIC_STRMAP_H
#define VNIC_STRMAP_H

#include <stdint.h>

struct strmap {
	struct strmap_slot {
		const char *key;	/* borrowed: must outlive the entry */
		uint32_t val;
		uint32_t hash;		/* of key: probes and growth read no key */
	} *slots;
	uint32_t n, cap;
};

void strmap_init(struct strmap *m);
void strmap_free(struct strmap *m);
/* 0, or -EEXIST (the value stays), or -ENOMEM. */
int strmap_add(struct strmap *m, const char *key, uint32_t val);
/* Set key's value, adding key if absent (then borrowed): 0 (it was
 * there), 1 (added), or -ENOMEM.  One lookup where set-else-add makes two. */
int strmap_put(struct strmap *m, const char *key, uint32_t val);
/* Start loading key's slot: a put or get of several keys that first
 * prefetches them all waits for one cache miss, not one each. */
void strmap_prefetch(const struct strmap *m, const char *key);
/* Room for n more keys without growing: 0 or -ENOMEM. */
int strmap_reserve(struct strmap *m, uint32_t n);
/* Replace the value of a key that is in the map: 0, or -ENOENT. */
int strmap_set(struct strmap *m, const char *key, uint32_t val);
/* 0 with *val, or -ENOENT. */
int strmap_get(const struct strmap *m, const char *key, uint32_t *val);
uint64_t vnic_hash64(const void *p, size_t len, uint64_t h);
#define VNIC_HASH_LANES 4
void vnic_hash64_n(const uint8_t *const *p, const size_t *len, uint64_t *h,
		   unsigned int n);
#define VNIC_HASH_INIT 14695981039346656037ull

#endif /* VNIC_STRMAP_H */
