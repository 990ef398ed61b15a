/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Picking "prefixN" names: per template prefix, which suffixes are taken
 * (by a link or a pick) and which are quarantined (freed less than
 * quarantine_ms ago).  The link table (lib/linkcache.h) tells it every
 * name a link takes or frees; it asks the table for the links' names only
 * when a prefix is first used.  A pick is O(1) amortized whatever the
 * number of links.
 */
#ifndef VNIC_NAMEPICK_H
#define VNIC_NAMEPICK_H

#include <stdbool.h>
#include <stdint.h>

struct namepick;

/* Largest suffix handed out (the kernel's own %d stops at 32767). */
#define NAMEPICK_MAX_SUFFIX ((1u << 20) - 1)

/* The name of a link at slot *pos or after, *pos moved past it; NULL after
 * the last (start with *pos 0). */
typedef const char *namepick_links_fn(void *arg, uint32_t *pos);

struct namepick *namepick_new(uint32_t quarantine_ms);
void namepick_free(struct namepick *np);

/* Whether name is one a template could make (it ends in a digit, and fits
 * IFNAMSIZ): only those are taken, freed and quarantined. */
bool namepick_kept(const char *name);
/* A link has name (namepick_kept()), so under every prefix in use it is a
 * name of: 0 or -ENOMEM (then nothing changed). */
int namepick_claim(struct namepick *np, const char *name);
/* name is free again (no quarantine: a dump that starts over). */
void namepick_release(struct namepick *np, const char *name);
/* A link no longer has name: free, and quarantined. */
void namepick_freed(struct namepick *np, const char *name);
/* Forget every name taken (a rebuild's dump claims them again); the
 * quarantine stays. */
void namepick_clear_used(struct namepick *np);

/* Lowest free, not quarantined suffix for prefix, or when every free one
 * is quarantined the one freed longest ago; the name marked taken for
 * every prefix it belongs to ("ab10": "ab" and "ab1").  links gives the
 * links' names when prefix is first used.  -ENOSPC when the names prefixN
 * that fit IFNAMSIZ are all taken. */
int namepick_pick(struct namepick *np, const char *prefix,
		  namepick_links_fn *links, void *arg, uint32_t *suffix);
/* A pick that was never created: free again, not quarantined. */
void namepick_unpick(struct namepick *np, const char *prefix, uint32_t suffix);

#endif /* VNIC_NAMEPICK_H */
