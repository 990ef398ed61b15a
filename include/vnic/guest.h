/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvnic allocator: a guest's NICs created, named and tagged in one
 * pipelined request, all or nothing.
 *
 *	struct vnic_guest *g;
 *	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP,
 *		  .lower = "eth0", .mode = VNIC_MACVLAN_BRIDGE, .up = 1);
 *	vnic_guest_new(ctx, "vm42", &g);
 *	for (i = 0; i < 82; i++)
 *		vnic_guest_add_nic(g, &nic, NULL);
 *	err = vnic_guest_create(g);	// 0, or nothing is left behind
 *	...
 *	vnic_guest_destroy(g);		// deletes the NICs, frees g
 *
 * Thread safety: as the context the guest belongs to (context.h).
 */
#ifndef VNIC_GUEST_H
#define VNIC_GUEST_H

#include <stdint.h>
#include <sys/types.h>
#include <vnic/common.h>
#include <vnic/context.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vnic_guest;

enum vnic_kind {
	VNIC_KIND_MACVTAP = 1,
	VNIC_KIND_MACVLAN,
	VNIC_KIND_VETH,
	VNIC_KIND_TAP,		/* L2 tap from /dev/net/tun */
	VNIC_KIND_TUN,		/* L3 tun from /dev/net/tun */
	VNIC_KIND__MAX,
};

enum vnic_macvlan_mode {
	VNIC_MACVLAN_DEFAULT = 0,	/* bridge */
	VNIC_MACVLAN_PRIVATE,
	VNIC_MACVLAN_VEPA,
	VNIC_MACVLAN_BRIDGE,
	VNIC_MACVLAN_PASSTHRU,
};

/*
 * How a NIC gets its name.  AUTO picks EXPLICIT for a name without "%d",
 * otherwise CACHE; a NIC created in another namespace than the context's
 * is named from a table dumped there for the call (Documentation/
 * allocator.rst, "Naming").
 */
enum vnic_naming {
	VNIC_NAMING_AUTO = 0,
	VNIC_NAMING_KERNEL,	/* "prefix%d" resolved by the kernel */
	VNIC_NAMING_CACHE,	/* "prefix%d" resolved from the cached link table */
	VNIC_NAMING_EXPLICIT,	/* the name as given, no "%d" */
};

enum vnic_tap_flags {
	VNIC_TAP_PERSIST	= 1u << 0,	/* survive the close of its fds */
	VNIC_TAP_VNET_HDR	= 1u << 1,	/* IFF_VNET_HDR */
	VNIC_TAP_MULTI_QUEUE	= 1u << 2,	/* IFF_MULTI_QUEUE */
	VNIC_TAP_NO_PI		= 1u << 3,	/* IFF_NO_PI */
};

struct vnic_nic_opts {
	size_t sz;
	enum vnic_kind kind;
	/* Exact name, or a template with one "%d".  NULL: the kind's default
	 * template ("macvtap%d", "macvlan%d", "veth%d", "tap%d", "tun%d"). */
	const char *name;
	enum vnic_naming naming;
	/* macvtap/macvlan: the lower device, by name or ifindex (in the
	 * context's namespace). */
	const char *lower;
	int lower_ifindex;
	enum vnic_macvlan_mode mode;
	/* MAC address "02:00:00:00:00:01"; NULL: a random locally
	 * administered unicast one. */
	const char *mac;
	uint32_t mtu;			/* 0: the kernel's default */
	int up;				/* bring the NIC up */
	/* Namespace the NIC is created in (fd, or pid whose namespace is
	 * used); both 0: the context's.  The device is created there directly,
	 * never moved.  A negative fd (-EBADF) or pid (-EINVAL), or an fd that
	 * is no network namespace (-EINVAL), is refused. */
	int netns_fd;
	pid_t netns_pid;
	/* veth: the peer.  peer_name is required and has no "%d". */
	const char *peer_name;
	int peer_netns_fd;
	pid_t peer_netns_pid;
	const char *peer_mac;		/* NULL: random */
	int peer_up;
	/* tap/tun */
	uint32_t tap_flags;		/* enum vnic_tap_flags */
	uint32_t queues;		/* queue fds to open; 0: 1 */
	int64_t owner_uid;		/* -1 or 0 with owner_set = 0: none */
	int64_t owner_gid;
	int owner_set;			/* apply owner_uid/owner_gid */
};

