/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvnic context: the netlink sockets, the probed kernel features, the
 * cached link table and the last error, for one network namespace.
 *
 * Thread safety: a context and everything obtained from it (guests, lists)
 * may be used by one thread at a time.  Distinct contexts share no state and
 * may be used concurrently from different threads or processes.  The
 * functions that take no context (vnic_strerror, vnic_step_name,
 * vnic_feature_name, vnic_kind_name, vnic_kind_from_name) are thread-safe.
 */
#ifndef VNIC_CONTEXT_H
#define VNIC_CONTEXT_H

#include <stdint.h>
#include <vnic/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vnic_ctx;

enum vnic_ctx_flags {
	/* Behave as on kernels before 6.2, which ignore NLM_F_ECHO on
	 * RTM_NEWLINK: learn names and ifindexes by a follow-up request. */
	VNIC_CTX_NO_ECHO	= 1u << 0,
	/* Do not subscribe to RTNLGRP_LINK: the name cache is rebuilt by a
	 * full dump before each use instead of being kept current. */
	VNIC_CTX_NO_MONITOR	= 1u << 1,
};

/* Where an operation failed; see vnic_ctx_errstep(). */
enum vnic_step {
	VNIC_STEP_NONE = 0,
	VNIC_STEP_VALIDATE,	/* input checks, before anything is sent */
	VNIC_STEP_NAME,		/* choosing a free name */
	VNIC_STEP_CREATE,	/* RTM_NEWLINK / TUNSETIFF */
	VNIC_STEP_RESOLVE,	/* learning the final name and ifindex */
	VNIC_STEP_CONFIGURE,	/* tap: MTU, MAC, alias, up */
	VNIC_STEP_OPEN,		/* opening queue fds */
	VNIC_STEP_DELETE,	/* RTM_DELLINK */
	VNIC_STEP_DUMP,		/* RTM_GETLINK dump */
	VNIC_STEP_SOCKET,	/* opening or configuring sockets */
	VNIC_STEP__MAX,
};

struct vnic_ctx_opts {
	size_t sz;
	/* Tag written into every NIC's alias so that a later context can find
	 * it: 1..32 of [A-Za-z0-9_.-].  Default "vnic". */
	const char *owner;
	/* Network namespace the context works in, as an open fd (e.g. of
	 * /proc/PID/ns/net or /run/netns/NAME).  0: the one the calling
	 * thread is in at vnic_ctx_new(), held: a later call from a thread
	 * that has joined another namespace still works in it.  Negative
	 * (-EBADF) or not a network namespace (-EINVAL): refused. */
	int netns_fd;
	uint32_t flags;			/* enum vnic_ctx_flags */
	/* A name freed less than this long ago is not handed out again by the
	 * cache strategy while the template has another free name
	 * (Documentation/allocator.rst, "Reuse policy").  0: default
	 * 10000 ms. */
	uint32_t quarantine_ms;
	/* Receive buffer of the request socket; 0: 4 MiB. */
	uint32_t rcvbuf;
	/* Receive buffer of the link monitor socket; 0: 8 MiB (memory is
	 * taken only by events waiting to be read).  Small values make the
	 * monitor overflow, which forces a full resync: tests use it. */
	uint32_t monitor_rcvbuf;
	/* Most requests in flight on one socket; 0: derived from rcvbuf.
	 * Never more than the receive buffer holds replies for (8 KiB of
	 * it a request, at least one request): a reply that does not fit
	 * is dropped, and a create whose ack is lost is one whose fate is
	 * unknown. */
	uint32_t window;
	/* How long one vnic_guest_create() keeps choosing new names while
	 * other processes take the ones it chose (EEXIST), counted from the
	 * start of the call.  It gives up only once this time has passed and
	 * 8 rounds in a row created none of its NICs (so a starved but
	 * progressing create goes on).  0: default 10000 ms. */
	uint32_t name_timeout_ms;
};

/*
 * A context (opts may be NULL: every default).  Returns 0 with *out set, or
 * a negative errno with nothing made (no context, so no message): -EINVAL
 * (an invalid owner, an unknown flag, a netns_fd that is no network
 * namespace), -EBADF (a
 * negative netns_fd), -E2BIG (see common.h), -ENOMEM, or the errno of
 * opening or configuring the netlink socket (e.g. -EPERM).
 */
int vnic_ctx_new(const struct vnic_ctx_opts *opts, struct vnic_ctx **out);
/* Close the sockets and free ctx (NULL: nothing).  Guests, policies and nft
 * handles made from it must not be used afterwards. */
