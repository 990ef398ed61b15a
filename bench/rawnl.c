// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Raw rtnetlink with libmnl, independent of libvnic: the floor that libvnic
 * is measured against, and the bench's own setup and cleanup, so that a
 * library bug cannot hide in the state the library is measured from.
 * rawnl_talk() is the bench's one request-and-reply loop, for rtnetlink
 * and nfnetlink (fenv.c) alike.
 *
 * Requests are queued back to back in one buffer and sent 'window' at a
 * time: the kernel runs every request of one sendmsg before the call
 * returns, and queues one ack per request on our socket, so the receive
 * buffer must hold a window's acks or they are dropped (ENOBUFS).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "bench.h"

/* An ack's share of the receive buffer is its skb's truesize (sk_buff
 * plus the smallest data slab, under 1 KiB on 64-bit), not its 36 bytes:
 * 4,000 acks fit the default 4 MiB here. */
#define ACK_TRUESIZE	1024
#define REQ_MAX		512	/* one request's bytes, at most */
#define RECV_BUF	65536

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif

static void set_buf(struct mnl_socket *nl, int force, int plain, int bytes)
{
	int fd = mnl_socket_get_fd(nl);

	/* FORCE ignores net.core.[rw]mem_max; it needs CAP_NET_ADMIN,
	 * which we have, but fall back so a weaker caller still runs. */
	if (setsockopt(fd, SOL_SOCKET, force, &bytes, sizeof(bytes)) < 0)
		setsockopt(fd, SOL_SOCKET, plain, &bytes, sizeof(bytes));
}

