// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ADD, in the order a failure is cheapest to undo:
 *   1. lock dataDir, open CNI_NETNS;
 *   2. IPAM ADD (the addresses the filter needs), and while the plugin
 *   3. runs, the NIC, both ends where they live, up (all or nothing), the
 *      state file GC reads, and the filter handle (its reads, its keeper);
 *   4. veth: the filter on the host end, before any address exists, so the
 *      container never has an address it could use unfiltered;
 *   5. addresses and routes (container end; veth: host end's routes);
 *   6. the IPAM plugin's exit status (its result was read as soon as it was
 *      whole: its exit runs beside 4 and 5); the result.
 * What waits for the IPAM plugin is only what needs its addresses: the
 * filter's commit and the addresses themselves (cni.rst, "The critical
 * path, second pass").
 * A failure undoes what this call did, in reverse, and nothing else: an
 * attachment that already existed (its interface name taken) is left as it
 * was.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/cni/cni.h"

struct add {
	int nsfd;
	json_t *ipam_res;
	struct cni_ip ips[CNI_MAX_IPS];
	unsigned int nips;
	struct attach a;
	struct cni_filter flt;
	struct cni_flt_rec rec;		/* the filter, as the state file keeps it */
	struct cni_restore rs;		/* others' filters to apply again */
	struct ipam_call call;
	bool ipam_done, nic_done, state_done, filter_done;
};

static void undo(struct cni_run *r, struct add *s)
{
	struct vnic_filter *n;
	const char *g = r->guest;

	filter_close(s->flt.f);
	s->flt.f = NULL;
	if (s->filter_done && !filter_open(r, s->a.ctx, false, &n)) {
		filter_remove(r, s->a.ctx, n, &g, 1, NULL);
		filter_close(n);
	}
	if (s->nic_done && r->conf.mode == CNI_MODE_VETH)
		attach_delete(r, s->a.ctx, r->guest, s->a.host);
	if (s->nic_done && r->conf.mode == CNI_MODE_MACVLAN) {
		struct vnic_ctx *in;

		if (!attach_ctx(r, s->nsfd, &in)) {
			attach_delete(r, in, r->guest, NULL);
			vnic_ctx_free(in);
		}
	}
	if (s->call.pid >= 0) {
		struct cni_err saved = r->err;

		ipam_reap(r, &s->call);
		r->err = saved;
	}
	if (s->ipam_done)
		ipam_exec(r, "DEL", NULL);
	/* Only this call's: an ADD refused because the attachment exists
	 * leaves that attachment's file to its DEL and GC. */
	if (s->state_done)
		state_remove(r, r->guest);
}

/* The IPAM plugin's answer; after a step that failed (early_err), only
 * reaped (its lease released by undo), that step's error kept. */
static int ipam_wait(struct cni_run *r, struct add *s, bool early_err)
{
	struct cni_err saved = r->err;
	int ret = ipam_answer(r, &s->call, &s->ipam_res);

	s->ipam_done = !ret;
	if (early_err) {
		r->err = saved;
		return -1;
	}
	if (ret || result_ips(r, s->ipam_res, s->ips, &s->nips))
		return -1;
	return 0;
}

/* What needs no address, while the IPAM plugin runs. */
static int beside_ipam(struct cni_run *r, struct add *s)
{
	const char *host = r->conf.mode == CNI_MODE_VETH ? s->a.host : NULL;
	const char *g = r->guest;

	if (attach_ctx(r, 0, &s->a.ctx) || attach_create(r, s->nsfd, &s->a))
		return -1;
	s->nic_done = true;
	cni_lap("nic");
	snprintf(s->rec.host, sizeof(s->rec.host), "%s", s->a.host);
	snprintf(s->rec.mac, sizeof(s->rec.mac), "%s", s->a.cont_mac);
	s->rec.switches = CNI_FILTER_SWITCHES;
	if (state_write(r, host, r->conf.filter ? &s->rec : NULL))
		return -1;
	s->state_done = true;
	cni_lap("state");
	if (!r->conf.filter)
		return 0;
	if (filter_prepare(r, s->a.ctx, &s->flt))
		return -1;
	/* Filters another tool removed (restore.c), while the plugin runs. */
	restore_scan(r, s->a.ctx, s->flt.f, &g, 1, &s->rs);
	cni_lap("scan");
	return 0;
}

/* The state file again, with the addresses: what a restore needs. */
static int keep_filter(struct cni_run *r, struct add *s)
{
	s->rec.has_ips = true;
	return state_write(r, s->a.host, &s->rec);
}

static int steps(struct cni_run *r, struct add *s)
{
	bool early_err;
	json_t *routes;

	cni_lap("start");
	if (r->conf.ipam && ipam_start(r, "ADD", NULL, NULL, &s->call))
		return -1;
	early_err = beside_ipam(r, s);
	cni_lap("beside");
	if (r->conf.ipam && ipam_wait(r, s, early_err))
		return -1;
	if (early_err)
		return -1;
	cni_lap("ipam");
	if (r->conf.filter) {
		s->rec.nips = s->nips;
		memcpy(s->rec.ips, s->ips, sizeof(s->ips));
		if (filter_apply(r, s->a.ctx, &s->flt, &s->rec, &s->rs))
			return -1;
		s->filter_done = true;
		filter_close(s->flt.f);
		s->flt.f = NULL;
	}
	cni_lap("filter");
	routes = json_object_get(s->ipam_res, "routes");
	if (ifcfg_apply(r, s->nsfd, r->env.ifname, s->ips, s->nips, routes))
		return -1;
	if (r->conf.mode == CNI_MODE_VETH &&
	    ifcfg_host(r, s->a.host, s->ips, s->nips))
		return -1;
	cni_lap("address");
	/* While the IPAM plugin exits. */
	if (r->conf.filter && keep_filter(r, s))
		return -1;
	cni_lap("state2");
	if (ipam_reap(r, &s->call))
		return -1;
	cni_lap("reaped");
	r->result = result_build(r, s->ipam_res,
				 r->conf.mode == CNI_MODE_VETH ? s->a.host : NULL,
				 s->a.host_mac, s->a.cont_mac);
	return 0;
}

int cni_add(struct cni_run *r)
{
	struct add s = { .nsfd = -1, .call = { .pid = -1, .out = -1 } };
	char path[PATH_MAX];
	int ret;

	/* What can be refused without touching anything, before dataDir. */
	if (mac_wanted(r, s.a.cont_mac) || netns_open(r, r->env.netns, &s.nsfd))
		return -1;
	if ((r->conf.ipam && ipam_path(r, path, sizeof(path))) || state_lock(r)) {
		close(s.nsfd);
		return -1;
	}
	ret = steps(r, &s);
	if (ret)
		undo(r, &s);
	json_decref(s.ipam_res);
	restore_free(&s.rs);
	vnic_ctx_free(s.a.ctx);
	close(s.nsfd);
	return ret;
}
