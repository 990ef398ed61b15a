// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The container end's MAC, when the runtime asks for one.  The CNI
 * conventions give three ways, read in this order (the first present
 * wins, as the stock tuning plugin reads them):
 *   1. runtimeConfig.mac: the "mac" capability ("capabilities": {"mac":
 *      true} in the plugin's configuration makes libcni pass a runtime's
 *      MAC there; podman --mac-address, multus);
 *   2. args.cni.mac;
 *   3. MAC= in CNI_ARGS ("IgnoreUnknown=1;MAC=...").
 * Only ADD reads them: a DEL with a bad one must still succeed.  A MAC
 * asked for is checked before anything is touched: a NIC's is unicast and
 * not all zeroes (the kernel would take a multicast one for a veth, and
 * the filter would then pass frames from a MAC no NIC may send from).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tools/cni/cni.h"

/* "02:00:00:00:00:01" (or with '-'), unicast, not zero: 0 with canon set
 * (lower case, ':'); else -1 with why set. */
static int mac_canon(const char *s, char *canon, const char **why)
{
	unsigned char m[6];
	unsigned int i, x;

	*why = "is not a MAC address like 02:00:00:00:00:01";
	if (strlen(s) != 17)
		return -1;
	for (i = 0; i < 17; i++)
		if (i % 3 == 2 ? s[i] != s[2] || (s[i] != ':' && s[i] != '-') :
				 !isxdigit((unsigned char)s[i]))
			return -1;
	for (i = 0; i < 6; i++) {
		sscanf(s + 3 * i, "%2x", &x);
		m[i] = (unsigned char)x;
	}
	*why = "is a multicast or broadcast MAC address (a NIC's is unicast)";
	if (m[0] & 1)
		return -1;
	*why = "is the all-zeroes MAC address";
	if (!(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]))
		return -1;
	snprintf(canon, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
	return 0;
}

/* CNI_ARGS's MAC value (not terminated: len), or NULL. */
static const char *args_mac(const char *args, size_t *len)
{
	const char *p = args;

	while (p && *p) {
		size_t n = strcspn(p, ";");

		if (n > 4 && !strncmp(p, "MAC=", 4)) {
			*len = n - 4;
			return p + 4;
		}
		p = p[n] ? p + n + 1 : NULL;
	}
	return NULL;
}

static int from_json(struct cni_run *r, json_t *v, const char *key, char *out)
{
	const char *why;

	if (!json_is_string(v))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"%s\" must be a string", key);
	if (mac_canon(json_string_value(v), out, &why))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"%s\": \"%s\" %s", key, json_string_value(v), why);
	return 0;
}

int mac_wanted(struct cni_run *r, char *out)
{
	json_t *rc = json_object_get(r->conf.root, "runtimeConfig");
	json_t *args = json_object_get(json_object_get(r->conf.root, "args"), "cni");
	const char *why, *a;
	char buf[18];
	size_t len;

	out[0] = 0;
	if (json_object_get(rc, "mac") &&
	    from_json(r, json_object_get(rc, "mac"), "runtimeConfig.mac", out))
		return -1;
	if (!out[0] && json_object_get(args, "mac") &&
	    from_json(r, json_object_get(args, "mac"), "args.cni.mac", out))
		return -1;
	a = out[0] ? NULL : args_mac(r->env.args, &len);
	if (a) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(len < 17 ? len : 17), a);
		if (len != 17 || mac_canon(buf, out, &why))
			return cni_fail(r, CNI_ERR_ENV, "invalid CNI_ARGS",
					"MAC=%.*s %s", (int)(len < 64 ? len : 64),
					a, len != 17 ? "is not a MAC address like "
					"02:00:00:00:00:01" : why);
	}
	/* A passthru macvlan has its lower device's MAC: setting its own
	 * sets the lower's, which is the host's. */
	if (out[0] && r->conf.mode == CNI_MODE_MACVLAN &&
	    !strcmp(r->conf.macvlan_mode, "passthru"))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"a MAC was asked for (%s), but a passthru macvlan "
				"has its lower device's, which it would change", out);
	return 0;
}