int rawnl_open(struct rawnl *r, unsigned int rcvbuf)
{
	int one = 1;

	memset(r, 0, sizeof(*r));
	r->nl = mnl_socket_open(NETLINK_ROUTE);
	if (!r->nl)
		return -errno;
	if (mnl_socket_bind(r->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;

		mnl_socket_close(r->nl);
		r->nl = NULL;
		return err;
	}
	r->portid = mnl_socket_get_portid(r->nl);
	r->seq = 1;
	r->rcvbuf = rcvbuf;
	set_buf(r->nl, SO_RCVBUFFORCE, SO_RCVBUF, (int)rcvbuf);
	/* The kernel refuses a datagram larger than the send buffer; a
	 * window of requests is far smaller than its acks' truesize. */
	set_buf(r->nl, SO_SNDBUFFORCE, SO_SNDBUF, (int)rcvbuf);
	/* Extended acks name the failing attribute; capped acks keep an
	 * error's ack from echoing the whole request back. */
	mnl_socket_setsockopt(r->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(r->nl, NETLINK_CAP_ACK, &one, sizeof(one));
	return 0;
}

void rawnl_close(struct rawnl *r)
{
	if (r->nl)
		mnl_socket_close(r->nl);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

unsigned int rawnl_window(const struct rawnl *r)
{
	unsigned int w = r->rcvbuf / ACK_TRUESIZE;

	return w ? w : 1;
}

/* Room for one more request at the tail of the queue. */
static struct nlmsghdr *queue_msg(struct rawnl *r, uint16_t type,
				  uint16_t flags)
{
	struct nlmsghdr *nlh;

	if (r->len + REQ_MAX > r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64 * REQ_MAX;
		char *buf = realloc(r->buf, cap);

		if (!buf)
			return NULL;
		r->buf = buf;
		r->cap = cap;
	}
	memset(r->buf + r->len, 0, REQ_MAX);
	nlh = mnl_nlmsg_put_header(r->buf + r->len);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = r->seq++;
	return nlh;
}

static void queue_commit(struct rawnl *r, struct nlmsghdr *nlh)
{
	r->len += nlh->nlmsg_len;
	r->queued++;
}

static struct ifinfomsg *put_ifinfo(struct nlmsghdr *nlh, int ifindex,
				    bool up)
{
	struct ifinfomsg *ifi;

	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	if (up) {
		ifi->ifi_flags = IFF_UP;
		ifi->ifi_change = IFF_UP;
	}
	return ifi;
}

static void put_kind_data(struct nlmsghdr *nlh, const struct link_spec *ls)
{
	struct nlattr *data, *peer;

	if (!strcmp(ls->kind, "veth")) {
		data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
		peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
		/* Never up here: the kernel opens the peer before it is
		 * paired, and veth_open() then fails with ENOTCONN. */
		put_ifinfo(nlh, 0, false);
		mnl_attr_put_strz(nlh, IFLA_IFNAME, ls->peer);
		mnl_attr_nest_end(nlh, peer);
		mnl_attr_nest_end(nlh, data);
	} else if (ls->mode) {
		data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
		mnl_attr_put_u32(nlh, IFLA_MACVLAN_MODE, ls->mode);
		mnl_attr_nest_end(nlh, data);
	}
}

int rawnl_queue_newlink(struct rawnl *r, const struct link_spec *ls)
{
	struct nlmsghdr *nlh;
	struct nlattr *info;

	nlh = queue_msg(r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	if (!nlh)
		return -ENOMEM;
	put_ifinfo(nlh, 0, ls->up);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ls->name);
	if (ls->lower)
		mnl_attr_put_u32(nlh, IFLA_LINK, (uint32_t)ls->lower);
	if (ls->mac)
		mnl_attr_put(nlh, IFLA_ADDRESS, 6, ls->mac);
	if (ls->group)
		mnl_attr_put_u32(nlh, IFLA_GROUP, ls->group);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, ls->kind);
	put_kind_data(nlh, ls);
	mnl_attr_nest_end(nlh, info);
	queue_commit(r, nlh);
	return 0;
}

/* RTM_SETLINK or RTM_DELLINK of a link by index or name, with one
 * attribute (type 0: none). */
static int queue_link(struct rawnl *r, uint16_t type, int ifindex,
		      const char *name, bool up, uint16_t attr,
		      const void *val, size_t len)
{
	struct nlmsghdr *nlh = queue_msg(r, type, 0);

	if (!nlh)
		return -ENOMEM;
	put_ifinfo(nlh, ifindex, up);
	if (name)
		mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (attr)
		mnl_attr_put(nlh, attr, len, val);
	queue_commit(r, nlh);
	return 0;
}

int rawnl_queue_setalias(struct rawnl *r, const char *name, const char *alias)
{
	return queue_link(r, RTM_SETLINK, 0, name, false, IFLA_IFALIAS, alias,
			  strlen(alias) + 1);
}

int rawnl_queue_setgroup(struct rawnl *r, int ifindex, uint32_t group)
{
	return queue_link(r, RTM_SETLINK, ifindex, NULL, false, IFLA_GROUP,
			  &group, sizeof(group));
}

int rawnl_queue_setup(struct rawnl *r, const char *name)
{
	return queue_link(r, RTM_SETLINK, 0, name, true, 0, NULL, 0);
}

int rawnl_queue_dellink(struct rawnl *r, int ifindex)
{
	return queue_link(r, RTM_DELLINK, ifindex, NULL, false, 0, NULL, 0);
}

/* ifindex 0 and no name: the kernel deletes the whole group in one
 * unregister batch, paying its RCU grace periods once. */
int rawnl_queue_dellink_group(struct rawnl *r, uint32_t group)
{
	return queue_link(r, RTM_DELLINK, 0, NULL, false, IFLA_GROUP, &group,
			  sizeof(group));
}

/* The extended ack's text, if the kernel attached one. */
static const char *ack_text(const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;
	size_t off = sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return "";
	/* Without NLM_F_CAPPED the whole request follows the header. */
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(e->msg);
	mnl_attr_for_each(a, nlh, off)
		if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG)
			return mnl_attr_get_str(a);
	return "";
}

static void note_error(struct rawnl *r, const struct nlmsghdr *nlh,
		       uint32_t first_seq, int err)
{
	const char *ext = ack_text(nlh);

	snprintf(r->err, sizeof(r->err), "request %u: %s%s%s",
		 nlh->nlmsg_seq - first_seq, strerror(-err),
		 *ext ? ": " : "", ext);
}

/* What a read waits for: want acks (or NLMSG_DONE) of the requests from
 * seq first on, cb for the other replies; the first error is kept (its
 * text in r->err, if r). */
struct replies {
	uint32_t first;
	unsigned int want, acks;
	rawnl_cb cb;
	void *data;
	struct rawnl *r;
	int err;
	bool intr, done;
};

static void parse(struct replies *p, const char *buf, int len)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	const struct nlmsgerr *e;

	for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
		if (nlh->nlmsg_seq < p->first)
			continue;	/* a stale reply */
		if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
			p->intr = true;
		if (nlh->nlmsg_type == NLMSG_DONE) {
			p->done = true;
		} else if (nlh->nlmsg_type == NLMSG_ERROR) {
			e = mnl_nlmsg_get_payload(nlh);
			p->done = p->done || ++p->acks >= p->want;
			if (e->error && !p->err && p->r)
				note_error(p->r, nlh, p->first, e->error);
			p->err = p->err ?: e->error;
		} else if (p->cb && p->cb(nlh, p->data) < MNL_CB_OK) {
			/* The bench's callbacks fail only for memory. */
			p->err = p->err ?: -ENOMEM;
		}
	}
}

