// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The netlink request engine, for any netlink protocol: NETLINK_ROUTE for
 * the context and the allocator, NETLINK_NETFILTER for nft/ (nfnl.c adds
 * only nfnetlink's batch framing on top).
 *
 * Requests are built back to back in one buffer and sent many at a time: a
 * window of them goes out in a single sendmsg(), which the kernel processes
 * synchronously before sendmsg() returns, queueing one ack (and an echo or
 * reply where asked) per request on our socket.  The window is sized so that
 * those replies fit the receive buffer: a full buffer drops them (ENOBUFS),
 * and a lost ack is a request whose fate we no longer know.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "lib/internal.h"

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

/* What one request may cost in our receive buffer, in skb truesize: an
 * RTM_NEWLINK echo carries the whole link (a few KiB with stats) + its ack. */
#define NL_REPLY_COST	8192
#define NL_MSG_ROOM	8192
#define NL_RECV_SIZE	(64 * 1024)
#define NL_RECV_SLOTS	8	/* datagrams one recvmmsg() of a batch takes */

struct open_args {
	int proto;
	struct mnl_socket *mnl;
};

static int open_fn(void *p)
{
	struct open_args *a = p;

	a->mnl = mnl_socket_open2(a->proto, SOCK_CLOEXEC);
	return a->mnl ? 0 : -errno;
}

/* The FORCE variants pass rmem_max/wmem_max with CAP_NET_ADMIN, which a
 * caller creating links has anyway; fall back to the capped ones. */
static void set_buf(int fd, int force_opt, int opt, uint32_t size)
{
	int v = (int)size;

	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static int get_buf(int fd, int opt)
{
	int v = 0;
	socklen_t len = sizeof(v);

	getsockopt(fd, SOL_SOCKET, opt, &v, &len);
	return v;
}

static void set_flag(int fd, int opt, uint64_t *features, uint64_t bit)
{
	int one = 1;

	if (setsockopt(fd, SOL_NETLINK, opt, &one, sizeof(one)) == 0 && features)
		*features |= bit;
}

int nl_open(struct nl_sock *s, int proto, int nsfd, uint32_t rcvbuf,
	    uint32_t window, struct vnic_ctx_stats *stats, uint64_t *features)
{
	struct open_args a = { .proto = proto };
	int fd, err, rcv;

	memset(s, 0, sizeof(*s));
	err = vnic_in_netns(nsfd, open_fn, &a);
	if (err)
		return err;
	s->mnl = a.mnl;
	fd = mnl_socket_get_fd(s->mnl);
	set_flag(fd, NETLINK_EXT_ACK, features, VNIC_FEAT_EXT_ACK);
	set_flag(fd, NETLINK_GET_STRICT_CHK, features, VNIC_FEAT_STRICT_CHK);
	/* Errors need not echo our request back: that only costs buffer. */
	set_flag(fd, NETLINK_CAP_ACK, NULL, 0);
	set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf);
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, rcvbuf);
	if (mnl_socket_bind(s->mnl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		nl_close(s);
		return err;
	}
	s->portid = mnl_socket_get_portid(s->mnl);
	s->stats = stats;
	rcv = get_buf(fd, SO_RCVBUF);
	/* Every reply of a window must fit the receive buffer: the kernel
	 * drops one that does not (ENOBUFS) after it has done the request,
	 * and a request whose ack is lost is one whose fate we do not know.
	 * A wider window asked for is cut to what fits. */
	s->window = (uint32_t)(rcv / NL_REPLY_COST);
	if (s->window < 1)
		s->window = 1;
	if (window && window < s->window)
		s->window = window;
	/* netlink_sendmsg() refuses a message longer than sndbuf - 32. */
	s->sndbuf = (size_t)get_buf(fd, SO_SNDBUF) - 64;
	return 0;
}

void nl_close(struct nl_sock *s)
{
	if (s->mnl)
		mnl_socket_close(s->mnl);
	s->mnl = NULL;
}

int nl_send(struct nl_sock *s, const void *buf, size_t len)
{
	return mnl_socket_sendto(s->mnl, buf, len) < 0 ? -errno : 0;
}

void nl_fit_sndbuf(struct nl_sock *s, size_t len)
{
	int fd = mnl_socket_get_fd(s->mnl);

	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, (uint32_t)len + 4096);
	s->sndbuf = (size_t)get_buf(fd, SO_SNDBUF) - 64;
}

