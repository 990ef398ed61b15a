// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CHECK: the attachment is as prevResult says.  Reported in this order,
 * each with its own code (cni.h): the NIC (tagged host end, container end
 * under CNI_IFNAME; a macvlan tagged, under CNI_IFNAME), each address prevResult gives the container end and
 * its MAC (101 both), the filter guest and what its state file records of
 * it (102); then the IPAM plugin's own CHECK.
 */
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tools/cni/cni.h"

/* The container interface's MAC, where prevResult names one: the filter
 * lets the container send from that MAC only. */
static int check_mac(struct cni_run *r, int nsfd)
{
	json_t *ifs = json_object_get(r->conf.prev, "interfaces"), *i;
	const char *want = NULL, *name;
	char mac[18];
	size_t k;

	json_array_foreach(ifs, k, i) {
		name = json_string_value(json_object_get(i, "name"));
		if (name && !strcmp(name, r->env.ifname) &&
		    json_object_get(i, "sandbox"))
			want = json_string_value(json_object_get(i, "mac"));
	}
	if (!want || !want[0])
		return 0;
	if (ifcfg_mac(r, nsfd, r->env.ifname, mac))
		return -1;
	if (strcasecmp(mac, want))
		return cni_fail(r, CNI_ERR_ADDR, "MAC address differs",
				"%s has %s, not %s", r->env.ifname,
				mac[0] ? mac : "none", want);
	return 0;
}

/* prevResult's IPs that belong to our container interface. */
static int prev_ips(struct cni_run *r, struct cni_ip *ips, unsigned int *n)
{
	json_t *ifs = json_object_get(r->conf.prev, "interfaces");
	json_t *list = json_object_get(r->conf.prev, "ips"), *ip, *mine;
	struct cni_ip all[CNI_MAX_IPS];
	unsigned int nall, k = 0;
	size_t i;

	if (result_ips(r, r->conf.prev, all, &nall))
		return -1;
	json_array_foreach(list, i, ip) {
		json_t *idx = json_object_get(ip, "interface");
		const char *name;

		if (!json_is_integer(idx))
			continue;
		mine = json_array_get(ifs, (size_t)json_integer_value(idx));
		name = json_string_value(json_object_get(mine, "name"));
		if (name && !strcmp(name, r->env.ifname) &&
		    json_object_get(mine, "sandbox"))
			ips[k++] = all[i];
	}
	*n = k;
	return 0;
}

/*
 * The guest, then what the state file says it is (an earlier vnic-cni's
 * file has no record: the guest's presence is all there is to check).
 */
static int check_filter(struct cni_run *r, struct vnic_ctx *ctx)
{
	struct cni_flt_rec rec;
	struct vnic_filter *n;
	int found;

	if (filter_open(r, ctx, true, &n))
		return -1;
	found = filter_has(r, ctx, n, r->guest);
	if (found > 0 && state_flt(r, r->guest, &rec) > 0 &&
	    filter_intact(r, ctx, n, &rec))
		found = -1;
	vnic_filter_close(n);
	if (found < 0)
		return -1;
	if (!found)
		return cni_fail(r, CNI_ERR_FILTER_MISSING, "filter missing",
				"table netdev %s has no guest %s", r->conf.table,
				r->guest);
	return 0;
}

/* The macvlan, tagged, in the container's namespace: an interface of
 * that name is not enough (the container may have made its own). */
static int check_macvlan(struct cni_run *r, int nsfd)
{
	char name[VNIC_IFNAME_MAX + 1];
	struct vnic_ctx *in;
	int ret;

	if (attach_ctx(r, nsfd, &in))
		return -1;
	ret = attach_find(r, in, r->guest, r->env.ifname, name);
	vnic_ctx_free(in);
	if (!ret && strcmp(name, r->env.ifname))
		ret = cni_fail(r, CNI_ERR_NIC_MISSING, "interface not found",
			       "the macvlan of %s is %s, not %s", r->guest,
			       name, r->env.ifname);
	return ret;
}

static int check_all(struct cni_run *r, int nsfd, struct vnic_ctx *ctx)
{
	char host[VNIC_IFNAME_MAX + 1], hint[VNIC_IFNAME_MAX + 1];
	struct cni_ip ips[CNI_MAX_IPS];
	unsigned int n;

	if (prev_ips(r, ips, &n))
		return -1;
	if (r->conf.mode == CNI_MODE_VETH &&
	    attach_find(r, ctx, r->guest,
			state_host(r, r->guest, hint) ? NULL : hint, host))
		return -1;
	if (r->conf.mode == CNI_MODE_MACVLAN && check_macvlan(r, nsfd))
		return -1;
	if (ifcfg_has_addrs(r, nsfd, r->env.ifname, ips, n) || check_mac(r, nsfd))
		return -1;
	if (r->conf.filter && check_filter(r, ctx))
		return -1;
	return r->conf.ipam ? ipam_exec(r, "CHECK", NULL) : 0;
}

int cni_check(struct cni_run *r)
{
	struct vnic_ctx *ctx;
	int nsfd, ret;

	if (!r->conf.prev)
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"CHECK needs \"prevResult\"");
	if (state_lock(r) || netns_open(r, r->env.netns, &nsfd))
		return -1;
	ret = attach_ctx(r, 0, &ctx);
	if (!ret) {
		ret = check_all(r, nsfd, ctx);
		vnic_ctx_free(ctx);
	}
	close(nsfd);
	return ret;
}
