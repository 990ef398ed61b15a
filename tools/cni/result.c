// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Results: the IPAM plugin's read, ours built.  1.0.0 and 1.1.0 results
 * have one shape; 0.3.x/0.4.0 add "version" to each IP, which is dropped on
 * the way in and added on the way out.  A chained call's prevResult is
 * kept and our interfaces and addresses appended to it, as the spec asks
 * of a plugin that is not first in its chain.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cni/cni.h"

int result_ips(struct cni_run *r, json_t *res, struct cni_ip *ips,
	       unsigned int *n)
{
	json_t *list = json_object_get(res, "ips"), *ip;
	size_t i;

	*n = 0;
	json_array_foreach(list, i, ip) {
		const char *a = json_string_value(json_object_get(ip, "address"));
		const char *g = json_string_value(json_object_get(ip, "gateway"));

		if (!a || strlen(a) >= sizeof(ips->addr) || !strchr(a, '/'))
			return cni_fail(r, CNI_ERR_DECODE, "failed to decode the IPAM result",
					"ips[%zu]: \"address\" must be a CIDR", i);
		if (*n == CNI_MAX_IPS)
			return cni_fail(r, CNI_ERR_IPAM, "too many addresses",
					"the IPAM result holds more than %d",
					CNI_MAX_IPS);
		snprintf(ips[*n].addr, sizeof(ips->addr), "%s", a);
		snprintf(ips[*n].gw, sizeof(ips->gw), "%s", g && strlen(g) < 64 ? g : "");
		ips[*n].v6 = strchr(a, ':') != NULL;
		(*n)++;
	}
	return 0;
}

static bool old_version(const char *v)
{
	return v[0] == '0';
}

static json_t *iface(const char *name, const char *mac, const char *sandbox)
{
	json_t *o = json_pack("{s:s}", "name", name);

	if (mac && mac[0])
		json_object_set_new(o, "mac", json_string(mac));
	if (sandbox)
		json_object_set_new(o, "sandbox", json_string(sandbox));
	return o;
}

static void append_all(json_t *res, const char *key, json_t *from)
{
	json_t *dst = json_object_get(res, key), *v;
	size_t i;

	if (!json_is_array(from) || !json_array_size(from))
		return;
	if (!json_is_array(dst)) {
		dst = json_array();
		json_object_set_new(res, key, dst);
	}
	json_array_foreach(from, i, v)
		json_array_append(dst, v);
}

/* Our IPs, pointing at the container interface (index cont). */
static void add_ips(struct cni_run *r, json_t *res, json_t *ipam_res, size_t cont)
{
	json_t *list = json_object_get(ipam_res, "ips"), *ip, *out;
	json_t *dst = json_object_get(res, "ips");
	size_t i;

	if (!json_is_array(dst)) {
		dst = json_array();
		json_object_set_new(res, "ips", dst);
	}
	json_array_foreach(list, i, ip) {
		const char *a = json_string_value(json_object_get(ip, "address"));
		json_t *g = json_object_get(ip, "gateway");

		out = json_pack("{s:s, s:I}", "address", a, "interface",
				(json_int_t)cont);
		if (json_is_string(g))
			json_object_set(out, "gateway", g);
		if (old_version(r->conf.version))
			json_object_set_new(out, "version",
					    json_string(strchr(a, ':') ? "6" : "4"));
		json_array_append_new(dst, out);
	}
}

json_t *result_build(struct cni_run *r, json_t *ipam_res, const char *host_name,
		     const char *host_mac, const char *cont_mac)
{
	json_t *res = r->conf.prev ? json_deep_copy(r->conf.prev) : json_object();
	json_t *ifs = json_object_get(res, "interfaces");
	size_t cont;

	if (!json_is_array(ifs)) {
		ifs = json_array();
		json_object_set_new(res, "interfaces", ifs);
	}
	if (host_name)
		json_array_append_new(ifs, iface(host_name, host_mac, NULL));
	cont = json_array_size(ifs);
	json_array_append_new(ifs, iface(r->env.ifname, cont_mac, r->env.netns));
	if (ipam_res) {
		add_ips(r, res, ipam_res, cont);
		append_all(res, "routes", json_object_get(ipam_res, "routes"));
		if (!json_object_get(res, "dns") && json_object_get(ipam_res, "dns"))
			json_object_set(res, "dns", json_object_get(ipam_res, "dns"));
	}
	json_object_set_new(res, "cniVersion", json_string(r->conf.version));
	return res;
}