void nl_batch_init(struct nl_batch *b)
{
	memset(b, 0, sizeof(*b));
}

void nl_batch_reset(struct nl_batch *b)
{
	unsigned int i;

	for (i = 0; i < b->n; i++)
		free(b->reqs[i].extack);
	b->n = 0;
	b->len = 0;
}

void nl_batch_free(struct nl_batch *b)
{
	nl_batch_reset(b);
	free(b->buf);
	free(b->reqs);
	nl_batch_init(b);
}

struct nlmsghdr *nl_batch_msg(struct nl_batch *b, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;

	if (b->len + NL_MSG_ROOM > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4 * NL_MSG_ROOM;
		char *p;

		while (b->len + NL_MSG_ROOM > cap)
			cap *= 2;
		p = realloc(b->buf, cap);
		if (!p)
			return NULL;
		b->buf = p;
		b->cap = cap;
	}
	/* Attributes are appended without bounds checks: clear the room. */
	memset(b->buf + b->len, 0, NL_MSG_ROOM);
	nlh = mnl_nlmsg_put_header(b->buf + b->len);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	return nlh;
}

int nl_batch_end(struct nl_batch *b, struct nlmsghdr *nlh, nl_reply_cb cb,
		 void *data)
{
	struct nl_req *r;

	if (b->n == b->cap_reqs) {
		unsigned int cap = b->cap_reqs ? b->cap_reqs * 2 : 64;

		r = realloc(b->reqs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		b->reqs = r;
		b->cap_reqs = cap;
	}
	r = &b->reqs[b->n++];
	memset(r, 0, sizeof(*r));
	r->off = (char *)nlh - b->buf;
	r->cb = cb;
	r->data = data;
	b->len += MNL_ALIGN(nlh->nlmsg_len);
	return 0;
}

static struct nlmsghdr *req_msg(const struct nl_batch *b, unsigned int i)
{
	return (struct nlmsghdr *)(b->buf + b->reqs[i].off);
}

/* Whether request i ends with its ack; else its one reply ends it. */
static bool req_acks(const struct nl_batch *b, unsigned int i)
{
	return req_msg(b, i)->nlmsg_flags & NLM_F_ACK;
}

int nl_ack_error(const struct nlmsghdr *nlh, const char **bad)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e)) {
		*bad = "a short error message";
		return -EBADMSG;
	}
	/* 0 or -1..-4095, as the kernel sends (the ERR_PTR range). */
	if (e->error > 0 || e->error < -4095) {
		*bad = "an error code out of range";
		return -EBADMSG;
	}
	return e->error;
}

/*
 * The error an NLMSG_DONE carries (0 when it has none): a dump the kernel
 * cut short ends with DONE and a negative errno, e.g. -EMSGSIZE when one
 * entry does not fit an empty skb of the size the socket's reads set.  The
 * entries before it were sent; the rest of the dump was not.
 */
static int nl_done_error(const struct nlmsghdr *nlh)
{
	int e;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(e))
		return 0;
	memcpy(&e, mnl_nlmsg_get_payload(nlh), sizeof(e));
	return e < 0 && e >= -4095 ? e : 0;
}

/* Handle one reply; returns 1 if it ended a pending request: its ack, or
 * the reply to a get sent without NLM_F_ACK (the kernel then sends the
 * reply alone, or an error ack instead of it: one skb and one recvmsg less
 * a request).  The first error a reply callback returns goes to *cb_err. */
