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
 * One walk checks the JSON's shape (keys, types) and hands every value to
 * the library's policy model, made without a context (vnic_policy_new(NULL)):
 * what a MAC, an address, a name or a port range may be is decided there
 * alone.  A refusal is printed as the library's message after the file and
 * the JSON path of the element it refused; all happens before any netlink
 * traffic (exit 2).  The policy is the one later applied: the nft handle
 * keeps its own context for the errors of a commit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "cli.h"

#define PATH_MAX_LEN	256

struct walk {
	const char *file;		/* for messages */
	struct vnic_policy *p;		/* made without a context */
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

/* A library call failed: its message, after the file and the path. */
static int lib_err(const struct walk *w, const char *path, int err)
{
	const char *msg = vnic_policy_errmsg(w->p);

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

/* Known names for messages, "a, b, c": name(i) for i in [from, to). */
static void name_list(char *buf, size_t len, const char *(*name)(unsigned int),
		      unsigned int from, unsigned int to)
{
	size_t used = 0;
	const char *s;

	buf[0] = '\0';
	for (; from < to && used < len; from++) {
		s = name(from);
		if (s)
			used += snprintf(buf + used, len - used, "%s%s",
					 used ? ", " : "", s);
	}
}

static const char *switch_bit_name(unsigned int bit)
{
	return vnic_switch_name(1u << bit);
}

static const char *kind_name(unsigned int kind)
{
	return vnic_kind_name((enum vnic_kind)kind);
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
			name_list(names, sizeof(names), switch_bit_name, 0, 32);
			return perr(w, sub, "unknown switch '%s' (known: %s, clean)",
				    s, names);
		}
		/* A mask cannot say it: the file's own mistake. */
		if (all & sw)
			return perr(w, sub, "switch '%s' repeats one listed before", s);
		all |= sw;
	}
	*mask = all;
	*set = 1;
	return 0;
}

/* An array of address strings into a malloc'd vector of them, unchecked:
 * the library judges them (and names the element it refuses). */
static int addresses(const struct walk *w, const char *path, json_t *arr,
		     const char ***out, unsigned int *n)
{
	char sub[PATH_MAX_LEN];
	const char **v;
	json_t *e;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!arr || !json_array_size(arr))
		return 0;
	v = calloc(json_array_size(arr), sizeof(*v));
	if (!v)
		return cli_syserr("policy", -ENOMEM);
	json_array_foreach(arr, i, e) {
		join_idx(sub, path, i);
		if (want_type(w, sub, e, JSON_STRING, "an address string")) {
			free(v);
			return CLI_USAGE;
		}
		v[i] = json_string_value(e);
	}
	*out = v;
	*n = json_array_size(arr) > UINT32_MAX ? UINT32_MAX :
		(unsigned int)json_array_size(arr);
	return 0;
}

/* ------------------------------------------------------------- NICs */

static const char *const nic_keys[] = {
	"ifname", "kind", "mac", "ipv4", "ipv6", "switches", NULL
};

/* The library's name lookup; which kinds can be filtered it says itself. */
static int nic_kind(const struct walk *w, const char *path, const char *s,
		    enum vnic_kind *kind)
{
	char names[128];

	*kind = vnic_kind_from_name(s);
	if (*kind)
		return 0;
	name_list(names, sizeof(names), kind_name, 1, VNIC_KIND__MAX);
	return perr(w, path, "unknown kind '%s' (kinds: %s)", s, names);
}

static int nic(struct walk *w, const char *path, const char *guest, json_t *o)
{
	VNIC_OPTS(vnic_nic_policy, np);
	char sub[PATH_MAX_LEN];
	json_t *ifname, *kind, *mac, *v4, *v6, *sw;
	const char **a4 = NULL, **a6 = NULL;
	int ret;

	if (want_type(w, path, o, JSON_OBJECT, "a NIC object") ||
	    known_keys(w, path, o, nic_keys,
		       "ifname, kind, mac, ipv4, ipv6, switches") ||
	    member(w, path, o, "ifname", true, JSON_STRING, "an interface name", &ifname) ||
	    member(w, path, o, "kind", true, JSON_STRING, "a NIC kind such as macvtap", &kind) ||
	    member(w, path, o, "mac", true, JSON_STRING, "the guest's MAC address on this NIC", &mac) ||
	    member(w, path, o, "ipv4", false, JSON_ARRAY, "an array of IPv4 addresses", &v4) ||
	    member(w, path, o, "ipv6", false, JSON_ARRAY, "an array of IPv6 addresses", &v6) ||
	    member(w, path, o, "switches", false, JSON_ARRAY, "an array of switch names", &sw))
		return CLI_USAGE;

	np.ifname = json_string_value(ifname);
	np.mac = json_string_value(mac);
	join(sub, path, "kind");
	if (nic_kind(w, sub, json_string_value(kind), &np.kind))
		return CLI_USAGE;
	join(sub, path, "switches");
	if (switches(w, sub, sw, &np.switches, &np.switches_set))
		return CLI_USAGE;
	join(sub, path, "ipv4");
	ret = addresses(w, sub, v4, &a4, &np.n_ipv4);
	join(sub, path, "ipv6");
	if (!ret)
		ret = addresses(w, sub, v6, &a6, &np.n_ipv6);
	if (!ret) {
		np.ipv4 = a4;
		np.ipv6 = a6;
		ret = vnic_policy_add_nic(w->p, guest, &np);
		/* The message names the field (ifname, mac, ipv6[1]...). */
		if (ret)
			ret = lib_err(w, path, ret);
	}
	free(a4);
	free(a6);
	return ret;
}

