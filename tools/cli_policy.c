// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl: the filter policy file (JSON) into a struct vnic_policy.
 *
 *   {"guests": [{"name": "vm1",
 *                "switches": ["mac-spoof", ...],              optional
 *                "nics": [{"ifname": "mvt0", "kind": "macvtap",
 *                          "mac": "02:00:00:00:00:01",
 *                          "ipv4": ["192.0.2.10"],             optional
 *                          "ipv6": ["2001:db8::10"],           optional
 *                          "switches": [...]}],                optional
 *                "rules": [{"proto": "tcp", "dport": 22,       optional,
 *                           "daddr": "198.51.100.0/24",        as are proto,
 *                           "action": "accept"}]}]}            dport, daddr
 *
 * Documentation/filters-cli.rst and vnicctl(8) describe it.
 *
 * The file is walked twice.  The first walk needs no context: it checks
 * keys, types and the syntax of every value and names the JSON path of the
 * first problem (exit 2 before any netlink traffic).  The second walk feeds
 * the library, whose own checks are then reported with the path of the
 * element it refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "cli.h"

#define PATH_MAX_LEN	256

struct walk {
	const char *file;		/* for messages */
	struct cli *cli;
	struct vnic_policy *p;		/* NULL: first walk, checks only */
	json_t *guest_seen;		/* name -> index (first walk) */
	json_t *nic_seen;		/* ifname -> "guests[i].nics[j]" */
};

__printf(3, 4)
static int perr(const struct walk *w, const char *path, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vnicctl: %s: %s%s", w->file, path, *path ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_USAGE;
}

/* A library call of the second walk failed: its message, with the path. */
static int lib_err(const struct walk *w, const char *path, int err)
{
	const char *msg = vnic_ctx_errmsg(w->cli->ctx);

	if (!msg || !*msg)
		msg = vnic_strerror(err);
	fprintf(stderr, "vnicctl: %s: %s%s%s\n", w->file, path, *path ? ": " : "",
		msg);
	/* Building a policy sends nothing: all but ENOMEM is bad input. */
	return err == -ENOMEM ? CLI_FAIL : CLI_USAGE;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:	return "an object";
	case JSON_ARRAY:	return "an array";
	case JSON_STRING:	return "a string";
	case JSON_INTEGER:	return "an integer";
	case JSON_REAL:		return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE:	return "a boolean";
	case JSON_NULL:		return "null";
	}
	return "something else";
}

/* A path too long for the buffer ends in "...". */
static void trunc_path(char *buf, int n)
{
	if (n < 0 || n >= PATH_MAX_LEN)
		memcpy(buf + PATH_MAX_LEN - 4, "...", 4);
}

static void join(char *buf, const char *path, const char *key)
{
	trunc_path(buf, snprintf(buf, PATH_MAX_LEN, "%s%s%s", path,
				 *path ? "." : "", key));
}

static void join_idx(char *buf, const char *path, size_t i)
{
	trunc_path(buf, snprintf(buf, PATH_MAX_LEN, "%s[%zu]", path, i));
}

static int want_type(const struct walk *w, const char *path, const json_t *v,
		     json_type type, const char *what)
{
	if (json_typeof(v) == type)
		return 0;
	return perr(w, path, "expected %s, got %s", what, type_name(v));
}

/* Every key of obj must be in keys[] (NULL-terminated). */
static int known_keys(const struct walk *w, const char *path, json_t *obj,
		      const char *const *keys, const char *list)
{
	char sub[PATH_MAX_LEN];
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(obj, key, v) {
		for (i = 0; keys[i]; i++)
			if (!strcmp(keys[i], key))
				break;
		if (!keys[i]) {
			join(sub, path, key);
			return perr(w, sub, "unknown key (known: %s)", list);
		}
	}
	return 0;
}

/*
 * obj[key] of JSON type 'type' into *out (NULL if absent and optional).
 */