static int handle_reply(struct nl_batch *b, uint32_t base, unsigned int lo,
			unsigned int hi, const struct nlmsghdr *nlh, int *cb_err)
{
	/* Unsigned: the batch's seqs may wrap past UINT32_MAX. */
	unsigned int i = nlh->nlmsg_seq - base;
	const char *bad = NULL;
	struct nl_req *r;

	if (i < lo || i >= hi)
		return 0;	/* not ours, or stale: ignore */
	r = &b->reqs[i];
	if (nlh->nlmsg_type != NLMSG_ERROR) {
		if (r->cb && !r->acked && !*cb_err) {
			int err = r->cb(nlh, r->data);

			*cb_err = err < 0 ? err : 0;
		}
		if (r->acked || req_acks(b, i))
			return 0;
		r->acked = true;
		return 1;
	}
	if (r->acked)
		return 0;
	r->err = nl_ack_error(nlh, &bad);
	if (r->err)
		r->extack = parse_extack(nlh);
	r->acked = true;
	return 1;
}

/* A datagram longer than buf is an error (-ENOSPC), not a short read. */
ssize_t nl_recv_sock(struct nl_sock *s, char *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do {
		n = recvmsg(mnl_socket_get_fd(s->mnl), &msg, flags);
	} while (n < 0 && errno == EINTR);
	if (s->stats)
		s->stats->recvmsg_calls++;
	if (n >= 0 && (msg.msg_flags & MSG_TRUNC))
		return -ENOSPC;
	return n < 0 ? -errno : n;
}

/* The length of the next datagram, without taking it (waiting for one). */
static ssize_t nl_peek_len(struct nl_sock *s)
{
	char c;
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do {
		n = recvmsg(mnl_socket_get_fd(s->mnl), &msg, MSG_PEEK | MSG_TRUNC);
	} while (n < 0 && errno == EINTR);
	if (s->stats)
		s->stats->recvmsg_calls++;
	return n < 0 ? -errno : n;
}

/*
 * Whether a reply to req can be a datagram larger than any buffer we
 * would pick: a link's message (RTM_NEWLINK to RTM_SETLINK), which a link
 * with hundreds of alternative names (anyone with CAP_NET_ADMIN in the
 * namespace can add them) takes past 64 KiB.  Only those replies are
 * measured before they are read: the measure is a system call per
 * datagram, which the bpf remove's 8,000 filter dumps paid with a tenth
 * of their time.
 */
static bool nl_may_exceed(const struct nlmsghdr *req)
{
	return req->nlmsg_type >= RTM_NEWLINK && req->nlmsg_type <= RTM_SETLINK;
}

/*
 * The replies to request seq: from the stand-in if there is one.  When
 * they may be large (nl_may_exceed()), the buffer grows to the datagram
 * rather than cut it, which would lose a dump's entry (and leave the dump
 * running: the next one is EBUSY).
 */
static ssize_t nl_recv(struct nl_sock *s, char **buf, size_t *len, uint32_t seq,
		       bool measure)
{
	ssize_t want;
	char *p;

	if (s->recv_fn)
		return s->recv_fn(s->recv_arg, *buf, *len, seq);
	want = measure ? nl_peek_len(s) : 0;
	if (want < 0)
		return want;
	if ((size_t)want > *len) {
		p = realloc(*buf, (size_t)want);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*len = (size_t)want;
	}
	return nl_recv_sock(s, *buf, *len, 0);
}

/* Up to nslot datagrams in one recvmmsg() (at least one, waiting for it):
 * a window of gets answers with one datagram a request, so one system call
 * takes many.  Each slot holds the largest reply a recvmsg() would; a slot
 * the kernel cut short is the caller's to skip (MSG_TRUNC in its flags). */
static int recv_many(struct nl_sock *s, char *rbuf, unsigned int nslot,
		     struct mmsghdr *mm, struct iovec *iov, int flags)
{
	unsigned int k;
	int n;

