/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvnic internals shared by lib/ and the layers above it.  Nothing here is
 * part of the ABI.
 */
#ifndef VNIC_INTERNAL_H
#define VNIC_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <linux/netlink.h>
#include <vnic/context.h>

#define VNIC_EXPORT __attribute__((visibility("default")))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Read an options struct of any size: copies min(sz, ours) into *dst (zeroed
 * first) and rejects a larger struct whose unknown tail is not zero. */
int vnic_opts_copy(void *dst, size_t dst_sz, const void *src);

struct vnic_ctx;
/* A struct the library fills: -EINVAL, with a message in ctx, when its sz
 * is below min_sz (VNIC_SZ_0_1()); then vnic_out_copy() writes our src
 * into it, min(its sz, src_sz) bytes, and sets its sz to that count. */
int vnic_out_check(struct vnic_ctx *ctx, const void *dst, size_t min_sz,
		   const char *what);
void vnic_out_copy(void *dst, const void *src, size_t src_sz);
/* The size of struct TYPE in libvnic 0.1, whose last field was LAST: the
 * smallest a caller may pass.  Fields appended later do not change it. */
#define VNIC_SZ_0_1(TYPE, LAST) \
	(offsetof(struct TYPE, LAST) + sizeof(((struct TYPE *)0)->LAST))

#define VNIC_ERRMSG_MAX 512
#define VNIC_EXTACK_MAX 256

struct vnic_err {
	int err;
	enum vnic_step step;
	int nic;
	char msg[VNIC_ERRMSG_MAX];
	char extack[VNIC_EXTACK_MAX];
};

struct linkcache;

/* A netlink socket and the counters every request on it feeds. */
struct nl_sock {
	struct mnl_socket *mnl;	/* NULL: a stand-in answers (recv_fn) */
	uint32_t portid;
	uint32_t seq;
	uint32_t window;	/* requests per sendmsg */
	size_t sndbuf;		/* usable bytes per sendmsg */
	struct vnic_ctx_stats *stats;
	/* Replies to nl_request() come from here instead of the socket when
	 * set (nft/'s replay of recorded replies, and its recording). */
	ssize_t (*recv_fn)(void *arg, char *buf, size_t len, uint32_t seq);
	void *recv_arg;
	/* Bytes nl_request() reads at a time (0: 64 KiB).  The kernel sizes
	 * a dump's skbs by the largest read the socket ever made. */
	size_t recv_len;
};

struct vnic_ctx {
	char owner[33];
	int netns_fd;		/* dup of the caller's, or -1 */
	uint32_t flags;
	uint32_t quarantine_ms;
	uint32_t rcvbuf, monitor_rcvbuf, window;
	int fault_step;
	uint32_t fault_nth;
	bool old_peer_lookup;	/* vnic_ctx_set_old_peer_lookup() */
	unsigned int lost_events;	/* vnic_ctx_set_lost_events() */
	uint32_t name_timeout_ms;
	uint64_t name_deadline;	/* of the create in progress, vnic_now_ms() */
	uint64_t features;
	bool tun_probed;	/* VNIC_FEAT_TUN asked (vnic_probe_tun()) */
	struct nl_sock nl;	/* requests */
	struct linkcache *cache;	/* built on first use */
	struct vnic_ctx_stats stats;
	struct vnic_err err;
};

/* error.c: record the failure of the current operation; returns err. */
int vnic_set_err(struct vnic_ctx *ctx, int err, enum vnic_step step, int nic,
		 const char *extack, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
int vnic_set_errv(struct vnic_ctx *ctx, int err, enum vnic_step step, int nic,
		  const char *extack, const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));
void vnic_clear_err(struct vnic_ctx *ctx);
/* err, with a message "STEP: what: ERRNO" recorded if none was (err < 0). */
int vnic_err_fallback(struct vnic_ctx *ctx, int err, enum vnic_step step,
		      const char *what);
/* -EINVAL, "validate: CALL: NULL WHAT": an argument a public call needs. */
int vnic_null_arg(struct vnic_ctx *ctx, const char *call, const char *what);
/* Test hook (vnic_ctx_new_faulty()): -EIO when ctx->fault_step/fault_nth
 * name this unit. */
int vnic_fault(const struct vnic_ctx *ctx, enum vnic_step step, unsigned int unit);

