// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Queue fds for a hypervisor.
 *
 * A macvtap's queues are opens of its character device, which devtmpfs
 * names /dev/tap<ifindex>.  But /dev is shared by every network namespace
 * and ifindexes are not: the node may belong to another namespace's macvtap
 * that got the same ifindex first, and opening it would hand the hypervisor
 * someone else's traffic.  So the device number is read from a sysfs mounted
 * for the NIC's own namespace, and opened through a node of our own, both in
 * a short-lived thread with a private mount namespace that vanishes with it.
 * Without the privilege for that (CAP_SYS_ADMIN), /dev/tap<ifindex> is
 * opened and each fd asked for its device's name and MAC, which must be
 * those the NIC has now: a name and ifindex alone are often the same in
 * two namespaces made alike, a MAC rarely (ours are random; only a MAC
 * the caller gave twice, with the same name and ifindex, fools it).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/if_tun.h>

#include "allocator/msg.h"
#include "allocator/tap.h"
#include "lib/link.h"

#define PRIVATE_NODE "/dev/vnic-tap"
#define MAX_QUEUES 256u		/* the kernel's MAX_TAP_QUEUES */

struct mvt_open {
	const struct vnic_nic *nic;
	int *fds;
	unsigned int n;
	unsigned int opened;
	char other[IFNAMSIZ];		/* the device a foreign node is of */
};

static int open_n(struct mvt_open *a, const char *path)
{
	for (a->opened = 0; a->opened < a->n; a->opened++) {
		a->fds[a->opened] = open(path, O_RDWR | O_CLOEXEC);
		if (a->fds[a->opened] < 0)
			return -errno;
	}
	return 0;
}

/* Close what open_n() opened; none is open afterwards. */
static void close_opened(struct mvt_open *a)
{
	for (; a->opened; a->opened--)
		close(a->fds[a->opened - 1]);
}

static int read_devt(const struct vnic_nic *nic, dev_t *devt)
{
	unsigned int maj, min;
	char path[96], buf[32];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/macvtap/tap%d/dev",
		 nic->name, nic->ifindex);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	buf[len] = '\0';
	if (sscanf(buf, "%u:%u", &maj, &min) != 2)
		return -EIO;
	*devt = makedev(maj, min);
	return 0;
}

