// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Filters another tool removed.  The table is not claimed between calls
 * (cni.rst, "The table is not claimed"), so a node's `nft flush ruleset`
 * (systemctl restart nftables) or `nft delete table netdev vnic_cni`
 * removes every attachment's filter, and the containers then send what
 * they like until they are made again: runtimes rarely call CHECK.  Each
 * ADD, DEL and GC of a network therefore looks, on the handle it opened
 * anyway, for attachments of its network whose state file is there but
 * whose filter guest is not, and applies them again: ADD in its own
 * commit, DEL and GC in one after theirs.
 *
 * What that costs when nothing is missing: the table's guest names (the
 * handle read them at open) sorted, and one readdir of dataDir/NET looked
 * up in them; no state file is read.  ADD does it while the IPAM plugin
 * runs.  Only a missing guest's file is read, and its host end must still
 * be the attachment's (one RTM_GETLINK: the name, the tag and the group):
 * a name another link took since is never filtered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cni/cni.h"

struct scan {
	struct cni_run *r;
	struct vnic_ctx *ctx;
	char **inst;
	unsigned int ninst;
	const char *const *skip;
	unsigned int nskip;
	struct cni_restore *rs;
	unsigned int old;	/* missing, and no filter record to restore */
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool skipped(const struct scan *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < s->nskip; i++)
		if (!strcmp(s->skip[i], name))
			return true;
	return false;
}

/* Whether host is guest's host end, as its tag and group say. */
static bool host_is_theirs(struct vnic_ctx *ctx, const char *guest,
			   const char *host)
{
	struct vnic_guest *g;

	if (vnic_guest_adopt_named(ctx, guest, &host, 1, &g))
		return false;
	vnic_guest_free(g);
	return true;
}

static int push(struct cni_restore *rs, const char *guest,
		const struct cni_flt_rec *rec)
{
	if (rs->n == rs->cap) {
		unsigned int cap = rs->cap ? rs->cap * 2 : 8;
		void *n = realloc(rs->ent, cap * sizeof(*rs->ent));

		if (!n)
			return -1;
		rs->ent = n;
		rs->cap = cap;
	}
	snprintf(rs->ent[rs->n].guest, sizeof(rs->ent[rs->n].guest), "%s", guest);
	rs->ent[rs->n++].rec = *rec;
	return 0;
}

static int scan_one(const char *name, void *arg)
{
	struct scan *s = arg;
	struct cni_flt_rec rec;
	int ret;

	if (bsearch(&name, s->inst, s->ninst, sizeof(*s->inst), cmp_name) ||
	    skipped(s, name))
		return 0;
	ret = state_flt(s->r, name, &rec);
	if (ret == 0)
		s->old++;
	if (ret <= 0 || !host_is_theirs(s->ctx, name, rec.host))
		return 0;
	return push(s->rs, name, &rec);
}

void restore_scan(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *f,
		  const char *const *skip, unsigned int nskip,
		  struct cni_restore *rs)
{
	struct scan s = { .r = r, .ctx = ctx, .skip = skip, .nskip = nskip,
			  .rs = rs };

	/* A table whose guests cannot be read fails the verb's own change,
	 * which says why; nothing to restore into it. */
	if (vnic_filter_guests(f, &s.inst, &s.ninst))
		return;
	qsort(s.inst, s.ninst, sizeof(*s.inst), cmp_name);
	if (state_names(r, scan_one, &s))
		fprintf(stderr, "vnic-cni: %s: cannot look for removed filters "
			"of network %s (out of memory or dataDir unreadable)\n",
			r->env.command, r->conf.name);
	free(s.inst);
	if (s.old)
		fprintf(stderr, "vnic-cni: %s: the filter of %u attachment(s) of "
			"network %s is missing and cannot be restored: their state "
			"files hold no filter record (written by an earlier vnic-cni, "
			"or by an ADD that did not finish); DEL and ADD them again\n",
			r->env.command, s.old, r->conf.name);
}

void restore_free(struct cni_restore *rs)
{
	free(rs->ent);
	rs->ent = NULL;
	rs->n = rs->cap = 0;
}
