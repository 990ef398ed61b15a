// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * nfnetlink transport for nf_tables.
 *
 * A batch is NFNL_MSG_BATCH_BEGIN (carrying the generation it was built
 * against), the messages, NFNL_MSG_BATCH_END: the kernel applies all of it
 * or nothing.  The whole batch goes in one sendmsg(): the buffer grows as
 * needed (never truncated) and the send buffer is raised to fit it.  The
 * messages carry no NLM_F_ACK: nf_tables processes the batch before
 * sendmsg() returns and queues an error for whatever failed (or for the
 * batch, when the generation moved on or the commit failed), so reading
 * what is queued tells the outcome.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnftnl/common.h>

#include "nft/internal.h"

#define NB_ROOM		(64 * 1024)
#define NFNL_RCVBUF	(4u << 20)
#define RECV_SIZE	(64 * 1024)

struct open_args {
	struct mnl_socket *nl;
};

static int open_fn(void *p)
{
	struct open_args *a = p;

	a->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	return a->nl ? 0 : -errno;
}

int nfnl_open(struct vnic_nft *n)
{
	struct open_args a = { 0 };
	int one = 1, v = NFNL_RCVBUF, fd, err;

	err = vnic_in_netns(n->ctx->netns_fd, open_fn, &a);
	if (err)
		return err;
	n->nl = a.nl;
	fd = mnl_socket_get_fd(n->nl);
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	n->portid = mnl_socket_get_portid(n->nl);
	n->seq = (uint32_t)vnic_now_ms();
	return 0;
}

void nbatch_init(struct nbatch *b)
{
	memset(b, 0, sizeof(*b));
}

void nbatch_free(struct nbatch *b)
{
	free(b->buf);
	nbatch_init(b);
}

static int reserve(struct nbatch *b, size_t room)
{
	size_t cap = b->cap ? b->cap : 4 * NB_ROOM;
	char *p;

	while (b->len + room > cap)
		cap *= 2;
	if (cap == b->cap)
		return 0;
	p = realloc(b->buf, cap);
	if (!p)
		return -ENOMEM;
	b->buf = p;
	b->cap = cap;
	return 0;
}

struct nlmsghdr *nbatch_msg(struct nbatch *b, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;

	/* Offset 0 is kept for BATCH_BEGIN, written at commit. */
	if (!b->len)
		b->len = NB_ROOM / 64;
	if (reserve(b, NB_ROOM))
		return NULL;
	memset(b->buf + b->len, 0, NB_ROOM);
	nlh = nftnl_nlmsg_build_hdr(b->buf + b->len, type, NFPROTO_NETDEV,
				    flags, ++b->seq);
	b->cur = nlh;
	return nlh;
}

void nbatch_end(struct nbatch *b, struct nlmsghdr *nlh)
{
	b->len += MNL_ALIGN(nlh->nlmsg_len);
	b->msgs++;
	b->cur = NULL;
}

int nbatch_append(struct nbatch *dst, const struct nbatch *src)
{
	size_t len = src->msgs ? src->len - NB_ROOM / 64 : 0;

	if (!len)
		return 0;
	if (!dst->len)
		dst->len = NB_ROOM / 64;
	if (reserve(dst, len))
		return -ENOMEM;
	memcpy(dst->buf + dst->len, src->buf + NB_ROOM / 64, len);
	dst->len += len;
	dst->msgs += src->msgs;
	return 0;
}

/* An nftnl object as the payload of one message; freed either way. */
int nbatch_put(struct nbatch *b, uint16_t type, uint16_t flags,
		void *obj, void (*build)(struct nlmsghdr *, const void *),
		void (*freeobj)(void *))
{
	struct nlmsghdr *nlh = nbatch_msg(b, type, flags);

	if (!nlh) {
		freeobj(obj);
		return -ENOMEM;
	}
	build(nlh, obj);
	nbatch_end(b, nlh);
	freeobj(obj);
	return 0;
}

static ssize_t recv_one(struct vnic_nft *n, char *buf, int flags)
{
	ssize_t r;

	do {
		r = recv(mnl_socket_get_fd(n->nl), buf, RECV_SIZE, flags);
	} while (r < 0 && errno == EINTR);
	n->ctx->stats.recvmsg_calls++;
	return r < 0 ? -errno : r;
}

