// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnic_guest_create(): a guest's NICs in one pipelined request, all or
 * nothing.
 *
 *  1. lower devices by name -> ifindex (one batch of RTM_GETLINK)
 *  2. names picked, every RTM_NEWLINK sent in one batch; cache-named NICs
 *     that hit EEXIST (someone else took the name meanwhile) get a new name
 *     in another round, until 8 rounds in a row create none and the
 *     context's name timeout has passed (lib/retry.c); tun/tap by TUNSETIFF.
 *     Names the caller gave go first (tun/tap so named before the batch,
 *     those NICs first in it), and no template takes one (pick_free())
 *  3. names and ifindexes learned: from the NLM_F_ECHO copy where the kernel
 *     sends one, else by name (one batch) or, for kernel-named NICs, by the
 *     MAC we chose (one dump)
 *  4. every NIC tagged with its alias (one batch; the kernel ignores
 *     IFLA_IFALIAS on creation), tun/tap also get group, MTU, MAC and up;
 *     then persistent taps are made persistent (tap.c: crash safety)
 * Any failure deletes every NIC this call created and closes its fds.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <net/if_arp.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "allocator/homes.h"
#include "allocator/msg.h"
#include "allocator/tap.h"
#include "lib/link.h"
#include "lib/linkcache.h"

struct op {
	struct vnic_guest *g;
	struct vnic_ctx *ctx;
	struct homes hs;
	unsigned int *todo, ntodo;	/* NICs this call creates */
	unsigned int *pend, npend;	/* netlink NICs still to create */
	unsigned int *reqnic;		/* batch request -> NIC index */
	bool named;			/* some NIC asks for a name by name */
	uint32_t *held;			/* pick_free()'s scratch, when named */
	struct nl_batch b;
};

static struct vnic_nic *NIC(struct op *op, unsigned int i)
{
	return &op->g->nics[i];
}

static int fail(struct op *op, int err, enum vnic_step step, unsigned int i,
		const char *extack, const char *what)
{
	struct vnic_nic *nic = NIC(op, i);
	const char *name = nic->name[0] ? nic->name : nic->tmpl;

	return vnic_set_err(op->ctx, err, step, (int)i, extack, "%s %s%s%s",
			    vnic_kind_name(nic->kind), name, *what ? ": " : "", what);
}

static int batch_add(struct op *op, struct nlmsghdr *nlh, unsigned int i,
		     nl_reply_cb cb, void *data)
{
	int err = nlh ? nl_batch_end(&op->b, nlh, cb, data) : -ENOMEM;

	if (!err)
		op->reqnic[op->b.n - 1] = i;
	return err;
}

/* 1. ---------------------------------------------------------------- */

/* The reply to a lower's RTM_GETLINK: its ifindex and MTU. */
static int lower_cb(const struct nlmsghdr *nlh, void *data)
{
	struct vnic_nic *nic = data;
	struct link_attrs la;

	if (!link_parse(nlh, &la)) {
		const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

		nic->lower_ifindex = la.ifindex;
		nic->lower_mtu = la.mtu;
		nic->lower_ether = ifi->ifi_type == ARPHRD_ETHER;
	}
	return 0;
}


/*
 * A guest's NICs usually share one or two lower devices: ask once per name.
 * The asked ones are found among the batch's requests, which stay few.
 */
static bool same_lower_asked(struct op *op, unsigned int i)
{
	unsigned int k;

	for (k = 0; k < op->b.n; k++)
		if (!strcmp(NIC(op, op->reqnic[k])->lower, NIC(op, i)->lower))
			return true;
	return false;
}

static void copy_lower(struct op *op, unsigned int i)
{
	unsigned int k;

	for (k = 0; NIC(op, i)->lower[0] && k < op->b.n; k++)
		if (!strcmp(NIC(op, op->reqnic[k])->lower, NIC(op, i)->lower)) {
			NIC(op, i)->lower_ifindex = NIC(op, op->reqnic[k])->lower_ifindex;
			NIC(op, i)->lower_mtu = NIC(op, op->reqnic[k])->lower_mtu;
			NIC(op, i)->lower_ether = NIC(op, op->reqnic[k])->lower_ether;
		}
}

