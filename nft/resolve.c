// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The NICs of a policy resolved to their ifindexes (elements are keyed by
 * ifindex, so a NIC renamed or made again is a different NIC), and a
 * guest's digest over its policy and those ifindexes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <net/if.h>
#include <linux/rtnetlink.h>

#include "lib/link.h"
#include "nft/internal.h"

void resolved_free(struct resolved *r)
{
	free(r->ifi);
	free(r->off);
}

/* The socket for SIOCGIFINDEX/SIOCGIFNAME, made in the context's netns. */
int ifsock_get(struct vnic_nft *n)
{
	int fd = vnic_ifsock(n->ctx, &n->ifsock);

	return fd < 0 ? fd : 0;
}

/*
 * Every NIC of p by name, ifi[off[g] + k] being guest g's NIC k:
 * SIOCGIFINDEX on a socket of the context's namespace costs a name lookup,
 * where an RTM_GETLINK reply carries the whole link (a sync of 100
 * unchanged guests spent most of its time there).  A NIC that does not
 * exist fails here, before anything is sent.
 */
int resolve_policy(struct vnic_nft *n, const struct vnic_policy *p,
		   struct resolved *r)
{
	unsigned int gi, k, total = 0;
	int err = 0;

	r->off = calloc(p->n + 1, sizeof(*r->off));
	for (gi = 0; r->off && gi < p->n; gi++) {
		r->off[gi] = total;
		total += p->g[gi]->nn;
	}
	r->ifi = calloc(total + 1, sizeof(*r->ifi));
	if (!r->off || !r->ifi)
		return -ENOMEM;
	r->off[p->n] = total;
	err = ifsock_get(n);
	if (err)
		return err;
	for (gi = 0; gi < p->n; gi++)
		for (k = 0; k < p->g[gi]->nn; k++) {
			struct ifreq ifr;

			memset(&ifr, 0, sizeof(ifr));
			memcpy(ifr.ifr_name, p->g[gi]->nics[k].ifname, IFNAMSIZ);
			n->ctx->stats.ioctls++;
			if (ioctl(n->ifsock, SIOCGIFINDEX, &ifr) < 0)
				return vnic_set_err(n->ctx, -errno, VNIC_STEP_VALIDATE,
						    -1, NULL, "guest %s: NIC %s",
						    p->g[gi]->name,
						    p->g[gi]->nics[k].ifname);
			r->ifi[r->off[gi] + k] = ifr.ifr_ifindex;
		}
	return 0;
}

/* A guest's digest covers its NICs' ifindexes too: a NIC deleted and made
 * again under its name is a change (its elements are keyed by ifindex). */
uint64_t guest_digest(const struct pguest *g, const int *ifi)
{
	return vnic_hash64(ifi, g->nn * sizeof(*ifi), pguest_digest(g));
}