	for (k = 0; k < nslot; k++) {
		iov[k] = (struct iovec){ rbuf + (size_t)k * NL_RECV_SIZE, NL_RECV_SIZE };
		memset(&mm[k], 0, sizeof(mm[k]));
		mm[k].msg_hdr.msg_iov = &iov[k];
		mm[k].msg_hdr.msg_iovlen = 1;
	}
	do {
		n = recvmmsg(mnl_socket_get_fd(s->mnl), mm, nslot, flags, NULL);
	} while (n < 0 && errno == EINTR);
	if (s->stats)
		s->stats->recvmsg_calls++;
	return n < 0 ? -errno : n;
}

static int collect_acks(struct nl_sock *s, struct nl_batch *b, uint32_t base,
			unsigned int lo, unsigned int hi, char *rbuf, unsigned int nslot)
{
	struct mmsghdr mm[NL_RECV_SLOTS];
	struct iovec iov[NL_RECV_SLOTS];
	unsigned int pending = hi - lo;
	int cb_err = 0, trunc = 0, lost = 0;

	while (pending || lost) {
		/* After a cut reply, only what is queued: the kernel answers a
		 * sendmsg() before it returns, and the cut reply's request
		 * will never see its ack. */
		int got = recv_many(s, rbuf, nslot, mm, iov, trunc || lost ?
				    MSG_DONTWAIT : MSG_WAITFORONE);

		if (got == -EAGAIN && (trunc || lost))
			break;
		/*
		 * Replies were dropped: the receive buffer was full.  The
		 * error comes before what is still queued, which tells which
		 * requests took effect; and the socket stays congested, its
		 * later replies dropped without a word (netlink_overrun()),
		 * until its queue has been read empty.  So read it all.
		 */
		if (got == -ENOBUFS && !lost) {
			lost = got;
			continue;
		}
		if (got < 0)
			return got;
		for (int k = 0; k < got; k++) {
			const struct nlmsghdr *nlh = (const void *)iov[k].iov_base;
			int left = (int)mm[k].msg_len;

			/* A cut reply is lost, but every other datagram of
			 * the window is whole: their acks still tell the
			 * caller which requests took effect, so that it can
			 * undo them. */
			if (mm[k].msg_hdr.msg_flags & MSG_TRUNC) {
				trunc = -ENOSPC;
				continue;
			}
			for (; nl_msg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left))
				pending -= handle_reply(b, base, lo, hi, nlh, &cb_err);
		}
	}
	return trunc ? trunc : lost ? lost : cb_err;
}

/* How many requests from i fit one sendmsg. */
static unsigned int window_end(const struct nl_sock *s, const struct nl_batch *b,
			       unsigned int i)
{
	size_t start = b->reqs[i].off;
	unsigned int j = i + 1;

	while (j < b->n && j - i < s->window) {
		size_t end = b->reqs[j].off + MNL_ALIGN(req_msg(b, j)->nlmsg_len);

		if (end - start > s->sndbuf)
			break;
		j++;
	}
	return j;
}

int nl_batch_run(struct nl_sock *s, struct nl_batch *b)
{
	uint32_t base = s->seq + 1;
	unsigned int i, j, k, nslot;
	char *rbuf;
	int err = 0;

	if (!b->n)
		return 0;
	nslot = b->n < NL_RECV_SLOTS ? b->n : NL_RECV_SLOTS;
	rbuf = malloc((size_t)nslot * NL_RECV_SIZE);
	if (!rbuf)
		return -ENOMEM;
	for (i = 0; i < b->n; i++)
		req_msg(b, i)->nlmsg_seq = base + i;
	s->seq += b->n;
	for (i = 0; i < b->n && !err; i = j) {
		size_t len;

		j = window_end(s, b, i);
		len = b->reqs[j - 1].off + req_msg(b, j - 1)->nlmsg_len - b->reqs[i].off;
		if (s->stats) {
			s->stats->sendmsg_calls++;
			s->stats->requests += j - i;
		}
		err = nl_send(s, b->buf + b->reqs[i].off, len);
		for (k = i; !err && k < j; k++)
			b->reqs[k].sent = true;
		if (!err)
			err = collect_acks(s, b, base, i, j, rbuf, nslot);
	}
	free(rbuf);
	return err;
}