/* The first error queued for the batch, with the kernel's message. */
static int collect_errors(struct vnic_nft *n, char *buf)
{
	int first = 0;
	ssize_t r;

	while ((r = recv_one(n, buf, MSG_DONTWAIT)) > 0) {
		const struct nlmsghdr *nlh;
		int left = (int)r;

		for (nlh = (void *)buf; nl_msg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
			char *msg;

			if (nlh->nlmsg_type != NLMSG_ERROR || first ||
			    mnl_nlmsg_get_payload_len(nlh) < sizeof(*e) || !e->error)
				continue;
			first = e->error;
			msg = parse_extack(nlh);
			if (msg)
				snprintf(n->ctx->err.extack,
					 sizeof(n->ctx->err.extack), "%s", msg);
			free(msg);
		}
	}
	if (r < 0 && r != -EAGAIN && !first)
		first = (int)r;
	return first;
}

static void size_sndbuf(struct vnic_nft *n, size_t len)
{
	int fd = mnl_socket_get_fd(n->nl), v = (int)len + 4096;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

int nbatch_commit(struct vnic_nft *n, struct nbatch *b, uint64_t genid,
		  unsigned int *sent)
{
	struct nlmsghdr *begin, *end;
	char *buf, *start;
	size_t hdr;
	int err;

	if (!b->msgs)
		return 0;
	/* BEGIN goes right before the first message, in the reserved head. */
	begin = nftnl_batch_begin(b->buf, n->seq++);
	if ((n->features & VNIC_NFT_FEAT_GENID) && genid != NO_GENID)
		mnl_attr_put_u32(begin, NFNL_BATCH_GENID, htonl((uint32_t)genid));
	hdr = MNL_ALIGN(begin->nlmsg_len);
	start = b->buf + NB_ROOM / 64 - hdr;
	memmove(start, begin, begin->nlmsg_len);
	if (reserve(b, NB_ROOM))
		return -ENOMEM;
	start = b->buf + NB_ROOM / 64 - hdr;
	end = nftnl_batch_end(b->buf + b->len, n->seq++);
	b->len += MNL_ALIGN(end->nlmsg_len);
	size_sndbuf(n, b->len);
	buf = malloc(RECV_SIZE);
	if (!buf)
		return -ENOMEM;
	n->ctx->stats.sendmsg_calls++;
	n->ctx->stats.requests += b->msgs + 2;
	if (mnl_socket_sendto(n->nl, start, b->len - (size_t)(start - b->buf)) < 0)
		err = -errno;
	else
		err = collect_errors(n, buf);
	free(buf);
	if (sent)
		*sent += b->msgs;
	return err;
}

/* The handle's error: the kernel's extack (collect_errors() left it in
 * ctx->err.extack) with a message saying what failed. */
__attribute__((format(printf, 3, 4)))
int nfnl_set_err(struct vnic_nft *n, int err, const char *fmt, ...)
{
	char extack[VNIC_EXTACK_MAX];
	va_list ap;

	/* collect_errors() left the kernel's message in ctx->err.extack. */
	snprintf(extack, sizeof(extack), "%s", n->ctx->err.extack);
	n->ctx->err.extack[0] = '\0';
	va_start(ap, fmt);
	err = vnic_set_errv(n->ctx, err, VNIC_STEP_CREATE, -1, extack, fmt, ap);
	va_end(ap);
	return err;
}

/* nbatch_commit(), counted into res (a change's own, never the caller's). */
int nbatch_commit_res(struct vnic_nft *n, struct nbatch *b, uint64_t genid,
		      struct vnic_nft_result *res)
{
	unsigned int sent = 0;
	int err = nbatch_commit(n, b, genid, &sent);

	if (res) {	/* the change's own (result_out()), never the caller's */
		res->messages += sent;
		res->batches += sent ? 1 : 0;
		res->writes = res->writes || sent;
	}
	return err;
}


struct nlmsghdr *nfnl_req(char *buf, uint16_t type, uint16_t flags, struct vnic_nft *n)
{
	return nftnl_nlmsg_build_hdr(buf, type, NFPROTO_NETDEV, flags, ++n->seq);
}

/* The next reply of a replay: messages up to and with the first DONE or
 * ERROR (or the end), each given the request's seq. */
static ssize_t replay_recv(struct nfnl_replay *r, char *buf, uint32_t seq)
{
	const uint8_t *base = r->buf + r->off;
	const struct nlmsghdr *nlh = (const void *)base;
	size_t left = r->len - r->off, n;
	int l = left > RECV_SIZE ? RECV_SIZE : (int)left;
	size_t window = (size_t)l;

	if (!left)
		return -ENODATA;
	while (nl_msg_ok(nlh, l)) {
		uint16_t type = nlh->nlmsg_type;

		nlh = mnl_nlmsg_next(nlh, &l);
		if (type == NLMSG_DONE || type == NLMSG_ERROR)
			break;
	}
	n = (size_t)((const uint8_t *)nlh - base);
	if (!n || n > window)	/* no whole message, or the last unpadded */
		n = window;
	memcpy(buf, base, n);
	r->off += n;
	for (nlh = (void *)buf, l = (int)n; nl_msg_ok(nlh, l);
	     nlh = mnl_nlmsg_next(nlh, &l))
		((struct nlmsghdr *)nlh)->nlmsg_seq = seq;
	return (ssize_t)n;
}

static ssize_t get_recv(struct vnic_nft *n, char *buf, uint32_t seq)
{
	struct nfnl_replay *r = n->replay;
	ssize_t len;
	uint8_t *p;

	if (r && !r->record)
		return replay_recv(r, buf, seq);
	len = recv_one(n, buf, 0);
	if (!r || len <= 0)
		return len;
	p = realloc(r->rec, r->rec_len + (size_t)len);
	if (!p)
		return -ENOMEM;
	memcpy(p + r->rec_len, buf, (size_t)len);
	r->rec = p;
	r->rec_len += (size_t)len;
	return len;
}

/* A reply libnftnl must not see: said once, with what is wrong. */
static int malformed(struct vnic_nft *n, const char *why)
{
	return vnic_set_err(n->ctx, -EBADMSG, VNIC_STEP_DUMP, -1, NULL,
			    "table netdev %s: refused a malformed reply from the kernel: %s",
			    n->table, why);
}

static int get_reply(struct vnic_nft *n, const struct nlmsghdr *nlh,
		     const struct nreply *r,
		     int (*cb)(const struct nlmsghdr *, void *), void *data)
{
	char why[160];

	if (!cb)
		return 0;
	if (nreply_check(r, nlh, why, sizeof(why)))
		return malformed(n, why);
	return cb(nlh, data);
}

/* The ack's errno: 0 or -1..-4095, as the kernel sends (ERR_PTR range). */
static int ack_error(struct vnic_nft *n, const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e))
		return malformed(n, "a short error message");
	if (e->error > 0 || e->error < -4095)
		return malformed(n, "an error code out of range");
	return e->error;
}

