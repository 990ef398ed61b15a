// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The anti-spoof filter of a veth attachment: one libvnic filter guest
 * named like the attachment, one NIC (the host end, whose ingress sees
 * every frame the container sends), the container end's MAC and the IPAM
 * plugin's addresses, libvnic's default switches.  The table persists
 * (Linux 6.9) and is not claimed (filter_open()).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cni/cni.h"
#include "tools/featcache.h"

#define APPLY_TRIES	3

/*
 * The nft features of this kernel, kept in dataDir/_nft-features
 * (tools/featcache.c), read and written under the dataDir lock.
 */
static uint32_t features_cached(struct cni_run *r, char *path, size_t len)
{
	if (state_file(r, "nft-features", path, len)) {
		/* Only a hint: no file is no reason to fail. */
		path[0] = 0;
		return 0;
	}
	return featcache_read(path);
}

/*
 * nft: without the owner flag.  A claim lives as long as the socket, and
 * the socket outlives the call in a child (tools/linger.c): the next call
 * would find the table owned.  What that gives up is in cni.rst ("the table is
 * not claimed"): the table persists (made with the persist flag, so a
 * holder can still claim it), and each change is generation-checked.
 */
static int open_with(struct cni_run *r, struct vnic_ctx *ctx, uint32_t flags,
		     uint32_t features, struct vnic_filter **out)
{
	const char *prefixes[] = { r->conf.host_prefix, NULL };
	VNIC_OPTS(vnic_filter_opts, opts, .backend = r->conf.backend);

	/* The table, flags and hook options are the nft backend's (the bpf
	 * backend refuses them); a bpf handle writes nothing at open. */
	if (r->conf.backend == VNIC_BACKEND_NFT) {
		opts.table = r->conf.table;
		opts.flags = flags;
		opts.hook_prefixes = r->conf.hook_prefix ? prefixes : NULL;
		opts.features = features;
	}
	return vnic_filter_open(ctx, &opts, out);
}

/*
 * Features from the file that the library refuses (-EINVAL: a corrupted
 * file, or bits a newer libvnic wrote before a downgrade) are no reason to
 * fail: probe once and rewrite the file.  *cached says whether the handle
 * runs on features from the file (filter_apply() retries with a probe when
 * its commit is refused).
 */
static int open_feat(struct cni_run *r, struct vnic_ctx *ctx, uint32_t flags,
		     bool probe, bool *cached, struct vnic_filter **out)
{
	char path[PATH_MAX] = "";
	uint32_t f = 0;
	int err;

	if (r->conf.backend == VNIC_BACKEND_NFT) {
		f = features_cached(r, path, sizeof(path));
		if (probe)
			f = 0;
	}
	err = open_with(r, ctx, flags, f, out);
	if (err == -EINVAL && f) {
		f = 0;
		err = open_with(r, ctx, flags, f, out);
	}
	if (err) {
		cni_fail_vnic(r, CNI_ERR_FILTER, "filter backend unavailable",
			      ctx, err);
		return err;
	}
	if (r->conf.backend == VNIC_BACKEND_NFT && !f)
		featcache_keep(path, vnic_filter_features(*out));
	*cached = f != 0;
	return 0;
}

/* The features kept in dataDir if any (open_feat()).  0, or the negative
 * errno of the failure (its CNI error recorded). */
int filter_open(struct cni_run *r, struct vnic_ctx *ctx, bool read_only,
		struct vnic_filter **out)
{
	bool cached;

	return open_feat(r, ctx, read_only ? VNIC_FILTER_READ_ONLY :
			 VNIC_FILTER_NO_OWNER, false, &cached, out);
}

/*
 * Whether an ADD could write the table now (STATUS).  Opened as ADD opens
 * it, a table another process owns reads fine and only the commit gets
 * EPERM; opened to claim at the first commit, the handle is refused at open
 * when the table is owned (libvnic tries the claim then, and the kernel
 * refuses it), and a table no one owns is left as it is: the claim waits
 * for a commit, which STATUS never makes.  Nothing is written either way.
 * Its guests are read, as every change reads them first.
 */
