// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The NICs of a policy as devices: their ifindexes, and each device named
 * once.  Both backends key what they write by ifindex, so a NIC renamed,
 * or deleted and made again, is another device.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <net/if.h>

#include "lib/linkcache.h"
#include "policy/model.h"

/* NIC name's ifindex into *ifindex: from the table when it has the name,
 * with its kind into *kind, else by SIOCGIFINDEX (which also finds an
 * altname) on the socket *fd, made on first use, and *kind 0 (unknown).
 * 0, or a negative errno (with a message when the socket could not be
 * made). */
static int nic_ifindex(struct vnic_ctx *ctx, const struct linkcache *lc, int *fd,
		       const char *name, int *ifindex, int *kind)
{
	struct ifreq ifr;
	int s;

	*ifindex = lc ? linkcache_ifindex(lc, name) : 0;
	*kind = *ifindex ? linkcache_kind(lc, *ifindex) : 0;
	if (*ifindex)
		return 0;
	s = vnic_ifsock(ctx, fd);
	if (s < 0)
		return s;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, IFNAMSIZ);
	ctx->stats.ioctls++;
	if (ioctl(s, SIOCGIFINDEX, &ifr) < 0)
		return -errno;
	*ifindex = ifr.ifr_ifindex;
	return 0;
}

/*
 * The kind decides the hooks a NIC is filtered on (by name: ingress of a
 * veth or tap, egress of a macvtap or macvlan), so a veth host end said
 * to be a macvtap would have its guest's frames pass unfiltered and the
 * frames to it judged as its guest's.  Only the link table knows the
 * device's kind; kind 0 is not checked: a name asked of the kernel (whose
 * SIOCGIFINDEX says nothing of kinds: a system call more per NIC to learn
 * it would cost as much as the lookup), or a kind libvnic does not make.
 */
static int check_kind(struct vnic_ctx *ctx, const struct pguest *g,
		      const struct pnic *nic, int kind)
{
	if (!kind || kind == (int)nic->kind)
		return 0;
	return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
			    "guest %s: NIC %s is declared %s, but the device is a "
			    "%s (the kind decides the hooks its guest's frames "
			    "are filtered on); nothing was changed", g->name,
			    nic->ifname, vnic_kind_name(nic->kind),
			    vnic_kind_name((enum vnic_kind)kind));
}

/*
 * A runtime that names its NICs by the link table (VNIC_NAMING_CACHE, or
 * after vnic_ctx_refresh()) has every link's ifindex in memory, kept by
 * the table's monitor: 4,000 lookups there took about 0.15 ms (perf),
 * where 4,000 SIOCGIFINDEX calls take 1.6-1.9 ms (a fifth of a whole
 * apply by prefix).
 * The table is read only while exact: a monitor that lost events, or a
 * context without one, is not trusted, and a name it lacks (an altname, a
 * link made since) is asked of the kernel.  What the kernel itself may
 * change between this lookup and the commit is the same either way.
 */
int policy_resolve_nics(struct vnic_ctx *ctx, const struct vnic_policy *p,
			int *fd, int **ifi_out, unsigned int **off_out)
{
	const struct linkcache *lc = vnic_ctx_exact_links(ctx);
	unsigned int gi, k, total = 0, *off;
	int *ifi, kind, err = 0;

	off = calloc(p->n + 1, sizeof(*off));
	for (gi = 0; off && gi < p->n; gi++) {
		off[gi] = total;
		total += p->g[gi]->nn;
	}
	ifi = calloc(total + 1, sizeof(*ifi));
	if (!off || !ifi) {
		err = vnic_set_err(ctx, -ENOMEM, VNIC_STEP_VALIDATE, -1, NULL,
				   "out of memory for the NICs of the policy");
		goto out;
	}
	off[p->n] = total;
	for (gi = 0; gi < p->n && !err; gi++)
		for (k = 0; k < p->g[gi]->nn && !err; k++) {
			err = nic_ifindex(ctx, lc, fd, p->g[gi]->nics[k].ifname,
					  &ifi[off[gi] + k], &kind);
			if (err && *fd >= 0)	/* else the socket's message */
				vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL,
					     "guest %s: NIC %s", p->g[gi]->name,
					     p->g[gi]->nics[k].ifname);
			if (!err)
				err = check_kind(ctx, p->g[gi], &p->g[gi]->nics[k], kind);
		}
	if (!err)
		err = policy_each_device_once(ctx, p, ifi, off);
out:
	if (err) {
		free(off);
		free(ifi);
		return err;
	}
	*ifi_out = ifi;
	*off_out = off;
	return 0;
}

/* The guest and NIC of position i of ifi. */
static const struct pnic *nic_at(const struct vnic_policy *p, const unsigned int *off,
				 unsigned int i, const char **guest)
{
	unsigned int gi = 0;

	while (off[gi + 1] <= i)
		gi++;
	*guest = p->g[gi]->name;
	return &p->g[gi]->nics[i - off[gi]];
}

/* The first ifindex that ifi holds twice, 0 if none, -ENOMEM: one pass
 * over an open-addressed set twice the NICs' size, on every apply's path
 * (4,000 NICs: 3-5 µs, where a sort of a copy took 47 µs; a throwaway
 * program).  Ifindexes are > 0, so 0 marks a free slot. */
static int first_dup(const int *ifi, unsigned int total)
{
	unsigned int size = 16, i, h;
	int dup = 0, *set;

	while (size < 2 * total)
		size *= 2;
	set = calloc(size, sizeof(*set));
	if (!set)
		return -ENOMEM;
	for (i = 0; i < total && !dup; i++) {
		h = ((uint32_t)ifi[i] * 2654435761u) & (size - 1);
		while (set[h] && set[h] != ifi[i])
			h = (h + 1) & (size - 1);
		if (set[h])
			dup = ifi[i];
		set[h] = ifi[i];
	}
	free(set);
	return dup;
}

/*
 * The policy's own checks compare names; a backend keys what it writes by
 * device, so two guests naming one device (by its name and an altname)
 * would share it: the union of their addresses allowed there, and removing
 * either guest would unfilter the other.
 */
int policy_each_device_once(struct vnic_ctx *ctx, const struct vnic_policy *p,
			    const int *ifi, const unsigned int *off)
{
	unsigned int total = off[p->n], i, j;
	const struct pnic *x, *y;
	const char *gx, *gy;
	int dup;

	if (total < 2)
		return 0;
	dup = first_dup(ifi, total);
	if (dup < 0)
		return vnic_set_err(ctx, dup, VNIC_STEP_VALIDATE, -1, NULL,
				    "out of memory checking the NICs' devices");
	if (!dup)
		return 0;
	for (i = 0; ifi[i] != dup; i++)
		;
	for (j = i + 1; ifi[j] != dup; j++)
		;
	x = nic_at(p, off, i, &gx);
	y = nic_at(p, off, j, &gy);
	return vnic_set_err(ctx, -EEXIST, VNIC_STEP_VALIDATE, -1, NULL,
			    "guest %s: NIC %s is the device of guest %s's NIC %s "
			    "(ifindex %d, another name of it); nothing was changed",
			    gy, y->ifname, gx, x->ifname, dup);
}