int nl_request(struct nl_sock *s, struct nlmsghdr *req, nl_reply_cb cb,
	       void *data, char *extack, size_t extack_len, const char **bad)
{
	size_t rlen = s->recv_len ? s->recv_len : NL_RECV_SIZE;
	char *rbuf = malloc(rlen);
	bool intr = false, done = false, measure = nl_may_exceed(req);
	int err = 0;

	*bad = NULL;
	if (!rbuf)
		return -ENOMEM;
	req->nlmsg_seq = ++s->seq;
	if (s->stats) {
		s->stats->sendmsg_calls++;
		s->stats->requests++;
	}
	if (s->mnl)
		err = nl_send(s, req, req->nlmsg_len);
	while (!err && !done) {
		const struct nlmsghdr *nlh;
		ssize_t n = nl_recv(s, &rbuf, &rlen, req->nlmsg_seq, measure);
		int left;

		if (n < 0) {
			err = (int)n;
			break;
		}
		left = (int)n;
		for (nlh = (const struct nlmsghdr *)rbuf; nl_msg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_seq != req->nlmsg_seq)
				continue;
			if ((nlh->nlmsg_flags & NLM_F_DUMP_INTR) && !intr) {
				intr = true;
				if (s->stats)
					s->stats->dumps_interrupted++;
			}
			if (nlh->nlmsg_type == NLMSG_DONE) {
				/* A dump cut short is not a whole one. */
				err = err ? err : nl_done_error(nlh);
				done = true;
			} else if (nlh->nlmsg_type == NLMSG_ERROR) {
				/* The ack does not undo what a callback
				 * failed with. */
				int e = nl_ack_error(nlh, bad);
				char *msg = e ? parse_extack(nlh) : NULL;

				if (msg && extack)
					snprintf(extack, extack_len, "%s", msg);
				free(msg);
				err = err ? err : e;
				done = true;
			} else if (!err && cb) {
				int e = cb(nlh, data);

				err = e < 0 ? e : 0;
			}
		}
		/* The kernel sends whole messages: bytes left over are a
		 * message whose length runs past the datagram. */
		if (left > 0 && !done) {
			if (!err) {
				*bad = "a message overruns its datagram";
				err = -EBADMSG;
			}
			done = true;
		}
	}
	free(rbuf);
	return err ? err : intr ? NL_DUMP_INTR : 0;
}

/*
 * The kernel marks a dump NLM_F_DUMP_INTR when the table changed while it
 * was being read: every entry that lived through the whole dump is in it
 * (link dumps walk the ifindex map in order), but entries added, removed or
 * renamed meanwhile may be missing or stale.  What that costs depends on
 * the caller, so the caller decides: NL_DUMP_INTR is not an error.
 */
int nl_dump(struct nl_sock *s, struct nlmsghdr *req, nl_reply_cb cb, void *data,
	    char *extack, size_t extack_len)
{
	const char *bad;

	req->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
	if (s->stats)
		s->stats->dumps++;
	return nl_request(s, req, cb, data, extack, extack_len, &bad);
}

int nl_dump_settled(struct nl_sock *s, struct nlmsghdr *req, nl_reply_cb cb,
		    void *data, char *extack, size_t extack_len)
{
	unsigned int tries;
	int err = 0;

	for (tries = 0; tries < NL_DUMP_TRIES; tries++) {
		/* cb(NULL) tells the consumer to forget a partial dump. */
		if (tries)
			cb(NULL, data);
		err = nl_dump(s, req, cb, data, extack, extack_len);
		if (err != NL_DUMP_INTR)
			break;
	}
	return err;
}
