// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The anchors that run nft(8), and what they need: running it, writing
 * its input, reading the ruleset back, splitting a ruleset in nft's block
 * syntax into one command per statement (for "one nft process per rule"),
 * and the per-guest-chain layout (what a rule-per-check design installs).
 * nft is started by spawn.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filters.h"

#define LIST_TIMEOUT_MS	20000

int nft_run(const struct filt_env *e, const char **argv)
{
	argv[0] = e->nft_path;
	return bench_exec(argv, NULL, -1, NULL);
}

int nft_file(const struct filt_env *e, const char *path)
{
	const char *argv[] = { NULL, "-f", path, NULL };

	return nft_run(e, argv);
}

int nft_write_tmp(const char *text, size_t len, char *path, size_t pathlen)
{
	FILE *f = bench_tmpfile("nft", path, pathlen);

	if (!f)
		return -errno;
	fwrite(text, 1, len, f);
	return bench_tmpfile_close(f, path);
}

/*
 * What a comparison must not see: the owner's table-level "flags" line and
 * its "# progname ..." comment (set by libvnic, not expressible in nft's
 * input), and blank lines (nft puts one after table flags).
 */
static void normalize_listing(char *text)
{
	char *r = text, *w = text;
	bool after_table = false;

	while (*r) {
		char *eol = strchr(r, '\n'), *s = r;
		size_t len = eol ? (size_t)(eol - r) + 1 : strlen(r);
		bool keep = true;

		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\n' || !*s)
			keep = false;
		else if (after_table && !strncmp(s, "flags ", 6))
			keep = false;
		if (keep) {
			char *hash = NULL;

			if (!strncmp(s, "table ", 6))
				hash = memchr(r, '#', len);
			if (hash && hash > r && hash[-1] == ' ') {
				/* "table netdev vnic { # progname x" */
				memmove(w, r, (size_t)(hash - 1 - r));
				w += hash - 1 - r;
				*w++ = '\n';
			} else {
				memmove(w, r, len);
				w += len;
			}
		}
		if (*s != '\n' && *s)
			after_table = !strncmp(s, "table ", 6);
		r += len;
	}
	*w = 0;
}

/* nft 1.0.6 can loop for ever on a ruleset it cannot read back (a base
 * chain whose device list does not fit one dump message): given up on,
 * and said, rather than hang. */
int nft_list_ruleset(const struct filt_env *e, char **out)
{
	const char *argv[] = { e->nft_path, "list", "ruleset", NULL };
	int ret = bench_capture(argv, LIST_TIMEOUT_MS, NULL, out, NULL);

	if (!ret)
		normalize_listing(*out);
	return ret;
}

/* ---- splitting a ruleset into statements ---- */

struct cursor {
	const char *p, *end;
};

struct split {
	struct stmt_list *l;
	char *err;
	size_t errlen;
	/* Collected in order, emitted as table, chains, sets, objects,
	 * elements, rules so that every reference resolves. */
	struct stmt_list part[6];
};

enum { P_TABLE, P_CHAIN, P_SET, P_OBJ, P_ELEM, P_RULE };