/*
 * The kernel refuses a macvlan MTU above its lower's with a bare EINVAL
 * and no extack: say which limit it was.
 */
static int check_lower_mtu(struct op *op, unsigned int i)
{
	struct vnic_nic *nic = NIC(op, i);

	if (!nic->mtu || !nic->lower_mtu || nic->mtu <= nic->lower_mtu)
		return 0;
	return vnic_set_err(op->ctx, -EINVAL, VNIC_STEP_VALIDATE, (int)i, NULL,
			    "MTU %u above the %u of lower device '%s'",
			    nic->mtu, nic->lower_mtu, nic->lower);
}

static int resolve_lowers(struct op *op)
{
	unsigned int k, i;
	int err = 0;

	nl_batch_reset(&op->b);
	for (k = 0; k < op->ntodo && !err; k++) {
		i = op->todo[k];
		if (NIC(op, i)->lower[0] && !same_lower_asked(op, i))
			err = batch_add(op, msg_getlink(&op->b, NIC(op, i)->lower), i,
					lower_cb, NIC(op, i));
	}
	if (!err)
		err = nl_batch_run(&op->ctx->nl, &op->b);
	if (err)
		return vnic_set_err(op->ctx, err, VNIC_STEP_VALIDATE, -1, NULL,
				    "looking up lower devices");
	for (k = 0; k < op->b.n; k++) {
		struct vnic_nic *nic = NIC(op, op->reqnic[k]);

		if (op->b.reqs[k].err)
			return vnic_set_err(op->ctx, op->b.reqs[k].err,
					    VNIC_STEP_VALIDATE, (int)op->reqnic[k],
					    op->b.reqs[k].extack,
					    "lower device '%s' not found", nic->lower);
	}
	for (k = 0; k < op->ntodo; k++) {
		i = op->todo[k];

		copy_lower(op, i);
		/* macvlan_common_newlink() answers a loopback, tun or other
		 * non-Ethernet lower with a bare EINVAL: say it here. */
		if (NIC(op, i)->lower[0] && !NIC(op, i)->lower_ether)
			return vnic_set_err(op->ctx, -EINVAL, VNIC_STEP_VALIDATE,
					    (int)i, NULL, "lower device '%s' is not an Ethernet device",
					    NIC(op, i)->lower);
		err = check_lower_mtu(op, i);
		if (err)
			return err;
	}
	return 0;
}

/* 2. ---------------------------------------------------------------- */

/* Whether a NIC of this call not created yet asks for name in home by
 * name: its own explicit name, or its veth peer's beside it. */
static bool named_in_call(struct op *op, unsigned int home, const char *name)
{
	unsigned int k;

	for (k = 0; k < op->ntodo; k++) {
		const struct vnic_nic *nic = NIC(op, op->todo[k]);

		if (nic->created || nic->home != home)
			continue;
		if (nic->naming == VNIC_NAMING_EXPLICIT && !strcmp(nic->tmpl, name))
			return true;
		if (nic->kind == VNIC_KIND_VETH && nic->peer_home == home &&
		    !strcmp(nic->peer_name, name))
			return true;
	}
	return false;
}

/*
 * The lowest free name of the template that no NIC of this call asks for
 * by name: that one is the caller's, and taking it for a template would
 * fail its NIC with EEXIST.  The names passed over are held until one is
 * found (at most one a name asked for: two a NIC), then given back (the
 * NIC that asked for one makes it taken).
 */
static int pick_free(struct op *op, struct vnic_nic *nic, struct linkcache *lc,
		     const char *prefix)
{
	int err = linkcache_pick(lc, prefix, &nic->suffix);
	unsigned int nheld = 0;

	while (!err && op->named) {
		name_format(nic->name, prefix, nic->suffix);
		if (!named_in_call(op, nic->home, nic->name))
			break;
		op->held[nheld++] = nic->suffix;
		err = linkcache_pick(lc, prefix, &nic->suffix);
	}
	while (nheld)
		linkcache_unpick(lc, prefix, op->held[--nheld]);
	return err;
}