static int member(const struct walk *w, const char *path, json_t *obj,
		  const char *key, bool required, json_type type,
		  const char *what, json_t **out)
{
	char sub[PATH_MAX_LEN];
	json_t *v = json_object_get(obj, key);

	join(sub, path, key);
	*out = v;
	if (!v) {
		if (required)
			return perr(w, sub, "missing (%s)", what);
		return 0;
	}
	return want_type(w, sub, v, type, what);
}

/* ------------------------------------------------------------ values */

/* xx:xx:xx:xx:xx:xx (or with '-'), unicast, not all zeroes: as the library. */
static bool is_mac(const char *s, const char **why)
{
	unsigned int i, first = 0, any = 0, d;

	*why = "is not a MAC address like 02:00:00:00:00:01";
	if (strlen(s) != 17)
		return false;
	for (i = 0; i < 17; i++) {
		if (i % 3 == 2) {
			if (s[i] != ':' && s[i] != '-')
				return false;
			continue;
		}
		if (!strchr("0123456789abcdefABCDEF", s[i]))
			return false;
		d = (unsigned int)(s[i] <= '9' ? s[i] - '0' : (s[i] | 0x20) - 'a' + 10);
		any |= d;
		if (i == 1)
			first = d;
	}
	*why = "is a multicast or broadcast MAC address (a NIC's is unicast)";
	if (first & 1)
		return false;
	*why = "is the all-zeroes MAC address";
	return any != 0;
}

/* 1..64 of [A-Za-z0-9_.-], as guest names everywhere in libvnic. */
static bool is_guest_name(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");

	return n >= 1 && n <= 64 && !s[n];
}

/* An exact interface name; NULL if fine, else why not. */
static const char *ifname_problem(const char *s)
{
	const char *p;

	if (!*s)
		return "is empty";
	if (strlen(s) > VNIC_IFNAME_MAX)
		return "is longer than 15 characters";
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return "is not an interface name";
	for (p = s; *p; p++) {
		if (*p == '/' || *p == ':' || *p == '%' || *p <= ' ' || *p == 0x7f)
			return "has a character interface names cannot have ('/', ':', '%', whitespace, control)";
	}
	return NULL;
}

/* "ADDR" or "ADDR/LEN" of family af (0: either). */
static bool is_cidr(const char *s, int af)
{
	char buf[INET6_ADDRSTRLEN + 8];
	unsigned char addr[sizeof(struct in6_addr)];
	const char *slash = strchr(s, '/');
	size_t len = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long plen = 0;
	int fam = 0, max;
	char *end;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if ((af == 0 || af == AF_INET) && inet_pton(AF_INET, buf, addr) == 1)
		fam = AF_INET;
	else if ((af == 0 || af == AF_INET6) && inet_pton(AF_INET6, buf, addr) == 1)
		fam = AF_INET6;
	if (!fam)
		return false;
	if (!slash)
		return true;
	max = fam == AF_INET ? 32 : 128;
	if (slash[1] < '0' || slash[1] > '9')
		return false;
	plen = strtoul(slash + 1, &end, 10);
	return !*end && plen <= (unsigned long)max && end - (slash + 1) <= 3;
}

/* Switch names, for messages: "mac-spoof, ip-spoof, ...". */
static void switch_names(char *buf, size_t len)
{
	const char *name;
	size_t used = 0;
	unsigned int bit;

	buf[0] = '\0';
	for (bit = 0; bit < 32 && used < len; bit++) {
		name = vnic_switch_name(1u << bit);
		if (name)
			used += snprintf(buf + used, len - used, "%s%s",
					 used ? ", " : "", name);
	}
}

/* An array of switch names into a mask (present: *set = 1). */
static int switches(const struct walk *w, const char *path, json_t *arr,
		    uint32_t *mask, int *set)
{
	char sub[PATH_MAX_LEN], names[256];
	uint32_t sw, all = 0;
	const char *s;
	size_t i;
	json_t *v;

	if (!arr)
		return 0;
	json_array_foreach(arr, i, v) {
		join_idx(sub, path, i);
		if (want_type(w, sub, v, JSON_STRING, "a switch name"))
			return CLI_USAGE;
		s = json_string_value(v);
		sw = vnic_switch_from_name(s);
		if (!sw) {
			switch_names(names, sizeof(names));
			return perr(w, sub, "unknown switch '%s' (known: %s)",
				    s, names);
		}
		if (all & sw)
			return perr(w, sub, "switch '%s' repeats one listed before", s);
		all |= sw;
	}
	*mask = all;
	*set = 1;
	return 0;
}