/* Runs in its own thread, already in the NIC's network namespace. */
static int private_open_fn(void *arg)
{
	struct mvt_open *a = arg;
	dev_t devt = 0;
	int err;

	if (unshare(CLONE_FS | CLONE_NEWNS) < 0)
		return -errno;
	/* Nothing mounted here may propagate back to the caller's world. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL) < 0)
		return -errno;
	err = read_devt(a->nic, &devt);
	if (err)
		return err == -ENOENT ? -ENODEV : err;
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0700") < 0)
		return -errno;
	if (mknod(PRIVATE_NODE, S_IFCHR | 0600, devt) < 0)
		return -errno;
	return open_n(a, PRIVATE_NODE);
}

static bool no_privilege(int err)
{
	return err == -EPERM || err == -EACCES;
}

/* A NIC's name and MAC, as its queue fds must report them. */
struct ident {
	char name[IFNAMSIZ];
	uint8_t mac[6];
	bool found;
};

static int ident_cb(const struct nlmsghdr *nlh, void *data)
{
	struct ident *id = data;
	struct link_attrs la;

	if (!link_parse(nlh, &la) && la.name && la.mac) {
		snprintf(id->name, sizeof(id->name), "%s", la.name);
		memcpy(id->mac, la.mac, 6);
		id->found = true;
	}
	return 0;
}

/*
 * What the NIC is now, asked by ifindex where the context's socket lives
 * (a queue's holder may have set its MAC through the fd since, someone
 * renamed it): -ENODEV if it is gone.  A NIC in another namespace, where
 * no socket can be opened without the privilege, as it was made.
 */
static int nic_ident(struct vnic_ctx *ctx, const struct vnic_nic *nic,
		     struct ident *id)
{
	struct nlmsghdr *nlh;
	struct nl_batch b;
	int err;

	snprintf(id->name, sizeof(id->name), "%s", nic->name);
	memcpy(id->mac, nic->mac, 6);
	if (nic->netns_fd >= 0)
		return 0;
	nl_batch_init(&b);
	nlh = msg_getlink_index(&b, nic->ifindex);
	err = nlh ? nl_batch_end(&b, nlh, ident_cb, id) : -ENOMEM;
	if (!err)
		err = nl_batch_run(&ctx->nl, &b);
	if (!err)
		err = b.reqs[0].err ? b.reqs[0].err : id->found ? 0 : -ENODEV;
	nl_batch_free(&b);
	return err;
}

/* The fallback: the shared node, each fd checked against the NIC. */
static int shared_open(struct vnic_ctx *ctx, struct mvt_open *a)
{
	struct ident id = { .found = false };
	char path[32];
	unsigned int q;
	int err;

	err = nic_ident(ctx, a->nic, &id);
	snprintf(path, sizeof(path), "/dev/tap%d", a->nic->ifindex);
	if (!err)
		err = open_n(a, path);
	/* No node: the macvtap is gone, as the private path finds it. */
	if (err == -ENOENT)
		err = -ENODEV;
	for (q = 0; !err && q < a->n; q++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		ctx->stats.ioctls++;
		/* tap_ioctl() answers with its device's name and MAC. */
		if (ioctl(a->fds[q], SIOCGIFHWADDR, &ifr) < 0)
			err = -errno;
		else if (strncmp(ifr.ifr_name, id.name, IFNAMSIZ) ||
			 memcmp(ifr.ifr_hwaddr.sa_data, id.mac, 6)) {
			memcpy(a->other, ifr.ifr_name, IFNAMSIZ);
			a->other[IFNAMSIZ - 1] = '\0';
			err = -ESTALE;
		}
	}
	return err;
}

static int open_macvtap(struct vnic_guest *g, unsigned int idx, int *out,
			unsigned int n)
{
	struct vnic_nic *nic = &g->nics[idx];
	struct mvt_open a = { .nic = nic, .n = n };
	int nsfd = nic->netns_fd >= 0 ? nic->netns_fd : g->ctx->netns_fd;
	int err;

	a.fds = calloc(n, sizeof(*a.fds));
	if (!a.fds)
		return -ENOMEM;
	err = vnic_fault(g->ctx, VNIC_STEP_OPEN, 0);
	if (!err)
		err = vnic_in_thread(nsfd, private_open_fn, &a);
	if (no_privilege(err)) {
		close_opened(&a);
		err = shared_open(g->ctx, &a);
	}
	if (err) {
		close_opened(&a);
		free(a.fds);
		return vnic_set_err(g->ctx, err, VNIC_STEP_OPEN, (int)idx, NULL,
				    "queues of macvtap %s (ifindex %d)%s%s", nic->name,
				    nic->ifindex, err == -ESTALE ? ": its node is of another "
				    "namespace's " : "", err == -ESTALE ? a.other : "");
	}
	memcpy(out, a.fds, n * sizeof(*out));
	free(a.fds);
	return 0;
}

/* tun/tap fds were opened at creation: hand over n, close the rest. */
static int take_tap(struct vnic_guest *g, unsigned int idx, int *fds,
		    unsigned int n)
{
	struct vnic_nic *nic = &g->nics[idx];
	unsigned int q;

	if (!nic->nfds)
		return vnic_set_err(g->ctx, -ENOENT, VNIC_STEP_OPEN, (int)idx, NULL,
				    "%s: %s", nic->name, nic->adopted ?
				    "adopted: its fds were its creator's, none are held here" :
				    "queue fds were handed over already");
	if (n > nic->nfds)
		return vnic_set_err(g->ctx, -EINVAL, VNIC_STEP_OPEN, (int)idx, NULL,
				    "%s has %u queues", nic->name, nic->nfds);
	for (q = 0; q < n; q++)
		fds[q] = nic->fds[q];
	for (; q < nic->nfds; q++)
		close(nic->fds[q]);
	free(nic->fds);
	nic->fds = NULL;
	nic->nfds = 0;
	return 0;
}

VNIC_EXPORT int vnic_guest_nic_open_queues(struct vnic_guest *g, unsigned int idx,
					   int *fds, unsigned int n)
{
	struct vnic_nic *nic;

	if (!g)
		return -EINVAL;
	vnic_clear_err(g->ctx);
	/* Every refusal says why, like every other call on a context. */
	if (idx >= g->n)
		return vnic_set_err(g->ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "no nic %u: the guest has %u", idx, g->n);
	if (!fds || !n)
		return vnic_set_err(g->ctx, -EINVAL, VNIC_STEP_VALIDATE, (int)idx,
				    NULL, "asked for %u queue fds%s", n,
				    fds ? "" : " into no array");
	/* The kernel's MAX_TAP_QUEUES: the 257th open would be a bare EBUSY. */
	if (n > MAX_QUEUES)
		return vnic_set_err(g->ctx, -EINVAL, VNIC_STEP_VALIDATE, (int)idx,
				    NULL, "asked for %u queue fds, at most %u", n,
				    MAX_QUEUES);
	nic = &g->nics[idx];
	if (!nic->created)
		return vnic_set_err(g->ctx, -ENODEV, VNIC_STEP_OPEN, (int)idx, NULL,
				    "not created");
	if (nic->kind == VNIC_KIND_MACVTAP)
		return vnic_err_fallback(g->ctx, open_macvtap(g, idx, fds, n),
					 VNIC_STEP_OPEN, "macvtap queues");
	if (kind_is_tun(nic->kind))
		return vnic_err_fallback(g->ctx, take_tap(g, idx, fds, n),
					 VNIC_STEP_OPEN, "tap queues");
	return vnic_set_err(g->ctx, -EOPNOTSUPP, VNIC_STEP_OPEN, (int)idx, NULL,
			    "%s has no queue fds", vnic_kind_name(nic->kind));
}
