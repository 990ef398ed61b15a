// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The filter floor: the very nf_tables batches libvnic sends for a layout,
 * captured once through the library's batch tap (untimed), then sent again
 * by the bench's own nfnetlink socket, one sendmsg() per batch, from the
 * first sendmsg() to the last ack.  What the kernel charges for exactly
 * that work, with libvnic's reads, encoding and bookkeeping taken out:
 * libvnic's row over this one is the library's own cost.
 *
 * A batch begins with the ruleset generation libvnic read (NFNL_BATCH_GENID,
 * which the kernel checks); a replay writes the generation of its own time
 * there, before the clock, so the kernel does the same check.
 *
 * With fb->requests, libvnic's reads are kept too (a sync that finds
 * nothing to change sends no batch, only reads): each is sent again on its
 * own, as libvnic sends it, and its replies read to their end (DONE or the
 * ack), unparsed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>

#include "lib/testing.h"
#include "filters.h"

#define FLOOR_RCVBUF	(64 << 20)

static void tap(void *arg, const void *buf, size_t len)
{
	struct floor_batches *fb = arg;
	struct floor_batch *v;

	bool batch = ((const struct nlmsghdr *)buf)->nlmsg_type ==
		     NFNL_MSG_BATCH_BEGIN;

	if (fb->err || (!batch && !fb->requests))
		return;
	v = realloc(fb->v, (fb->n + 1) * sizeof(*v));
	if (!v || !(v[fb->n].buf = malloc(len))) {
		fb->v = v ? v : fb->v;
		fb->err = -ENOMEM;
		return;
	}
	fb->v = v;
	memcpy(v[fb->n].buf, buf, len);
	v[fb->n].request = !batch;
	v[fb->n++].len = len;
}

int floor_capture(struct vnic_filter *h, struct floor_batches *fb)
{
	return vnic_filter_set_batch_tap(h, fb ? tap : NULL, fb);
}

void floor_free(struct floor_batches *fb)
{
	unsigned int i;

	for (i = 0; i < fb->n; i++)
		free(fb->v[i].buf);
	free(fb->v);
	memset(fb, 0, sizeof(*fb));
}

/* Batch i expects the generation genid + i: each earlier one committed. */
static void set_genid(struct floor_batch *b, uint32_t genid)
{
	struct nlmsghdr *nlh = (void *)b->buf;
	struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == NFNL_BATCH_GENID)
			*(uint32_t *)mnl_attr_get_payload(a) = htonl(genid);
}

/* The acks and errors of a batch are queued when sendmsg() returns. */
static int drain(struct mnl_socket *nl, char *buf, size_t len)
{
	int first = 0;
	ssize_t r;

	while ((r = recv(mnl_socket_get_fd(nl), buf, len, MSG_DONTWAIT)) > 0) {
		const struct nlmsghdr *nlh = (const void *)buf;
		int left = (int)r;

		for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (nlh->nlmsg_type == NLMSG_ERROR && e->error && !first)
				first = e->error;
		}
	}
	if (r < 0 && errno != EAGAIN && !first)
		first = -errno;
	return first;
}

/* A read's replies, to the DONE of a dump or the ack of a get. */
static int read_replies(struct mnl_socket *nl, char *buf, size_t len)
{
	for (;;) {
		ssize_t r = recv(mnl_socket_get_fd(nl), buf, len, 0);
		const struct nlmsghdr *nlh = (const void *)buf;
		int left = (int)r;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EPROTO;
		for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return e->error;
		}
	}
}

int floor_replay(struct filt_env *e, struct floor_batches *fb,
		 unsigned int from, unsigned int to, double *ms)
{
	int fd = mnl_socket_get_fd(e->nfnl), v = FLOOR_RCVBUF, ret = 0;
	size_t len = MNL_SOCKET_BUFFER_SIZE * 4;
	char *buf = malloc(len);
	uint32_t genid;
	unsigned int i, k = 0;
	uint64_t t0;

	if (!buf)
		return -ENOMEM;
	if (fb->err || to > fb->n || from >= to)
		ret = fb->err ? fb->err : -ENODATA;
	if (!ret)
		ret = nfnl_genid(e, &genid);
	for (i = from; !ret && i < to; i++) {
		if (!fb->v[i].request)
			set_genid(&fb->v[i], genid + k++);
		v = v > (int)fb->v[i].len + 4096 ? v : (int)fb->v[i].len + 4096;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &(int){ FLOOR_RCVBUF },
		   sizeof(int));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v));
	drain(e->nfnl, buf, len);
	t0 = now_ns();
	for (i = from; !ret && i < to; i++) {
		if (mnl_socket_sendto(e->nfnl, fb->v[i].buf, fb->v[i].len) < 0)
			ret = -errno;
		else if (fb->v[i].request)
			ret = read_replies(e->nfnl, buf, len);
		else
			ret = drain(e->nfnl, buf, len);
	}
	*ms = ms_since(t0);
	free(buf);
	return ret;
}

/* A child's capture to its parent: the count, then length, kind, bytes. */
static int put(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p = (const char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static int get(int fd, void *p, size_t len)
{
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p = (char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

int floor_write(int fd, const struct floor_batches *fb)
{
	uint32_t n = fb->err ? 0 : fb->n, i;
	int ret = put(fd, &n, sizeof(n));

	for (i = 0; !ret && i < n; i++) {
		uint32_t len = (uint32_t)fb->v[i].len;
		uint8_t req = fb->v[i].request;

		ret = put(fd, &len, sizeof(len)) ?: put(fd, &req, 1) ?:
		      put(fd, fb->v[i].buf, len);
	}
	return ret;
}

int floor_read(int fd, struct floor_batches *fb)
{
	uint32_t n, i, len;
	uint8_t req;
	int ret = get(fd, &n, sizeof(n));

	floor_free(fb);
	if (!ret && n > 1u << 16)
		ret = -EPROTO;
	if (!ret && !(fb->v = calloc(n ? n : 1, sizeof(*fb->v))))
		ret = -ENOMEM;
	for (i = 0; !ret && i < n; i++) {
		ret = get(fd, &len, sizeof(len)) ?: get(fd, &req, 1);
		if (!ret && len > 1u << 28)
			ret = -EPROTO;
		if (!ret && !(fb->v[i].buf = malloc(len ? len : 1)))
			ret = -ENOMEM;
		if (!ret) {
			fb->n++;
			fb->v[i].len = len;
			fb->v[i].request = req;
			ret = get(fd, fb->v[i].buf, len);
		}
	}
	if (ret)
		floor_free(fb);
	return ret;
}