/* The index of an element before i with the same address as arr[i], or -1
 * (element i is a valid address of af; those before it too). */
static int same_addr(json_t *arr, size_t i, int af)
{
	unsigned char a[sizeof(struct in6_addr)], b[sizeof(struct in6_addr)];
	size_t j, len = af == AF_INET ? 4 : 16;

	if (inet_pton(af, json_string_value(json_array_get(arr, i)), a) != 1)
		return -1;
	for (j = 0; j < i; j++)
		if (inet_pton(af, json_string_value(json_array_get(arr, j)), b) == 1 &&
		    !memcmp(a, b, len))
			return (int)j;
	return -1;
}

/* An array of addresses into a malloc'd vector of the strings. */
static int addresses(const struct walk *w, const char *path, json_t *arr,
		     int af, const char ***out, unsigned int *n)
{
	char sub[PATH_MAX_LEN];
	const char **v = NULL;
	const char *s;
	json_t *e;
	size_t i;
	int dup;

	*out = NULL;
	*n = 0;
	if (!arr || !json_array_size(arr))
		return 0;
	if (json_array_size(arr) > 64)	/* the library's limit */
		return perr(w, path, "%zu addresses: at most 64 per family and NIC",
			    json_array_size(arr));
	if (w->p) {
		v = calloc(json_array_size(arr), sizeof(*v));
		if (!v)
			return cli_syserr("policy", -ENOMEM);
	}
	json_array_foreach(arr, i, e) {
		join_idx(sub, path, i);
		if (want_type(w, sub, e, JSON_STRING, "an address string")) {
			free(v);
			return CLI_USAGE;
		}
		s = json_string_value(e);
		if (strchr(s, '/') || !is_cidr(s, af)) {
			free(v);
			return perr(w, sub, "'%s' is not an %s address", s,
				    af == AF_INET ? "IPv4" : "IPv6");
		}
		dup = same_addr(arr, i, af);
		if (dup >= 0) {
			free(v);
			return perr(w, sub, "'%s' is the address of %s[%d] again", s,
				    path, dup);
		}
		if (v)
			v[i] = s;
	}
	*out = v;
	*n = json_array_size(arr);
	return 0;
}

/* ------------------------------------------------------------- NICs */

static const char *const nic_keys[] = {
	"ifname", "kind", "mac", "ipv4", "ipv6", "switches", NULL
};

static int nic_kind(const struct walk *w, const char *path, const char *s,
		    enum vnic_kind *kind)
{
	static const struct { const char *name; enum vnic_kind kind; } kinds[] = {
		{ "macvtap", VNIC_KIND_MACVTAP },
		{ "macvlan", VNIC_KIND_MACVLAN },
		{ "veth", VNIC_KIND_VETH },
		{ "tap", VNIC_KIND_TAP },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (!strcmp(s, kinds[i].name)) {
			*kind = kinds[i].kind;
			return 0;
		}
	}
	return perr(w, path, "unknown kind '%s' (macvtap, macvlan, veth, tap)", s);
}

/* First walk: the same ifname twice in the file. */
static int nic_unique(struct walk *w, const char *path, const char *ifname)
{
	char sub[PATH_MAX_LEN];
	json_t *prev;

	join(sub, path, "ifname");
	prev = json_object_get(w->nic_seen, ifname);
	if (prev)
		return perr(w, sub, "NIC '%s' is already at %s", ifname,
			    json_string_value(prev));
	if (json_object_set_new(w->nic_seen, ifname, json_string(path)))
		return cli_syserr("policy", -ENOMEM);
	return 0;
}

