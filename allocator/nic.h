/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Allocator internals: a guest and its NICs. */
#ifndef VNIC_ALLOC_NIC_H
#define VNIC_ALLOC_NIC_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <vnic/guest.h>

#include "lib/internal.h"

#define GUEST_NAME_MAX	64
#define TAG_PREFIX	"vnic:"
/* "vnic:" owner(32) ':' guest(64) ':' index(10) */
#define TAG_MAX		(5 + 32 + 1 + GUEST_NAME_MAX + 1 + 10 + 1)

struct vnic_nic {
	enum vnic_kind kind;
	enum vnic_naming naming;	/* resolved: never AUTO */
	char tmpl[IFNAMSIZ];		/* exact name or "prefix%d" */
	char lower[IFNAMSIZ];		/* by name; or ... */
	int lower_ifindex;		/* ... resolved at create */
	uint32_t lower_mtu;		/* learnt with it, 0: unknown */
	uint32_t mode;			/* MACVLAN_MODE_* */
	uint8_t mac[6];
	bool mac_given;
	uint32_t mtu;
	bool up;
	int netns_fd;			/* owned dup, -1: the context's */
	char peer_name[IFNAMSIZ];
	int peer_netns_fd;		/* owned dup, -1: the context's */
	uint8_t peer_mac[6];
	bool peer_up;
	uint32_t tap_flags, queues;
	bool owner_set;
	int64_t owner_uid, owner_gid;

	unsigned int tag;		/* INDEX in its alias tag */

	/* What it became. */
	char name[IFNAMSIZ];
	int ifindex;
	bool created;
	int *fds;			/* tap/tun queue fds not yet handed over */
	unsigned int nfds;

	/* Scratch of one create call. */
	bool picked;			/* name came from a cache pick */
	uint32_t suffix;
	unsigned int home;		/* index in the call's homes */
	unsigned int peer_home;		/* veth: where the peer lives */
};

struct vnic_guest {
	struct vnic_ctx *ctx;
	char name[GUEST_NAME_MAX + 1];
	struct vnic_nic *nics;
	unsigned int n, cap;
	unsigned int next_tag;		/* tag of the next NIC added */
};

/* names.c */
const char *kind_default_template(enum vnic_kind kind);
/* Is this a kind made through /dev/net/tun? */
bool kind_is_tun(enum vnic_kind kind);
const char *kind_link_name(enum vnic_kind kind);	/* IFLA_INFO_KIND */
uint64_t kind_feature(enum vnic_kind kind);

/* guest.c */
void nic_release(struct vnic_nic *nic);
void tag_format(const struct vnic_guest *g, const struct vnic_nic *nic, char *buf);
struct vnic_guest *guest_alloc(struct vnic_ctx *ctx, const char *name);
int guest_push_nic(struct vnic_guest *g, struct vnic_nic **out);

/* delete.c: RTM_DELLINK for the given NICs (those marked created), grouped
 * by namespace; -ENODEV (already gone) counts as done. */
int nics_delete(struct vnic_guest *g, const unsigned int *idx, unsigned int n);

#endif /* VNIC_ALLOC_NIC_H */