/* A new, empty guest.  name: 1..64 of [A-Za-z0-9_.-].  Returns 0 with *out
 * set, -EINVAL (an invalid name) or -ENOMEM. */
int vnic_guest_new(struct vnic_ctx *ctx, const char *name,
		   struct vnic_guest **out);
/* Append a NIC; the options are checked and copied.  *idx (may be NULL) is
 * the NIC's index in the guest.  Returns 0, or a negative errno with nothing
 * added: -EINVAL (invalid options, a lower device or namespace that does not
 * exist...), -EEXIST (an explicit name another NIC of the guest has),
 * -EOPNOTSUPP (a kind this kernel lacks), -E2BIG (common.h), -ENOMEM. */
int vnic_guest_add_nic(struct vnic_guest *g, const struct vnic_nic_opts *nic,
		       unsigned int *idx);
/*
 * Create every NIC not created yet, in one pipelined request.  On failure
 * every NIC this call created is deleted again, its fds closed, and the
 * context's error says which NIC failed, at which step, and why.  Returns 0
 * or the failure's negative errno: the
 * kernel's (-EEXIST: a name taken by someone else, -EADDRINUSE: a MAC the
 * lower device already has, -ENODEV: the lower device went away, -EINVAL:
 * refused attributes, -EPERM...), -ENOSPC (every name of a template is
 * taken), -EEXIST after names kept being taken for name_timeout_ms,
 * -E2BIG (the NICs this call creates live in more than 15 namespaces
 * besides the context's: create them in several calls), or -ENOMEM.
 */
int vnic_guest_create(struct vnic_guest *g);
/* Delete the guest's NICs in one request (those already gone are fine),
 * close its fds and free g.  g is freed even when an error is returned.
 * Returns 0, -EINVAL (NULL g), or the first deletion's negative errno (the
 * NICs it could not delete stay, tagged: vnic_collect_orphans() finds
 * them). */
int vnic_guest_destroy(struct vnic_guest *g);
/* Free the handle only; the NICs stay.  Except: a tap/tun without
 * VNIC_TAP_PERSIST lives only as long as its fds, and the fds not handed
 * over by vnic_guest_nic_open_queues() are closed here. */
void vnic_guest_free(struct vnic_guest *g);

/* The guest's name (NULL for a NULL g); valid as long as g. */
const char *vnic_guest_name(const struct vnic_guest *g);
/* NICs added (created or not); 0 for a NULL g. */
unsigned int vnic_guest_nic_count(const struct vnic_guest *g);

/* What one NIC became.  Valid once created (or adopted). */
struct vnic_nic_info {
	size_t sz;
	enum vnic_kind kind;
	char name[VNIC_IFNAME_MAX + 1];
	int ifindex;			/* in its own namespace */
	unsigned char mac[6];
	char peer_name[VNIC_IFNAME_MAX + 1];	/* veth */
	int created;			/* exists (created or adopted) */
	/* The INDEX of its tag "vnic:OWNER:GUEST:INDEX".  Equal to the
	 * position for a guest built here; an adopted guest keeps its NICs'
	 * tags, gaps included, and NICs added later get max + 1. */
	unsigned int tag_index;
};
/* Returns 0 with *info filled (the bytes its sz covers, sz set to the count
 * written; common.h), or -EINVAL: NULL, idx out of range, or info->sz below
 * the 0.1 struct.  A NIC not created yet has created = 0 and name "". */
int vnic_guest_nic_info(const struct vnic_guest *g, unsigned int idx,
			struct vnic_nic_info *info);