static int pick_name(struct op *op, unsigned int i)
{
	struct vnic_nic *nic = NIC(op, i);
	struct linkcache *lc;
	char prefix[IFNAMSIZ];
	int err;

	err = vnic_fault(op->ctx, VNIC_STEP_NAME, i);
	if (err)
		return fail(op, err, VNIC_STEP_NAME, i, NULL, "injected");
	/* Still picked: retried in the nested layout under the name it was
	 * refused with (create_collect()). */
	if (nic->picked)
		return 0;
	if (nic->naming == VNIC_NAMING_EXPLICIT) {
		snprintf(nic->name, sizeof(nic->name), "%s", nic->tmpl);
		return 0;
	}
	if (nic->naming == VNIC_NAMING_KERNEL)
		return 0;
	err = homes_linkcache(&op->hs, nic->home, &lc);
	if (err)
		return fail(op, err, VNIC_STEP_NAME, i, NULL, "link table");
	name_prefix(nic->tmpl, prefix);
	err = pick_free(op, nic, lc, prefix);
	if (err)
		return fail(op, err, VNIC_STEP_NAME, i, NULL,
			    err == -ENOSPC ? "every name of this template is taken" : "");
	nic->picked = true;
	name_format(nic->name, prefix, nic->suffix);
	return 0;
}

static void unpick(struct op *op, struct vnic_nic *nic)
{
	struct linkcache *lc;
	char prefix[IFNAMSIZ];

	if (!nic->picked)
		return;
	nic->picked = false;
	if (homes_linkcache(&op->hs, nic->home, &lc))
		return;
	name_prefix(nic->tmpl, prefix);
	linkcache_unpick(lc, prefix, nic->suffix);
}

/* Whether home has a link of that name (false if it cannot be asked). */
static bool name_in(struct op *op, unsigned int home, const char *name)
{
	struct nlmsghdr *nlh;
	struct nl_batch b;
	bool taken = false;

	nl_batch_init(&b);
	nlh = msg_getlink(&b, name);
	if (nlh && !nl_batch_end(&b, nlh, NULL, NULL) &&
	    !nl_batch_run(op->hs.h[home].s, &b))
		taken = !b.reqs[0].err;
	nl_batch_free(&b);
	return taken;
}

/*
 * A veth's EEXIST may be about its peer's name, which no retry under another
 * NIC name cures (the cache strategy would retry new names until its name
 * timeout and blame someone else): ask the peer's namespace whether that
 * name exists.
 */
static bool peer_taken(struct op *op, struct vnic_nic *nic)
{
	if (nic->peer_home == NO_HOME &&
	    homes_get(&op->hs, nic->peer_netns_fd, &nic->peer_home))
		return false;
	return name_in(op, nic->peer_home, nic->peer_name);
}

/* One round: every pending NIC's RTM_NEWLINK in one batch. */
static int create_round(struct op *op)
{
	bool echo = op->ctx->features & VNIC_FEAT_NEWLINK_ECHO;
	unsigned int k, i, injected = UINT32_MAX;
	int err = 0;

	nl_batch_reset(&op->b);
	for (k = 0; k < op->npend && !err; k++) {
		struct vnic_nic *nic = NIC(op, i = op->pend[k]);

		err = pick_name(op, i);
		if (err)
			break;
		/* Test hook: the lookup of a kernel before 6.15 (below). */
		if (op->ctx->old_peer_lookup && nic->peer_outer &&
		    name_in(op, 0, nic->peer_name)) {
			err = batch_add(op, msg_excl_lookup(&op->b, nic->peer_name),
					i, NULL, NULL);
			continue;
		}
		if (vnic_fault(op->ctx, VNIC_STEP_CREATE, i)) {
			injected = i;	/* as if the kernel refused it */
			continue;
		}
		/* The echo tells about the outer device, and goes to the
		 * namespace it is created in. */
		err = batch_add(op, msg_newlink(&op->b, nic, nic->naming ==
				VNIC_NAMING_KERNEL ? nic->tmpl : nic->name,
				echo && nic->home == 0 && !nic->peer_outer), i,
				msg_learn_cb, nic);
	}
	if (!err)
		err = nl_batch_run(&op->ctx->nl, &op->b);
	if (err && !op->ctx->err.err)
		vnic_set_err(op->ctx, err, VNIC_STEP_CREATE, -1, NULL, "sending");
	/* Whatever was acked is created, even if the round failed after. */
	for (k = 0; k < op->b.n; k++)
		if (op->b.reqs[k].acked && !op->b.reqs[k].err)
			NIC(op, op->reqnic[k])->created = true;
	/* A create the kernel processed but whose ack was lost (ENOBUFS: a
	 * receive buffer too small for the window's replies) may have made
	 * its NIC: the rollback looks for it (resolve_home()).  An echo
	 * that came through is proof of it. */
	for (k = 0; err && k < op->b.n; k++) {
		struct nlmsghdr *nlh = (void *)(op->b.buf + op->b.reqs[k].off);
		struct vnic_nic *nic = NIC(op, op->reqnic[k]);

		if (op->b.reqs[k].sent && !op->b.reqs[k].acked &&
		    (nlh->nlmsg_flags & NLM_F_CREATE)) {
			nic->created = true;
			nic->unsure = !nic->ifindex;
		}
	}
	if (!err && injected != UINT32_MAX)
		err = fail(op, -EIO, VNIC_STEP_CREATE, injected, NULL, "injected");
	return err;
}

