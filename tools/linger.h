/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Closing a filter handle without waiting for the kernel's deferred
 * destruction of the last commit (a grandchild keeper waits instead),
 * shared by vnicctl and vnic-cni (linger.c says why and how).
 */
#ifndef VNIC_TOOLS_LINGER_H
#define VNIC_TOOLS_LINGER_H

#include <vnic/vnic.h>

/* Start the keeper of f's nfnetlink sockets ahead of the close (once per
 * handle; nothing for a bpf handle). */
void filter_linger(struct vnic_filter *f);
/* filter_linger(f), then vnic_filter_close(f): the close does not wait. */
void filter_close(struct vnic_filter *f);

#endif
