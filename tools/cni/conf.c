// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The network configuration: parsed once, checked completely before any
 * verb changes anything, so that a bad configuration leaves nothing behind.
 * Keys this plugin does not know are left alone (runtimes add their own:
 * runtimeConfig, capabilities, args); known keys of the wrong type are
 * refused.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cni/cni.h"

const char *const cni_versions[] = {
	"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
};
const unsigned int cni_nversions = ARRAY_SIZE(cni_versions);

#define OWNER_MAX	32	/* libvnic's owner tag */
#define PREFIX_MAX	10	/* leaves room for 5 digits */
#define TABLE_MAX	32	/* libvnic's nft table names */

int conf_version_ok(const char *v)
{
	unsigned int i;

	for (i = 0; i < cni_nversions; i++)
		if (!strcmp(v, cni_versions[i]))
			return 1;
	return 0;
}

/* <0, 0, >0 as version a is below, at, above b ("1.0.0"). */
int conf_version_cmp(const char *a, const char *b)
{
	unsigned int x[3] = { 0 }, y[3] = { 0 }, i;

	sscanf(a, "%u.%u.%u", &x[0], &x[1], &x[2]);
	sscanf(b, "%u.%u.%u", &y[0], &y[1], &y[2]);
	for (i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

static bool tag_chars(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("_.-", s[i])))
			return false;
	return i && i <= max;
}

/* A string member: absent gives def; present must be a string. */
static int str_key(struct cni_run *r, const char *key, const char *def,
		   const char **out)
{
	json_t *v = json_object_get(r->conf.root, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"%s\" must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int parse_mode(struct cni_run *r)
{
	struct cni_conf *c = &r->conf;
	const char *mode;

	if (str_key(r, "mode", "veth", &mode) ||
	    str_key(r, "master", NULL, &c->master) ||
	    str_key(r, "macvlanMode", "bridge", &c->macvlan_mode) ||
	    str_key(r, "hostPrefix", "vc", &c->host_prefix))
		return -1;
	if (!strcmp(mode, "veth"))
		c->mode = CNI_MODE_VETH;
	else if (!strcmp(mode, "macvlan"))
		c->mode = CNI_MODE_MACVLAN;
	else
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"mode\": \"%s\" is neither \"veth\" nor "
				"\"macvlan\"", mode);
	if (c->mode == CNI_MODE_MACVLAN && !c->master)
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"mode\": \"macvlan\" needs \"master\", the "
				"lower device");
	if (c->master && !cni_valid_ifname(c->master))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"master\": \"%s\" is no interface name", c->master);
	if (strcmp(c->macvlan_mode, "bridge") && strcmp(c->macvlan_mode, "private") &&
	    strcmp(c->macvlan_mode, "vepa") && strcmp(c->macvlan_mode, "passthru"))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"macvlanMode\": \"%s\": bridge, private, vepa "
				"or passthru", c->macvlan_mode);
	if (!tag_chars(c->host_prefix, PREFIX_MAX) || strchr(c->host_prefix, '.'))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"hostPrefix\": 1..%d of [A-Za-z0-9_-]", PREFIX_MAX);
	return 0;
}

static int parse_filter(struct cni_run *r)
{
	struct cni_conf *c = &r->conf;
	json_t *f = json_object_get(c->root, "filter");
	const char *backend;

	if (f && !json_is_boolean(f))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"filter\" must be true or false");
	c->filter = f ? json_is_true(f) : c->mode == CNI_MODE_VETH;
	if (c->filter && c->mode == CNI_MODE_MACVLAN)
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"filter\": a macvlan in the container's "
				"namespace cannot be filtered from the host "
				"(Documentation/cni.rst); use \"mode\": \"veth\"");
	f = json_object_get(c->root, "hookPrefix");
	if (f && !json_is_boolean(f))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"hookPrefix\" must be true or false");
	c->hook_prefix = json_is_true(f);
	if (str_key(r, "filterBackend", "nft", &backend) ||
	    str_key(r, "table", "vnic_cni", &c->table))
		return -1;
	/* libvnic's rule for a table name, checked here so that ADD refuses
	 * it before its IPAM call and its NIC (code 7, not 104). */
	if (!tag_chars(c->table, TABLE_MAX))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"table\": 1..%d of [A-Za-z0-9_.-]", TABLE_MAX);
	if (!strcmp(backend, "nft")) {
		c->backend = VNIC_BACKEND_NFT;
	} else if (!strcmp(backend, "bpf")) {
		/* One bpf state per namespace, shared by every network: the
		 * guests' names (container id and interface) keep them apart. */
		c->backend = VNIC_BACKEND_BPF;
		if (json_object_get(c->root, "table") || c->hook_prefix)
			return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
					"\"%s\" is an nft option; \"filterBackend\": "
					"\"bpf\" takes neither \"table\" nor \"hookPrefix\"",
					json_object_get(c->root, "table") ? "table" : "hookPrefix");
	} else {
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"filterBackend\": \"%s\" is unknown; use \"nft\" or \"bpf\"",
				backend);
	}
	return 0;
}

