// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rule-based anchors: the same clean-traffic policy as fenv.c's, laid
 * out as iptables users write it, loaded by the xtables tools, legacy and
 * nft variants.
 *
 * None of the NICs is a bridge port, so ebtables (which sees only frames a
 * bridge forwards) would install rules that never match: it is not used.
 * What the host sees of a NIC's traffic is its receive path, so each
 * family gets one chain per NIC ("vx-nv<i>"), jumped to from a base chain
 * on the NIC's name (-i), as libvirt's per-interface chains are:
 *
 *   iptables  raw PREROUTING   mac-spoof (-m mac), dhcp-server, the DHCP
 *                              exemption, ip-spoof             4 + 1 jump
 *   ip6tables raw PREROUTING   mac-spoof, ra-guard (RA, redirect), the DAD
 *                              exemption, the NIC's address and link-local,
 *                              drop the rest                   7 + 1 jump
 *   arptables filter INPUT     arp-spoof: sender MAC, sender IP 2 + 1 jump
 *
 * Not expressible here: l2-allow (no ethertype match below a bridge),
 * no-promisc (no destination-MAC match), mac-spoof of frames that are
 * neither IP nor ARP, and the Ethernet source of ARP frames.  The ruleset
 * does less than libvnic's: its figures are a lower bound.
 *
 * Legacy rows carry no ARP part: arptables-legacy has no batch loader
 * (Debian's arptables-legacy-restore is a Perl script that runs
 * /usr/sbin/arptables, the nft variant under the default alternatives, once
 * per line).  arptables-nft-restore ignores --noflush, so adding one guest
 * to a loaded ARP table is done one arptables-nft process per command.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filters.h"

#define XT_MAX_ARGS	24

static const char *const fam_tool[XT__FAMS] = {
	"iptables", "ip6tables", "arptables",
};
static const char *const var_name[XT__VARIANTS] = { "legacy", "nft" };

/* Per variant and family: the command, its restore and its save. */
static char paths[XT__VARIANTS][XT__FAMS][3][64];
static char skip_why[XT__VARIANTS][256];
static bool probed;

static const char *const fam_head[XT__FAMS] = {
	"*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n",
	"*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n",
	"*filter\n:INPUT ACCEPT\n:OUTPUT ACCEPT\n",
};

static bool xt_has_arp(enum xt_variant v)
{
	return v == XT_NFT;
}

static int xt_spawn(const char **argv, const char *in_path, int out_fd)
{
	return bench_exec(argv, in_path, out_fd, argv[0]);
}

/* A table listing, counting rules and user chains. */
static int xt_list(enum xt_variant v, enum xt_fam f, unsigned int *rules,
		   unsigned int *chains);

/*
 * Are the tools there, and does the kernel take their tables here?  The
 * probe lists the (empty) table once, untimed: legacy xtables may be
 * configured out of a kernel that has nf_tables.
 */
static void probe(void)
{
	static const char *const kind[3] = { "", "-restore", "-save" };
	unsigned int v, f, k, r, c;
	char name[48];

	probed = true;
	for (v = 0; v < XT__VARIANTS; v++) {
		for (f = 0; f < XT__FAMS && !skip_why[v][0]; f++) {
			for (k = 0; k < 3; k++) {
				/* The legacy ARP part is not loaded. */
				if (f == XT_ARP && !xt_has_arp(v))
					continue;
				snprintf(name, sizeof(name), "%s-%s%s",
					 fam_tool[f], var_name[v], kind[k]);
				if (bench_find_tool(name, paths[v][f][k],
					      sizeof(paths[v][f][k])))
					continue;
				snprintf(skip_why[v], sizeof(skip_why[v]),
					 "%s not found in /usr/sbin, /sbin, /usr/bin, /bin, /usr/local/sbin (apt-get install iptables%s)",
					 name, f == XT_ARP ? " arptables" : "");
				break;
			}
		}
		for (f = 0; f < XT__FAMS && !skip_why[v][0]; f++) {
			if (f == XT_ARP && !xt_has_arp(v))
				continue;
			if (xt_list(v, f, &r, &c))
				snprintf(skip_why[v], sizeof(skip_why[v]),
					 "%s-%s does not work here: %.160s",
					 fam_tool[f], var_name[v], bench_last_error());
		}
	}
}

const char *xt_skip(enum xt_variant v)
{
	if (!probed)
		probe();
	return skip_why[v][0] ? skip_why[v] : NULL;
}

/* ---- the ruleset ---- */