int nfnl_get(struct vnic_nft *n, struct nlmsghdr *req, const struct nreply *r,
	     int (*cb)(const struct nlmsghdr *, void *), void *data)
{
	char *buf = malloc(RECV_SIZE);
	int err = 0;
	bool done = false;

	if (!buf)
		return -ENOMEM;
	req->nlmsg_flags |= NLM_F_ACK;
	n->ctx->stats.sendmsg_calls++;
	n->ctx->stats.requests++;
	if ((!n->replay || n->replay->record) &&
	    mnl_socket_sendto(n->nl, req, req->nlmsg_len) < 0) {
		free(buf);
		return -errno;
	}
	while (!done) {
		const struct nlmsghdr *nlh;
		ssize_t len = get_recv(n, buf, req->nlmsg_seq);
		int left;

		if (len < 0) {
			err = (int)len;
			break;
		}
		left = (int)len;
		for (nlh = (void *)buf; nl_msg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_seq != req->nlmsg_seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE) {
				done = true;
			} else if (nlh->nlmsg_type == NLMSG_ERROR) {
				/* The ack of a GET does not undo what its
				 * replies' callbacks failed with. */
				int e = ack_error(n, nlh);

				err = err ? err : e;
				done = true;
			} else if (!err) {
				err = get_reply(n, nlh, r, cb, data);
			}
		}
		/* The kernel sends whole messages: bytes left over are a
		 * message whose length runs past the datagram. */
		if (left > 0 && !done) {
			err = err ? err : malformed(n, "a message overruns its datagram");
			done = true;
		}
	}
	free(buf);
	return err;
}

static int genid_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == NFTA_GEN_ID)
			*(uint32_t *)data = ntohl(mnl_attr_get_u32(a));
	return 0;
}

int nfnl_genid(struct vnic_nft *n, uint32_t *genid)
{
	char buf[256] = { 0 };
	struct nlmsghdr *req = nfnl_req(buf, NFT_MSG_GETGEN, 0, n);

	*genid = 0;
	return nfnl_get(n, req, &nr_gen, genid_cb, genid);
}