/* Some kernel refusals come as a bare errno: name the likely cause. */
static const char *create_hint(const struct vnic_nic *nic, int err, char *buf,
			       size_t len)
{
	bool macv = nic->lower[0] || nic->lower_ifindex;

	buf[0] = '\0';
	if (err == -EADDRINUSE && macv)
		snprintf(buf, len, "its MAC is in use on the lower device");
	else if (err == -ENODEV && macv && !nic->lower[0])
		snprintf(buf, len, "no lower device of ifindex %d", nic->lower_ifindex);
	/* __dev_alloc_name() cut a suffix to fit and hit an existing name. */
	else if (err == -EEXIST && nic->naming == VNIC_NAMING_KERNEL)
		snprintf(buf, len, "no free name of this template fits 15 characters");
	else if (err == -ENOSPC && nic->naming == VNIC_NAMING_KERNEL)
		snprintf(buf, len, "the kernel's \"%%d\" found no free suffix below 32768");
	return buf;
}

/* Sort the round's outcome: created, retry (EEXIST on a picked name), or
 * the call's failure. */
static int create_collect(struct op *op)
{
	unsigned int k, n = 0;
	char hint[96];
	int err = 0, e;

	for (k = 0; k < op->b.n; k++) {
		unsigned int i = op->reqnic[k];
		struct vnic_nic *nic = NIC(op, i);
		struct nl_req *r = &op->b.reqs[k];

		if (!r->err) {
			nic->picked = false;
			continue;
		}
		/* Two random MACs met on one lower: draw another. */
		if (r->err == -EADDRINUSE &&
		    !mark_mac(op->ctx->owner, MARK_NIC, nic->birth_mac)) {
			if (!nic->mac_given)
				memcpy(nic->mac, nic->birth_mac, 6);
			unpick(op, nic);
			op->pend[n++] = i;
			continue;
		}
		if (r->err == -EEXIST && nic->kind == VNIC_KIND_VETH &&
		    peer_taken(op, nic)) {
			unpick(op, nic);
			if (!err)
				err = vnic_set_err(op->ctx, -EEXIST, VNIC_STEP_CREATE,
						   (int)i, r->extack, "veth %s: peer name '%s' is taken",
						   nic->name[0] ? nic->name : nic->tmpl,
						   nic->peer_name);
			continue;
		}
		/*
		 * Kernels before 6.15 ("rtnetlink: Lookup device in target
		 * netns when creating link") look the outer name up in the
		 * socket's namespace: a peer-outside create meets EEXIST
		 * when a device here has the peer's name, free where the
		 * peer goes.  Renaming the NIC cannot cure that: retry it
		 * once, same name, in the nested layout (the peer in the
		 * nest, brought up in step 4 through its home, which
		 * peer_taken() opened).  A second EEXIST is the NIC's.
		 */
		if (r->err == -EEXIST && nic->peer_outer &&
		    nic->peer_home != NO_HOME) {
			nic->peer_outer = false;	/* the name stays picked */
			op->pend[n++] = i;
			continue;
		}
		/* (Still peer-outside: no socket there; fails below.) */
		if (r->err == -EEXIST && nic->naming == VNIC_NAMING_CACHE &&
		    !nic->peer_outer) {
			nic->picked = false;	/* the name stays marked taken */
			op->ctx->stats.name_retries++;
			op->pend[n++] = i;
			continue;
		}
		/* __dev_alloc_name() says its one-page bitmap of suffixes is
		 * full with ENFILE, which reads as the system's file table:
		 * the cache strategy's ENOSPC, as for every full template. */
		e = r->err == -ENFILE && nic->naming == VNIC_NAMING_KERNEL ?
		    -ENOSPC : r->err;
		unpick(op, nic);
		if (!err)
			err = fail(op, e, VNIC_STEP_CREATE, i, r->extack,
				   create_hint(nic, e, hint, sizeof(hint)));
	}
	op->npend = n;
	return err;
}

