// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The link table (see linkcache.h).
 *
 * Per name prefix, two bitmaps of suffixes: 'used' (a link has the name, or
 * we picked it) and 'quar' (freed less than quarantine_ms ago; until[] says
 * when it may be handed out again, a FIFO of frees drives the expiry).  The
 * lowest suffix that is neither is handed out: names stay compact, but a name
 * whose old guest's cleanup may still be running is not reused at once.
 * 'hint' is a lower bound of the free suffixes, so a pick does not rescan
 * what it scanned before.  An ifindex map remembers each link's name, because
 * a delete (or rename) event must free the name the link had.
 *
 * The bitmaps are kept in pages of 4096 suffixes, each made when a suffix
 * in it is first used, and a page's until[] on its first quarantine: every
 * link of the namespace is in the table, and a link named with a large
 * number ("veth0a12345", "x1000000": anyone may name one so) costs one page,
 * not bitmaps and until[] from 0 up to its number (4 MiB for 1,000,000).
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

#define PREFIX_BUCKETS 1024
#define LC_BUF_SIZE (32 * 1024)
/* Dumps one rebuild makes when the monitor keeps overflowing. */
#define LC_REBUILD_TRIES 4

#define LC_PAGE_WORDS	64
#define LC_PAGE_BITS	(LC_PAGE_WORDS * 64)

struct lc_page {
	uint64_t used[LC_PAGE_WORDS], quar[LC_PAGE_WORDS];
	uint32_t *until;	/* ms since lc->epoch, when quar[] bit expires;
				 * LC_PAGE_BITS of them, NULL before the
				 * page's first quarantine */
};

struct lc_prefix {
	struct lc_prefix *next;
	struct lc_page **pages;	/* by suffix / LC_PAGE_BITS; NULL: none used */
	uint32_t npages;
	uint32_t hint;
	uint32_t max;		/* largest suffix that fits IFNAMSIZ */
	char prefix[16];
};

struct lc_link {
	int ifindex;		/* 0: empty slot */
	struct lc_prefix *p;
	uint32_t suffix;
};

struct lc_free {
	struct lc_prefix *p;
	uint32_t suffix;
	uint32_t until;
};

struct linkcache {
	struct mnl_socket *mon;
	const struct vnic_ctx *ctx;	/* its faults (lib/testing.h) */
	unsigned int replies;		/* links the dump handed over */
	bool built;
	uint32_t quarantine_ms;
	uint64_t epoch;
	struct lc_prefix *buckets[PREFIX_BUCKETS];
	struct lc_link *links;
	uint32_t nlinks, cap_links;	/* open addressing, linear probing */
	struct lc_free *fifo;		/* ring of frees, oldest first */
	uint32_t fhead, fcount, fcap;
};

static uint32_t now_rel(const struct linkcache *lc)
{
	return (uint32_t)(vnic_now_ms() - lc->epoch);
}

struct linkcache *linkcache_new(uint32_t quarantine_ms)
{
	struct linkcache *lc = calloc(1, sizeof(*lc));

	if (!lc)
		return NULL;
	lc->quarantine_ms = quarantine_ms;
	lc->epoch = vnic_now_ms();
	return lc;
}

static void free_prefix(struct lc_prefix *p)
{
	uint32_t i;

	for (i = 0; i < p->npages; i++) {
		if (p->pages[i])
			free(p->pages[i]->until);
		free(p->pages[i]);
	}
	free(p->pages);
	free(p);
}

void linkcache_free(struct linkcache *lc)
{
	unsigned int i;

	if (!lc)
		return;
	for (i = 0; i < PREFIX_BUCKETS; i++) {
		while (lc->buckets[i]) {
			struct lc_prefix *p = lc->buckets[i];

			lc->buckets[i] = p->next;
			free_prefix(p);
		}
	}
	if (lc->mon)
		mnl_socket_close(lc->mon);
	free(lc->links);
	free(lc->fifo);
	free(lc);
}

