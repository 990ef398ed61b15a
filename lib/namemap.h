/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Link names to ifindexes (open addressing, linear probing, removal by
 * backward shift): the link table's index by name (lib/linkcache.c).
 */
#ifndef VNIC_NAMEMAP_H
#define VNIC_NAMEMAP_H

#include <stdint.h>

#include <vnic/common.h>

struct namemap {
	struct namemap_slot {
		int ifindex;		/* 0: empty */
		uint32_t hash;		/* of name: growth reads no name */
		char name[VNIC_IFNAME_MAX + 1];
	} *slots;
	uint32_t n, cap;
};

/* A zeroed struct namemap is an empty map. */
void namemap_free(struct namemap *m);
/* Forget every name; the memory is kept. */
void namemap_clear(struct namemap *m);
/* name (at most VNIC_IFNAME_MAX bytes) is ifindex's: 0 or -ENOMEM (then
 * the map is as it was). */
int namemap_put(struct namemap *m, const char *name, int ifindex);
/* name is no longer ifindex's (nothing if it is another's, or no one's). */
void namemap_del(struct namemap *m, const char *name, int ifindex);
/* The ifindex of name, or 0. */
int namemap_get(const struct namemap *m, const char *name);

#endif /* VNIC_NAMEMAP_H */