/* Rounds until every NIC is created: each round learns the names others
 * took and refreshes the table from the monitor; bounded as lib/retry.c
 * says (progress, then the context's name timeout). */
static int create_links(struct op *op)
{
	struct vnic_retry rt;
	unsigned int before;
	char what[96];
	int err;

	vnic_retry_start(&rt, op->ctx->name_deadline);
	for (;;) {
		before = op->npend;
		err = create_round(op);
		if (!err)
			err = create_collect(op);
		if (err || !op->npend)
			return err;
		if (!vnic_retry_again(&rt, op->npend < before))
			break;
		err = homes_refresh(&op->hs);
		if (err)
			return vnic_set_err(op->ctx, err, VNIC_STEP_NAME, -1,
					    NULL, "refreshing the link table");
	}
	snprintf(what, sizeof(what), "names kept being taken by someone else "
		 "(%u rounds, %llu ms)", rt.tries, (unsigned long long)
		 (vnic_now_ms() + op->ctx->name_timeout_ms - rt.deadline));
	return fail(op, -EEXIST, VNIC_STEP_NAME, op->pend[0], NULL, what);
}

/* The tun/tap devices named by the caller (explicit) or by a template. */
static int create_taps(struct op *op, bool explicit)
{
	unsigned int k;
	int err = 0;

	for (k = 0; k < op->ntodo && !err; k++) {
		struct vnic_nic *nic = NIC(op, op->todo[k]);

		if (kind_is_tun(nic->kind) &&
		    (nic->naming == VNIC_NAMING_EXPLICIT) == explicit)
			err = tap_create(op->g, &op->hs, op->todo[k]);
	}
	return err;
}

/* 3. ---------------------------------------------------------------- */

struct mac_match {
	struct op *op;
	unsigned int home;
};

/* A passthru macvlan has its lower's MAC, but is its lower's only one. */
static bool passthru_of(const struct vnic_nic *nic, const struct link_attrs *la)
{
	return nic->mode == MACVLAN_MODE_PASSTHRU && la->link == nic->lower_ifindex &&
	       la->kind && !strcmp(la->kind, kind_link_name(nic->kind));
}

/* Kernel-named links without an echo: the MAC we chose finds them. */
static int mac_cb(const struct nlmsghdr *nlh, void *data)
{
	struct mac_match *m = data;
	struct link_attrs la;
	unsigned int k;

	if (!nlh || link_parse(nlh, &la) || !la.mac || !la.name)
		return 0;
	for (k = 0; k < m->op->ntodo; k++) {
		struct vnic_nic *nic = NIC(m->op, m->op->todo[k]);

		if (nic->created && !nic->ifindex && nic->home == m->home &&
		    (!nic->unsure || la.group == nic->group) &&
		    (!memcmp(nic->birth_mac, la.mac, 6) || passthru_of(nic, &la)))
			nic_learn(nic, &la);
	}
	return 0;
}

static int resolve_home(struct op *op, unsigned int home)
{
	struct mac_match m = { op, home };
	bool need_dump = false;
	unsigned int k;
	char req[1024];
	int err = 0;

	nl_batch_reset(&op->b);
	for (k = 0; k < op->ntodo && !err; k++) {
		struct vnic_nic *nic = NIC(op, op->todo[k]);

		if (!nic->created || nic->ifindex || nic->home != home)
			continue;
		if ((nic->naming == VNIC_NAMING_KERNEL || nic->unsure) &&
		    !kind_is_tun(nic->kind))
			need_dump = true;
		else
			err = batch_add(op, msg_getlink(&op->b, nic->name),
					op->todo[k], msg_learn_cb, nic);
	}
	if (!err)
		err = nl_batch_run(op->hs.h[home].s, &op->b);
	/* The links looked for exist since before the dump began: an
	 * interrupted dump still shows each of them. */
	if (!err && need_dump)
		err = nl_dump(op->hs.h[home].s, link_dump_request(req), mac_cb, &m,
			      NULL, 0);
	return err == NL_DUMP_INTR ? 0 : err;
}

