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
	bool lower_ether;		/* the lower is an Ethernet device */
	uint32_t mode;			/* MACVLAN_MODE_* */
	uint8_t mac[6];
	bool mac_given;
	uint8_t birth_mac[6];		/* created with: mac, or when the caller
					 * gave mac, a marked one until step 4 */
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
	uint32_t group;			/* IFLA_GROUP: its owner's mark */

	/* What it became. */
	char name[IFNAMSIZ];
	int ifindex;
	bool created;
	int *fds;			/* tap/tun queue fds not yet handed over */
	unsigned int nfds;
	bool adopted;			/* found by its tag: never held fds here */

	/* Scratch of one create call. */
	bool picked;			/* name came from a cache pick */
	uint32_t suffix;
	unsigned int home;		/* index in the call's homes */
	unsigned int peer_home;		/* veth: where the peer lives, or
					 * NO_HOME: not opened (yet) */
	bool peer_outer;		/* veth: the peer is RTM_NEWLINK's
					 * outer device (msg.c) */
	bool unsure;			/* created, or not: its create's ack
					 * was lost (found by its birth MAC
					 * and group, never by name) */
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

/* spec.c: whether a veth's peer lives in its NIC's namespace. */
bool nic_peer_beside(const struct vnic_nic *nic);

/* guest.c */
void nic_release(struct vnic_nic *nic);
struct vnic_guest *guest_alloc(struct vnic_ctx *ctx, const char *name);
int guest_push_nic(struct vnic_guest *g, struct vnic_nic **out);

/* tag.c: the alias tag "vnic:OWNER:GUEST:INDEX" (buf: TAG_MAX bytes). */
void tag_format(const struct vnic_guest *g, const struct vnic_nic *nic, char *buf);
/* 0 with guest (GUEST_NAME_MAX + 1 bytes) and *idx when alias is a tag of
 * owner in canonical form, else -1 with nothing written. */
int tag_parse(const char *alias, const char *owner, char *guest,
	      unsigned int *idx);

/* mark.c: what marks a NIC as the owner's from its creation on. */
enum mark_role { MARK_NIC, MARK_PEER };	/* a NIC, or a veth's peer end */
/* The link group of the owner's NICs, and the one they are moved into to
 * be deleted; mark_group_is() accepts both. */
uint32_t mark_group(const char *owner);
uint32_t mark_group_dying(const char *owner);
bool mark_group_is(const char *owner, uint32_t group);
/* A random MAC carrying the owner's check for role; the test for it. */
int mark_mac(const char *owner, enum mark_role role, uint8_t mac[6]);
bool mark_mac_is(const char *owner, enum mark_role role, const uint8_t mac[6]);

/* delete.c: RTM_DELLINK for the given NICs (those marked created), grouped
 * by namespace; -ENODEV (already gone) counts as done. */
int nics_delete(struct vnic_guest *g, const unsigned int *idx, unsigned int n);

#endif /* VNIC_ALLOC_NIC_H */
