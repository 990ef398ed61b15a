// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * nfnetlink for nf_tables, on lib/nl.c's engine (socket, buffers, receive
 * loop, extack): what is added here is nfnetlink's framing.
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
/* Before a batch's first message: room for its BATCH_BEGIN. */
#define NB_BEGIN_ROOM	(NB_ROOM / 64)
#define NFNL_RCVBUF	(4u << 20)
#define RECV_SIZE	(64 * 1024)

static ssize_t replay_recv(void *arg, char *buf, size_t len, uint32_t seq);
static ssize_t record_recv(void *arg, char *buf, size_t len, uint32_t seq);

/* The socket, or for a replay the stand-in for the kernel (no socket). */
int nfnl_open(struct vnic_nft *n)
{
	struct nfnl_replay *r = n->replay;
	int err = 0;

	if (!r || r->record)
		err = nl_open(&n->nl, NETLINK_NETFILTER, n->ctx->netns_fd,
			      NFNL_RCVBUF, 0, &n->ctx->stats, NULL);
	if (err)
		return err;
	n->nl.seq = (uint32_t)vnic_now_ms();
	if (r) {
		n->nl.recv_fn = r->record ? record_recv : replay_recv;
		n->nl.recv_arg = n;
	}
	return 0;
}

void nbatch_init(struct nbatch *b)
{
	memset(b, 0, sizeof(*b));
	b->head = NB_BEGIN_ROOM;
}