/* netns.c: run fn(arg) in a short-lived thread that has joined the network
 * namespace nsfd, so that sockets and /dev/net/tun fds it opens belong
 * there.  Returns fn's result. */
int vnic_in_netns(int nsfd, int (*fn)(void *arg), void *arg);
/* The same, but always in a new thread (nsfd -1: stay in this namespace),
 * for work that changes per-thread state such as the mount namespace. */
int vnic_in_thread(int nsfd, int (*fn)(void *arg), void *arg);
/* A socket for interface ioctls (SIOCGIFINDEX, SIOCGIFNAME) in the
 * context's namespace, made into *fd on first use; returns it, or a
 * negative errno with the context's message set. */
int vnic_ifsock(struct vnic_ctx *ctx, int *fd);
/* Open /proc/PID/ns/net, O_CLOEXEC. */
int vnic_netns_open_pid(pid_t pid);
/* 0 if fd is an open network namespace fd; else -EBADF or -EINVAL and
 * *why. */
int vnic_netns_check(int fd, const char **why);
/* Whether two namespace fds name the same namespace (1), or not (0). */
int vnic_netns_same(int a, int b);
/* Whether nsfd names the context's namespace. */
int vnic_netns_is_ctx(const struct vnic_ctx *ctx, int nsfd);

/* nl.c: sockets ------------------------------------------------------- */
/* Open a netlink socket of protocol proto (NETLINK_ROUTE,
 * NETLINK_NETFILTER) in nsfd (-1: current), close-on-exec, with extended
 * acks, strict checking and capped acks, sized for the pipeline. */
int nl_open(struct nl_sock *s, int proto, int nsfd, uint32_t rcvbuf,
	    uint32_t window, struct vnic_ctx_stats *stats, uint64_t *features);
void nl_close(struct nl_sock *s);
/* One datagram from the socket itself (flags: MSG_DONTWAIT...), or -errno. */
ssize_t nl_recv_sock(struct nl_sock *s, char *buf, size_t len, int flags);
/* buf in one sendmsg(); 0 or -errno. */
int nl_send(struct nl_sock *s, const void *buf, size_t len);
/* Raise the send buffer so that one message of len bytes fits. */
void nl_fit_sndbuf(struct nl_sock *s, size_t len);
/* An NLMSG_ERROR's code: 0 or -errno, -EBADMSG (and *bad says why) for a
 * short one or a code outside -4095..0. */
int nl_ack_error(const struct nlmsghdr *nlh, const char **bad);

/* A batch of requests built back to back in one buffer, sent in windows. */
typedef int (*nl_reply_cb)(const struct nlmsghdr *nlh, void *data);

struct nl_req {
	size_t off;		/* of the message in the batch buffer */
	int err;		/* 0 or -errno, from the ack */
	bool acked;
	/* In a sendmsg() that succeeded: the kernel processed it, whether
	 * or not its ack came back (a full receive buffer drops acks). */
	bool sent;
	char *extack;		/* malloc'd kernel message on error, or NULL */
	nl_reply_cb cb;		/* non-ack replies with this seq (echo, get) */
	void *data;
};

struct nl_batch {
	char *buf;
	size_t len, cap;
	struct nl_req *reqs;
	unsigned int n, cap_reqs;
};

void nl_batch_init(struct nl_batch *b);
void nl_batch_reset(struct nl_batch *b);
void nl_batch_free(struct nl_batch *b);
/* Start a message; room for any attributes up to 8 KiB is guaranteed. */
struct nlmsghdr *nl_batch_msg(struct nl_batch *b, uint16_t type, uint16_t flags);
/* Finish the last message and register how its replies are handled. */
int nl_batch_end(struct nl_batch *b, struct nlmsghdr *nlh, nl_reply_cb cb,
		 void *data);
/* A request without NLM_F_ACK must be one the kernel answers with exactly
 * one message (a get, not a dump): that reply, or an error ack, ends it.
 * Send everything, collect every ack.  Returns 0 when every request got its
 * ack (each with its own err), or a negative errno if the transport failed
 * or a reply callback did (no window is sent after that one). */
int nl_batch_run(struct nl_sock *s, struct nl_batch *b);