static int nic(struct walk *w, const char *path, const char *guest, json_t *o)
{
	VNIC_OPTS(vnic_nic_policy, np);
	char sub[PATH_MAX_LEN];
	json_t *ifname, *kind, *mac, *v4, *v6, *sw;
	const char **a4 = NULL, **a6 = NULL;
	const char *why;
	int ret;

	if (want_type(w, path, o, JSON_OBJECT, "a NIC object") ||
	    known_keys(w, path, o, nic_keys,
		       "ifname, kind, mac, ipv4, ipv6, switches") ||
	    member(w, path, o, "ifname", true, JSON_STRING, "an interface name", &ifname) ||
	    member(w, path, o, "kind", true, JSON_STRING, "macvtap, macvlan, veth or tap", &kind) ||
	    member(w, path, o, "mac", true, JSON_STRING, "the guest's MAC address on this NIC", &mac) ||
	    member(w, path, o, "ipv4", false, JSON_ARRAY, "an array of IPv4 addresses", &v4) ||
	    member(w, path, o, "ipv6", false, JSON_ARRAY, "an array of IPv6 addresses", &v6) ||
	    member(w, path, o, "switches", false, JSON_ARRAY, "an array of switch names", &sw))
		return CLI_USAGE;

	np.ifname = json_string_value(ifname);
	join(sub, path, "ifname");
	why = ifname_problem(np.ifname);
	if (why)
		return perr(w, sub, "'%s' %s", np.ifname, why);
	join(sub, path, "kind");
	if (nic_kind(w, sub, json_string_value(kind), &np.kind))
		return CLI_USAGE;
	np.mac = json_string_value(mac);
	join(sub, path, "mac");
	if (!is_mac(np.mac, &why))
		return perr(w, sub, "'%s' %s", np.mac, why);
	join(sub, path, "switches");
	if (switches(w, sub, sw, &np.switches, &np.switches_set))
		return CLI_USAGE;
	join(sub, path, "ipv4");
	ret = addresses(w, sub, v4, AF_INET, &a4, &np.n_ipv4);
	if (ret)
		return ret;
	join(sub, path, "ipv6");
	ret = addresses(w, sub, v6, AF_INET6, &a6, &np.n_ipv6);
	if (ret) {
		free(a4);
		return ret;
	}
	np.ipv4 = a4;
	np.ipv6 = a6;

	if (!w->p) {
		ret = nic_unique(w, path, np.ifname);
	} else {
		ret = vnic_policy_add_nic(w->p, guest, &np);
		if (ret) {
			if (ret == -EEXIST)
				join(sub, path, "ifname");
			else if (ret == -EOPNOTSUPP)
				join(sub, path, "kind");
			else
				trunc_path(sub, snprintf(sub, sizeof(sub), "%s", path));
			ret = lib_err(w, sub, ret);
		}
	}
	free(a4);
	free(a6);
	return ret;
}

/* ------------------------------------------------------------ rules */

static const char *const rule_keys[] = {
	"proto", "dport", "daddr", "action", NULL
};

static bool parse_port(const char *s, const char **end, uint16_t *port)
{
	unsigned long v = 0;
	const char *p = s;

	while (*p >= '0' && *p <= '9' && p - s < 6)
		v = v * 10 + (unsigned long)(*p++ - '0');
	if (p == s || v < 1 || v > 65535)
		return false;
	*port = v;
	*end = p;
	return true;
}

/* 22, "22" or "1000-2000". */
static int dport(const struct walk *w, const char *path, json_t *v,
		 struct vnic_rule *r)
{
	const char *s, *end;
	json_int_t i;

	if (json_is_integer(v)) {
		i = json_integer_value(v);
		if (i < 1 || i > 65535)
			return perr(w, path, "%lld is not a port in 1..65535",
				    (long long)i);
		r->dport_min = r->dport_max = i;
		return 0;
	}
	if (!json_is_string(v))
		return perr(w, path, "expected a port number or a \"MIN-MAX\" string, got %s",
			    type_name(v));
	s = json_string_value(v);
	if (!parse_port(s, &end, &r->dport_min))
		goto bad;
	if (!*end) {
		r->dport_max = r->dport_min;
		return 0;
	}
	if (*end != '-' || !parse_port(end + 1, &end, &r->dport_max) || *end)
		goto bad;
	if (r->dport_max < r->dport_min)
		return perr(w, path, "'%s': the range ends before it starts", s);
	return 0;
bad:
	return perr(w, path, "'%s' is not a port or a range like \"1000-2000\" (ports 1..65535)",
		    s);
}

