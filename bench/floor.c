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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

	if (fb->err)
		return;
	v = realloc(fb->v, (fb->n + 1) * sizeof(*v));
	if (!v || !(v[fb->n].buf = malloc(len))) {
		fb->v = v ? v : fb->v;
		fb->err = -ENOMEM;
		return;
	}
	fb->v = v;
	memcpy(v[fb->n].buf, buf, len);
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

int floor_replay(struct filt_env *e, struct floor_batches *fb,
		 unsigned int from, unsigned int to, double *ms)
{
	int fd = mnl_socket_get_fd(e->nfnl), v = FLOOR_RCVBUF, ret = 0;
	size_t len = MNL_SOCKET_BUFFER_SIZE * 4;
	char *buf = malloc(len);
	uint32_t genid;
	unsigned int i;
	uint64_t t0;

	if (!buf)
		return -ENOMEM;
	if (fb->err || to > fb->n || from >= to)
		ret = fb->err ? fb->err : -ENODATA;
	if (!ret)
		ret = nfnl_genid(e, &genid);
	for (i = from; !ret && i < to; i++) {
		set_genid(&fb->v[i], genid + i - from);
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
		else
			ret = drain(e->nfnl, buf, len);
	}
	*ms = ms_since(t0);
	free(buf);
	return ret;
}
