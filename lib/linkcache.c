// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The link table (see linkcache.h).
 *
 * Every link by ifindex, with its name (a delete or rename event must free
 * the name the link had): the names taken, which lib/namepick.c hands out
 * suffixes around; it is told each name taken and freed, and asks for the
 * links' names when a prefix is first used (link_names()).
 *
 * Every link is also in a map by name (lib/namemap.h), so that the filter
 * backends can find a NIC's ifindex without asking the kernel: only while
 * the table is exact (vnic_ctx_exact_links()), the monitor having lost nothing
 * since a complete dump.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "lib/internal.h"
#include "lib/link.h"
#include "lib/linkcache.h"
#include "lib/namemap.h"
#include "lib/namepick.h"

#define LC_BUF_SIZE (32 * 1024)
/* Dumps one rebuild makes when the monitor keeps overflowing. */
#define LC_REBUILD_TRIES 4

struct lc_link {
	int ifindex;		/* 0: empty slot */
	uint8_t kind;		/* link_kind() of its last message */
	char name[VNIC_IFNAME_MAX + 1];
};

struct linkcache {
	struct mnl_socket *mon;
	struct vnic_ctx *ctx;	/* its faults (lib/testing.h) */
	unsigned int replies;		/* links the dump handed over */
	bool built;
	/* Built from a complete dump and kept by the monitor with no event
	 * lost since: every link's name and ifindex are the kernel's. */
	bool exact;
	struct namepick *np;		/* the names picked around the links */
	struct lc_link *links;
	uint32_t nlinks, cap_links;	/* open addressing, linear probing */
	struct namemap names;		/* the same links by name */
};

struct linkcache *linkcache_new(uint32_t quarantine_ms)
{
	struct linkcache *lc = calloc(1, sizeof(*lc));

	if (!lc)
		return NULL;
	lc->np = namepick_new(quarantine_ms);
	if (!lc->np) {
		free(lc);
		return NULL;
	}
	return lc;
}

void linkcache_free(struct linkcache *lc)
{
	if (!lc)
		return;
	namepick_free(lc->np);
	if (lc->mon)
		mnl_socket_close(lc->mon);
	free(lc->links);
	namemap_free(&lc->names);
	free(lc);
}

/* --- ifindex map ------------------------------------------------------ */

static struct lc_link *find_link(const struct linkcache *lc, int ifindex)
{
	uint32_t i, mask = lc->cap_links - 1;

	if (!lc->cap_links)
		return NULL;
	for (i = (uint32_t)ifindex * 2654435761u & mask; lc->links[i].ifindex;
	     i = (i + 1) & mask)
		if (lc->links[i].ifindex == ifindex)
			return &lc->links[i];
	return NULL;
}

/* The empty slot where ifindex goes (the map has room). */
static struct lc_link *free_link_slot(struct linkcache *lc, int ifindex)
{
	uint32_t i, mask = lc->cap_links - 1;

	for (i = (uint32_t)ifindex * 2654435761u & mask; lc->links[i].ifindex;
	     i = (i + 1) & mask)
		;
	return &lc->links[i];
}

static int grow_links(struct linkcache *lc)
{
	struct lc_link *old = lc->links;
	uint32_t i, oldcap = lc->cap_links;
	uint32_t cap = oldcap ? oldcap * 2 : 256;

	lc->links = calloc(cap, sizeof(*lc->links));
	if (!lc->links) {
		lc->links = old;
		return -ENOMEM;
	}
	lc->cap_links = cap;
	for (i = 0; i < oldcap; i++)
		if (old[i].ifindex)
			*free_link_slot(lc, old[i].ifindex) = old[i];
	free(old);
	return 0;
}

/* A link not in the map, by ifindex and by name (at most
 * VNIC_IFNAME_MAX bytes): 0, or -ENOMEM with the map as it was. */
static int insert_link(struct linkcache *lc, int ifindex, const char *name,
		       int kind)
{
	struct lc_link *l;

	if ((lc->nlinks + 1) * 2 > lc->cap_links && grow_links(lc))
		return -ENOMEM;
	if (namemap_put(&lc->names, name, ifindex))
		return -ENOMEM;
	l = free_link_slot(lc, ifindex);
	l->ifindex = ifindex;
	l->kind = (uint8_t)kind;
	memcpy(l->name, name, strlen(name) + 1);
	lc->nlinks++;
	return 0;
}

