// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tun/tap devices.  TUNSETIFF is the only way to make one; it resolves "%d"
 * itself and returns the name.  IFF_TUN_EXCL makes an existing name fail
 * (EBUSY) instead of silently attaching to someone else's persistent tap.
 * The fds are opened in the device's namespace, so the device is born there.
 *
 * Crash safety by order: TUNSETIFF cannot set a link group or an alias, so
 * a device is made without IFF_PERSIST and lives only as long as our fds
 * (a creator killed now takes it along); it is tagged and grouped with the
 * other NICs (create.c, step 4), and only then made persistent
 * (taps_persist()).  No persistent tap ever exists without its marks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>

#include "allocator/tap.h"
#include "lib/linkcache.h"

struct tap_args {
	struct vnic_nic *nic;
	struct vnic_ctx_stats *stats;
	const char *name;		/* exact or template */
	int *fds;
	char result[IFNAMSIZ];
};

static short tun_flags(const struct vnic_nic *nic)
{
	short f = nic->kind == VNIC_KIND_TAP ? IFF_TAP : IFF_TUN;

	if (nic->tap_flags & VNIC_TAP_NO_PI)
		f |= IFF_NO_PI;
	if (nic->tap_flags & VNIC_TAP_VNET_HDR)
		f |= IFF_VNET_HDR;
	if (nic->tap_flags & VNIC_TAP_MULTI_QUEUE)
		f |= IFF_MULTI_QUEUE;
	return f;
}

static int tun_ioctl(struct tap_args *a, int fd, unsigned long req, void *arg)
{
	a->stats->ioctls++;
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

static int tun_attach(struct tap_args *a, unsigned int q, short excl)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", q ? a->result : a->name);
	ifr.ifr_flags = (short)(tun_flags(a->nic) | excl);
	err = tun_ioctl(a, fd, TUNSETIFF, &ifr);
	if (err) {
		close(fd);
		return err;
	}
	if (!q)
		snprintf(a->result, sizeof(a->result), "%s", ifr.ifr_name);
	a->fds[q] = fd;
	return 0;
}

static int tun_setup(struct tap_args *a)
{
	const struct vnic_nic *nic = a->nic;
	int fd = a->fds[0], err = 0;

	if (nic->owner_set && nic->owner_uid >= 0)
		err = tun_ioctl(a, fd, TUNSETOWNER, (void *)(unsigned long)nic->owner_uid);
	if (!err && nic->owner_set && nic->owner_gid >= 0)
		err = tun_ioctl(a, fd, TUNSETGROUP, (void *)(unsigned long)nic->owner_gid);
	return err;
}

static void close_fds(int *fds, unsigned int n)
{
	while (n--)
		if (fds[n] >= 0)
			close(fds[n]);
}

/* Runs in the device's namespace. */
static int tap_open_fn(void *arg)
{
	struct tap_args *a = arg;
	unsigned int q;
	int err;

	for (q = 0; q < a->nic->queues; q++)
		a->fds[q] = -1;
	err = tun_attach(a, 0, IFF_TUN_EXCL);
	if (!err)
		err = tun_setup(a);
	for (q = 1; !err && q < a->nic->queues; q++)
		err = tun_attach(a, q, 0);
	/* Not persistent yet: the device goes with its fds. */
	if (err)
		close_fds(a->fds, a->nic->queues);
	return err;
}

static int tap_try(struct vnic_guest *g, struct homes *hs, unsigned int i,
		   const char *name)
{
	struct vnic_nic *nic = &g->nics[i];
	struct tap_args a = { nic, &g->ctx->stats, name, nic->fds, "" };
	int err;

	err = vnic_in_netns(hs->h[nic->home].nsfd >= 0 ? hs->h[nic->home].nsfd :
			    g->ctx->netns_fd, tap_open_fn, &a);
	if (!err) {
		snprintf(nic->name, sizeof(nic->name), "%s", a.result);
		nic->nfds = nic->queues;
		nic->created = true;
	}
	return err;
}

static int tap_fail(struct vnic_guest *g, int err, enum vnic_step step,
		    unsigned int i, const char *what)
{
	return vnic_set_err(g->ctx, err, step, (int)i, NULL, "%s %s: %s",
			    vnic_kind_name(g->nics[i].kind), g->nics[i].tmpl, what);
}