/* --- prefixes ------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static uint32_t max_suffix(size_t prefix_len)
{
	uint64_t m = 1;
	size_t digits = VNIC_IFNAME_MAX - prefix_len;

	while (digits-- && m <= LC_MAX_SUFFIX)
		m *= 10;
	return m - 1 > LC_MAX_SUFFIX ? LC_MAX_SUFFIX : (uint32_t)(m - 1);
}

static struct lc_prefix *get_prefix(struct linkcache *lc, const char *prefix,
				    bool create)
{
	uint32_t b = hash_str(prefix) % PREFIX_BUCKETS;
	struct lc_prefix *p;
	size_t len = strlen(prefix);

	for (p = lc->buckets[b]; p; p = p->next)
		if (!strcmp(p->prefix, prefix))
			return p;
	if (!create || len >= VNIC_IFNAME_MAX)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->prefix, prefix, len + 1);
	p->max = max_suffix(len);
	p->next = lc->buckets[b];
	lc->buckets[b] = p;
	return p;
}

/* The page of suffix s, or NULL if none of its suffixes was ever used. */
static struct lc_page *page_of(const struct lc_prefix *p, uint32_t s)
{
	uint32_t i = s / LC_PAGE_BITS;

	return i < p->npages ? p->pages[i] : NULL;
}

/* Bit s within its page's words. */
#define PAGE_WORD(s)	((s) % LC_PAGE_BITS / 64)
#define PAGE_BIT(s)	(1ull << ((s) % 64))

/* Make the page of suffix s. */
static int grow_prefix(struct lc_prefix *p, uint32_t s)
{
	uint32_t i = s / LC_PAGE_BITS, n = p->npages ? p->npages : 1;
	struct lc_page **pages;

	if (i >= p->npages) {
		while (n <= i)
			n *= 2;
		pages = realloc(p->pages, n * sizeof(*pages));
		if (!pages)
			return -ENOMEM;
		memset(pages + p->npages, 0, (n - p->npages) * sizeof(*pages));
		p->pages = pages;
		p->npages = n;
	}
	if (!p->pages[i])
		p->pages[i] = calloc(1, sizeof(*p->pages[i]));
	return p->pages[i] ? 0 : -ENOMEM;
}

/* s's page exists (grow_prefix()). */
static void set_used(struct lc_prefix *p, uint32_t s)
{
	page_of(p, s)->used[PAGE_WORD(s)] |= PAGE_BIT(s);
}

/* A suffix became free (or may become free): the hint must not pass it. */
static void clear_used(struct lc_prefix *p, uint32_t s)
{
	struct lc_page *pg = page_of(p, s);

	if (!pg)
		return;
	pg->used[PAGE_WORD(s)] &= ~PAGE_BIT(s);
	if (s < p->hint)
		p->hint = s;
}

/* "eth12" -> ("eth", 12).  Names %d could not have made ("eth012", "eth")
 * are not tracked: no template of ours can collide with them. */
static int split_name(const char *name, char *prefix, uint32_t *suffix)
{
	size_t len = strlen(name), i = len;
	uint64_t v = 0;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == len || len - i > 7 || (name[i] == '0' && len - i > 1))
		return -1;
	for (size_t k = i; k < len; k++)
		v = v * 10 + (uint64_t)(name[k] - '0');
	if (v > LC_MAX_SUFFIX)
		return -1;
	memcpy(prefix, name, i);
	prefix[i] = '\0';
	*suffix = (uint32_t)v;
	return 0;
}

/* --- ifindex map ------------------------------------------------------ */

static struct lc_link *find_link(struct linkcache *lc, int ifindex)
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

static int insert_link(struct linkcache *lc, int ifindex, struct lc_prefix *p,
		       uint32_t suffix);

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
	lc->nlinks = 0;
	for (i = 0; i < oldcap; i++)
		if (old[i].ifindex)
			insert_link(lc, old[i].ifindex, old[i].p, old[i].suffix);
	free(old);
	return 0;
}