/* Backward-shift deletion keeps linear probing free of tombstones. */
static void remove_link(struct linkcache *lc, struct lc_link *l)
{
	uint32_t mask = lc->cap_links - 1, i = (uint32_t)(l - lc->links), j = i;

	namemap_del(&lc->names, l->name, l->ifindex);
	for (;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (!lc->links[j].ifindex)
			break;
		home = (uint32_t)lc->links[j].ifindex * 2654435761u & mask;
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			lc->links[i] = lc->links[j];
			i = j;
		}
	}
	lc->links[i].ifindex = 0;
	lc->nlinks--;
}

/* --- applying links and events -------------------------------------- */

static void forget_link(struct linkcache *lc, struct lc_link *l)
{
	char name[VNIC_IFNAME_MAX + 1];

	memcpy(name, l->name, sizeof(name));
	remove_link(lc, l);
	if (!namepick_kept(name))
		return;
	namepick_freed(lc->np, name);
}

/*
 * 0, or -ENOMEM: the table no longer says which names are taken (the
 * caller's rebuild fails rather than trust it).
 *
 * The name map only holds what the ifindex map holds (a name is put with
 * its link and deleted, if still that link's, when the link loses it), and
 * the ifindex map ends as each link's last event says: so once the events
 * are applied, a name the map answers is that link's.  A stale entry of
 * the dump may drop a name another link has (a miss: the kernel is asked),
 * which that link's next event puts back.
 */
static int apply_link(struct linkcache *lc, const struct link_attrs *la)
{
	struct lc_link *l = find_link(lc, la->ifindex);
	bool named = la->type == RTM_NEWLINK && la->name;
	int err;

	/* A bridge port's own notifications (AF_BRIDGE) carry no kind, and
	 * its release from the bridge is an RTM_DELLINK of a link that
	 * stays: they are about the port, not the link. */
	if (la->family != AF_UNSPEC)
		return 0;
	if (l) {
		if (named && !strcmp(la->name, l->name)) {
			/* Same name: a state change.  The bits and the name
			 * are set again: a replayed delete of an older link
			 * of this name (one the dump still showed) may have
			 * cleared them.  Every RTM_NEWLINK carries the kind
			 * (rtnl_link_fill()). */
			l->kind = (uint8_t)link_kind(la);
			err = namepick_claim(lc->np, l->name);
			return err ? err : namemap_put(&lc->names, l->name,
						       l->ifindex);
		}
		if (la->type == RTM_NEWLINK && !la->name)
			return 0;	/* says nothing about the name */
		forget_link(lc, l);	/* deleted, or renamed */
	}
	if (!named || !la->name[0] ||
	    strnlen(la->name, VNIC_IFNAME_MAX + 1) > VNIC_IFNAME_MAX)
		return 0;
	err = namepick_kept(la->name) ? namepick_claim(lc->np, la->name) : 0;
	return err ? err : insert_link(lc, la->ifindex, la->name, link_kind(la));
}

/* Empty the ifindex map (memset of a map never allocated is UB even for 0
 * bytes). */
static void forget_all_links(struct linkcache *lc)
{
	if (lc->links)
		memset(lc->links, 0, lc->cap_links * sizeof(*lc->links));
	lc->nlinks = 0;
	namemap_clear(&lc->names);
}

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct linkcache *lc = data;
	struct link_attrs la;
	unsigned int i;

	/* A test's fault: the callback of the dump's k-th link fails
	 * (unit k of VNIC_STEP_DUMP; unit 0 is before the dump). */
	if (nlh && lc->ctx && vnic_fault(lc->ctx, VNIC_STEP_DUMP, ++lc->replies))
		return -EIO;
	if (!nlh) {	/* dump restarted: forget what it gave so far */
		for (i = 0; i < lc->cap_links; i++)
			if (lc->links[i].ifindex)
				namepick_release(lc->np, lc->links[i].name);
		forget_all_links(lc);
		return 0;
	}
	return link_parse(nlh, &la) ? 0 : apply_link(lc, &la);
}

struct mon_args {
	struct mnl_socket *mnl;
	uint32_t rcvbuf;
};

