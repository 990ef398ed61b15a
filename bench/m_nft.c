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

/* ---- one command per statement ---- */

/*
 * The text is vnic_filter_render's: one table, each object a block
 * "KIND NAME {" ... "}" with one statement a line, a set's elements on one
 * "elements = { ... }" line.  Commands come out as table, chains, sets and
 * maps (the structure), then named objects, elements and rules, so that
 * every reference resolves.  A base chain over max_devs devices (the
 * kernel takes at most 255 a message: EFBIG) becomes copies NAME_0,
 * NAME_1, ... of at most max_devs devices each, each with its rules.
 */
enum { P_TABLE, P_CHAIN, P_SET, P_OBJ, P_ELEM, P_RULE, P__N };

struct split {
	struct stmt_list part[P__N];
	char pre[130];			/* "netdev vnic" */
	char kind[64], name[64];	/* the open block */
	char *props[3];			/* of the table [1], of the block [2] */
	const char *devs;		/* a base chain's devices, in props[2] */
	unsigned int max_devs, nsplit;
	unsigned int parts;		/* the chain's copies (0: none made) */
};

static int push(struct stmt_list *l, char *s)
{
	unsigned int cap = l->cap ? l->cap * 2 : 256;
	char **v;

	if (!s)
		return -ENOMEM;
	if (l->n == l->cap) {
		v = realloc(l->v, cap * sizeof(*v));
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

/* "a" or "a; b;" onto *props as "...a; b; ", nft's block separators. */
static int add_prop(char **props, const char *l)
{
	size_t n = strlen(l);
	char *p = fmt("%s%s%s", *props ? *props : "", l,
		      l[n - 1] == ';' ? " " : "; ");

	if (!p)
		return -ENOMEM;
	free(*props);
	*props = p;
	return 0;
}

/* "elements = { a, b }": one command per element, quotes respected. */
static int split_elements(struct split *sp, const char *l)
{
	const char *p = strchr(l, '{') + 1, *end = strrchr(l, '}'), *a = p;
	bool quoted = false;
	int ret = 0;

	for (; !ret && end && p <= end; p++) {
		size_t n;

		quoted ^= *p == '"';
		if (p < end && (quoted || *p != ','))
			continue;
		a += strspn(a, " ");
		for (n = (size_t)(p - a); n && a[n - 1] == ' '; n--)
			;
		if (n)
			ret = push(&sp->part[P_ELEM],
				   fmt("add element %s %s { %.*s }", sp->pre,
				       sp->name, (int)n, a));
		a = p + 1;
	}
	return end ? ret : -EINVAL;
}

/* Copy k of the open chain, with its k-th slice of devices. */
static char *chain_cmd(const struct split *sp, unsigned int k)
{
	const char *props = sp->props[2], *a = sp->devs, *b, *close;
	unsigned int i;

	if (!props)
		return fmt("add chain %s %s", sp->pre, sp->name);
	if (sp->parts == 1)
		return fmt("add chain %s %s { %s}", sp->pre, sp->name, props);
	close = strchr(a, '}');
	for (i = 0; i < k * sp->max_devs; i++)
		a = strchr(a, ',') + 1;
	for (b = a, i = 0; *b != '}' && i < sp->max_devs; i++)
		b += strcspn(b + 1, ",}") + 1;
	return fmt("add chain %s %s_%u { %.*s%.*s %s}", sp->pre, sp->name, k,
		   (int)(sp->devs - props), props, (int)(b - a), a, close);
}

/* The open chain's commands, made at its first rule or its end. */
static int chain_head(struct split *sp)
{
	const char *d = sp->props[2] ? strstr(sp->props[2], "devices = {") : NULL;
	unsigned int count = 1, k;
	int ret = 0;

	sp->devs = d ? d + strlen("devices = {") : NULL;
	for (; sp->devs && *d && *d != '}'; d++)
		count += *d == ',';
	sp->parts = sp->devs && !*d ? 0 : 1;
	if (sp->devs && count > sp->max_devs) {
		sp->parts = (count + sp->max_devs - 1) / sp->max_devs;
		sp->nsplit++;
	}
	for (k = 0; !ret && k < sp->parts; k++)
		ret = push(&sp->part[P_CHAIN], chain_cmd(sp, k));
	return sp->parts ? ret : -EINVAL;
}

static int chain_rule(struct split *sp, const char *l)
{
	int ret = sp->parts ? 0 : chain_head(sp);
	unsigned int k;

	if (!ret && sp->parts == 1)
		return push(&sp->part[P_RULE], fmt("add rule %s %s %s",
						   sp->pre, sp->name, l));
	for (k = 0; !ret && k < sp->parts; k++)
		ret = push(&sp->part[P_RULE], fmt("add rule %s %s_%u %s",
						  sp->pre, sp->name, k, l));
	return ret;
}

static bool chain_prop(const char *l)
{
	static const char *const props[] = { "type ", "policy ", "comment ",
					     "devices ", "priority " };
	unsigned int i;

	for (i = 0; i < sizeof(props) / sizeof(props[0]); i++)
		if (!strncmp(l, props[i], strlen(props[i])))
			return true;
	return false;
}

/* A block closed: a chain's head if it had no rule, a set's or object's. */
static int block_end(struct split *sp, unsigned int depth)
{
	char *p = sp->props[depth + 1];
	int ret;

	if (!depth)
		ret = push(&sp->part[P_TABLE],
			   p ? fmt("add table %s { %s}", sp->pre, p) :
			       fmt("add table %s", sp->pre));
	else if (!strcmp(sp->kind, "chain"))
		ret = sp->parts ? 0 : chain_head(sp);
	else
		ret = push(&sp->part[strcmp(sp->kind, "set") &&
				     strcmp(sp->kind, "map") ? P_OBJ : P_SET],
			   p ? fmt("add %s %s %s { %s}", sp->kind, sp->pre,
				   sp->name, p) :
			       fmt("add %s %s %s", sp->kind, sp->pre, sp->name));
	free(p);
	sp->props[depth + 1] = NULL;
	sp->parts = 0;
	return ret;
}

/* One line, trimmed: a block's head or end, a property, elements, a rule. */
static int split_line(struct split *sp, const char *l, unsigned int *depth)
{
	size_t n = strlen(l);
	char fam[64], tab[64];

	if (!strcmp(l, "}"))
		return *depth ? block_end(sp, --*depth) : -EINVAL;
	if (n > 2 && !strcmp(l + n - 2, " {")) {
		if (!*depth && sscanf(l, "table %63s %63s", fam, tab) == 2)
			snprintf(sp->pre, sizeof(sp->pre), "%s %s", fam, tab);
		else if (*depth != 1 ||
			 sscanf(l, "%63s %63s", sp->kind, sp->name) != 2)
			return -EINVAL;
		++*depth;
		return 0;
	}
	if (*depth == 2 && !strcmp(sp->kind, "chain") && !chain_prop(l))
		return chain_rule(sp, l);
	if (*depth == 2 && !strncmp(l, "elements = {", 12))
		return split_elements(sp, l);
	return *depth ? add_prop(&sp->props[*depth], l) : -EINVAL;
}

int stmt_split(const char *text, unsigned int max_devs, struct stmt_list *out,
	       unsigned int *nsplit, char *err, size_t errlen)
{
	struct split sp = { .max_devs = max_devs };
	unsigned int depth = 0, i, k;
	const char *p, *s;
	char *l = NULL;
	size_t n = 0, len;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	for (p = text; !ret && *p; p += n + (p[n] == '\n')) {
		n = strcspn(p, "\n");
		for (len = n; len && isspace((unsigned char)p[len - 1]); len--)
			;
		for (s = p; s < p + len && isspace((unsigned char)*s); s++)
			;
		if (s == p + len || *s == '#')
			continue;
		free(l);
		l = strndup(s, (size_t)(p + len - s));
		ret = l ? split_line(&sp, l, &depth) : -ENOMEM;
	}
	if (ret == -EINVAL || (!ret && depth)) {
		snprintf(err, errlen, "cannot parse '%.40s'", l ? l : "");
		ret = -EINVAL;
	}
	for (i = 0; i < P__N; i++) {
		for (k = 0; k < sp.part[i].n; k++)
			if (ret)
				free(sp.part[i].v[k]);
			else
				ret = push(out, sp.part[i].v[k]);
		if (i == P_SET)
			out->n_struct = out->n;
		free(sp.part[i].v);
	}
	out->n_elements = sp.part[P_OBJ].n + sp.part[P_ELEM].n;
	out->n_rules = sp.part[P_RULE].n;
	*nsplit = sp.nsplit;
	free(l);
	free(sp.props[1]);
	free(sp.props[2]);
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