/*
 * Queue fds for handing to a hypervisor, O_CLOEXEC, owned by the caller.
 * macvtap: opens its character device 'n' times (multi-queue when n > 1);
 * without CAP_SYS_ADMIN through the shared /dev/tapIFINDEX, which may be
 * another namespace's macvtap of the same ifindex: refused (-ESTALE) unless
 * it has the NIC's name and MAC.
 * tap/tun: hands over the fds opened at creation ('n' must not exceed the
 * queues asked for); later calls return -ENOENT, and so does an adopted
 * tap/tun (its fds were its creator's).  Returns 0 with fds[0..n-1]
 * filled, or a negative errno with nothing left open: -EINVAL (idx, n),
 * -ENODEV (a NIC not created, or gone), -EOPNOTSUPP (a kind without queue
 * fds: macvlan, veth), -ENOENT (fds already handed over, or adopted),
 * -ESTALE (above), or open()'s.
 */
int vnic_guest_nic_open_queues(struct vnic_guest *g, unsigned int idx,
			       int *fds, unsigned int n);

/*
 * Finding what a context (this one, or one that crashed) left behind: NICs
 * are tagged "vnic:OWNER:GUEST:INDEX" in their alias, and carry the owner's
 * link group (and, for a MAC libvnic chose, the owner's MAC check) from the
 * request that creates them.  A link counts as the owner's only where two
 * of these agree (tag and group; or, untagged, group and MAC check): an
 * alias alone, which anyone can write, is never enough.  These see the
 * context's namespace only.  See Documentation/allocator.rst, "Marks and
 * the trust model".
 */

/* Names of the guests with NICs tagged with the context's owner.  *names is
 * one malloc'd block (free() it) of *count NUL-terminated strings.  Returns
 * 0 (none: *count 0), or the dump's negative errno, or -ENOMEM. */
int vnic_guest_list(struct vnic_ctx *ctx, char ***names, unsigned int *count);
/* A handle on an existing guest's NICs, found by their tags.  Destroy or
 * free it like a created one.  Returns 0 with *out set, -ENOENT if the
 * guest has no NIC, -EINVAL (an invalid name), the dump's errno, -ENOMEM. */
int vnic_guest_adopt(struct vnic_ctx *ctx, const char *name,
		     struct vnic_guest **out);
/* vnic_guest_adopt() without a dump: only the links named in
 * ifnames[0..n-1] are read (one RTM_GETLINK each, one batch), so the cost
 * does not grow with the namespace's links.  For a caller that kept its
 * NICs' names (vnic-cni, in its state file).  A named link counts only by
 * the same two marks, as a NIC of guest name; a name no link has, or a
 * link that is not such a NIC (the name went to another link since), is
 * skipped.  Returns 0 with *out set, -ENOENT if none is, -EINVAL (an
 * invalid guest or interface name), the kernel's errno, -ENOMEM.  A guest
 * may have NICs not named here: only vnic_guest_adopt() finds them all. */
int vnic_guest_adopt_named(struct vnic_ctx *ctx, const char *name,
			   const char *const *ifnames, unsigned int n,
			   struct vnic_guest **out);
/*
 * Delete, in one request, every NIC of the context's owner whose guest is
 * not in keep[0..nkeep-1], and every one never tagged (its creator died
 * before tagging it).  *deleted (may be NULL) counts them.  -EINVAL if a
 * keep entry is not a valid guest name; otherwise 0, or the dump's or the
 * first deletion's negative errno.  Not safe while a creator of the
 * same owner is running in the same namespace: its NICs not yet tagged
 * would be taken for orphans.
 */
int vnic_collect_orphans(struct vnic_ctx *ctx, const char *const *keep,
			 unsigned int nkeep, unsigned int *deleted);

/* VNIC_KIND_MACVTAP -> "macvtap"; NULL if unknown.  Thread-safe. */
const char *vnic_kind_name(enum vnic_kind kind);
/* "macvtap" -> VNIC_KIND_MACVTAP; 0 if unknown.  Thread-safe. */
enum vnic_kind vnic_kind_from_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* VNIC_GUEST_H */