void vnic_ctx_free(struct vnic_ctx *ctx);

/*
 * Build (or rebuild) the cached link table now with one RTM_GETLINK dump, so
 * that the first cache-named create does not pay for it.  Optional: the cache
 * strategy builds the table on first use and keeps it current through an
 * RTNLGRP_LINK subscription.  While the table is built and kept current
 * (not with VNIC_CTX_NO_MONITOR), filter handles of this context find their
 * policy's NICs in it instead of asking the kernel name by name; they never
 * build it themselves.
 */
/* Returns 0, or the dump's negative errno (-EINVAL: NULL ctx). */
int vnic_ctx_refresh(struct vnic_ctx *ctx);

/* Features probed once when the context is made. */
enum vnic_feature {
	VNIC_FEAT_EXT_ACK	= 1ull << 0,	/* NETLINK_EXT_ACK accepted */
	VNIC_FEAT_STRICT_CHK	= 1ull << 1,	/* NETLINK_GET_STRICT_CHK accepted */
	VNIC_FEAT_NEWLINK_ECHO	= 1ull << 2,	/* NLM_F_ECHO honoured on RTM_NEWLINK (6.2) */
	VNIC_FEAT_IFNAME_TEMPLATE = 1ull << 3,	/* "%d" in IFLA_IFNAME (2.6.23) */
	VNIC_FEAT_MACVLAN	= 1ull << 4,
	VNIC_FEAT_MACVTAP	= 1ull << 5,
	VNIC_FEAT_VETH		= 1ull << 6,
	VNIC_FEAT_TUN		= 1ull << 7,	/* /dev/net/tun opens */
};

/* The VNIC_FEAT_* bits the kernel has; 0 for a NULL ctx.  VNIC_FEAT_TUN
 * is asked on the first call (or the first tap made), not at context
 * creation, so this call may open /dev/net/tun once: a use of the context
 * like any other (thread safety above). */
uint64_t vnic_ctx_features(const struct vnic_ctx *ctx);
/* Short name of one feature bit, e.g. "newlink-echo"; NULL if unknown.
 * Thread-safe. */
const char *vnic_feature_name(uint64_t feature);

/*
 * The last failure of an operation on this context: a text that carries the
 * failing step, the NIC and the kernel's extended-ack message where there was
 * one, e.g. "create nic 17 (mvt17): Invalid argument: Invalid MTU".  The
 * strings stay valid until the next operation on the context.  Never NULL:
 * "" when nothing failed (or ctx is NULL).
 */
const char *vnic_ctx_errmsg(const struct vnic_ctx *ctx);
/* The kernel's extended-ack text alone, "" if it sent none; never NULL. */
const char *vnic_ctx_extack(const struct vnic_ctx *ctx);
/* The step the last failure happened at; VNIC_STEP_NONE if none. */
enum vnic_step vnic_ctx_errstep(const struct vnic_ctx *ctx);
/* Index of the NIC the last failure is about, or -1 (none, or no NIC). */
int vnic_ctx_errnic(const struct vnic_ctx *ctx);

/* Counters, for the bench's claims (sendmsg calls per guest, no ioctl). */
struct vnic_ctx_stats {
	size_t sz;
	uint64_t sendmsg_calls;	/* netlink sendmsg() calls */
	uint64_t recvmsg_calls;
	uint64_t requests;	/* netlink requests sent */
	uint64_t ioctls;	/* ioctl() calls: tap creation, and a filter
				 * handle's NIC name and ifindex lookups */
	uint64_t dumps;		/* RTM_GETLINK dumps (a filter handle's
				 * nf_tables reads count as sendmsg calls) */
	uint64_t resyncs;	/* full name-cache rebuilds after the first */
	uint64_t name_retries;	/* EEXIST retries of the cache strategy */
	/* Dumps the kernel marked interrupted (the namespace changed while
	 * they were read); each was completed, or retried, not failed. */
	uint64_t dumps_interrupted;
};
/* Returns 0 with *st filled (the bytes its sz covers, sz set to the count
 * written; common.h), or -EINVAL: NULL, or st->sz below the 0.1 struct. */
int vnic_ctx_stats(const struct vnic_ctx *ctx, struct vnic_ctx_stats *st);

/* Text for a negative (or positive) errno; never NULL.  Thread-safe. */
const char *vnic_strerror(int err);
/* "create" for VNIC_STEP_CREATE...; "unknown" out of range; thread-safe. */
const char *vnic_step_name(enum vnic_step step);

#ifdef __cplusplus
}
#endif

#endif /* VNIC_CONTEXT_H */