static int monitor_open_fn(void *arg)
{
	struct mon_args *a = arg;
	int v = (int)a->rcvbuf, fd;

	a->mnl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!a->mnl)
		return -errno;
	fd = mnl_socket_get_fd(a->mnl);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (mnl_socket_bind(a->mnl, 1u << (RTNLGRP_LINK - 1), MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;

		mnl_socket_close(a->mnl);
		return err;
	}
	return 0;
}

int linkcache_monitor(struct linkcache *lc, int nsfd, uint32_t rcvbuf)
{
	struct mon_args a = { .rcvbuf = rcvbuf };
	int err = vnic_in_netns(nsfd, monitor_open_fn, &a);

	if (!err)
		lc->mon = a.mnl;
	return err;
}

/* Throw away queued events: the dump that follows supersedes them.  (An
 * event cut to the buffer, ENOSPC, is taken from the queue too.) */
static void drain_monitor(struct linkcache *lc, char *buf, size_t len)
{
	while (lc->mon && (mnl_socket_recvfrom(lc->mon, buf, len) > 0 ||
			   errno == ENOBUFS || errno == ENOSPC))
		;
}

/* Apply every queued event.  0 once the queue is empty, -ENOBUFS if the
 * socket overflowed or an event was larger than buf (events were lost:
 * a link with hundreds of alternative names makes one of 64 KiB), or
 * another -errno. */
static int apply_events(struct linkcache *lc, char *buf, size_t len)
{
	if (lc->ctx && lc->ctx->lost_events) {	/* lib/testing.h */
		lc->ctx->lost_events--;
		return -ENOBUFS;
	}
	for (;;) {
		const struct nlmsghdr *nlh;
		ssize_t n = mnl_socket_recvfrom(lc->mon, buf, len);
		int left;

		if (n < 0 && errno == ENOSPC)
			return -ENOBUFS;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		left = (int)n;
		for (nlh = (const struct nlmsghdr *)buf; nl_msg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			struct link_attrs la;
			int err = link_parse(nlh, &la) ? 0 : apply_link(lc, &la);

			if (err)
				return err;
		}
	}
}

/*
 * One dump, made consistent.  In a busy namespace the kernel often marks a
 * link dump interrupted (NLM_F_DUMP_INTR): links were added, removed or
 * renamed while it was read, and those may be missing or stale in it; the
 * links that lived through it are all there, as they were.  The monitor
 * was subscribed before the dump began, so every such change is in its
 * queue.  Each event carries the whole state of one link, keyed by its
 * ifindex, and apply_link() is idempotent: replaying, in order, every event
 * queued since the dump began leaves each link as its latest event says,
 * which is the truth whatever the dump showed of it.  So an interrupted
 * dump is completed, not thrown away, and a busy namespace costs no retry.
 *
 * Only a monitor that overflowed (ENOBUFS: events were lost) makes the dump
 * start over, at most LC_REBUILD_TRIES times; after that the table is kept
 * as it is, not exact, until the next update rebuilds it.  It is a hint: a
 * name it wrongly shows free costs an EEXIST retry in the creator, never a
 * wrong result.  Without a monitor the dump
 * is retried while interrupted (NL_DUMP_TRIES) and then kept, likewise.
 */
static int rebuild_once(struct linkcache *lc, struct nl_sock *s, char *buf)
{
	int err;

	drain_monitor(lc, buf, LC_BUF_SIZE);
	/* Picks not yet seen as links go too (a later EEXIST retry copes). */
	namepick_clear_used(lc->np);
	forget_all_links(lc);
	lc->replies = 0;
	if (!lc->mon) {
		err = nl_dump_settled(s, link_dump_request(buf), dump_cb, lc,
				      NULL, 0);
		return err == NL_DUMP_INTR ? 0 : err;
	}
	err = nl_dump(s, link_dump_request(buf), dump_cb, lc, NULL, 0);
	if (err < 0)
		return err;
	return apply_events(lc, buf, LC_BUF_SIZE);
}

int linkcache_rebuild(struct linkcache *lc, struct nl_sock *s)
{
	char *buf = malloc(LC_BUF_SIZE);
	unsigned int tries;
	int err;

	if (!buf)
		return -ENOMEM;
	for (tries = 1;; tries++) {
		err = rebuild_once(lc, s, buf);
		if (err != -ENOBUFS)
			break;
		if (tries == LC_REBUILD_TRIES) {
			err = -ENOBUFS;
			break;
		}
	}
	free(buf);
	/* Kept as it is after the last overflow (a hint for the names a
	 * create picks), but not exact. */
	lc->exact = !err && lc->mon;
	if (err == -ENOBUFS)
		err = 0;
	lc->built = !err;
	return err;
}