int filter_usable(struct cni_run *r, struct vnic_ctx *ctx)
{
	struct vnic_filter *n;
	unsigned int count;
	char **names;
	bool cached;
	int err;

	if (open_feat(r, ctx, VNIC_FILTER_CLAIM_AT_COMMIT, false, &cached, &n))
		return -1;
	/* A damaged table of libvnic's opens, and refuses every change (and
	 * this read) until it is repaired: every ADD would fail on it. */
	err = vnic_filter_guests(n, &names, &count);
	if (err)
		cni_fail_vnic(r, CNI_ERR_FILTER, "cannot read the filter", ctx, err);
	else
		free(names);
	vnic_filter_close(n);
	return err ? -1 : 0;
}

int filter_add_guest(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_policy *p,
		     const char *guest, const struct cni_flt_rec *rec)
{
	char a4[CNI_MAX_IPS][64], a6[CNI_MAX_IPS][64];
	const char *v4[CNI_MAX_IPS], *v6[CNI_MAX_IPS];
	unsigned int i, n4 = 0, n6 = 0;
	int err;

	for (i = 0; i < rec->nips; i++) {
		const struct cni_ip *ip = &rec->ips[i];
		char *dst = ip->v6 ? a6[n6] : a4[n4];

		snprintf(dst, 64, "%.*s", (int)strcspn(ip->addr, "/"), ip->addr);
		if (ip->v6)
			v6[n6] = a6[n6], n6++;
		else
			v4[n4] = a4[n4], n4++;
	}
	VNIC_OPTS(vnic_nic_policy, nic, .ifname = rec->host, .kind = VNIC_KIND_VETH,
		  .mac = rec->mac, .ipv4 = v4, .n_ipv4 = n4, .ipv6 = v6,
		  .n_ipv6 = n6, .switches = rec->switches, .switches_set = 1);
	err = vnic_policy_add_guest(p, guest, NULL);
	if (!err)
		err = vnic_policy_add_nic(p, guest, &nic);
	if (err)
		return cni_fail_vnic(r, CNI_ERR_FILTER, "cannot build the filter",
				     ctx, err);
	return 0;
}

/*
 * This attachment's guest, then those of rs (NULL: none).  Its switches
 * (CNI_FILTER_SWITCHES) are every one but no-promisc: that one guards a
 * segment shared with others' traffic (a bridge), and the host end is a
 * routed point to point link.  The host sends on it only what it routes to
 * the container's addresses, to the MAC its neighbour entry holds, which
 * only the container's own ARP and ND (filtered here) can set.  It would
 * cost an egress hook per attachment: a base chain made at each ADD (next
 * to thousands of devices, a hook by name is compared with every one of
 * them) and a chain walked by every frame to the container, for nothing it
 * could drop.
 */
static int build(struct cni_run *r, struct vnic_ctx *ctx,
		 const struct cni_flt_rec *rec, const struct cni_restore *rs,
		 struct vnic_policy **out)
{
	struct vnic_policy *p;
	unsigned int i;
	int err;

	err = vnic_policy_new(ctx, &p);
	if (err)
		return cni_fail_vnic(r, CNI_ERR_FILTER, "cannot build the filter",
				     ctx, err);
	err = rec ? filter_add_guest(r, ctx, p, r->guest, rec) : 0;
	for (i = 0; !err && rs && i < rs->n; i++)
		err = filter_add_guest(r, ctx, p, rs->ent[i].guest, &rs->ent[i].rec);
	if (err) {
		vnic_policy_free(p);
		return -1;
	}
	*out = p;
	return 0;
}

/*
 * The kernel lets only the owner's socket write an owned table (any other
 * gets EPERM), and each vnic-cni call is a new process: a table another
 * process owns (vnicctl filter hold pointed at it) cannot be vnic-cni's.
 */
static int owned_elsewhere(struct cni_run *r, const char *msg)
{
	return cni_fail(r, CNI_ERR_FILTER, msg,
			"table netdev %s is owned by another process (vnicctl filter "
			"hold?); vnic-cni writes from a new process each call and "
			"needs a table no process owns: give the network its own "
			"\"table\"", r->conf.table);
}

/*
 * ADD opens its handle while the IPAM plugin runs: open's reads of the
 * table and the fork of the keeper (tools/linger.c) are then off the ADD's
 * path, and only the commit waits for the plugin's addresses.  The handle
 * does not own the table: apply reads it again if anyone committed since
 * open, and pins its commit to the generation it read, so a commit by
 * another writer after that fails it (-EAGAIN, retried in filter_apply()).
 */
