// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Picking "prefixN" names (see namepick.h).
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
 * no name of "ab%d"), "10" is "" + 10 and "1" + 0.  So the names
 * themselves are kept: the link table (lib/linkcache.c) holds each link's
 * name (a delete or rename event must free the name the link had), the
 * FIFO the names freed.  A name is filed under each of its splits whose
 * prefix is in use, at most one per trailing digit; a prefix first used
 * learns the names it matches from the links (asked of the table), from
 * the quarantine and from the picks of the prefixes it differs from by
 * digits only (learn_prefix()).  Only names that end in a digit are filed
 * and quarantined: no template makes another.
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
#include <string.h>

#include "lib/internal.h"
#include "lib/namepick.h"

#define PREFIX_BUCKETS 1024

#define NP_PAGE_WORDS	64
#define NP_PAGE_BITS	(NP_PAGE_WORDS * 64)

struct np_page {
	uint64_t used[NP_PAGE_WORDS], quar[NP_PAGE_WORDS];
	uint32_t *until;	/* the low 32 bits of the FIFO entry's until
				 * that set the quar[] bit (expire());
				 * NP_PAGE_BITS of them, NULL before the
				 * page's first quarantine */
};

struct np_prefix {
	struct np_prefix *next;
	struct np_page **pages;	/* by suffix / NP_PAGE_BITS; NULL: none used */
	uint32_t npages;
	/* Suffixes with a used or a quar bit: a prefix with neither knows
	 * nothing learn_prefix() would not learn again, and is dropped. */
	uint32_t nused, nquar;
	uint32_t hint;
	uint32_t max;		/* largest suffix that fits IFNAMSIZ */
	uint32_t len;		/* strlen(prefix) */
	char prefix[VNIC_IFNAME_MAX + 1];
};

struct np_freed {
	char name[VNIC_IFNAME_MAX + 1];
	uint64_t until;		/* ms since np->epoch; 64 bits: see expire() */
};

/* A name as prefix p + suffix. */
struct np_split {
	struct np_prefix *p;
	uint32_t suffix;
};

struct namepick {
	uint32_t quarantine_ms;
	uint64_t epoch;
	struct np_prefix *buckets[PREFIX_BUCKETS];
	struct np_freed *fifo;		/* ring of frees, oldest first */
	uint32_t fhead, fcount, fcap;
};

static uint64_t now_rel(const struct namepick *np)
{
	return vnic_now_ms() - np->epoch;
}

struct namepick *namepick_new(uint32_t quarantine_ms)
{
	struct namepick *np = calloc(1, sizeof(*np));

	if (!np)
		return NULL;
	np->quarantine_ms = quarantine_ms;
	np->epoch = vnic_now_ms();
	return np;
}

static void free_prefix(struct np_prefix *p)
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

void namepick_free(struct namepick *np)
{
	unsigned int i;

	if (!np)
		return;
	for (i = 0; i < PREFIX_BUCKETS; i++) {
		while (np->buckets[i]) {
			struct np_prefix *p = np->buckets[i];

			np->buckets[i] = p->next;
			free_prefix(p);
		}
	}
	free(np->fifo);
	free(np);
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

	while (digits-- && m <= NAMEPICK_MAX_SUFFIX)
		m *= 10;
	return m - 1 > NAMEPICK_MAX_SUFFIX ? NAMEPICK_MAX_SUFFIX : (uint32_t)(m - 1);
}

/* The prefix in use that is the first len bytes of s (hash h), or NULL. */
static struct np_prefix *find_prefix(const struct namepick *np, const char *s,
				     size_t len, uint32_t h)
{
	struct np_prefix *p;

	for (p = np->buckets[h % PREFIX_BUCKETS]; p; p = p->next)
		if (p->len == len && !memcmp(p->prefix, s, len))
			return p;
	return NULL;
}

static struct np_prefix *get_prefix(const struct namepick *np,
				    const char *prefix)
{
	return find_prefix(np, prefix, strlen(prefix), hash_str(prefix));
}

/*
 * p holds no name: it goes, so that templates used once each (a runtime
 * that names every guest's NICs by a template of its own) do not pile up
 * over days.  Its next use learns again what there is (learn_prefix()).
 * No caller may hold p after.
 */
static void drop_if_empty(struct namepick *np, struct np_prefix *p)
{
	struct np_prefix **pp = &np->buckets[hash_str(p->prefix) % PREFIX_BUCKETS];

	if (p->nused || p->nquar)
		return;
	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
	free_prefix(p);
}