int linkcache_update(struct linkcache *lc, struct nl_sock *s, int *resynced)
{
	char *buf;
	int err;

	*resynced = 0;
	/* Not exact with a monitor: the last rebuild gave up after
	 * LC_REBUILD_TRIES overflows in a row, and no event since says what
	 * was lost; without this, the table stayed a hint for good. */
	if (!lc->built || !lc->mon || !lc->exact) {
		*resynced = lc->built;
		return linkcache_rebuild(lc, s);
	}
	buf = malloc(LC_BUF_SIZE);
	if (!buf)
		return -ENOMEM;
	err = apply_events(lc, buf, LC_BUF_SIZE);
	free(buf);
	if (err == -ENOBUFS) {
		/* Events were lost: only a full dump is the truth. */
		*resynced = 1;
		return linkcache_rebuild(lc, s);
	}
	if (err)
		lc->built = lc->exact = false;	/* an event not applied: dump again */
	return err;
}

int linkcache_ifindex(const struct linkcache *lc, const char *name)
{
	return namemap_get(&lc->names, name);
}

int linkcache_kind(const struct linkcache *lc, int ifindex)
{
	const struct lc_link *l = find_link(lc, ifindex);

	return l ? l->kind : 0;
}

/* --- picking (lib/namepick.c) ------------------------------------------ */

/* The name of the first link at slot *pos or after, *pos moved past it;
 * NULL after the last. */
static const char *link_names(void *arg, uint32_t *pos)
{
	const struct linkcache *lc = arg;

	while (*pos < lc->cap_links) {
		const struct lc_link *l = &lc->links[(*pos)++];

		if (l->ifindex)
			return l->name;
	}
	return NULL;
}

int linkcache_pick(struct linkcache *lc, const char *prefix, uint32_t *suffix)
{
	return namepick_pick(lc->np, prefix, link_names, lc, suffix);
}

void linkcache_unpick(struct linkcache *lc, const char *prefix, uint32_t suffix)
{
	namepick_unpick(lc->np, prefix, suffix);
}

static int ctx_cache_init(struct vnic_ctx *ctx)
{
	int err;

	ctx->cache = linkcache_new(ctx->quarantine_ms);
	if (!ctx->cache)
		return -ENOMEM;
	ctx->cache->ctx = ctx;
	if (ctx->flags & VNIC_CTX_NO_MONITOR)
		return 0;
	err = linkcache_monitor(ctx->cache, ctx->netns_fd, ctx->monitor_rcvbuf);
	if (err) {
		linkcache_free(ctx->cache);
		ctx->cache = NULL;
	}
	return err;
}

int vnic_ctx_linkcache(struct vnic_ctx *ctx, struct linkcache **out)
{
	int resynced = 0, err = 0;

	err = vnic_fault(ctx, VNIC_STEP_DUMP, 0);
	if (!err && !ctx->cache)
		err = ctx_cache_init(ctx);
	if (!err)
		err = linkcache_update(ctx->cache, &ctx->nl, &resynced);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "building the link table");
	if (resynced)
		ctx->stats.resyncs++;
	*out = ctx->cache;
	return 0;
}

const struct linkcache *vnic_ctx_exact_links(struct vnic_ctx *ctx)
{
	struct linkcache *lc = ctx->cache;
	int resynced = 0;

	if (!lc || !lc->built || !lc->exact)
		return NULL;
	/* A table that cannot be brought up to date is not used: the caller
	 * asks the kernel, which is the truth, and the allocator's next use
	 * rebuilds the table (linkcache_update() marked it so). */
	if (linkcache_update(lc, &ctx->nl, &resynced))
		return NULL;
	if (resynced)
		ctx->stats.resyncs++;
	return lc->exact ? lc : NULL;
}

int linkcache_resync(struct vnic_ctx *ctx)
{
	int err = vnic_fault(ctx, VNIC_STEP_DUMP, 0);

	if (!err && !ctx->cache)
		err = ctx_cache_init(ctx);
	else if (!err && ctx->cache->built)
		ctx->stats.resyncs++;
	if (!err)
		err = linkcache_rebuild(ctx->cache, &ctx->nl);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "building the link table");
	return 0;
}