int filter_prepare(struct cni_run *r, struct vnic_ctx *ctx, struct cni_filter *cf)
{
	if (open_feat(r, ctx, VNIC_FILTER_NO_OWNER, false, &cf->cached, &cf->f))
		return -1;
	filter_linger(cf->f);
	return 0;
}

/* -EAGAIN: another writer changed the ruleset meanwhile. */
static int apply_tries(struct vnic_filter *f, const struct vnic_policy *p)
{
	int err = -EAGAIN, i;

	for (i = 0; i < APPLY_TRIES && err == -EAGAIN; i++)
		err = vnic_filter_apply(f, p, NULL);
	return err;
}

/* One commit of p on cf's handle: 0, the negative errno, or 1 if the
 * reopen after refused features failed (its error recorded). */
static int commit(struct cni_run *r, struct vnic_ctx *ctx, struct cni_filter *cf,
		  const struct vnic_policy *p)
{
	int err = apply_tries(cf->f, p);

	/* Features from the file that this nf_tables lacks (a module
	 * replaced since the boot, a file from another host) show at the
	 * first commit: probe and try once more (filter.h, features). */
	if (cf->cached && (err == -EOPNOTSUPP || err == -EINVAL)) {
		filter_close(cf->f);
		cf->f = NULL;
		if (open_feat(r, ctx, VNIC_FILTER_NO_OWNER, true, &cf->cached,
			      &cf->f))
			return 1;
		err = apply_tries(cf->f, p);
	}
	return err;
}

static void restored(const struct cni_run *r, const struct cni_restore *rs)
{
	fprintf(stderr, "vnic-cni: %s: the filter of %u attachment(s) of network "
		"%s was missing from the table (removed by another tool?): "
		"applied again\n", r->env.command, rs->n, r->conf.name);
}

/*
 * On cf's handle (which stays open: the caller closes it).  The guests of
 * rs go in the same commit; if that commit fails, this attachment's alone
 * is tried: a restore never fails the ADD.
 */
int filter_apply(struct cni_run *r, struct vnic_ctx *ctx, struct cni_filter *cf,
		 const struct cni_flt_rec *rec, const struct cni_restore *rs)
{
	struct cni_err saved = r->err;
	struct vnic_policy *p;
	int err;

	if (rs && rs->n) {
		if (build(r, ctx, rec, rs, &p)) {
			fprintf(stderr, "vnic-cni: ADD %s: cannot restore the "
				"missing filters of network %s: %s\n", r->guest,
				r->conf.name, r->err.details);
			r->err = saved;
		} else {
			err = commit(r, ctx, cf, p);
			vnic_policy_free(p);
			if (err == 1)
				return -1;
			if (!err) {
				restored(r, rs);
				return 0;
			}
			fprintf(stderr, "vnic-cni: ADD %s: cannot restore the "
				"missing filters of network %s: %s\n", r->guest,
				r->conf.name, vnic_ctx_errmsg(ctx));
		}
	}
	if (build(r, ctx, rec, NULL, &p))
		return -1;
	err = commit(r, ctx, cf, p);
	vnic_policy_free(p);
	if (err == 1)
		return -1;
	if (filter_owned(r, err))
		return owned_elsewhere(r, "cannot install the filter");
	if (err)
		return cni_fail_vnic(r, err == -EAGAIN ? CNI_ERR_AGAIN : CNI_ERR_FILTER,
				     "cannot install the filter", ctx, err);
	return 0;
}

void filter_restore(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *f,
		    const char *const *skip, unsigned int nskip)
{
	struct cni_restore rs = { 0 };
	struct cni_err saved = r->err;
	struct vnic_policy *p;
	int err;

	restore_scan(r, ctx, f, skip, nskip, &rs);
	if (rs.n && !build(r, ctx, NULL, &rs, &p)) {
		err = apply_tries(f, p);
		vnic_policy_free(p);
		if (err)
			fprintf(stderr, "vnic-cni: %s: cannot restore the missing "
				"filters of network %s: %s\n", r->env.command,
				r->conf.name, vnic_ctx_errmsg(ctx));
		else
			restored(r, &rs);
	} else if (rs.n) {
		fprintf(stderr, "vnic-cni: %s: cannot restore the missing filters "
			"of network %s: %s\n", r->env.command, r->conf.name,
			r->err.details);
	}
	r->err = saved;
	restore_free(&rs);
}