/* The page of suffix s, or NULL if none of its suffixes was ever used. */
static struct np_page *page_of(const struct np_prefix *p, uint32_t s)
{
	uint32_t i = s / NP_PAGE_BITS;

	return i < p->npages ? p->pages[i] : NULL;
}

/* Bit s within its page's words. */
#define PAGE_WORD(s)	((s) % NP_PAGE_BITS / 64)
#define PAGE_BIT(s)	(1ull << ((s) % 64))

/* Make the page of suffix s. */
static int grow_prefix(struct np_prefix *p, uint32_t s)
{
	uint32_t i = s / NP_PAGE_BITS, n = p->npages ? p->npages : 1;
	struct np_page **pages;

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
static void set_used(struct np_prefix *p, uint32_t s)
{
	uint64_t *w = &page_of(p, s)->used[PAGE_WORD(s)];

	if (*w & PAGE_BIT(s))
		return;
	*w |= PAGE_BIT(s);
	p->nused++;
}

/* A suffix became free (or may become free): the hint must not pass it. */
static void clear_used(struct np_prefix *p, uint32_t s)
{
	struct np_page *pg = page_of(p, s);

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
static bool suffix_value(const struct np_prefix *p, const char *digits,
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
static bool name_of(const struct np_prefix *p, const char *name,
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
static unsigned int name_splits(const struct namepick *np, const char *name,
				struct np_split *sp)
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
		struct np_prefix *p = find_prefix(np, name, i, hs[i]);

		if (p && suffix_value(p, name + i, &sp[n].suffix))
			sp[n++].p = p;
	}
	return n;
}

/* Whether a name's suffixes are kept in the bitmaps: one a template could
 * make, that is ending in a digit, and short enough to be a name at all. */
bool namepick_kept(const char *name)
{
	size_t len = strnlen(name, VNIC_IFNAME_MAX + 1);

	return len && len <= VNIC_IFNAME_MAX && is_digit(name[len - 1]);
}

/* --- taking and freeing names ----------------------------------------- */

/* name (namepick_kept()) is taken, by a link or a pick: so under every prefix
 * in use it is a name of.  0 or -ENOMEM (then no bit is set). */
int namepick_claim(struct namepick *np, const char *name)
{
	struct np_split sp[VNIC_IFNAME_MAX];
	unsigned int n = name_splits(np, name, sp), k;

	for (k = 0; k < n; k++)
		if (grow_prefix(sp[k].p, sp[k].suffix))
			return -ENOMEM;
	for (k = 0; k < n; k++)
		set_used(sp[k].p, sp[k].suffix);
	return 0;
}

void namepick_release(struct namepick *np, const char *name)
{
	struct np_split sp[VNIC_IFNAME_MAX];
	unsigned int n = name_splits(np, name, sp), k;

	for (k = 0; k < n; k++)
		clear_used(sp[k].p, sp[k].suffix);
}

/* The prefixes name was freed from go if that was their last name. */
static void prune(struct namepick *np, const char *name)
{
	struct np_split sp[VNIC_IFNAME_MAX];
	unsigned int n = name_splits(np, name, sp), k;

	for (k = 0; k < n; k++)
		drop_if_empty(np, sp[k].p);
}

/* --- quarantine ------------------------------------------------------- */

/* Suffix s of p is quarantined until 'until' (unless memory is short: no
 * quarantine is better than no name). */
static void set_quar(struct np_prefix *p, uint32_t s, uint32_t until)
{
	struct np_page *pg;

	if (grow_prefix(p, s))
		return;
	pg = page_of(p, s);
	if (!pg->until)
		pg->until = malloc(NP_PAGE_BITS * sizeof(*pg->until));
	if (!pg->until)
		return;
	if (!(pg->quar[PAGE_WORD(s)] & PAGE_BIT(s)))
		p->nquar++;
	pg->quar[PAGE_WORD(s)] |= PAGE_BIT(s);
	pg->until[s % NP_PAGE_BITS] = until;
}

/*
 * The FIFO's times are 64-bit: expire() runs only when a name is freed or
 * picked, and a context that does neither for 24.8 days would see 32-bit
 * times of before the pause as in the future, and hold every name freed
 * since for up to 24.8 days more.  A page's until[] stays 32-bit, compared
 * only for equality with its FIFO entry's.
 */
static void expire(struct namepick *np)
{
	struct np_split sp[VNIC_IFNAME_MAX];
	uint64_t now = now_rel(np);
	unsigned int n, k;

	while (np->fcount) {
		struct np_freed *f = &np->fifo[np->fhead];

		if (f->until > now)
			break;
		n = name_splits(np, f->name, sp);
		for (k = 0; k < n; k++) {
			struct np_prefix *p = sp[k].p;
			uint32_t s = sp[k].suffix;
			struct np_page *pg = page_of(p, s);

			if (!pg || !(pg->quar[PAGE_WORD(s)] & PAGE_BIT(s)))
				continue;
			/* A later free of the same name owns the bit (one
			 * of the same millisecond leaves with this one). */
			if (pg->until[s % NP_PAGE_BITS] != (uint32_t)f->until)
				continue;
			pg->quar[PAGE_WORD(s)] &= ~PAGE_BIT(s);
			if (s < p->hint)
				p->hint = s;
			if (!--p->nquar)
				drop_if_empty(np, p);
		}
		np->fhead = (np->fhead + 1) % np->fcap;
		np->fcount--;
	}
}

/* The freed name goes to the FIFO (for prefixes used later too) and is
 * quarantined under every prefix in use it is a name of.  The frees whose
 * time is up leave first: a table kept for the filters alone never picks,
 * and its FIFO would otherwise hold every name freed since it was built. */
static void quarantine(struct namepick *np, const char *name)
{
	uint64_t until = now_rel(np) + np->quarantine_ms;
	struct np_split sp[VNIC_IFNAME_MAX];
	struct np_freed *f;
	unsigned int n, k;

	if (!np->quarantine_ms)
		return;
	expire(np);
	if (np->fcount == np->fcap) {
		uint32_t cap = np->fcap ? np->fcap * 2 : 64;

		f = malloc(cap * sizeof(*f));
		if (!f)
			return;	/* no quarantine is better than no name */
		for (k = 0; k < np->fcount; k++)
			f[k] = np->fifo[(np->fhead + k) % np->fcap];
		free(np->fifo);
		np->fifo = f;
		np->fhead = 0;
		np->fcap = cap;
	}
	f = &np->fifo[(np->fhead + np->fcount++) % np->fcap];
	memcpy(f->name, name, strlen(name) + 1);
	f->until = until;
	n = name_splits(np, name, sp);
	for (k = 0; k < n; k++)
		set_quar(sp[k].p, sp[k].suffix, (uint32_t)until);
}

void namepick_freed(struct namepick *np, const char *name)
{
	namepick_release(np, name);
	quarantine(np, name);
	prune(np, name);
}

/* Used bits go: a rebuild's dump claims the links' names again.  Picks not
 * yet seen as links go too (a later EEXIST retry copes); quarantine stays:
 * it is about time, not presence. */
void namepick_clear_used(struct namepick *np)
{
	unsigned int i;

	for (i = 0; i < PREFIX_BUCKETS; i++) {
		struct np_prefix *p;

		for (p = np->buckets[i]; p; p = p->next) {
			for (uint32_t k = 0; k < p->npages; k++)
				if (p->pages[k])
					memset(p->pages[k]->used, 0,
					       sizeof(p->pages[k]->used));
			p->nused = 0;
			p->hint = 0;
		}
	}
}

/* --- picking ---------------------------------------------------------- */

/* Whether names of a and b can be the same: one prefix is the other plus
 * digits ("ab", "ab1"). */
static bool digits_apart(const struct np_prefix *a, const struct np_prefix *b)
{
	const struct np_prefix *s = a->len < b->len ? a : b;
	const struct np_prefix *l = s == a ? b : a;
	uint32_t i;

	if (a->len == b->len || memcmp(s->prefix, l->prefix, s->len))
		return false;
	for (i = s->len; i < l->len; i++)
		if (!is_digit(l->prefix[i]))
			return false;
	return true;
}

/* p learns the used suffixes of q that are names of its own: picks of q
 * not yet seen as links (those are learned from the links). */
static int learn_picks(struct np_prefix *p, const struct np_prefix *q)
{
	char name[VNIC_IFNAME_MAX + 1];
	uint32_t k, w, s;

	for (k = 0; k < q->npages; k++) {
		for (w = 0; q->pages[k] && w < NP_PAGE_WORDS; w++) {
			uint64_t bits = q->pages[k]->used[w];

			for (; bits; bits &= bits - 1) {
				name_format(name, q->prefix, k * NP_PAGE_BITS + w * 64 +
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
 * A prefix about to be used for the first time learns what is known of its
 * names: the links that have one (links(arg, ...)), the names picked under prefixes
 * that differ from it by digits only, and the quarantined (the FIFO, in
 * order: a later free of a name has the later time).  O(links + frees +
 * those prefixes' suffixes), once per prefix.
 */
static int learn_prefix(struct namepick *np, struct np_prefix *p,
			namepick_links_fn *links, void *arg)
{
	const char *link;
	uint32_t i, s;
	int err;

	for (i = 0; (link = links(arg, &i));) {
		if (!name_of(p, link, &s))
			continue;
		if (grow_prefix(p, s))
			return -ENOMEM;
		set_used(p, s);
	}
	for (i = 0; i < PREFIX_BUCKETS; i++) {
		for (struct np_prefix *q = np->buckets[i]; q; q = q->next) {
			if (!digits_apart(p, q))
				continue;
			err = learn_picks(p, q);
			if (err)
				return err;
		}
	}
	for (i = 0; i < np->fcount; i++) {
		const struct np_freed *f = &np->fifo[(np->fhead + i) % np->fcap];

		if (name_of(p, f->name, &s))
			set_quar(p, s, (uint32_t)f->until);
	}
	return 0;
}

/* The prefix in use, made (and learned) on its first use. */
static int use_prefix(struct namepick *np, const char *prefix,
		      namepick_links_fn *links, void *arg, struct np_prefix **out)
{
	size_t len = strlen(prefix);
	uint32_t h = hash_str(prefix);
	struct np_prefix *p = find_prefix(np, prefix, len, h);
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
	err = learn_prefix(np, p, links, arg);
	if (err) {
		free_prefix(p);
		return err;
	}
	p->next = np->buckets[h % PREFIX_BUCKETS];
	np->buckets[h % PREFIX_BUCKETS] = p;
	*out = p;
	return 0;
}

/* The lowest suffix of p from its hint on that is neither taken nor
 * quarantined, or -ENOSPC. */
static int lowest_free(const struct np_prefix *p, uint32_t *suffix)
{
	uint32_t w;

	for (w = p->hint / 64;; w++) {
		struct np_page *pg = page_of(p, w * 64);
		uint64_t busy = 0;
		uint32_t s;

		if (pg)
			busy = pg->used[w % NP_PAGE_WORDS] | pg->quar[w % NP_PAGE_WORDS];
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
		*suffix = s;
		return 0;
	}
}

/*
 * Every free suffix of p is quarantined: the quarantine is a preference,
 * never a reason to fail a create the kernel would do (a template of a
 * few names, a guest made again at once).  The one freed longest ago is
 * handed out, the one whose time is up first: the FIFO is oldest first,
 * and an entry whose time a later free of the name took over is skipped.
 * O(frees), on this path only.
 */
static int oldest_quarantined(const struct namepick *np,
			      const struct np_prefix *p, uint32_t *suffix)
{
	uint32_t i, s;

	for (i = 0; i < np->fcount; i++) {
		const struct np_freed *f = &np->fifo[(np->fhead + i) % np->fcap];
		const struct np_page *pg;

		if (!name_of(p, f->name, &s) || !(pg = page_of(p, s)))
			continue;
		if ((pg->quar[PAGE_WORD(s)] & PAGE_BIT(s)) &&
		    !(pg->used[PAGE_WORD(s)] & PAGE_BIT(s)) &&
		    pg->until[s % NP_PAGE_BITS] == (uint32_t)f->until) {
			*suffix = s;
			return 0;
		}
	}
	return -ENOSPC;
}

int namepick_pick(struct namepick *np, const char *prefix,
		  namepick_links_fn *links, void *arg, uint32_t *suffix)
{
	char name[VNIC_IFNAME_MAX + 1];
	struct np_prefix *p;
	struct np_page *pg;
	bool quarantined;
	uint32_t s;
	int err;

	/* First: it may drop prefixes, p among them if made before. */
	expire(np);
	err = use_prefix(np, prefix, links, arg, &p);
	if (err)
		return err;
	err = lowest_free(p, &s);
	quarantined = err == -ENOSPC;
	if (quarantined)
		err = oldest_quarantined(np, p, &s);
	if (err)
		return err;
	/* Taken for every template whose name it is, too. */
	name_format(name, p->prefix, s);
	err = namepick_claim(np, name);
	if (err)
		return err;
	if (quarantined) {
		/* Its quarantine here ends now; a free starts another. */
		pg = page_of(p, s);
		pg->quar[PAGE_WORD(s)] &= ~PAGE_BIT(s);
		p->nquar--;
	} else {
		p->hint = s + 1;
	}
	*suffix = s;
	return 0;
}

void namepick_unpick(struct namepick *np, const char *prefix, uint32_t suffix)
{
	struct np_prefix *p = get_prefix(np, prefix);
	char name[VNIC_IFNAME_MAX + 1];

	if (!p || suffix > p->max)
		return;
	name_format(name, p->prefix, suffix);
	namepick_release(np, name);
	prune(np, name);
}