/* One request (its seq set here); cb sees each reply with its seq until
 * NLMSG_DONE or the ack.  A negative return of cb is the result (cb is not
 * called again, the rest is read and dropped); else the ack's error, with
 * the kernel's message in extack.  Returns 0, NL_DUMP_INTR (below), or a
 * negative errno; -EBADMSG with *bad saying why for a malformed reply. */
int nl_request(struct nl_sock *s, struct nlmsghdr *req, nl_reply_cb cb,
	       void *data, char *extack, size_t extack_len, const char **bad);

/* One dump request; cb sees every message until NLMSG_DONE (a negative
 * return of cb ends it with that error).  Returns 0,
 * NL_DUMP_INTR when the kernel marked the dump inconsistent (the table
 * changed while it was read: entries that lived through it are all there,
 * the others may be missing or stale), or a negative errno. */
#define NL_DUMP_INTR	1
int nl_dump(struct nl_sock *s, struct nlmsghdr *req, nl_reply_cb cb, void *data,
	    char *extack, size_t extack_len);
/* nl_dump() again while it is interrupted, at most NL_DUMP_TRIES times in
 * all, cb(NULL) before each new try; the last NL_DUMP_INTR is returned as
 * such, for callers that can live with it. */
#define NL_DUMP_TRIES	8
int nl_dump_settled(struct nl_sock *s, struct nlmsghdr *req, nl_reply_cb cb,
		    void *data, char *extack, size_t extack_len);

/* mnl_nlmsg_ok() casts nlmsg_len to int: a length of 2 GiB or more passes
 * and the walk jumps out of the buffer.  This one does not. */
static inline bool nl_msg_ok(const struct nlmsghdr *nlh, int len)
{
	return len >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) &&
	       nlh->nlmsg_len <= (unsigned int)len;
}

/* extack.c: the kernel's message in an NLMSG_ERROR (malloc'd), or NULL
 * when it has none or the message is malformed. */
char *parse_extack(const struct nlmsghdr *nlh);

/* probe.c */
/* The kernel's features, or'ed into *out; 0 or -errno (a probe could not
 * be sent or answered). */
int vnic_probe_features(struct vnic_ctx *ctx, uint64_t *out);
/* The context's features with VNIC_FEAT_TUN asked, once, on first need. */
uint64_t vnic_probe_tun(struct vnic_ctx *ctx);
/* uname()'s release is maj.min or later. */
int vnic_kernel_at_least(unsigned int maj, unsigned int min);

/* context.c: 1..max of [A-Za-z0-9_.-] (owners, guests). */
int vnic_valid_tag(const char *s, size_t max);

/* ifname.c: an interface name or a "%d" template (one, at the end);
 * 0 or -EINVAL with *why. */
int name_check(const char *name, bool *is_template, const char **why);
/* The part before "%d". */
void name_prefix(const char *tmpl, char *prefix);
/* "prefixN" into out[IFNAMSIZ]. */
void name_format(char *out, const char *prefix, uint32_t suffix);

/* mac.c: "02:00:5e:10:00:01", unicast, not zero; mac_parse_why() also says
 * why not (*why, NULL when fine). */
int mac_parse(const char *s, uint8_t mac[6]);
int mac_parse_why(const char *s, uint8_t mac[6], const char **why);
/* A random locally administered unicast MAC carrying a 14-bit mark
 * (MAC_MARK_MASK) in its first two octets, and the test for it. */
#define MAC_MARK_MASK	0x3fffu
int mac_random_marked(uint8_t mac[6], uint16_t mark);
bool mac_has_mark(const uint8_t mac[6], uint16_t mark);

/* Monotonic milliseconds. */
uint64_t vnic_now_ms(void);

/* retry.c: a retry against other processes; it stops once RETRY_MIN_TRIES
 * tries in a row made no progress and the deadline (vnic_now_ms()) passed. */
struct vnic_retry {
	uint64_t deadline;
	unsigned int tries;
	unsigned int idle;	/* tries in a row without progress */
};
void vnic_retry_start(struct vnic_retry *r, uint64_t deadline);
/* After a failed try: whether to try again.  A try that made no progress
 * is followed by a short random pause, so that rivals fall out of step. */
bool vnic_retry_again(struct vnic_retry *r, bool progress);

#endif /* VNIC_INTERNAL_H */