/* 1 if guest is installed, 0 if not, -1 if the guests cannot be read
 * (a damaged table: its error recorded, not taken for a missing guest). */
int filter_has(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *n,
	       const char *guest)
{
	unsigned int count, i;
	char **names;
	int found = 0, err;

	err = vnic_filter_guests(n, &names, &count);
	if (err)
		return cni_fail_vnic(r, CNI_ERR_FILTER, "cannot read the filter",
				     ctx, err);
	for (i = 0; i < count && !found; i++)
		found = !strcmp(names[i], guest);
	free(names);
	return found;
}

/* Objects the baseline reports: a few short names today ("set ip4s",
 * "map drops"); one it cannot keep only loses its subtraction. */
#define INTACT_OBJS	32

/* A diff's repairs, object by object. */
struct repairs {
	struct {
		char obj[96];
		uint32_t added, removed;
	} o[INTACT_OBJS];
	unsigned int n;
};

/* What filter_intact() saw: the baseline's repairs (a policy of no guest),
 * then the first thing the attachment's filter lacks. */
struct intact {
	const char *guest;
	bool changed;	/* its digest differs: a sync's to judge */
	struct repairs base;
	char what[160];
};

static int base_fn(const struct vnic_filter_diff *d, void *arg)
{
	struct repairs *b = arg;

	if (d->kind != VNIC_FILTER_DIFF_REPAIR || b->n == INTACT_OBJS)
		return 0;
	snprintf(b->o[b->n].obj, sizeof(b->o[b->n].obj), "%s", d->object);
	b->o[b->n].added = d->added;
	b->o[b->n++].removed = d->removed;
	return 0;
}

/*
 * A repair the sync of this one guest makes beyond the sync of no guest is
 * the guest's own: its elements or map entries, its hooks, the rules of a
 * chain its NICs jump to.  The baseline (nft) takes out what is nobody's
 * in particular: elements left by another attachment's NIC deleted by
 * hand, which would otherwise hide a loss.  Only what is missing with
 * nothing in its place fails CHECK (nft: an element replaced by hand
 * passes; bpf counts a rewritten map entry as missing).  A guest whose
 * digest differs (a newer libvnic's render version is in it, and a newer
 * render may add rules to the chains it shares) is a sync's to judge:
 * guest entries come before objects, so its repairs are not looked at.
 */
static int intact_fn(const struct vnic_filter_diff *d, void *arg)
{
	struct intact *s = arg;
	uint32_t added, removed;
	unsigned int i;

	if (s->what[0])
		return 0;
	if (d->kind == VNIC_FILTER_DIFF_GUEST_ADD && !strcmp(d->guest, s->guest)) {
		snprintf(s->what, sizeof(s->what), "guest %s is not installed",
			 s->guest);
		return 0;
	}
	if (d->kind == VNIC_FILTER_DIFF_GUEST_CHANGE && !strcmp(d->guest, s->guest))
		s->changed = true;
	if (d->kind != VNIC_FILTER_DIFF_REPAIR || s->changed)
		return 0;
	added = d->added;
	removed = d->removed;
	for (i = 0; i < s->base.n; i++)
		if (!strcmp(s->base.o[i].obj, d->object)) {
			added -= added < s->base.o[i].added ? added : s->base.o[i].added;
			removed -= removed < s->base.o[i].removed ? removed :
				   s->base.o[i].removed;
		}
	if (added && !removed)
		snprintf(s->what, sizeof(s->what), "guest %s's filter: %s: %u "
			 "missing (removed by another tool?)", s->guest, d->object,
			 added);
	return 0;
}

/*
 * CHECK of an installed guest against the filter its state file records:
 * nothing of it missing.  A guest whose entries or hooks another tool
 * removed is still listed (bpf: a tc qdisc del of the host end's clsact;
 * nft: an element deleted, a chain flushed) while its container sends
 * what it likes.  Nothing is written, but a diff is a sync's: nft reads
 * the whole table twice (the baseline, then the guest); bpf (no baseline:
 * a policy of no guest reports no repair) reads the maps and the hooks of
 * every installed NIC, those of the other guests as leaving.  0 if
 * intact, -1 with the CNI error recorded.
 */