static int insert_link(struct linkcache *lc, int ifindex, struct lc_prefix *p,
		       uint32_t suffix)
{
	uint32_t i, mask;

	if ((lc->nlinks + 1) * 2 > lc->cap_links && grow_links(lc))
		return -ENOMEM;
	mask = lc->cap_links - 1;
	for (i = (uint32_t)ifindex * 2654435761u & mask; lc->links[i].ifindex;
	     i = (i + 1) & mask)
		;
	lc->links[i] = (struct lc_link){ ifindex, p, suffix };
	lc->nlinks++;
	return 0;
}

/* Backward-shift deletion keeps linear probing free of tombstones. */
static void remove_link(struct linkcache *lc, struct lc_link *l)
{
	uint32_t mask = lc->cap_links - 1, i = (uint32_t)(l - lc->links), j = i;

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

/* --- quarantine ------------------------------------------------------- */

static void quarantine(struct linkcache *lc, struct lc_prefix *p, uint32_t s)
{
	uint32_t until = now_rel(lc) + lc->quarantine_ms;
	struct lc_page *pg = page_of(p, s);

	if (!lc->quarantine_ms || !pg)
		return;
	if (!pg->until)
		pg->until = malloc(LC_PAGE_BITS * sizeof(*pg->until));
	if (!pg->until)
		return;	/* no quarantine is better than no name */
	if (lc->fcount == lc->fcap) {
		uint32_t cap = lc->fcap ? lc->fcap * 2 : 64, k;
		struct lc_free *f = malloc(cap * sizeof(*f));

		if (!f)
			return;	/* no quarantine is better than no name */
		for (k = 0; k < lc->fcount; k++)
			f[k] = lc->fifo[(lc->fhead + k) % lc->fcap];
		free(lc->fifo);
		lc->fifo = f;
		lc->fhead = 0;
		lc->fcap = cap;
	}
	lc->fifo[(lc->fhead + lc->fcount++) % lc->fcap] =
		(struct lc_free){ p, s, until };
	pg->quar[PAGE_WORD(s)] |= PAGE_BIT(s);
	pg->until[s % LC_PAGE_BITS] = until;
}

static void expire(struct linkcache *lc)
{
	uint32_t now = now_rel(lc);

	while (lc->fcount) {
		struct lc_free *f = &lc->fifo[lc->fhead];
		struct lc_page *pg = page_of(f->p, f->suffix);

		if ((int32_t)(f->until - now) > 0)
			break;
		/* A later free of the same name owns the bit: leave it. */
		if ((int32_t)(pg->until[f->suffix % LC_PAGE_BITS] - now) <= 0) {
			pg->quar[PAGE_WORD(f->suffix)] &= ~PAGE_BIT(f->suffix);
			if (f->suffix < f->p->hint)
				f->p->hint = f->suffix;
		}
		lc->fhead = (lc->fhead + 1) % lc->fcap;
		lc->fcount--;
	}
}

/* --- applying links and events -------------------------------------- */

static void forget_link(struct linkcache *lc, struct lc_link *l)
{
	struct lc_prefix *p = l->p;
	uint32_t s = l->suffix;

	remove_link(lc, l);
	clear_used(p, s);
	quarantine(lc, p, s);
}

/* 0, or -ENOMEM: the table no longer says which names are taken (the
 * caller's rebuild fails rather than trust it). */
static int apply_link(struct linkcache *lc, const struct link_attrs *la)
{
	struct lc_link *l = find_link(lc, la->ifindex);
	struct lc_prefix *p;
	char prefix[16];
	uint32_t s = 0;
	bool named = la->type == RTM_NEWLINK && la->name &&
		     !split_name(la->name, prefix, &s);

	if (l) {
		if (named && s == l->suffix && !strcmp(prefix, l->p->prefix)) {
			/* Same name: a state change.  The bit is set again: a
			 * replayed delete of an older link of this name (one
			 * the dump still showed) may have cleared it. */
			set_used(l->p, s);
			return 0;
		}
		if (la->type == RTM_NEWLINK && !la->name)
			return 0;	/* says nothing about the name */
		forget_link(lc, l);	/* deleted, or renamed */
	}
	/* A name too long for a prefix we make, or a suffix past what
	 * we would pick, is no name of ours: not tracked. */
	if (!named || strlen(prefix) >= VNIC_IFNAME_MAX)
		return 0;
	p = get_prefix(lc, prefix, true);
	if (!p)
		return -ENOMEM;
	if (s > p->max)
		return 0;
	if (grow_prefix(p, s))
		return -ENOMEM;
	set_used(p, s);
	return insert_link(lc, la->ifindex, p, s);
}

/* Empty the ifindex map (memset of a map never allocated is UB even for 0
 * bytes). */
static void forget_all_links(struct linkcache *lc)
{
	if (lc->links)
		memset(lc->links, 0, lc->cap_links * sizeof(*lc->links));
	lc->nlinks = 0;
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
				clear_used(lc->links[i].p, lc->links[i].suffix);
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

/* Used bits of real links go; picks not yet seen as links go too (a later
 * EEXIST retry copes), quarantine stays: it is about time, not presence. */
static void clear_all_used(struct linkcache *lc)
{
	unsigned int i;

	for (i = 0; i < PREFIX_BUCKETS; i++) {
		struct lc_prefix *p;

		for (p = lc->buckets[i]; p; p = p->next) {
			for (uint32_t k = 0; k < p->npages; k++)
				if (p->pages[k])
					memset(p->pages[k]->used, 0,
					       sizeof(p->pages[k]->used));
			p->hint = 0;
		}
	}
	forget_all_links(lc);
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
 * as it is.  It is a hint: a name it wrongly shows free costs an EEXIST
 * retry in the creator, never a wrong result.  Without a monitor the dump
 * is retried while interrupted (NL_DUMP_TRIES) and then kept, likewise.
 */
static int rebuild_once(struct linkcache *lc, struct nl_sock *s, char *buf)
{
	int err;

	drain_monitor(lc, buf, LC_BUF_SIZE);
	clear_all_used(lc);
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
			err = 0;
			break;
		}
	}
	free(buf);
	lc->built = !err;
	return err;
}

int linkcache_update(struct linkcache *lc, struct nl_sock *s, int *resynced)
{
	char *buf;
	int err;

	*resynced = 0;
	if (!lc->built || !lc->mon) {
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
		lc->built = false;	/* an event not applied: dump again */
	return err;
}

int linkcache_pick(struct linkcache *lc, const char *prefix, uint32_t *suffix)
{
	struct lc_prefix *p = get_prefix(lc, prefix, true);
	uint32_t w;

	if (!p)
		return strlen(prefix) >= VNIC_IFNAME_MAX ? -ENAMETOOLONG : -ENOMEM;
	expire(lc);
	for (w = p->hint / 64;; w++) {
		struct lc_page *pg = page_of(p, w * 64);
		uint64_t busy = 0;
		uint32_t s;

		if (pg)
			busy = pg->used[w % LC_PAGE_WORDS] | pg->quar[w % LC_PAGE_WORDS];
		if (w == p->hint / 64)
			busy |= (1ull << (p->hint % 64)) - 1;
		if (busy == ~0ull) {
			if (w * 64 + 63 >= p->max)
				return -ENOSPC;
			continue;
		}
		s = w * 64 + (uint32_t)__builtin_ctzll(~busy);
		if (s > p->max)
			return -ENOSPC;
		if (grow_prefix(p, s))
			return -ENOMEM;
		set_used(p, s);
		p->hint = s + 1;
		*suffix = s;
		return 0;
	}
}

int linkcache_mark(struct linkcache *lc, const char *prefix, uint32_t suffix)
{
	struct lc_prefix *p = get_prefix(lc, prefix, true);

	if (!p || grow_prefix(p, suffix))
		return -ENOMEM;
	set_used(p, suffix);
	return 0;
}

void linkcache_unpick(struct linkcache *lc, const char *prefix, uint32_t suffix)
{
	struct lc_prefix *p = get_prefix(lc, prefix, false);

	if (p)
		clear_used(p, suffix);
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