static int push(struct xt_set *s, enum xt_fam f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int push(struct xt_set *s, enum xt_fam f, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->n == s->cap) {
		unsigned int cap = s->cap ? s->cap * 2 : 1024;
		struct xt_cmd *c = realloc(s->v, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		s->v = c;
		s->cap = cap;
	}
	va_start(ap, fmt);
	n = vasprintf(&s->v[s->n].line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	s->v[s->n].fam = f;
	s->n++;
	if (!strncmp(s->v[s->n - 1].line, "-A ", 3))
		s->rules[f]++;
	else
		s->chains[f]++;
	return 0;
}

/* The commands of NIC i, per family in the order they are loaded. */
static int nic_cmds(struct xt_set *s, unsigned int i)
{
	char nic[16], mac[18], v4[16], v6[40], ll[40], c[24];
	int r = 0;

	filt_nic_name(i, nic);
	filt_nic_mac_str(i, mac);
	filt_nic_ipv4(i, false, v4);
	filt_nic_ipv6(i, v6);
	filt_nic_ll6(i, ll);
	snprintf(c, sizeof(c), "vx-%s", nic);
	r |= push(s, XT_IP4, "-N %s", c);
	r |= push(s, XT_IP4, "-A %s -m mac ! --mac-source %s -j DROP", c, mac);
	r |= push(s, XT_IP4, "-A %s -p udp --sport 67 -j DROP", c);
	r |= push(s, XT_IP4, "-A %s -s 0.0.0.0/32 -p udp --sport 68 --dport 67 -j RETURN", c);
	r |= push(s, XT_IP4, "-A %s ! -s %s/32 -j DROP", c, v4);
	r |= push(s, XT_IP4, "-A PREROUTING -i %s -j %s", nic, c);
	r |= push(s, XT_IP6, "-N %s", c);
	r |= push(s, XT_IP6, "-A %s -m mac ! --mac-source %s -j DROP", c, mac);
	r |= push(s, XT_IP6, "-A %s -p ipv6-icmp --icmpv6-type router-advertisement -j DROP", c);
	r |= push(s, XT_IP6, "-A %s -p ipv6-icmp --icmpv6-type redirect -j DROP", c);
	r |= push(s, XT_IP6, "-A %s -s ::/128 -p ipv6-icmp --icmpv6-type neighbour-solicitation -j RETURN", c);
	r |= push(s, XT_IP6, "-A %s -s %s/128 -j RETURN", c, v6);
	r |= push(s, XT_IP6, "-A %s -s %s/128 -j RETURN", c, ll);
	r |= push(s, XT_IP6, "-A %s -j DROP", c);
	r |= push(s, XT_IP6, "-A PREROUTING -i %s -j %s", nic, c);
	if (!s->arp)
		return r;
	r |= push(s, XT_ARP, "-N %s", c);
	r |= push(s, XT_ARP, "-A %s ! --source-mac %s -j DROP", c, mac);
	r |= push(s, XT_ARP, "-A %s ! --source-ip %s -j DROP", c, v4);
	r |= push(s, XT_ARP, "-A INPUT -i %s -j %s", nic, c);
	return r;
}

/* The commands of guests [first_guest, first_guest + guests), by NIC. */
static int build(const struct filt_env *e, enum xt_variant v,
		 unsigned int first_guest, unsigned int guests,
		 int (*cmds)(struct xt_set *s, unsigned int i),
		 struct xt_set *s)
{
	unsigned int k = e->o->nics_per_guest, i;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	s->arp = xt_has_arp(v);
	s->nics = guests * k;
	for (i = first_guest * k; i < (first_guest + guests) * k && !ret; i++)
		ret = cmds(s, i);
	if (ret)
		xt_set_free(s);
	return ret;
}

int xt_set_build(const struct filt_env *e, enum xt_variant v,
		 unsigned int first_guest, unsigned int guests,
		 struct xt_set *s)
{
	return build(e, v, first_guest, guests, nic_cmds, s);
}

/* What takes NIC i's chains out again: the jump first, then the chain. */
static int nic_remove_cmds(struct xt_set *s, unsigned int i)
{
	char nic[16], c[24];
	int r = 0;

	filt_nic_name(i, nic);
	snprintf(c, sizeof(c), "vx-%s", nic);
	r |= push(s, XT_IP4, "-D PREROUTING -i %s -j %s", nic, c);
	r |= push(s, XT_IP4, "-F %s", c);
	r |= push(s, XT_IP4, "-X %s", c);
	r |= push(s, XT_IP6, "-D PREROUTING -i %s -j %s", nic, c);
	r |= push(s, XT_IP6, "-F %s", c);
	r |= push(s, XT_IP6, "-X %s", c);
	if (!s->arp)
		return r;
	r |= push(s, XT_ARP, "-D INPUT -i %s -j %s", nic, c);
	r |= push(s, XT_ARP, "-F %s", c);
	r |= push(s, XT_ARP, "-X %s", c);
	return r;
}

int xt_set_build_remove(const struct filt_env *e, enum xt_variant v,
			unsigned int first_guest, unsigned int guests,
			struct xt_set *s)
{
	return build(e, v, first_guest, guests, nic_remove_cmds, s);
}

void xt_set_free(struct xt_set *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].line);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static unsigned int xt_set_rules(const struct xt_set *s)
{
	return s->rules[XT_IP4] + s->rules[XT_IP6] + s->rules[XT_ARP];
}

static void xt_set_describe(const struct xt_set *s, char *buf, size_t len)
{
	unsigned int n = s->nics ? s->nics : 1;

	snprintf(buf, len,
		 "%u rules in %u chains for %u NICs (%.0f rules per NIC: iptables %u, ip6tables %u, arptables %u, jumps on -i included)%s",
		 xt_set_rules(s), s->chains[XT_IP4] + s->chains[XT_IP6] +
		 s->chains[XT_ARP], s->nics, (double)xt_set_rules(s) / n,
		 s->rules[XT_IP4] / n, s->rules[XT_IP6] / n,
		 s->rules[XT_ARP] / n,
		 s->arp ? "" : "; no ARP part (arptables-legacy has no batch loader)");
}

/* Commands [from, to) of family f as a restore file. */
static int write_restore(const struct xt_set *s, enum xt_fam f,
			 unsigned int from, unsigned int to, char *path,
			 size_t pathlen)
{
	FILE *fp = bench_tmpfile("xt", path, pathlen);
	unsigned int i;

	if (!fp)
		return -errno;
	fputs(fam_head[f], fp);
	for (i = from; i < to; i++)
		if (s->v[i].fam == f)
			fprintf(fp, "%s\n", s->v[i].line);
	fputs("COMMIT\n", fp);
	return bench_tmpfile_close(fp, path);
}

int xt_set_files(struct xt_set *s)
{
	unsigned int f;
	int ret = 0;

	for (f = 0; f < XT__FAMS && !ret; f++)
		if (f != XT_ARP || s->arp)
			ret = write_restore(s, f, 0, s->n, s->path[f],
					    sizeof(s->path[f]));
	return ret;
}

void xt_set_unlink(struct xt_set *s)
{
	unsigned int f;

	for (f = 0; f < XT__FAMS; f++) {
		if (s->path[f][0])
			unlink(s->path[f]);
		s->path[f][0] = 0;
	}
}

/* ---- loading ---- */

static int restore_file(enum xt_variant v, enum xt_fam f, const char *path,
			bool noflush)
{
	const char *argv[5] = { paths[v][f][1] };
	unsigned int a = 1;

	if (f != XT_ARP)
		argv[a++] = "-w";
	if (noflush)
		argv[a++] = "--noflush";
	argv[a] = NULL;
	return xt_spawn(argv, path, -1);
}

/* One process: the tool, "-w -t raw" for IP, then the command's words. */
static int run_cmd(enum xt_variant v, const struct xt_cmd *c)
{
	const char *argv[XT_MAX_ARGS + 1];
	char line[256], *save = NULL, *w;
	unsigned int a = 0;

	snprintf(line, sizeof(line), "%s", c->line);
	argv[a++] = paths[v][c->fam][0];
	if (c->fam != XT_ARP) {
		argv[a++] = "-w";
		argv[a++] = "-t";
		argv[a++] = "raw";
	}
	for (w = strtok_r(line, " ", &save); w && a < XT_MAX_ARGS;
	     w = strtok_r(NULL, " ", &save))
		argv[a++] = w;
	argv[a] = NULL;
	return xt_spawn(argv, NULL, -1);
}

int xt_restore(enum xt_variant v, const struct xt_set *s, bool noflush,
	       double *ms)
{
	uint64_t t0 = now_ns();
	unsigned int f, i;
	int ret = 0;

	for (f = 0; f < XT__FAMS && !ret; f++) {
		if (f == XT_ARP && !s->arp)
			continue;
		/* arptables-nft-restore flushes even with --noflush. */
		if (f == XT_ARP && noflush) {
			for (i = 0; i < s->n && !ret; i++)
				if (s->v[i].fam == XT_ARP)
					ret = run_cmd(v, &s->v[i]);
			continue;
		}
		ret = restore_file(v, f, s->path[f], noflush);
	}
	*ms = ms_since(t0);
	return ret;
}

static int xt_run_cmds(enum xt_variant v, const struct xt_set *s, unsigned int from,
		unsigned int to, double *ms)
{
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret = 0;

	for (i = from; i < to && !ret; i++)
		ret = run_cmd(v, &s->v[i]);
	*ms = ms_since(t0);
	if (ret == -ECHILD) {
		char buf[BENCH_ERR_TEXT];

		snprintf(buf, sizeof(buf), "%s", bench_last_error());
		bench_set_last_error("%s (%s)", buf, s->v[i - 1].line);
	}
	return ret;
}

/* Commands [0, to) in one restore per family, untimed. */
int xt_preload(enum xt_variant v, const struct xt_set *s, unsigned int to)
{
	char path[64];
	unsigned int f;
	int ret = 0;

	for (f = 0; f < XT__FAMS && !ret; f++) {
		if (f == XT_ARP && !s->arp)
			continue;
		ret = write_restore(s, f, 0, to, path, sizeof(path));
		if (ret)
			break;
		ret = restore_file(v, f, path, false);
		unlink(path);
	}
	return ret;
}

/* ---- state ---- */

/* "-A ..." lines are rules; ":name - [0:0]" lines are user chains. */
static void count_lines(const char *buf, unsigned int *rules,
			unsigned int *chains)
{
	const char *p, *sp;

	*rules = *chains = 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		*rules += !strncmp(p, "-A ", 3);
		sp = *p == ':' ? strchr(p, ' ') : NULL;
		*chains += sp && sp[1] == '-';
	}
}

