/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The filter policy as the backends read it (see include/vnic/policy.h). */
#ifndef VNIC_POLICY_MODEL_H
#define VNIC_POLICY_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>
#include <vnic/policy.h>

#include "lib/internal.h"
#include "lib/strmap.h"

#define POLICY_GUEST_MAX	64	/* guest name length */
#define POLICY_ADDRS_MAX	64	/* addresses per family per NIC */
#define POLICY_RULES_MAX	64	/* custom rules per guest */

struct pnic {
	char ifname[IFNAMSIZ];
	enum vnic_kind kind;
	uint8_t mac[6];
	struct in_addr *v4;
	unsigned int n4;
	struct in6_addr *v6;		/* the given ones, then the link-local */
	unsigned int n6;
	uint32_t sw;
};

struct prule {
	uint8_t l4proto;
	uint16_t pmin, pmax;		/* 0, 0: any */
	int family;			/* 0: any address, AF_INET, AF_INET6 */
	uint8_t addr[16];		/* masked to plen */
	uint8_t plen;
	bool accept;
};

struct pguest {
	char name[POLICY_GUEST_MAX + 1];
	uint32_t sw;
	struct pnic *nics;
	unsigned int nn, capn;
	struct prule *rules;
	unsigned int nr, capr;
	bool packed;			/* pguest_dup(): one allocation */
};

struct vnic_policy {
	/* Where errors go: the caller's context, or own_err's. */
	struct vnic_ctx *ctx;
	/* Made without a context (validation only): a bare context of its
	 * own, no socket, used for its error record alone. */
	struct vnic_ctx *own_err;
	struct pguest **g;		/* stable addresses: the maps borrow names */
	unsigned int n, cap;
	struct strmap guests;		/* name -> index in g */
	struct strmap ifnames;		/* NIC ifname -> guest index */
	char **keys;			/* ifname copies the map borrows */
	unsigned int nkeys, capkeys;
};

/* Digest of one guest's policy, stable across processes and builds. */
uint64_t pguest_digest(const struct pguest *g);
/* The bytes pguest_digest() hashes (vnic_hash64() from VNIC_HASH_INIT of
 * them is the digest), into out of pguest_digest_len(g) bytes; their
 * length.  For hashing many guests at once (vnic_hash64_n()). */
size_t pguest_digest_len(const struct pguest *g);
size_t pguest_digest_bytes(const struct pguest *g, uint8_t *out);
void pguest_free(struct pguest *g);
struct pguest *pguest_dup(const struct pguest *g);
/* -ENOENT if absent. */
int policy_find(const struct vnic_policy *p, const char *guest, unsigned int *idx);
/*
 * The NICs of p resolved to devices, ifi[off[g] + k] being guest g's NIC k
 * (off[p->n]: how many): 0 when each is another device, else -EEXIST with
 * a message in ctx naming both NICs (one device by its name and an
 * altname, which a lookup by name resolves too), or -ENOMEM.
 */
int policy_each_device_once(struct vnic_ctx *ctx, const struct vnic_policy *p,
			    const int *ifi, const unsigned int *off);
/*
 * The NICs of p by name, (*ifi)[(*off)[g] + k] being guest g's NIC k and
 * (*off)[p->n] how many, each device once (policy_each_device_once()).
 * fd: the caller's slot for a socket of ctx's namespace for SIOCGIFINDEX
 * (vnic_ifsock(): made on the first name the link table lacks, kept for
 * the caller to close).  0 with both arrays
 * (the caller frees them), or a negative errno with a message in ctx: a
 * NIC that does not exist fails (-ENODEV), and no NIC after it is asked.
 */
int policy_resolve_nics(struct vnic_ctx *ctx, const struct vnic_policy *p,
			int *fd, int **ifi, unsigned int **off);

#endif /* VNIC_POLICY_MODEL_H */