static int resolve_links(struct op *op)
{
	unsigned int k, h;
	int err = 0;

	for (h = 0; h < op->hs.n && !err; h++)
		err = resolve_home(op, h);
	if (err)
		return vnic_set_err(op->ctx, err, VNIC_STEP_RESOLVE, -1, NULL,
				    "learning names and ifindexes");
	for (k = 0; k < op->ntodo; k++) {
		unsigned int i = op->todo[k];

		err = vnic_fault(op->ctx, VNIC_STEP_RESOLVE, i);
		if (err)
			return fail(op, err, VNIC_STEP_RESOLVE, i, NULL, "injected");
		if (!NIC(op, i)->ifindex)
			return fail(op, -ENODEV, VNIC_STEP_RESOLVE, i, NULL,
				    "created but not found");
	}
	return 0;
}

/* 4. ---------------------------------------------------------------- */

static int configure_home(struct op *op, unsigned int home)
{
	char tag[TAG_MAX];
	unsigned int k;
	int err = 0;

	nl_batch_reset(&op->b);
	for (k = 0; k < op->ntodo && !err; k++) {
		unsigned int i = op->todo[k];

		if (NIC(op, i)->home != home)
			continue;
		err = vnic_fault(op->ctx, VNIC_STEP_CONFIGURE, i);
		if (err)
			return fail(op, err, VNIC_STEP_CONFIGURE, i, NULL, "injected");
		tag_format(op->g, NIC(op, i), tag);
		err = batch_add(op, msg_configure(&op->b, NIC(op, i), tag), i,
				NULL, NULL);
	}
	for (k = 0; k < op->ntodo && !err; k++) {
		struct vnic_nic *nic = NIC(op, op->todo[k]);

		if (nic->kind == VNIC_KIND_VETH && nic->peer_up &&
		    !nic->peer_outer && nic->peer_home == home)
			err = batch_add(op, msg_peer_up(&op->b, nic), op->todo[k],
					NULL, NULL);
	}
	if (!err)
		err = nl_batch_run(op->hs.h[home].s, &op->b);
	if (err)
		return vnic_set_err(op->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
				    "tagging");
	for (k = 0; k < op->b.n; k++) {
		struct nl_req *r = &op->b.reqs[k];
		char hint[96];

		/* A caller's MAC is set here, with the tag (see msg.c). */
		if (r->err)
			return fail(op, r->err, VNIC_STEP_CONFIGURE, op->reqnic[k],
				    r->extack, create_hint(NIC(op, op->reqnic[k]),
							   r->err, hint, sizeof(hint)));
	}
	return 0;
}

static int configure_links(struct op *op)
{
	unsigned int h;
	int err = 0;

	for (h = 0; h < op->hs.n && !err; h++)
		err = configure_home(op, h);
	return err;
}

/* ------------------------------------------------------------------ */

static void rollback(struct op *op)
{
	unsigned int k, h, n = 0;

	/* Kernel-named links not yet learned (no echo) are found first: a
	 * link we cannot name is a link we cannot delete. */
	for (h = 0; h < op->hs.n; h++)
		resolve_home(op, h);
	for (k = 0; k < op->ntodo; k++) {
		struct vnic_nic *nic = NIC(op, op->todo[k]);

		unpick(op, nic);
		/* Not found by its birth marks: never made.  (Its name may be
		 * someone else's: it is not deleted by name.) */
		if (nic->unsure && !nic->ifindex)
			nic->created = false;
		nic->unsure = false;
		if (nic->created)
			op->pend[n++] = op->todo[k];
	}
	/* The first error stays the one reported. */
	nics_delete(op->g, op->pend, n);
	for (k = 0; k < op->ntodo; k++) {
		struct vnic_nic *nic = NIC(op, op->todo[k]);

		tap_close(nic);
		nic->created = false;
		nic->ifindex = 0;
		nic->name[0] = '\0';
	}
}