/* Cache naming: a picked name taken meanwhile (EBUSY) is marked, retried. */
static int tap_create_cached(struct vnic_guest *g, struct homes *hs, unsigned int i)
{
	struct vnic_nic *nic = &g->nics[i];
	char prefix[IFNAMSIZ], name[IFNAMSIZ];
	struct linkcache *lc;
	struct vnic_retry rt;
	int err;

	name_prefix(nic->tmpl, prefix);
	vnic_retry_start(&rt, g->ctx->name_deadline);
	do {
		err = homes_linkcache(hs, nic->home, &lc);
		if (!err)
			err = linkcache_pick(lc, prefix, &nic->suffix);
		if (err)
			return tap_fail(g, err, VNIC_STEP_NAME, i, "no free name");
		name_format(name, prefix, nic->suffix);
		err = tap_try(g, hs, i, name);
		if (err != -EBUSY)
			break;
		g->ctx->stats.name_retries++;
		homes_refresh(hs);
	} while (vnic_retry_again(&rt, false));
	if (err == -EBUSY)
		/* Given up as create.c gives up on netlink names: -EEXIST,
		 * at the naming step (guest.h). */
		return vnic_set_err(g->ctx, -EEXIST, VNIC_STEP_NAME, (int)i, NULL,
				    "%s %s: names kept being taken by someone else "
				    "(%u rounds, %llu ms)", vnic_kind_name(nic->kind),
				    nic->tmpl, rt.tries, (unsigned long long)
				    (vnic_now_ms() + g->ctx->name_timeout_ms - rt.deadline));
	if (err) {
		linkcache_unpick(lc, prefix, nic->suffix);
		return tap_fail(g, err, VNIC_STEP_CREATE, i, "TUNSETIFF");
	}
	return 0;
}

int tap_create(struct vnic_guest *g, struct homes *hs, unsigned int i)
{
	struct vnic_nic *nic = &g->nics[i];
	int err;

	if ((err = vnic_fault(g->ctx, VNIC_STEP_NAME, i)))
		return tap_fail(g, err, VNIC_STEP_NAME, i, "injected");
	if ((err = vnic_fault(g->ctx, VNIC_STEP_CREATE, i)))
		return tap_fail(g, err, VNIC_STEP_CREATE, i, "injected");
	nic->fds = calloc(nic->queues, sizeof(*nic->fds));
	if (!nic->fds)
		return -ENOMEM;
	if (nic->naming == VNIC_NAMING_CACHE)
		err = tap_create_cached(g, hs, i);
	else if ((err = tap_try(g, hs, i, nic->tmpl)))
		/* EBUSY from IFF_TUN_EXCL means the name exists. */
		err = tap_fail(g, err == -EBUSY ? -EEXIST : err, VNIC_STEP_CREATE,
			       i, "TUNSETIFF");
	if (!err && (err = vnic_fault(g->ctx, VNIC_STEP_OPEN, i)))
		tap_fail(g, err, VNIC_STEP_OPEN, i, "injected");
	return err;
}

int taps_persist(struct vnic_guest *g, const unsigned int *idx, unsigned int n)
{
	struct tap_args a = { .stats = &g->ctx->stats };
	unsigned int k;
	int err;

	for (k = 0; k < n; k++) {
		struct vnic_nic *nic = &g->nics[idx[k]];

		if (!kind_is_tun(nic->kind) || !(nic->tap_flags & VNIC_TAP_PERSIST) ||
		    !nic->nfds)
			continue;
		a.nic = nic;
		err = tun_ioctl(&a, nic->fds[0], TUNSETPERSIST, (void *)1ul);
		if (err)
			return vnic_set_err(g->ctx, err, VNIC_STEP_CONFIGURE, (int)idx[k],
					    NULL, "%s %s: TUNSETPERSIST",
					    vnic_kind_name(nic->kind), nic->name);
	}
	return 0;
}

void tap_close(struct vnic_nic *nic)
{
	close_fds(nic->fds, nic->nfds);
	free(nic->fds);
	nic->fds = NULL;
	nic->nfds = 0;
}
