// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The link table (see linkcache.h).
 *
 * Per template prefix (one a pick used), two bitmaps of suffixes: 'used' (a
 * link has the name, or we picked it) and 'quar' (freed less than
 * quarantine_ms ago; until[] says when it may be handed out again, a FIFO
 * of freed names drives the expiry).  The lowest suffix that is neither is
 * handed out: names stay compact, but a name whose old guest's cleanup may
 * still be running is not reused at once.  'hint' is a lower bound of the
 * free suffixes, so a pick does not rescan what it scanned before.
 *
 * A name belongs to every prefix it is that prefix plus a suffix "%u"
 * prints: "ab10" is "ab" + 10 and "ab1" + 0, "ab0105" is "ab0" + 105 (but
 * no name of "ab%d"), "10" is "" + 10 and "1" + 0.  So the table keeps the
 * names themselves: an ifindex map holds each link's name (a delete or
 * rename event must free the name the link had), the FIFO the names
 * freed.  A name is filed under each of its splits whose prefix is in use,
 * at most one per trailing digit; a prefix first used learns the names it
 * matches from the links, from the quarantine and from the picks of the
 * prefixes it differs from by digits only (learn_prefix()).  Only names
 * that end in a digit are filed and quarantined: no template makes
 * another.
 *
 * Every link is also in a map by name (lib/namemap.h), so that the filter
 * backends can find a NIC's ifindex without asking the kernel: only while
 * the table is exact (vnic_ctx_exact_links()), the monitor having lost nothing
 * since a complete dump.
 *
 * The bitmaps are kept in pages of 4096 suffixes, each made when a suffix
 * in it is first used, and a page's until[] on its first quarantine: a
 * name with a large number ("veth0a12345", "x1000000": anyone may name one
 * so) costs a prefix that matches it one page, not bitmaps and until[] from
 * 0 up to its number (4 MiB for 1,000,000).  A prefix none of whose names
 * is taken or quarantined is dropped (drop_if_empty()): templates used
 * once each cost nothing once their names are gone.
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
	/* Suffixes with a used or a quar bit: a prefix with neither knows
	 * nothing learn_prefix() would not learn again, and is dropped. */
	uint32_t nused, nquar;
	uint32_t hint;
	uint32_t max;		/* largest suffix that fits IFNAMSIZ */
	uint32_t len;		/* strlen(prefix) */
	char prefix[VNIC_IFNAME_MAX + 1];
};

struct lc_link {
	int ifindex;		/* 0: empty slot */
	char name[VNIC_IFNAME_MAX + 1];
};

struct lc_free {
	char name[VNIC_IFNAME_MAX + 1];
	uint32_t until;
};

/* A name as prefix p + suffix. */
struct lc_split {
	struct lc_prefix *p;
	uint32_t suffix;
};

struct linkcache {
	struct mnl_socket *mon;
	const struct vnic_ctx *ctx;	/* its faults (lib/testing.h) */
	unsigned int replies;		/* links the dump handed over */
	bool built;
	/* Built from a complete dump and kept by the monitor with no event
	 * lost since: every link's name and ifindex are the kernel's. */
	bool exact;
	uint32_t quarantine_ms;
	uint64_t epoch;
	struct lc_prefix *buckets[PREFIX_BUCKETS];
	struct lc_link *links;
	uint32_t nlinks, cap_links;	/* open addressing, linear probing */
	struct namemap names;		/* the same links by name */
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
	namemap_free(&lc->names);
	free(lc->fifo);
	free(lc);
}

/* --- prefixes ------------------------------------------------------- */

/* FNV-1a, one byte at a time: name_splits() hashes every prefix of a name
 * in one pass. */
#define HASH_START	2166136261u
#define HASH_STEP(h, c)	(((h) ^ (uint8_t)(c)) * 16777619u)