/* ------------------------------------------------------------ rules */

static const char *const rule_keys[] = {
	"proto", "dport", "daddr", "action", NULL
};

/* A decimal port 1..65535 (0 would read as "any port" to the library). */
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

/* 22, "22" or "1000-2000" into numbers; the library judges the range. */
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
	return 0;
bad:
	return perr(w, path, "'%s' is not a port or a range like \"1000-2000\" (ports 1..65535)",
		    s);
}

/* The file's names of the protocols vnic_rule takes. */
static const struct { const char *name; uint8_t proto; } protos[] = {
	{ "any", 0 }, { "tcp", IPPROTO_TCP }, { "udp", IPPROTO_UDP },
	{ "icmp", IPPROTO_ICMP }, { "icmpv6", IPPROTO_ICMPV6 },
};

static int rule_proto(const struct walk *w, const char *path, const char *s,
		      uint8_t *proto)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(protos); i++) {
		if (!strcmp(s, protos[i].name)) {
			*proto = protos[i].proto;
			return 0;
		}
	}
	return perr(w, path, "unknown protocol '%s' (tcp, udp, icmp, icmpv6, any)", s);
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
	if (rule_proto(w, sub, proto ? json_string_value(proto) : "any", &r.l4proto))
		return CLI_USAGE;
	join(sub, path, "dport");
	if (port && dport(w, sub, port, &r))
		return CLI_USAGE;
	r.daddr = daddr ? json_string_value(daddr) : NULL;
	join(sub, path, "action");
	s = json_string_value(action);
	if (!strcmp(s, "accept"))
		r.action = VNIC_RULE_ACCEPT;
	else if (!strcmp(s, "drop"))
		r.action = VNIC_RULE_DROP;
	else
		return perr(w, sub, "unknown action '%s' (accept, drop)", s);

	ret = vnic_policy_add_rule(w->p, guest, &r);
	return ret ? lib_err(w, path, ret) : 0;
}

/* ----------------------------------------------------------- guests */

static const char *const guest_keys[] = {
	"name", "switches", "nics", "rules", NULL
};

static int guest(struct walk *w, const char *path, json_t *o)
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
	join(sub, path, "switches");
	if (switches(w, sub, sw, &gp.switches, &gp.switches_set))
		return CLI_USAGE;
	ret = vnic_policy_add_guest(w->p, gname, &gp);
	if (ret) {
		join(sub, path, "name");
		return lib_err(w, sub, ret);
	}

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
		ret = guest(w, elem, v);
		if (ret)
			return ret;
	}
	/* Whole-policy checks (a guest without NIC): the guest is named. */
	ret = vnic_policy_check(w->p);
	return ret ? lib_err(w, "", ret) : 0;
}

/* ------------------------------------------------------------ entry */

/*
 * FILE ("-": stdin) parsed; NULL with *err set when it could not be read
 * (a directory, EIO): jansson takes a read error for the end of the input
 * and would report "'[' or '{' expected near end of file".
 */
static json_t *load_json(const char *file, size_t flags, json_error_t *jerr,
			 int *err)
{
	FILE *fp = strcmp(file, "-") ? fopen(file, "re") : stdin;
	json_t *root;

	*err = 0;
	if (!fp) {
		*err = errno;
		return NULL;
	}
	clearerr(fp);
	errno = 0;
	root = json_loadf(fp, flags, jerr);
	if (!root && ferror(fp))
		*err = errno ? errno : EIO;
	if (fp != stdin)
		fclose(fp);
	return root;
}

int cli_policy_load(const char *file, struct vnic_policy **out)
{
	json_error_t jerr;
	const size_t flags = JSON_REJECT_DUPLICATES;
	struct walk w = { .file = strcmp(file, "-") ? file : "<stdin>" };
	json_t *root;
	int err, ret;

	root = load_json(file, flags, &jerr, &err);
	if (!root) {
		if (err)
			fprintf(stderr, "vnicctl: %s: %s\n", w.file, strerror(err));
		else if (jerr.line < 0)
			fprintf(stderr, "vnicctl: %s\n", jerr.text);
		else
			fprintf(stderr, "vnicctl: %s:%d:%d: %s\n", w.file,
				jerr.line, jerr.column, jerr.text);
		return CLI_USAGE;
	}
	err = vnic_policy_new(NULL, &w.p);
	ret = err ? cli_syserr("policy", err) : walk(&w, root);
	/* The policy keeps its own copies of every string. */
	json_decref(root);
	if (ret) {
		vnic_policy_free(w.p);
		return ret;
	}
	*out = w.p;
	return 0;
}