void nbatch_head_room(struct nbatch *b, size_t room)
{
	if (!b->len)
		b->head = NB_BEGIN_ROOM + MNL_ALIGN(room);
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

int nbatch_expect(struct nbatch *b, size_t bytes)
{
	if (!b->len)
		b->len = b->head;
	return reserve(b, bytes);
}

/*
 * A message's room is zeroed before libnftnl writes into it: libmnl leaves
 * attribute padding as it finds it, and the bytes sent must not depend on
 * what the buffer held.  Only what was not zeroed yet is, so a batch of
 * many small messages does not clear 64 KiB each: [len, zeroed) is zero
 * (an unended message, dropped, is cleared first).
 */
static void room_zero(struct nbatch *b)
{
	size_t from = b->len > b->zeroed ? b->len : b->zeroed;

	if (b->cur) {
		memset(b->buf + b->len, 0, MNL_ALIGN(b->cur->nlmsg_len));
		b->cur = NULL;
	}
	if (from < b->len + NB_ROOM) {
		memset(b->buf + from, 0, b->len + NB_ROOM - from);
		b->zeroed = b->len + NB_ROOM;
	}
}

struct nlmsghdr *nbatch_msg(struct nbatch *b, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;

	/* What is before head is kept for BATCH_BEGIN, written at commit
	 * (and for messages nbatch_prepend() puts first). */
	if (!b->len)
		b->len = b->head;
	if (reserve(b, NB_ROOM))
		return NULL;
	room_zero(b);
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
	size_t len = src->msgs ? src->len - src->head : 0;

	if (!len)
		return 0;
	if (!dst->len)
		dst->len = dst->head;
	if (reserve(dst, len))
		return -ENOMEM;
	memcpy(dst->buf + dst->len, src->buf + src->head, len);
	dst->len += len;
	dst->msgs += src->msgs;
	return 0;
}

/*
 * head's messages before b's: into the room b keeps before its first
 * message (nbatch_head_room()) when they fit, else b's messages are copied
 * after head's (a whole batch, 700 KB for 1,000 guests, and a second
 * buffer's pages).  head is empty after.
 */
int nbatch_prepend(struct nbatch *b, struct nbatch *head)
{
	size_t len = head->msgs ? head->len - head->head : 0;
	int err;

	if (!len)
		return 0;
	if (b->len && len + NB_BEGIN_ROOM <= b->head) {
		b->head -= len;
		memcpy(b->buf + b->head, head->buf + head->head, len);
		b->msgs += head->msgs;
		nbatch_free(head);
		return 0;
	}
	err = nbatch_append(head, b);
	if (err) {
		nbatch_free(head);
		return err;
	}
	nbatch_free(b);
	*b = *head;
	nbatch_init(head);
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

/*
 * The first error queued for the batch, with the kernel's message.  A
 * batch whose every message is refused (a table another process owns)
 * queues an error each, which can be more than the receive buffer holds:
 * the kernel drops the rest and says ENOBUFS, before what is still
 * queued, and drops every later message to the socket (the next request's
 * reply too, which was then waited for in vain) until that queue has been
 * read empty (netlink_overrun()).  So read on to the end: the errors kept
 * are the batch's first, and the batch failed (any error aborts it).
 */
static int collect_errors(struct vnic_nft *n, char *buf)
{
	int first = 0, lost = 0;
	ssize_t r;

	for (;;) {
		const struct nlmsghdr *nlh;
		int left;

		r = nl_recv_sock(&n->nl, buf, RECV_SIZE, MSG_DONTWAIT);
		if (r == -ENOBUFS && !lost) {
			lost = (int)r;
			continue;
		}
		if (r <= 0)
			break;
		left = (int)r;
		for (nlh = (void *)buf; nl_msg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			const char *bad;
			char *msg;
			int e;

			if (nlh->nlmsg_type != NLMSG_ERROR || first)
				continue;
			e = nl_ack_error(nlh, &bad);
			if (!e)
				continue;
			first = e;
			msg = parse_extack(nlh);
			if (msg)
				snprintf(n->ctx->err.extack,
					 sizeof(n->ctx->err.extack), "%s", msg);
			free(msg);
		}
	}
	if (r < 0 && r != -EAGAIN && !first)
		first = (int)r;
	return first ? first : lost;
}

/*
 * BEGIN (with genid, unless NO_GENID) right before the first message, in
 * the head nbatch_msg() keeps free, and END after the last unless !end.
 * Returns where the batch starts (its length in *len), or NULL.
 */
static char *frame(struct vnic_nft *n, struct nbatch *b, uint64_t genid,
		   bool end, size_t *len)
{
	struct nlmsghdr *begin;
	size_t hdr;

	if (!b->len)
		b->len = b->head;
	if (reserve(b, NB_ROOM))
		return NULL;
	begin = nftnl_batch_begin(b->buf, n->nl.seq++);
	if (genid != NO_GENID)
		mnl_attr_put_u32(begin, NFNL_BATCH_GENID, htonl((uint32_t)genid));
	hdr = MNL_ALIGN(begin->nlmsg_len);
	memmove(b->buf + b->head - hdr, begin, begin->nlmsg_len);
	if (end) {
		struct nlmsghdr *e = nftnl_batch_end(b->buf + b->len, n->nl.seq++);

		b->len += MNL_ALIGN(e->nlmsg_len);
	}
	*len = b->len - (b->head - hdr);
	return b->buf + b->head - hdr;
}

int nbatch_commit(struct vnic_nft *n, struct nbatch *b, uint64_t genid,
		  unsigned int *sent)
{
	char *buf, *start;
	size_t len;
	int err;

	if (!b->msgs)
		return 0;
	if (!(n->features & VNIC_NFT_FEAT_GENID))
		genid = NO_GENID;
	start = frame(n, b, genid, true, &len);
	buf = start ? malloc(RECV_SIZE) : NULL;
	if (!buf)
		return -ENOMEM;
	nl_fit_sndbuf(&n->nl, len);
	n->ctx->stats.sendmsg_calls++;
	n->ctx->stats.requests += b->msgs + 2;
	if (n->batch_tap)
		n->batch_tap(n->batch_tap_arg, start, len);
	err = nl_send(&n->nl, start, len);
	if (!err)
		err = collect_errors(n, buf);
	free(buf);
	if (sent)
		*sent += b->msgs;
	return err;
}

/* The answers to a checked batch: the batch's own error, each message's. */
struct check_acks {
	uint32_t begin, base;		/* seqs: BEGIN's, the first message's */
	unsigned int msgs, got;
	int batch_err;
	int *errs;
};

static void check_ack(struct check_acks *a, const struct nlmsghdr *nlh)
{
	const char *bad;
	int e;

	if (nlh->nlmsg_type != NLMSG_ERROR)
		return;
	e = nl_ack_error(nlh, &bad);
	if (nlh->nlmsg_seq == a->begin) {
		a->batch_err = a->batch_err ? a->batch_err : (e ? e : -EPROTO);
	} else if (nlh->nlmsg_seq - a->base < a->msgs) {
		a->errs[nlh->nlmsg_seq - a->base] = e;
		a->got++;
	}
}

int nbatch_check(struct vnic_nft *n, struct nbatch *b, uint64_t genid, int *errs)
{
	struct check_acks a = { .msgs = b->msgs, .errs = errs };
	struct nlmsghdr *nlh;
	char *buf, *start;
	size_t len, off;
	unsigned int i;
	ssize_t r;
	int err;

	start = frame(n, b, genid, false, &len);
	buf = start ? malloc(RECV_SIZE) : NULL;
	if (!buf)
		return -ENOMEM;
	/* Every message its own seq, past BEGIN's: each ack says whose. */
	nlh = (struct nlmsghdr *)start;
	a.begin = nlh->nlmsg_seq;
	a.base = n->nl.seq;
	off = MNL_ALIGN(nlh->nlmsg_len);
	for (i = 0; i < b->msgs; i++) {
		nlh = (struct nlmsghdr *)(start + off);
		nlh->nlmsg_seq = n->nl.seq++;
		off += MNL_ALIGN(nlh->nlmsg_len);
	}
	nl_fit_sndbuf(&n->nl, len);
	n->ctx->stats.sendmsg_calls++;
	n->ctx->stats.requests += b->msgs + 1;
	err = nl_send(&n->nl, start, len);
	/* nf_tables handled the batch within sendmsg(): the acks are queued. */
	while (!err && (r = nl_recv_sock(&n->nl, buf, RECV_SIZE, MSG_DONTWAIT)) != -EAGAIN) {
		int left = (int)r;

		if (r < 0) {
			err = (int)r;
			break;
		}
		for (nlh = (void *)buf; nl_msg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left))
			check_ack(&a, nlh);
	}
	free(buf);
	if (!err)
		err = a.batch_err;
	if (!err && a.got != a.msgs)
		err = -EPROTO;		/* a message the kernel did not answer */
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
	/* The seq is nl_request()'s. */
	return nftnl_nlmsg_build_hdr(buf, type, NFPROTO_NETDEV, flags, 0);
}

/* The next reply of a replay: messages up to and with the first DONE or
 * ERROR (or the end), each given the request's seq. */
static ssize_t replay_recv(void *arg, char *buf, size_t len, uint32_t seq)
{
	struct nfnl_replay *r = ((struct vnic_nft *)arg)->replay;
	const uint8_t *base = r->buf + r->off;
	const struct nlmsghdr *nlh = (const void *)base;
	size_t left = r->len - r->off, n;
	int l = left > len ? (int)len : (int)left;
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

/* The kernel's replies, appended to the recording. */
static ssize_t record_recv(void *arg, char *buf, size_t len, uint32_t seq)
{
	struct vnic_nft *n = arg;
	struct nfnl_replay *r = n->replay;
	ssize_t got = nl_recv_sock(&n->nl, buf, len, 0);
	uint8_t *p;

	if (got <= 0)
		return got;
	p = realloc(r->rec, r->rec_len + (size_t)got);
	if (!p)
		return -ENOMEM;
	memcpy(p + r->rec_len, buf, (size_t)got);
	r->rec = p;
	r->rec_len += (size_t)got;
	return got;
}

/* A reply libnftnl must not see: said once, with what is wrong. */
static int malformed(struct vnic_nft *n, const char *why)
{
	return vnic_set_err(n->ctx, -EBADMSG, VNIC_STEP_DUMP, -1, NULL,
			    "table netdev %s: refused a malformed reply from the kernel: %s",
			    n->table, why);
}

struct get_args {
	struct vnic_nft *n;
	const struct nreply *r;
	int (*cb)(const struct nlmsghdr *, void *);
	void *data;
};

/* Each reply passes r's policy before the caller's callback sees it. */
static int get_reply(const struct nlmsghdr *nlh, void *data)
{
	struct get_args *a = data;
	char why[160];

	if (!a->cb)
		return 0;
	if (nreply_check(a->r, nlh, why, sizeof(why)))
		return malformed(a->n, why);
	return a->cb(nlh, a->data);
}

int nfnl_get(struct vnic_nft *n, struct nlmsghdr *req, const struct nreply *r,
	     int (*cb)(const struct nlmsghdr *, void *), void *data)
{
	struct get_args a = { n, r, cb, data };
	const char *bad;
	int err;

	req->nlmsg_flags |= NLM_F_ACK;
	/* vnic-bench's floor of a sync: its reads too, as sent. */
	if (n->batch_tap)
		n->batch_tap(n->batch_tap_arg, req, req->nlmsg_len);
	err = nl_request(&n->nl, req, get_reply, &a, NULL, 0, &bad);
	if (err == -EBADMSG && bad)
		return malformed(n, bad);
	/* A dump the ruleset changed under is caught by the generation
	 * (read_stable()), not by NLM_F_DUMP_INTR. */
	return err == NL_DUMP_INTR ? 0 : err;
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
