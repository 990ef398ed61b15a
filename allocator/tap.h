/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tun/tap devices: made through /dev/net/tun, which rtnetlink cannot do. */
#ifndef VNIC_ALLOC_TAP_H
#define VNIC_ALLOC_TAP_H

#include "allocator/homes.h"

/* Create g->nics[i] in its namespace and open its queue fds. */
int tap_create(struct vnic_guest *g, struct homes *hs, unsigned int i);
/* Make the persistent ones among g->nics[idx[0..n-1]] persistent, once
 * they are tagged. */
int taps_persist(struct vnic_guest *g, const unsigned int *idx, unsigned int n);
/* Close the queue fds still held. */
void tap_close(struct vnic_nic *nic);

#endif /* VNIC_ALLOC_TAP_H */