static uint32_t hash_str(const char *s)
{
	uint32_t h = HASH_START;

	while (*s)
		h = HASH_STEP(h, *s++);
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

/* The prefix in use that is the first len bytes of s (hash h), or NULL. */
static struct lc_prefix *find_prefix(const struct linkcache *lc, const char *s,
				     size_t len, uint32_t h)
{
	struct lc_prefix *p;

	for (p = lc->buckets[h % PREFIX_BUCKETS]; p; p = p->next)
		if (p->len == len && !memcmp(p->prefix, s, len))
			return p;
	return NULL;
}

static struct lc_prefix *get_prefix(const struct linkcache *lc,
				    const char *prefix)
{
	return find_prefix(lc, prefix, strlen(prefix), hash_str(prefix));
}

/*
 * p holds no name: it goes, so that templates used once each (a runtime
 * that names every guest's NICs by a template of its own) do not pile up
 * over days.  Its next use learns again what there is (learn_prefix()).
 * No caller may hold p after.
 */
static void drop_if_empty(struct linkcache *lc, struct lc_prefix *p)
{
	struct lc_prefix **pp = &lc->buckets[hash_str(p->prefix) % PREFIX_BUCKETS];

	if (p->nused || p->nquar)
		return;
	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
	free_prefix(p);
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
	uint64_t *w = &page_of(p, s)->used[PAGE_WORD(s)];

	if (*w & PAGE_BIT(s))
		return;
	*w |= PAGE_BIT(s);
	p->nused++;
}

/* A suffix became free (or may become free): the hint must not pass it. */
static void clear_used(struct lc_prefix *p, uint32_t s)
{
	struct lc_page *pg = page_of(p, s);

	if (!pg)
		return;
	if (pg->used[PAGE_WORD(s)] & PAGE_BIT(s))
		p->nused--;
	pg->used[PAGE_WORD(s)] &= ~PAGE_BIT(s);
	if (s < p->hint)
		p->hint = s;
}

/* --- names ---------------------------------------------------------- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whether digits (NUL-terminated, non-empty) are a suffix p hands out:
 * what "%u" prints (no sign, no leading zero), at most p->max. */
static bool suffix_value(const struct lc_prefix *p, const char *digits,
			 uint32_t *suffix)
{
	uint64_t v = 0;

	if (!*digits || (digits[0] == '0' && digits[1]))
		return false;
	for (; *digits; digits++) {
		if (!is_digit(*digits))
			return false;
		v = v * 10 + (uint64_t)(*digits - '0');
		if (v > p->max)
			return false;
	}
	*suffix = (uint32_t)v;
	return true;
}

/* Whether name is p's prefix + a suffix p hands out. */
static bool name_of(const struct lc_prefix *p, const char *name,
		    uint32_t *suffix)
{
	return !strncmp(name, p->prefix, p->len) && strlen(name) > p->len &&
	       suffix_value(p, name + p->len, suffix);
}

/*
 * Every prefix in use that name is a name of, with the suffix: at most one
 * per digit the name ends with ("ab10": "ab" + 10, "ab1" + 0).  sp has room
 * for VNIC_IFNAME_MAX; name is at most that long.
 */
static unsigned int name_splits(const struct linkcache *lc, const char *name,
				struct lc_split *sp)
{
	uint32_t h = HASH_START, hs[VNIC_IFNAME_MAX];
	size_t len = strlen(name), start = len, i;
	unsigned int n = 0;

	while (start > 0 && is_digit(name[start - 1]))
		start--;
	for (i = 0; i < len; i++) {
		hs[i] = h;	/* of name[0..i) */
		h = HASH_STEP(h, name[i]);
	}
	for (i = start; i < len; i++) {
		struct lc_prefix *p = find_prefix(lc, name, i, hs[i]);

		if (p && suffix_value(p, name + i, &sp[n].suffix))
			sp[n++].p = p;
	}
	return n;
}

/* Whether a name's suffixes are kept in the bitmaps: one a template could
 * make, that is ending in a digit, and short enough to be a name at all. */
static bool name_kept(const char *name)
{
	size_t len = strnlen(name, VNIC_IFNAME_MAX + 1);

	return len && len <= VNIC_IFNAME_MAX && is_digit(name[len - 1]);
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
static int insert_link(struct linkcache *lc, int ifindex, const char *name)
{
	struct lc_link *l;

	if ((lc->nlinks + 1) * 2 > lc->cap_links && grow_links(lc))
		return -ENOMEM;
	if (namemap_put(&lc->names, name, ifindex))
		return -ENOMEM;
	l = free_link_slot(lc, ifindex);
	l->ifindex = ifindex;
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

/* --- taking and freeing names ----------------------------------------- */

/* name (name_kept()) is taken, by a link or a pick: so under every prefix
 * in use it is a name of.  0 or -ENOMEM (then no bit is set). */
static int claim(struct linkcache *lc, const char *name)
{
	struct lc_split sp[VNIC_IFNAME_MAX];
	unsigned int n = name_splits(lc, name, sp), k;

	for (k = 0; k < n; k++)
		if (grow_prefix(sp[k].p, sp[k].suffix))
			return -ENOMEM;
	for (k = 0; k < n; k++)
		set_used(sp[k].p, sp[k].suffix);
	return 0;
}

static void release(struct linkcache *lc, const char *name)
{
	struct lc_split sp[VNIC_IFNAME_MAX];
	unsigned int n = name_splits(lc, name, sp), k;

	for (k = 0; k < n; k++)
		clear_used(sp[k].p, sp[k].suffix);
}

/* The prefixes name was freed from go if that was their last name. */
static void prune(struct linkcache *lc, const char *name)
{
	struct lc_split sp[VNIC_IFNAME_MAX];
	unsigned int n = name_splits(lc, name, sp), k;

	for (k = 0; k < n; k++)
		drop_if_empty(lc, sp[k].p);
}

/* --- quarantine ------------------------------------------------------- */

/* Suffix s of p is quarantined until 'until' (unless memory is short: no
 * quarantine is better than no name). */
static void set_quar(struct lc_prefix *p, uint32_t s, uint32_t until)
{
	struct lc_page *pg;

	if (grow_prefix(p, s))
		return;
	pg = page_of(p, s);
	if (!pg->until)
		pg->until = malloc(LC_PAGE_BITS * sizeof(*pg->until));
	if (!pg->until)
		return;
	if (!(pg->quar[PAGE_WORD(s)] & PAGE_BIT(s)))
		p->nquar++;
	pg->quar[PAGE_WORD(s)] |= PAGE_BIT(s);
	pg->until[s % LC_PAGE_BITS] = until;
}

static void expire(struct linkcache *lc)
{
	struct lc_split sp[VNIC_IFNAME_MAX];
	uint32_t now = now_rel(lc);
	unsigned int n, k;

	while (lc->fcount) {
		struct lc_free *f = &lc->fifo[lc->fhead];

		if ((int32_t)(f->until - now) > 0)
			break;
		n = name_splits(lc, f->name, sp);
		for (k = 0; k < n; k++) {
			struct lc_prefix *p = sp[k].p;
			uint32_t s = sp[k].suffix;
			struct lc_page *pg = page_of(p, s);

			if (!pg || !(pg->quar[PAGE_WORD(s)] & PAGE_BIT(s)))
				continue;
			/* A later free of the same name owns the bit. */
			if ((int32_t)(pg->until[s % LC_PAGE_BITS] - now) > 0)
				continue;
			pg->quar[PAGE_WORD(s)] &= ~PAGE_BIT(s);
			if (s < p->hint)
				p->hint = s;
			if (!--p->nquar)
				drop_if_empty(lc, p);
		}
		lc->fhead = (lc->fhead + 1) % lc->fcap;
		lc->fcount--;
	}
}

/* The freed name goes to the FIFO (for prefixes used later too) and is
 * quarantined under every prefix in use it is a name of.  The frees whose
 * time is up leave first: a table kept for the filters alone never picks,
 * and its FIFO would otherwise hold every name freed since it was built. */
static void quarantine(struct linkcache *lc, const char *name)
{
	uint32_t until = now_rel(lc) + lc->quarantine_ms;
	struct lc_split sp[VNIC_IFNAME_MAX];
	struct lc_free *f;
	unsigned int n, k;

	if (!lc->quarantine_ms)
		return;
	expire(lc);
	if (lc->fcount == lc->fcap) {
		uint32_t cap = lc->fcap ? lc->fcap * 2 : 64;

		f = malloc(cap * sizeof(*f));
		if (!f)
			return;	/* no quarantine is better than no name */
		for (k = 0; k < lc->fcount; k++)
			f[k] = lc->fifo[(lc->fhead + k) % lc->fcap];
		free(lc->fifo);
		lc->fifo = f;
		lc->fhead = 0;
		lc->fcap = cap;
	}
	f = &lc->fifo[(lc->fhead + lc->fcount++) % lc->fcap];
	memcpy(f->name, name, strlen(name) + 1);
	f->until = until;
	n = name_splits(lc, name, sp);
	for (k = 0; k < n; k++)
		set_quar(sp[k].p, sp[k].suffix, until);
}

/* --- applying links and events -------------------------------------- */

static void forget_link(struct linkcache *lc, struct lc_link *l)
{
	char name[VNIC_IFNAME_MAX + 1];

	memcpy(name, l->name, sizeof(name));
	remove_link(lc, l);
	if (!name_kept(name))
		return;
	release(lc, name);
	quarantine(lc, name);
	prune(lc, name);
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

	if (l) {
		if (named && !strcmp(la->name, l->name)) {
			/* Same name: a state change.  The bits and the name
			 * are set again: a replayed delete of an older link
			 * of this name (one the dump still showed) may have
			 * cleared them. */
			err = claim(lc, l->name);
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
	err = name_kept(la->name) ? claim(lc, la->name) : 0;
	return err ? err : insert_link(lc, la->ifindex, la->name);
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
				release(lc, lc->links[i].name);
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
			p->nused = 0;
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
		lc->built = lc->exact = false;	/* an event not applied: dump again */
	return err;
}

int linkcache_ifindex(const struct linkcache *lc, const char *name)
{
	return namemap_get(&lc->names, name);
}

/* --- picking ---------------------------------------------------------- */

/* Whether names of a and b can be the same: one prefix is the other plus
 * digits ("ab", "ab1"). */
static bool digits_apart(const struct lc_prefix *a, const struct lc_prefix *b)
{
	const struct lc_prefix *s = a->len < b->len ? a : b;
	const struct lc_prefix *l = s == a ? b : a;
	uint32_t i;

	if (a->len == b->len || memcmp(s->prefix, l->prefix, s->len))
		return false;
	for (i = s->len; i < l->len; i++)
		if (!is_digit(l->prefix[i]))
			return false;
	return true;
}

/* p learns the used suffixes of q that are names of its own: picks of q
 * not yet seen as links (those are learned from the ifindex map). */
static int learn_picks(struct lc_prefix *p, const struct lc_prefix *q)
{
	char name[VNIC_IFNAME_MAX + 1];
	uint32_t k, w, s;

	for (k = 0; k < q->npages; k++) {
		for (w = 0; q->pages[k] && w < LC_PAGE_WORDS; w++) {
			uint64_t bits = q->pages[k]->used[w];

			for (; bits; bits &= bits - 1) {
				name_format(name, q->prefix, k * LC_PAGE_BITS + w * 64 +
					    (uint32_t)__builtin_ctzll(bits));
				if (!name_of(p, name, &s))
					continue;
				if (grow_prefix(p, s))
					return -ENOMEM;
				set_used(p, s);
			}
		}
	}
	return 0;
}

/*
 * A prefix about to be used for the first time learns what the table knows
 * of its names: the links that have one, the names picked under prefixes
 * that differ from it by digits only, and the quarantined (the FIFO, in
 * order: a later free of a name has the later time).  O(links + frees +
 * those prefixes' suffixes), once per prefix.
 */
static int learn_prefix(struct linkcache *lc, struct lc_prefix *p)
{
	uint32_t i, s;
	int err;

	for (i = 0; i < lc->cap_links; i++) {
		if (!lc->links[i].ifindex || !name_of(p, lc->links[i].name, &s))
			continue;
		if (grow_prefix(p, s))
			return -ENOMEM;
		set_used(p, s);
	}
	for (i = 0; i < PREFIX_BUCKETS; i++) {
		for (struct lc_prefix *q = lc->buckets[i]; q; q = q->next) {
			if (!digits_apart(p, q))
				continue;
			err = learn_picks(p, q);
			if (err)
				return err;
		}
	}
	for (i = 0; i < lc->fcount; i++) {
		const struct lc_free *f = &lc->fifo[(lc->fhead + i) % lc->fcap];

		if (name_of(p, f->name, &s))
			set_quar(p, s, f->until);
	}
	return 0;
}

/* The prefix in use, made (and learned) on its first use. */
static int use_prefix(struct linkcache *lc, const char *prefix,
		      struct lc_prefix **out)
{
	size_t len = strlen(prefix);
	uint32_t h = hash_str(prefix);
	struct lc_prefix *p = find_prefix(lc, prefix, len, h);
	int err;

	if (p) {
		*out = p;
		return 0;
	}
	if (len >= VNIC_IFNAME_MAX)
		return -ENAMETOOLONG;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(p->prefix, prefix, len + 1);
	p->len = (uint32_t)len;
	p->max = max_suffix(len);
	err = learn_prefix(lc, p);
	if (err) {
		free_prefix(p);
		return err;
	}
	p->next = lc->buckets[h % PREFIX_BUCKETS];
	lc->buckets[h % PREFIX_BUCKETS] = p;
	*out = p;
	return 0;
}

int linkcache_pick(struct linkcache *lc, const char *prefix, uint32_t *suffix)
{
	char name[VNIC_IFNAME_MAX + 1];
	struct lc_prefix *p;
	uint32_t w;
	int err;

	/* First: it may drop prefixes, p among them if made before. */
	expire(lc);
	err = use_prefix(lc, prefix, &p);
	if (err)
		return err;
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
		/* Taken for every template whose name it is, too. */
		name_format(name, p->prefix, s);
		err = claim(lc, name);
		if (err)
			return err;
		p->hint = s + 1;
		*suffix = s;
		return 0;
	}
}

void linkcache_unpick(struct linkcache *lc, const char *prefix, uint32_t suffix)
{
	struct lc_prefix *p = get_prefix(lc, prefix);
	char name[VNIC_IFNAME_MAX + 1];

	if (!p || suffix > p->max)
		return;
	name_format(name, p->prefix, suffix);
	release(lc, name);
	prune(lc, name);
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