static int xt_list(enum xt_variant v, enum xt_fam f, unsigned int *rules,
		   unsigned int *chains)
{
	const char *argv[5] = { paths[v][f][2], NULL, NULL, NULL, NULL };
	char *buf;
	int ret;

	if (f != XT_ARP) {
		argv[1] = "-t";
		argv[2] = "raw";
	}
	ret = bench_capture(argv, 0, argv[0], &buf, NULL);
	if (!ret)
		count_lines(buf, rules, chains);
	if (!ret)
		free(buf);
	return ret;
}

static int xt_count(enum xt_variant v, bool arp, unsigned int *rules,
	     unsigned int *chains)
{
	unsigned int f, r, c;
	int ret = 0;

	*rules = *chains = 0;
	for (f = 0; f < XT__FAMS && !ret; f++) {
		if (f == XT_ARP && !arp)
			continue;
		ret = xt_list(v, f, &r, &c);
		*rules += r;
		*chains += c;
	}
	return ret;
}

/*
 * Back to empty tables, untimed.  Legacy tables live outside nf_tables:
 * the bench's nfnetlink flush does not see them, so a restore of an empty
 * table (which flushes it and deletes its chains) does.  The nft variant's
 * tables are nf_tables tables: the scenario's flush removes them.
 */
int xt_flush(enum xt_variant v)
{
	static const struct xt_set empty;	/* no ARP part */

	return v == XT_LEGACY ? xt_preload(v, &empty, 0) : 0;
}