int filter_intact(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *n,
		  const struct cni_flt_rec *rec)
{
	struct intact s = { .guest = r->guest };
	struct vnic_policy *none = NULL, *p = NULL;
	int err;

	err = vnic_policy_new(ctx, &none);
	if (!err)
		err = vnic_policy_new(ctx, &p);
	if (err) {
		vnic_policy_free(none);
		return cni_fail_vnic(r, CNI_ERR_FILTER, "cannot build the filter",
				     ctx, err);
	}
	if (filter_add_guest(r, ctx, p, r->guest, rec)) {
		vnic_policy_free(none);
		vnic_policy_free(p);
		return -1;
	}
	if (r->conf.backend == VNIC_BACKEND_NFT)
		err = vnic_filter_diff(n, none, base_fn, &s.base, NULL);
	if (!err)
		err = vnic_filter_diff(n, p, intact_fn, &s, NULL);
	vnic_policy_free(none);
	vnic_policy_free(p);
	/* The name the state file keeps is no NIC's now (the host end
	 * found by its tag under another): nothing filters it. */
	if (err == -ENODEV)
		return cni_fail(r, CNI_ERR_FILTER_MISSING, "filter missing",
				"guest %s's filter is on %s, which no NIC is named now",
				r->guest, rec->host);
	if (err)
		return cni_fail_vnic(r, err == -EAGAIN ? CNI_ERR_AGAIN : CNI_ERR_FILTER,
				     "cannot read the filter", ctx, err);
	if (s.what[0])
		return cni_fail(r, CNI_ERR_FILTER_MISSING, "filter missing",
				"%s", s.what);
	return 0;
}

/*
 * Remove those of guests that are installed; the others are fine.  0, or
 * the negative errno of the failure (its CNI error recorded): -EPERM is a
 * table another process owns (filter_owned()).  left (NULL: not wanted)
 * has one flag per guest, set on a failure for each that may still be
 * installed: those found installed, or all when the table could not be
 * read.
 */
int filter_remove(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *n,
		  const char *const *guests, unsigned int count, bool *left)
{
	const char **rm = calloc(count + 1, sizeof(*rm));
	unsigned int ninst, i, j, nrm = 0;
	char **inst;
	int err;

	for (i = 0; left && i < count; i++)
		left[i] = true;
	if (!rm) {
		cni_fail(r, CNI_ERR_IO, "out of memory", "filter removal");
		return -ENOMEM;
	}
	err = vnic_filter_guests(n, &inst, &ninst);
	if (err) {
		free(rm);
		cni_fail_vnic(r, CNI_ERR_FILTER, "cannot read the filter", ctx, err);
		return err;
	}
	for (i = 0; i < count; i++) {
		if (left)
			left[i] = false;
		for (j = 0; j < ninst; j++)
			if (!strcmp(inst[j], guests[i])) {
				rm[nrm++] = guests[i];
				if (left)
					left[i] = true;
				break;
			}
	}
	/* -EAGAIN: another writer committed since the handle read the
	 * table; it has read it again, so try again (as apply_tries()). */
	for (i = 0, err = nrm ? -EAGAIN : 0; i < APPLY_TRIES && err == -EAGAIN; i++)
		err = vnic_filter_remove(n, rm, nrm, NULL);
	free(inst);
	free(rm);
	for (i = 0; !err && left && i < count; i++)
		left[i] = false;
	if (filter_owned(r, err))
		owned_elsewhere(r, "cannot remove the filter");
	else if (err)
		cni_fail_vnic(r, err == -EAGAIN ? CNI_ERR_AGAIN : CNI_ERR_FILTER,
			      "cannot remove the filter", ctx, err);
	return err;
}

bool filter_owned(const struct cni_run *r, int err)
{
	return err == -EPERM && r->conf.backend == VNIC_BACKEND_NFT;
}

/*
 * nft refuses every change of a damaged table (-EUCLEAN) until a sync
 * repairs it or someone deletes it, and every change of a table another
 * process owns (-EPERM) until it is free: no retry of the runtime's can
 * help.  open: the error was vnic_filter_open()'s, whose -EPERM is also
 * the one of a caller without CAP_NET_ADMIN.
 */
bool filter_stuck(const struct cni_run *r, int err, bool open)
{
	if (r->conf.backend != VNIC_BACKEND_NFT)
		return false;
	return err == -EUCLEAN || (!open && err == -EPERM);
}