static int rule(struct walk *w, const char *path, const char *guest, json_t *o)
{
	VNIC_OPTS(vnic_rule, r);
	char sub[PATH_MAX_LEN];
	json_t *proto, *port, *daddr, *action;
	const char *s;
	int ret;

	if (want_type(w, path, o, JSON_OBJECT, "a rule object") ||
	    known_keys(w, path, o, rule_keys, "proto, dport, daddr, action") ||
	    member(w, path, o, "proto", false, JSON_STRING, "tcp, udp, icmp, icmpv6 or any", &proto) ||
	    member(w, path, o, "daddr", false, JSON_STRING, "an address or CIDR string", &daddr) ||
	    member(w, path, o, "action", true, JSON_STRING, "accept or drop", &action))
		return CLI_USAGE;
	port = json_object_get(o, "dport");

	join(sub, path, "proto");
	s = proto ? json_string_value(proto) : "any";
	if (!strcmp(s, "tcp"))
		r.l4proto = IPPROTO_TCP;
	else if (!strcmp(s, "udp"))
		r.l4proto = IPPROTO_UDP;
	else if (!strcmp(s, "icmp"))
		r.l4proto = IPPROTO_ICMP;
	else if (!strcmp(s, "icmpv6"))
		r.l4proto = IPPROTO_ICMPV6;
	else if (strcmp(s, "any"))
		return perr(w, sub, "unknown protocol '%s' (tcp, udp, icmp, icmpv6, any)", s);

	if (port) {
		join(sub, path, "dport");
		if (dport(w, sub, port, &r))
			return CLI_USAGE;
		if (r.l4proto != IPPROTO_TCP && r.l4proto != IPPROTO_UDP)
			return perr(w, sub, "a port needs \"proto\": \"tcp\" or \"udp\"");
	}
	if (daddr) {
		r.daddr = json_string_value(daddr);
		join(sub, path, "daddr");
		if (!is_cidr(r.daddr, 0))
			return perr(w, sub, "'%s' is not an address or CIDR like 198.51.100.0/24",
				    r.daddr);
	}
	join(sub, path, "action");
	s = json_string_value(action);
	if (!strcmp(s, "accept"))
		r.action = VNIC_RULE_ACCEPT;
	else if (!strcmp(s, "drop"))
		r.action = VNIC_RULE_DROP;
	else
		return perr(w, sub, "unknown action '%s' (accept, drop)", s);

	if (!w->p)
		return 0;
	ret = vnic_policy_add_rule(w->p, guest, &r);
	return ret ? lib_err(w, path, ret) : 0;
}

/* ----------------------------------------------------------- guests */

static const char *const guest_keys[] = {
	"name", "switches", "nics", "rules", NULL
};

/* First walk: the same guest twice in the file. */
static int guest_unique(struct walk *w, const char *path, const char *name,
			size_t idx)
{
	json_t *prev = json_object_get(w->guest_seen, name);

	if (prev)
		return perr(w, path, "guest '%s' is already guests[%lld]", name,
			    (long long)json_integer_value(prev));
	if (json_object_set_new(w->guest_seen, name, json_integer(idx)))
		return cli_syserr("policy", -ENOMEM);
	return 0;
}