/* Read to the end, even past an error or an interrupted dump, so that
 * the socket stays in step: 0 or the transport's -errno. */
static int read_replies(struct mnl_socket *nl, struct replies *p)
{
	static char buf[RECV_BUF];

	while (!p->done) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		parse(p, buf, (int)n);
	}
	return 0;
}

/* Bytes of the next 'count' requests from 'off'. */
static size_t span(const struct rawnl *r, size_t off, unsigned int count)
{
	size_t end = off;

	while (count-- && end < r->len)
		end += ((const struct nlmsghdr *)(r->buf + end))->nlmsg_len;
	return end - off;
}

static int send_span(struct rawnl *r, size_t off, size_t bytes)
{
	int err;

	r->sendmsg_calls++;
	if (mnl_socket_sendto(r->nl, r->buf + off, bytes) >= 0)
		return 0;
	err = errno;
	snprintf(r->err, sizeof(r->err), "sendmsg of %zu bytes: %s", bytes,
		 strerror(err));
	return -err;
}

int rawnl_flush(struct rawnl *r, unsigned int window)
{
	size_t off = 0;
	int rerr = 0, err = 0;
	uint32_t first;

	r->err[0] = 0;
	if (!r->queued)
		return 0;
	/* Errors name the request by its place in the whole flush. */
	first = ((struct nlmsghdr *)r->buf)->nlmsg_seq;
	while (r->queued && !err) {
		unsigned int count = window && window < r->queued ?
				     window : r->queued;
		size_t bytes = span(r, off, count);
		struct replies p = { .first = first, .want = count, .r = r,
				     .err = rerr };

		err = send_span(r, off, bytes);
		if (!err && (err = read_replies(r->nl, &p)))
			snprintf(r->err, sizeof(r->err),
				 "receiving acks (%u of %u): %s%s", p.acks,
				 count, strerror(-err), err == -ENOBUFS ?
				 " (acks overflowed the receive buffer)" : "");
		rerr = p.err;
		r->requests += count;
		r->queued -= count;
		off += bytes;
	}
	r->queued = 0;
	r->len = 0;
	return err ? err : rerr;
}

void link_list_free(struct link_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int link_list_add(struct link_list *l, int ifindex, const char *name)
{
	if (l->n == l->cap) {
		unsigned int cap = l->cap ? l->cap * 2 : 256;
		struct link_entry *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].ifindex = ifindex;
	snprintf(l->v[l->n].name, sizeof(l->v[l->n].name), "%s", name);
	l->n++;
	return 0;
}

static int dump_attr_cb(const struct nlattr *a, void *data)
{
	const char **name = data;

	if (mnl_attr_get_type(a) == IFLA_IFNAME &&
	    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
		*name = mnl_attr_get_str(a);
	return MNL_CB_OK;
}

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	const char *name = "";

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ifi), dump_attr_cb, &name);
	return link_list_add(data, ifi->ifi_index, name) ? MNL_CB_ERROR :
							   MNL_CB_OK;
}

int rawnl_talk(struct mnl_socket *nl, const void *req, size_t len,
	       uint32_t seq, rawnl_cb cb, void *data)
{
	struct replies p = { .first = seq, .want = 1, .cb = cb, .data = data };
	int ret;

	if (mnl_socket_sendto(nl, req, len) < 0)
		return -errno;
	ret = read_replies(nl, &p);
	return ret ?: p.err ?: p.intr ? -EINTR : 0;
}

static int dump_once(struct rawnl *r, struct link_list *out)
{
	char buf[MNL_NLMSG_HDRLEN + 64];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = r->seq++;
	put_ifinfo(nlh, 0, false);
	/* Statistics are most of a dump's bytes and we want none. */
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return rawnl_talk(r->nl, nlh, nlh->nlmsg_len, nlh->nlmsg_seq, dump_cb,
			  out);
}

int rawnl_dump_links(struct rawnl *r, struct link_list *out)
{
	int tries = 5, err;

	/* Links changed during the dump: the list may be torn, ask again. */
	do {
		memset(out, 0, sizeof(*out));
		err = dump_once(r, out);
		if (err)
			link_list_free(out);
	} while (err == -EINTR && --tries);
	return err;
}