/* ---- rows ---- */

/* Once per row, after its first timed run: what is loaded, counted. */
static void check_loaded(enum xt_variant v, const struct xt_set *s,
			 unsigned int want, struct bench_row *r)
{
	unsigned int rules = 0, chains = 0;
	size_t len = strlen(r->note);

	if (r->rules)
		return;
	if (xt_count(v, s->arp, &rules, &chains)) {
		snprintf(r->note + len, sizeof(r->note) - len,
			 "; could not count the rules: %.120s",
			 bench_last_error());
		return;
	}
	r->rules = rules;
	snprintf(r->note + len, sizeof(r->note) - len,
		 "; checked by *tables-%s-save: %u rules, %u chains loaded%s",
		 var_name[v], rules, chains,
		 rules == want ? "" : " (NOT the ruleset's count)");
}

static int row_fail(struct bench_row *r, const char *what, int ret)
{
	snprintf(r->error, sizeof(r->error), "%s: %.200s", what,
		 ret == -ECHILD ? bench_last_error() : strerror(-ret));
	return ret;
}

/* Every guest's commands and their restore files; what they hold. */
static int build_all(const struct filt_env *e, enum xt_variant v,
		     struct xt_set *s, struct bench_row *r, char *desc,
		     size_t len)
{
	int ret = xt_set_build(e, v, 0, e->o->guests, s) ?: xt_set_files(s);

	if (ret)
		return row_fail(r, "the xtables ruleset", ret);
	xt_set_describe(s, desc, len);
	return 0;
}