static int guest(struct walk *w, const char *path, size_t idx, json_t *o)
{
	VNIC_OPTS(vnic_guest_policy, gp);
	char sub[PATH_MAX_LEN], elem[PATH_MAX_LEN];
	json_t *name, *sw, *nics, *rules, *v;
	const char *gname;
	size_t i;
	int ret;

	if (want_type(w, path, o, JSON_OBJECT, "a guest object") ||
	    known_keys(w, path, o, guest_keys, "name, switches, nics, rules") ||
	    member(w, path, o, "name", true, JSON_STRING, "the guest's name", &name) ||
	    member(w, path, o, "switches", false, JSON_ARRAY, "an array of switch names", &sw) ||
	    member(w, path, o, "nics", true, JSON_ARRAY, "an array of NIC objects", &nics) ||
	    member(w, path, o, "rules", false, JSON_ARRAY, "an array of rule objects", &rules))
		return CLI_USAGE;
	gname = json_string_value(name);
	join(sub, path, "name");
	if (!is_guest_name(gname))
		return perr(w, sub, "'%s' is not 1 to 64 of [A-Za-z0-9_.-]", gname);
	join(sub, path, "switches");
	if (switches(w, sub, sw, &gp.switches, &gp.switches_set))
		return CLI_USAGE;
	join(sub, path, "nics");
	if (!json_array_size(nics))
		return perr(w, sub, "a guest needs at least one NIC");

	if (!w->p) {
		join(sub, path, "name");
		ret = guest_unique(w, sub, gname, idx);
	} else {
		ret = vnic_policy_add_guest(w->p, gname, &gp);
		if (ret) {
			join(sub, path, "name");
			ret = lib_err(w, sub, ret);
		}
	}
	if (ret)
		return ret;

	join(sub, path, "nics");
	json_array_foreach(nics, i, v) {
		join_idx(elem, sub, i);
		ret = nic(w, elem, gname, v);
		if (ret)
			return ret;
	}
	join(sub, path, "rules");
	json_array_foreach(rules, i, v) {
		join_idx(elem, sub, i);
		ret = rule(w, elem, gname, v);
		if (ret)
			return ret;
	}
	return 0;
}

static int walk(struct walk *w, json_t *root)
{
	static const char *const top_keys[] = { "guests", NULL };
	char elem[PATH_MAX_LEN];
	json_t *guests, *v;
	size_t i;
	int ret;

	if (want_type(w, "top level", root, JSON_OBJECT,
		      "an object {\"guests\": [...]}") ||
	    known_keys(w, "", root, top_keys, "guests") ||
	    member(w, "", root, "guests", true, JSON_ARRAY,
		   "an array of guest objects", &guests))
		return CLI_USAGE;
	json_array_foreach(guests, i, v) {
		join_idx(elem, "guests", i);
		ret = guest(w, elem, i, v);
		if (ret)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------ entry */

int cli_policy_load(const char *file, json_t **root)
{
	json_error_t jerr;
	const size_t flags = JSON_REJECT_DUPLICATES;
	struct walk w = { .file = strcmp(file, "-") ? file : "<stdin>" };
	int ret;

	if (!strcmp(file, "-"))
		*root = json_loadf(stdin, flags, &jerr);
	else
		*root = json_load_file(file, flags, &jerr);
	if (!*root) {
		if (jerr.line < 0)
			fprintf(stderr, "vnicctl: %s\n", jerr.text);
		else
			fprintf(stderr, "vnicctl: %s:%d:%d: %s\n", w.file,
				jerr.line, jerr.column, jerr.text);
		return CLI_USAGE;
	}
	w.guest_seen = json_object();
	w.nic_seen = json_object();
	if (!w.guest_seen || !w.nic_seen)
		ret = cli_syserr("policy", -ENOMEM);
	else
		ret = walk(&w, *root);
	json_decref(w.guest_seen);
	json_decref(w.nic_seen);
	if (ret) {
		json_decref(*root);
		*root = NULL;
	}
	return ret;
}

int cli_policy_build(struct cli *cli, const char *file, json_t *root,
		     struct vnic_policy **out)
{
	struct walk w = {
		.file = strcmp(file, "-") ? file : "<stdin>",
		.cli = cli,
	};
	int err, ret;

	err = vnic_policy_new(cli->ctx, &w.p);
	if (err)
		return cli_fail(cli, err, "policy");
	ret = walk(&w, root);
	if (!ret) {
		err = vnic_policy_check(w.p);
		if (err)
			ret = lib_err(&w, "", err);
	}
	if (ret) {
		vnic_policy_free(w.p);
		return ret;
	}
	*out = w.p;
	return 0;
}