static int parse_ipam(struct cni_run *r)
{
	struct cni_conf *c = &r->conf;
	json_t *t;

	c->ipam = json_object_get(c->root, "ipam");
	if (c->ipam && !json_is_object(c->ipam))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"ipam\" must be an object");
	if (c->ipam && !json_object_size(c->ipam))
		c->ipam = NULL;		/* "ipam": {} is L2 only */
	if (!c->ipam)
		return 0;
	t = json_object_get(c->ipam, "type");
	if (!json_is_string(t) || !json_string_length(t) ||
	    strchr(json_string_value(t), '/') || json_string_value(t)[0] == '.')
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"ipam\": \"type\" must name a plugin (a file "
				"name on CNI_PATH)");
	c->ipam_type = json_string_value(t);
	return 0;
}

static int parse_numbers(struct cni_run *r)
{
	json_t *v = json_object_get(r->conf.root, "mtu");

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 68 ||
	    json_integer_value(v) > 65535)
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"mtu\" must be an integer in 68..65535");
	r->conf.mtu = (uint32_t)json_integer_value(v);
	return 0;
}

/*
 * The valid list.  CNI 1.1.0 as released named it "cni.dev/attachments"
 * (libcni sends both names, containernetworking/cni#1101): a runtime written
 * to that text sends only it, and reading it as no list would remove every
 * attachment.  null (a Go runtime's nil slice) is the empty list, as Go
 * plugins read it.  The list is put back under the spec's name, which the
 * IPAM plugin's GC reads.
 */
static int parse_gc(struct cni_run *r)
{
	const char *key = "cni.dev/valid-attachments";
	json_t *v = json_object_get(r->conf.root, key);
	json_t *a;
	size_t i;

	if (!v) {
		key = "cni.dev/attachments";
		v = json_object_get(r->conf.root, key);
	}
	if (!v)
		return 0;
	if (json_is_null(v))
		v = json_array();
	else if (json_is_array(v))
		json_incref(v);
	else
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"%s\" must be an array", key);
	if (json_object_set_new(r->conf.root, "cni.dev/valid-attachments", v))
		return cni_fail(r, CNI_ERR_IO, "out of memory", "GC");
	json_array_foreach(v, i, a) {
		json_t *id = json_object_get(a, "containerID");
		json_t *ifn = json_object_get(a, "ifname");

		if (!json_is_string(id) || !json_is_string(ifn))
			return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
					"\"%s\"[%zu]: needs \"containerID\" "
					"and \"ifname\" strings", key, i);
	}
	r->conf.valid = v;
	return 0;
}

int conf_parse(struct cni_run *r, const char *text)
{
	struct cni_conf *c = &r->conf;
	json_error_t jerr;
	json_t *v;

	c->root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!c->root)
		return cni_fail(r, CNI_ERR_DECODE, "failed to decode the configuration",
				"line %d column %d: %s", jerr.line, jerr.column,
				jerr.text);
	if (!json_is_object(c->root))
		return cni_fail(r, CNI_ERR_DECODE, "failed to decode the configuration",
				"the configuration is not a JSON object");
	v = json_object_get(c->root, "cniVersion");
	if (!json_is_string(v))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"cniVersion\" is required");
	if (!conf_version_ok(json_string_value(v)))
		return cni_fail(r, CNI_ERR_VERSION, "incompatible CNI versions",
				"config is \"%s\", plugin supports 0.3.0 to 1.1.0",
				json_string_value(v));
	c->version = json_string_value(v);
	if (str_key(r, "name", NULL, &c->name))
		return -1;
	if (!c->name || !tag_chars(c->name, OWNER_MAX) ||
	    !((c->name[0] >= 'a' && c->name[0] <= 'z') ||
	      (c->name[0] >= 'A' && c->name[0] <= 'Z') ||
	      (c->name[0] >= '0' && c->name[0] <= '9')))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"name\": 1..%d of [A-Za-z0-9_.-] starting "
				"alphanumeric (the libvnic owner tag)", OWNER_MAX);
	v = json_object_get(c->root, "prevResult");
	if (v && !json_is_object(v))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"prevResult\" must be an object");
	c->prev = v;
	if (str_key(r, "dataDir", "/var/lib/cni/vnic-cni", &c->data_dir))
		return -1;
	if (c->data_dir[0] != '/')
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"dataDir\" must be an absolute path");
	return parse_mode(r) || parse_filter(r) || parse_ipam(r) ||
	       parse_numbers(r) || parse_gc(r) ? -1 : 0;
}
