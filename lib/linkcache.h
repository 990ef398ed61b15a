/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The link table: every link of a namespace by ifindex and by name, built
 * by one RTM_GETLINK dump and kept current by an RTNLGRP_LINK
 * subscription; the names it hands out are picked around the links'
 * (lib/namepick.h).
 */
#ifndef VNIC_LINKCACHE_H
#define VNIC_LINKCACHE_H

#include <stdint.h>

struct vnic_ctx;
struct nl_sock;
struct linkcache;

struct linkcache *linkcache_new(uint32_t quarantine_ms);
void linkcache_free(struct linkcache *lc);
/* Subscribe to link events in nsfd (-1: current); before the first build. */
int linkcache_monitor(struct linkcache *lc, int nsfd, uint32_t rcvbuf);
/* Rebuild from a dump through s; an interrupted dump is completed from the
 * monitor's queue (see linkcache.c). */
int linkcache_rebuild(struct linkcache *lc, struct nl_sock *s);
/* Apply pending link events; rebuild on overflow (or always, unmonitored).
 * *resynced is set when a rebuild happened. */
int linkcache_update(struct linkcache *lc, struct nl_sock *s, int *resynced);
/* Lowest free, not quarantined suffix for prefix (namepick_pick(): a
 * quarantined one when every free one is); the name marked taken for
 * every prefix it belongs to ("ab10": "ab" and "ab1").  -ENOSPC when the
 * names prefixN that fit IFNAMSIZ are all taken. */
int linkcache_pick(struct linkcache *lc, const char *prefix, uint32_t *suffix);
/* A pick that was never created: free again, not quarantined. */
void linkcache_unpick(struct linkcache *lc, const char *prefix, uint32_t suffix);

/* The ifindex of the link named name (its name, not an altname), or 0. */
int linkcache_ifindex(const struct linkcache *lc, const char *name);
/* The kind of link ifindex as an enum vnic_kind (link_kind()), 0 when it
 * is none libvnic makes or the table lacks the link. */
int linkcache_kind(const struct linkcache *lc, int ifindex);

/* The context's table, built on first use and brought up to date. */
int vnic_ctx_linkcache(struct vnic_ctx *ctx, struct linkcache **out);
/* The context's table brought up to date, when it is built and exact
 * (monitored, no event lost since a complete dump): every link in it has
 * the name and ifindex the kernel gives it.  Never built here (one dump
 * costs more than asking for the NICs of most policies).  NULL when there
 * is no such table, or it failed to update: then ask the kernel. */
const struct linkcache *vnic_ctx_exact_links(struct vnic_ctx *ctx);
/* Force a full rebuild of the context's table. */
int linkcache_resync(struct vnic_ctx *ctx);

#endif /* VNIC_LINKCACHE_H */