int xt_filters_prepare(const struct filt_env *e, enum xt_variant v,
		       struct xt_set *s, struct bench_row *restore,
		       struct bench_row *per_rule)
{
	char desc[400];
	int ret = build_all(e, v, s, restore, desc, sizeof(desc));

	if (ret) {
		snprintf(per_rule->error, sizeof(per_rule->error), "%s",
			 restore->error);
		return ret;
	}
	snprintf(restore->note, sizeof(restore->note),
		 "ip%stables-%s-restore of the whole ruleset, one process per family: %s",
		 s->arp ? "/ip6/arp" : "/ip6", var_name[v], desc);
	snprintf(per_rule->note, sizeof(per_rule->note),
		 "one %s process per command (-N or -A) of the same ruleset, %u commands: %s",
		 var_name[v], s->n, desc);
	return 0;
}

/*
 * One process per command: all of them when they are few, else 'sample'
 * from the middle (those before preloaded untimed by restore), scaled to
 * all: EXTRAPOLATED, as nft-per-stmt.
 */
static int per_rule(enum xt_variant v, const struct xt_set *s,
		    unsigned int sample, struct bench_row *r, double *ms)
{
	unsigned int from = s->n > sample ? (s->n - sample) / 2 : 0;
	unsigned int to = s->n > sample ? from + sample : s->n;
	double b;
	int ret;

	if (from) {
		ret = xt_preload(v, s, from);
		if (ret)
			return row_fail(r, "preloading by restore", ret);
	}
	ret = xt_run_cmds(v, s, from, to, &b);
	if (ret)
		return row_fail(r, "one process per rule", ret);
	*ms = b * s->n / (to - from);
	if (to - from < s->n && !r->extrapolated) {
		size_t len = strlen(r->note);

		r->extrapolated = true;
		r->sample_items = to - from;
		r->total_items = s->n;
		snprintf(r->note + len, sizeof(r->note) - len,
			 "; EXTRAPOLATED: commands %u..%u timed one process each (the %u before preloaded untimed by restore), scaled by %u/%u",
			 from, to - 1, from, s->n, to - from);
	}
	return 0;
}

int xt_filters_run(enum xt_variant v, bool by_rule, const struct xt_set *s,
		   unsigned int sample, struct bench_row *r, struct sample *smp)
{
	int ret;

	if (by_rule) {
		ret = per_rule(v, s, sample, r, &smp->ms);
	} else {
		ret = xt_restore(v, s, false, &smp->ms);
		if (ret)
			row_fail(r, "restore", ret);
	}
	/* A sampled run loaded only part: its count would say nothing. */
	if (!ret && !r->extrapolated)
		check_loaded(v, s, xt_set_rules(s), r);
	if (!ret) {
		ret = xt_flush(v);
		if (ret)
			row_fail(r, "flushing the legacy tables", ret);
	}
	return ret;
}

/*
 * restart, the xtables way: a daemon that keeps no digest restores every
 * guest's rules.  G guests' rules are loaded untimed, then each run times
 * a full restore over them (the tables are replaced, not appended to).
 */
int xt_restart_prepare(struct filt_env *e, enum xt_variant v,
		       struct xt_set *s, struct bench_row *r)
{
	char desc[400];
	double ms;
	int ret = build_all(e, v, s, r, desc, sizeof(desc));

	if (ret)
		return ret;
	snprintf(r->note, sizeof(r->note),
		 "every guest's rules restored over the same rules already loaded (ip%stables-%s-restore, one process per family): %s",
		 s->arp ? "/ip6/arp" : "/ip6", var_name[v], desc);
	ret = xt_flush(v);
	if (!ret && (ret = xt_restore(v, s, false, &ms)))
		row_fail(r, "loading the starting state", ret);
	return ret;
}

int xt_restart_run(enum xt_variant v, const struct xt_set *s,
		   struct bench_row *r, struct sample *smp)
{
	int ret = xt_restore(v, s, false, &smp->ms);

	if (ret)
		return row_fail(r, "restore", ret);
	if (!r->runs)
		check_loaded(v, s, xt_set_rules(s), r);
	return 0;
}

int xt_restart_release(const struct filt_env *e, enum xt_variant v,
		       struct xt_set *s)
{
	if (!e->o->keep_files)
		xt_set_unlink(s);
	xt_set_free(s);
	return xt_flush(v);
}