/*
 * A peer beside its NIC shares its home.  One in another namespace needs
 * no socket there: it is named and placed by the create message, and
 * brought up by it as its outer device (msg.c); its home is opened only
 * to ask whether its name is taken (peer_taken()), or for the nested
 * retry an older kernel needs (create_collect()).
 */
static void place_peer(struct vnic_nic *nic)
{
	bool beside = nic_peer_beside(nic);

	nic->peer_home = beside ? nic->home : NO_HOME;
	nic->peer_outer = !beside && nic->peer_up;
}

/*
 * The netlink NICs to create, those named by the caller first: the
 * kernel's "%d" of a NIC sent before them would take the lowest free
 * name, which may be one of theirs (the cache steers clear of them in
 * pick_free()).  The kernel's own order is otherwise the NICs'.
 */
static void order_pending(struct op *op)
{
	unsigned int k, pass;

	for (pass = 0; pass < 2; pass++)
		for (k = 0; k < op->ntodo; k++) {
			struct vnic_nic *nic = NIC(op, op->todo[k]);

			if (!kind_is_tun(nic->kind) &&
			    (nic->naming == VNIC_NAMING_EXPLICIT) == !pass)
				op->pend[op->npend++] = op->todo[k];
		}
}

static int op_init(struct op *op, struct vnic_guest *g)
{
	unsigned int i;
	int err;

	memset(op, 0, sizeof(*op));
	op->g = g;
	op->ctx = g->ctx;
	homes_init(&op->hs, g->ctx);
	nl_batch_init(&op->b);
	op->todo = calloc(g->n + 1, sizeof(*op->todo));
	op->pend = calloc(g->n + 1, sizeof(*op->pend));
	/* Lower lookups, creates, resolves: one request per NIC; tags: two
	 * for a veth whose peer is brought up (its configure, the peer's up). */
	op->reqnic = calloc(2 * g->n + 1, sizeof(*op->reqnic));
	if (!op->todo || !op->pend || !op->reqnic)
		return -ENOMEM;
	for (i = 0; i < g->n; i++) {
		struct vnic_nic *nic = &g->nics[i];

		if (nic->created)
			continue;
		err = homes_get(&op->hs, nic->netns_fd, &nic->home);
		if (!err && nic->kind == VNIC_KIND_VETH)
			place_peer(nic);
		if (err)
			return fail(op, err, VNIC_STEP_SOCKET, i, NULL,
				    "socket in the target namespace");
		op->todo[op->ntodo++] = i;
		op->named |= nic->naming == VNIC_NAMING_EXPLICIT ||
			     nic->kind == VNIC_KIND_VETH;
	}
	order_pending(op);
	if (op->named)
		op->held = calloc(2 * g->n + 1, sizeof(*op->held));
	return op->named && !op->held ? -ENOMEM : 0;
}

static void op_fini(struct op *op)
{
	nl_batch_free(&op->b);
	homes_fini(&op->hs);
	free(op->todo);
	free(op->pend);
	free(op->reqnic);
	free(op->held);
}

static int create_all(struct op *op)
{
	int err;

	err = resolve_lowers(op);
	/* Names asked for by name before any "%d" (order_pending()). */
	if (!err)
		err = create_taps(op, true);
	if (!err)
		err = create_links(op);
	if (!err)
		err = create_taps(op, false);
	if (!err)
		err = resolve_links(op);
	if (!err)
		err = configure_links(op);
	if (!err)
		err = taps_persist(op->g, op->todo, op->ntodo);
	return err;
}

VNIC_EXPORT int vnic_guest_create(struct vnic_guest *g)
{
	struct op op;
	int err;

	if (!g)
		return -EINVAL;
	vnic_clear_err(g->ctx);
	g->ctx->name_deadline = vnic_now_ms() + g->ctx->name_timeout_ms;
	err = op_init(&op, g);
	if (!err && op.ntodo)
		err = create_all(&op);
	if (err) {
		if (!g->ctx->err.err)
			vnic_set_err(g->ctx, err, VNIC_STEP_CREATE, -1, NULL, "guest %s", g->name);
		rollback(&op);
	}
	op_fini(&op);
	return err;
}