static int list_push(struct stmt_list *l, char *s)
{
	if (!s)
		return -ENOMEM;
	if (l->n == l->cap) {
		unsigned int cap = l->cap ? l->cap * 2 : 256;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			free(s);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* Skip a quoted string starting at *p (which is '"'). */
static const char *skip_quoted(const char *p, const char *end)
{
	for (p++; p < end && *p != '"'; p++)
		if (*p == '\\' && p + 1 < end)
			p++;
	return p < end ? p + 1 : end;
}

/*
 * The next statement at this level: up to ';' or a newline outside any
 * braces, braces included whole.  Comments go.  Returns false at the end.
 */
static bool next_stmt(struct cursor *c, const char **s, size_t *len)
{
	const char *p = c->p, *start;
	int depth = 0;

	for (;;) {
		while (p < c->end && (isspace((unsigned char)*p) || *p == ';'))
			p++;
		if (p < c->end && *p == '#') {
			while (p < c->end && *p != '\n')
				p++;
			continue;
		}
		break;
	}
	if (p >= c->end) {
		c->p = p;
		return false;
	}
	start = p;
	while (p < c->end) {
		if (*p == '"') {
			p = skip_quoted(p, c->end);
			continue;
		}
		if (*p == '#' && depth == 0)
			break;
		if (*p == '{')
			depth++;
		else if (*p == '}')
			depth--;
		else if (depth <= 0 && (*p == ';' || *p == '\n'))
			break;
		p++;
	}
	*s = start;
	*len = (size_t)(p - start);
	while (*len && isspace((unsigned char)start[*len - 1]))
		(*len)--;
	c->p = p;
	return true;
}

/* Words before the first '{' (at most 'max'); the block's inside. */
static int head_words(const char *s, size_t len, char words[][64],
		      unsigned int max, unsigned int *nw, struct cursor *body)
{
	const char *p = s, *end = s + len, *brace = memchr(s, '{', len);
	const char *hend = brace ? brace : end;

	*nw = 0;
	while (p < hend) {
		const char *w;

		while (p < hend && isspace((unsigned char)*p))
			p++;
		if (p >= hend)
			break;
		w = p;
		while (p < hend && !isspace((unsigned char)*p))
			p++;
		if (*nw == max || (size_t)(p - w) >= 64)
			return -EINVAL;
		memcpy(words[*nw], w, (size_t)(p - w));
		words[*nw][p - w] = 0;
		(*nw)++;
	}
	body->p = body->end = NULL;
	if (brace) {
		const char *close = end;

		while (close > brace && close[-1] != '}')
			close--;
		if (close <= brace)
			return -EINVAL;
		body->p = brace + 1;
		body->end = close - 1;
	}
	return 0;
}

static bool starts(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len >= n && !strncmp(s, word, n) &&
	       (len == n || isspace((unsigned char)s[n]));
}

/* "a, b, c" (braces and quotes respected) as one statement each. */
static int split_elements(struct split *sp, const char *fam, const char *tab,
			  const char *set, const char *p, const char *end)
{
	int depth = 0, ret = 0;
	const char *start = p;

	for (; p <= end && !ret; p++) {
		if (p < end && *p == '"') {
			p = skip_quoted(p, end) - 1;
			continue;
		}
		if (p < end && *p == '{')
			depth++;
		else if (p < end && *p == '}')
			depth--;
		if (p == end || (*p == ',' && depth == 0)) {
			const char *a = start, *b = p;

			while (a < b && isspace((unsigned char)*a))
				a++;
			while (b > a && isspace((unsigned char)b[-1]))
				b--;
			if (b > a)
				ret = list_push(&sp->part[P_ELEM],
						fmt("add element %s %s %s { %.*s }",
						    fam, tab, set, (int)(b - a), a));
			start = p + 1;
		}
	}
	return ret;
}

/* Properties joined by "; " into one block, and what else the body has. */
static int split_set(struct split *sp, const char *kw, const char *fam,
		     const char *tab, const char *name, struct cursor *body)
{
	char props[4096] = "";
	const char *s;
	size_t len, used = 0;
	int ret = 0;

	while (!ret && body->p && next_stmt(body, &s, &len)) {
		if (starts(s, len, "elements")) {
			const char *open = memchr(s, '{', len);
			const char *close = s + len;

			while (close > s && close[-1] != '}')
				close--;
			if (!open || close <= open)
				return -EINVAL;
			ret = split_elements(sp, fam, tab, name, open + 1,
					     close - 1);
			continue;
		}
		if (used + len + 3 >= sizeof(props))
			return -E2BIG;
		used += (size_t)snprintf(props + used, sizeof(props) - used,
					 "%.*s; ", (int)len, s);
	}
	if (ret)
		return ret;
	return list_push(&sp->part[!strcmp(kw, "set") || !strcmp(kw, "map") ?
				   P_SET : P_OBJ],
			 used ? fmt("add %s %s %s %s { %s}", kw, fam, tab, name,
				    props) :
				fmt("add %s %s %s %s", kw, fam, tab, name));
}

static bool chain_prop(const char *s, size_t len)
{
	return starts(s, len, "type") || starts(s, len, "policy") ||
	       starts(s, len, "comment") || starts(s, len, "devices") ||
	       starts(s, len, "priority");
}

static int split_chain(struct split *sp, const char *fam, const char *tab,
		       const char *name, struct cursor *body)
{
	char *props = NULL;
	size_t used = 0;
	const char *s;
	size_t len;
	int ret = 0;

	while (!ret && body->p && next_stmt(body, &s, &len)) {
		if (chain_prop(s, len)) {
			char *np = realloc(props, used + len + 3);

			if (!np) {
				ret = -ENOMEM;
				break;
			}
			props = np;
			used += (size_t)sprintf(props + used, "%.*s; ", (int)len,
						s);
			continue;
		}
		ret = list_push(&sp->part[P_RULE],
				fmt("add rule %s %s %s %.*s", fam, tab, name,
				    (int)len, s));
	}
	if (!ret)
		ret = list_push(&sp->part[P_CHAIN],
				props ? fmt("add chain %s %s %s { %s}", fam,
					    tab, name, props) :
					fmt("add chain %s %s %s", fam, tab,
					    name));
	free(props);
	return ret;
}

static int split_table(struct split *sp, const char *s, size_t len)
{
	char w[3][64], iw[3][64], tprops[1024] = "";
	struct cursor body, inner;
	const char *fam, *tab, *t;
	unsigned int nw, inw;
	size_t tlen, used = 0;
	int ret;

	if (head_words(s, len, w, 3, &nw, &body) || nw < 2 || !body.p) {
		snprintf(sp->err, sp->errlen, "cannot parse '%.40s'", s);
		return -EINVAL;
	}
	fam = nw == 3 ? w[1] : "ip";
	tab = w[nw - 1];
	ret = 0;
	while (!ret && next_stmt(&body, &t, &tlen)) {
		if (starts(t, tlen, "comment") || starts(t, tlen, "flags")) {
			/* properties of the table */
			if (used + tlen + 3 < sizeof(tprops))
				used += (size_t)snprintf(tprops + used,
							 sizeof(tprops) - used,
							 "%.*s; ", (int)tlen, t);
			continue;
		}
		if (head_words(t, tlen, iw, 3, &inw, &inner) || !inw) {
			snprintf(sp->err, sp->errlen, "cannot parse '%.*s'",
				 (int)strcspn(t, "\n") > 40 ? 40 :
				 (int)strcspn(t, "\n"), t);
			return -EINVAL;
		}
		if (!strcmp(iw[0], "chain") && inw == 2)
			ret = split_chain(sp, fam, tab, iw[1], &inner);
		else if (inw == 2 && inner.p)
			/* set, map and named objects (counter, quota, ...) */
			ret = split_set(sp, iw[0], fam, tab, iw[1], &inner);
		else {
			snprintf(sp->err, sp->errlen,
				 "unknown table statement '%.*s'",
				 (int)strcspn(t, "\n") > 40 ? 40 :
				 (int)strcspn(t, "\n"), t);
			return -EINVAL;
		}
	}
	if (!ret)
		ret = list_push(&sp->part[P_TABLE],
				used ? fmt("add table %s %s { %s}", fam, tab,
					   tprops) :
				       fmt("add table %s %s", fam, tab));
	return ret;
}

/* A command already: "add element ... { a, b }" is split per element. */
static int split_command(struct split *sp, const char *s, size_t len)
{
	char w[6][64];
	struct cursor body;
	unsigned int nw;

	if (starts(s, len, "flush") || starts(s, len, "delete") ||
	    starts(s, len, "destroy"))
		return 0;	/* every run starts from an empty ruleset */
	if (head_words(s, len, w, 6, &nw, &body) == 0 && nw == 5 &&
	    (!strcmp(w[0], "add") || !strcmp(w[0], "create")) &&
	    !strcmp(w[1], "element") && body.p)
		return split_elements(sp, w[2], w[3], w[4], body.p, body.end);
	if (starts(s, len, "add rule") || starts(s, len, "insert") ||
	    starts(s, len, "replace"))
		return list_push(&sp->part[P_RULE], fmt("%.*s", (int)len, s));
	if (starts(s, len, "add chain") || starts(s, len, "create chain"))
		return list_push(&sp->part[P_CHAIN], fmt("%.*s", (int)len, s));
	if (starts(s, len, "add table") || starts(s, len, "create table"))
		return list_push(&sp->part[P_TABLE], fmt("%.*s", (int)len, s));
	return list_push(&sp->part[P_SET], fmt("%.*s", (int)len, s));
}

int stmt_split(const char *text, struct stmt_list *out, char *err,
	       size_t errlen)
{
	struct split sp = { .l = out, .err = err, .errlen = errlen };
	struct cursor c = { text, text + strlen(text) };
	unsigned int i, k;
	const char *s;
	size_t len;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	err[0] = 0;
	while (!ret && next_stmt(&c, &s, &len)) {
		if (starts(s, len, "table"))
			ret = split_table(&sp, s, len);
		else if (!starts(s, len, "define") && !starts(s, len, "include"))
			ret = split_command(&sp, s, len);
	}
	for (i = 0; i < 6; i++) {
		for (k = 0; k < sp.part[i].n; k++) {
			if (!ret)
				ret = list_push(out, sp.part[i].v[k]);
			else
				free(sp.part[i].v[k]);
		}
		if (i == P_SET)
			out->n_struct = out->n;
		free(sp.part[i].v);
	}
	out->n_elements = sp.part[P_OBJ].n + sp.part[P_ELEM].n;
	out->n_rules = sp.part[P_RULE].n;
	if (ret && !err[0])
		snprintf(err, errlen, "splitting the ruleset: %s",
			 strerror(-ret));
	if (ret)
		stmt_free(out);
	return ret;
}

void stmt_free(struct stmt_list *l)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int stmt_write(const struct stmt_list *l, unsigned int from, unsigned int to,
	       char *path, size_t pathlen)
{
	FILE *f = bench_tmpfile("nft", path, pathlen);
	unsigned int i;

	if (!f)
		return -errno;
	for (i = from; i < to && i < l->n; i++)
		fprintf(f, "%s\n", l->v[i]);
	return bench_tmpfile_close(f, path);
}

/* ---- base chains over the kernel's device limit ---- */

/* The device list of "add chain ... { type ... devices = { a, b } ...": its
 * braces' inside, and how many names it holds. */
static bool chain_devices(const char *stmt, const char **open,
			  const char **close, unsigned int *count)
{
	const char *p = strstr(stmt, "devices = {");

	if (!p)
		return false;
	*open = p + strlen("devices = {");
	*close = strchr(*open, '}');
	if (!*close)
		return false;
	*count = 1;
	for (p = *open; p < *close; p++)
		*count += *p == ',';
	return true;
}

/* Where the n-th word of a statement ends, and the word into buf. */
static size_t word_end(const char *s, unsigned int n, char *buf)
{
	const char *p = s;
	size_t len;

	while (n--) {
		p += strcspn(p, " ");
		p += strspn(p, " ");
	}
	len = strcspn(p, " {");
	snprintf(buf, 64, "%.*s", (int)(len < 63 ? len : 63), p);
	return (size_t)(p - s) + len;
}

/* The start of device i in the list that starts at open. */
static const char *device_at(const char *open, unsigned int i)
{
	const char *p = open;

	while (i-- && p)
		p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
	return p;
}

/* The chain statement with devices [from, to) only, renamed NAME_part. */
static char *chain_slice(const char *stmt, const char *open, const char *close,
			 unsigned int from, unsigned int to, unsigned int count,
			 unsigned int part)
{
	const char *a = device_at(open, from);
	const char *b = to < count ? device_at(open, to) - 1 : close;
	char name[64];
	size_t at = word_end(stmt, 4, name);

	return fmt("%.*s_%u%.*s%.*s %s", (int)at, stmt, part,
		   (int)(open - (stmt + at)), stmt + at, (int)(b - a), a,
		   close);
}

int stmt_split_chains(struct stmt_list *l, unsigned int max_devs,
		      unsigned int *nsplit)
{
	struct stmt_list out = { 0 };
	char (*names)[64] = NULL;
	unsigned int *parts = NULL, nn = 0, i, k;
	int ret = 0;

	*nsplit = 0;
	names = calloc(l->n_struct + 1, sizeof(*names));
	parts = calloc(l->n_struct + 1, sizeof(*parts));
	if (!names || !parts) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < l->n && !ret; i++) {
		const char *s = l->v[i], *open, *close;
		unsigned int count;
		char name[64];

		if (i < l->n_struct && !strncmp(s, "add chain ", 10) &&
		    chain_devices(s, &open, &close, &count) && count > max_devs) {
			word_end(s, 4, names[nn]);
			parts[nn] = (count + max_devs - 1) / max_devs;
			for (k = 0; k < parts[nn] && !ret; k++)
				ret = list_push(&out, chain_slice(s, open, close,
						k * max_devs,
						(k + 1) * max_devs < count ?
						(k + 1) * max_devs : count,
						count, k));
			nn++;
			(*nsplit)++;
			continue;
		}
		if (i == l->n_struct)
			out.n_struct = out.n;
		if (i >= l->n_struct && !strncmp(s, "add rule ", 9)) {
			size_t at = word_end(s, 4, name);
			unsigned int c;

			for (c = 0; c < nn && strcmp(names[c], name); c++)
				;
			if (c < nn) {
				for (k = 0; k < parts[c] && !ret; k++)
					ret = list_push(&out, fmt("%.*s_%u%s",
							(int)at, s, k, s + at));
				continue;
			}
		}
		ret = list_push(&out, strdup(s));
	}
	if (l->n_struct == l->n)
		out.n_struct = out.n;
out:
	free(names);
	free(parts);
	if (ret) {
		stmt_free(&out);
		return ret;
	}
	out.n_elements = l->n_elements;
	for (i = out.n_struct, out.n_rules = 0; i < out.n; i++)
		out.n_rules += !strncmp(out.v[i], "add rule ", 9);
	stmt_free(l);
	*l = out;
	return 0;
}

/* ---- the per-guest-chain layout ---- */

/* From the guest: egress of a macvlan/macvtap, ingress of a veth or tap. */
static bool kind_egress(enum vnic_kind kind)
{
	return kind == VNIC_KIND_MACVLAN || kind == VNIC_KIND_MACVTAP;
}

/* The clean-traffic checks of one NIC as plain rules: 10 per NIC. */
static unsigned int nic_rules(FILE *b, const char *meta, unsigned int i)
{
	char name[16], mac[18], v4[16], v6[40], ll[40];

	filt_nic_name(i, name);
	filt_nic_mac_str(i, mac);
	filt_nic_ipv4(i, false, v4);
	filt_nic_ipv6(i, v6);
	filt_nic_ll6(i, ll);
	fprintf(b, "\t\t%s \"%s\" ether saddr != %s counter drop\n", meta,
		  name, mac);
	fprintf(b, "\t\t%s \"%s\" ether type != { ip, arp, ip6 } counter drop\n",
		  meta, name);
	fprintf(b, "\t\t%s \"%s\" arp saddr ether != %s counter drop\n", meta,
		  name, mac);
	fprintf(b, "\t\t%s \"%s\" arp saddr ip != %s counter drop\n", meta,
		  name, v4);
	fprintf(b, "\t\t%s \"%s\" udp sport 67 counter drop\n", meta, name);
	fprintf(b, "\t\t%s \"%s\" ip saddr 0.0.0.0 udp sport 68 udp dport 67 accept\n",
		  meta, name);
	fprintf(b, "\t\t%s \"%s\" ip saddr != %s counter drop\n", meta, name,
		  v4);
	fprintf(b, "\t\t%s \"%s\" icmpv6 type { nd-router-advert, nd-redirect } counter drop\n",
		  meta, name);
	fprintf(b, "\t\t%s \"%s\" ip6 saddr :: icmpv6 type nd-neighbor-solicit accept\n",
		  meta, name);
	fprintf(b, "\t\t%s \"%s\" ip6 saddr != { %s, %s } counter drop\n",
		  meta, name, v6, ll);
	return 10;
}

static int render_range(const struct filt_env *e, unsigned int first,
			unsigned int guests, bool by_nic, char **text,
			size_t *len, unsigned int *nrules)
{
	unsigned int k = e->o->nics_per_guest, n = (first + guests) * k, g, j, i, c;
	bool egress = kind_egress(e->o->kind);
	const char *meta = egress ? "oifname" : "iifname";
	char name[16];
	FILE *b = open_memstream(text, len);
	int bad;

	if (!b)
		return -errno;
	*nrules = 0;
	fprintf(b, "table netdev %s {\n", FILT_TABLE);
	for (g = first; g < first + guests; g++) {
		fprintf(b, "\tchain guest_g%u {\n", g);
		for (j = 0; j < k; j++)
			*nrules += nic_rules(b, meta, g * k + j);
		fprintf(b, "\t}\n");
	}
	/* A netdev base chain takes at most 255 devices. */
	for (c = 0; first * k + c * FILT_NETDEV_MAX < n; c++) {
		unsigned int lo = first * k + c * FILT_NETDEV_MAX;
		unsigned int hi = lo + FILT_NETDEV_MAX < n ?
				  lo + FILT_NETDEV_MAX : n;

		/* A range added later must not reuse a loaded chain's name. */
		if (by_nic)
			fprintf(b, "\tchain from_nv%u {\n", lo);
		else
			fprintf(b, "\tchain from_guest%u {\n", c);
		fprintf(b, "\t\ttype filter hook %s devices = { ",
			  egress ? "egress" : "ingress");
		for (i = lo; i < hi; i++) {
			filt_nic_name(i, name);
			fprintf(b, "%s%s", name, i + 1 < hi ? ", " : "");
		}
		fprintf(b, " } priority filter; policy accept;\n");
		for (i = lo; i < hi; i++) {
			filt_nic_name(i, name);
			fprintf(b, "\t\t%s \"%s\" jump guest_g%u\n", meta,
				  name, i / k);
			(*nrules)++;
		}
		fprintf(b, "\t}\n");
	}
	fprintf(b, "}\n");
	/* The text is *text's, and *len its length, once the stream closes. */
	bad = ferror(b);
	if (fclose(b) || bad) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}

int chains_render(const struct filt_env *e, unsigned int guests, char **text,
		  size_t *len, unsigned int *nrules)
{
	return render_range(e, 0, guests, false, text, len, nrules);
}

int chains_render_range(const struct filt_env *e, unsigned int first,
			unsigned int guests, char **text, size_t *len,
			unsigned int *nrules)
{
	return render_range(e, first, guests, true, text, len, nrules);
}
