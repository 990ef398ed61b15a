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
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/table.h>

#include "lib/testing.h"
#include "filters.h"

#define FLOOR_RCVBUF	(64 << 20)
#define FLOOR_TABLE	"vnicbench_floor"

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

/*
 * A batch's acks and errors are queued when sendmsg() returns: wait false
 * takes what is there and the first error in it.  A read's replies come
 * later: wait true reads to the DONE of a dump or the ack of a get.
 */
static int replies(struct mnl_socket *nl, char *buf, size_t len, bool wait)
{
	int first = 0;
	ssize_t r;

	while ((r = recv(mnl_socket_get_fd(nl), buf, len,
			 wait ? 0 : MSG_DONTWAIT)) > 0 || (r < 0 && errno == EINTR)) {
		const struct nlmsghdr *nlh = (const void *)buf;
		int left = (int)r;

		for (; r > 0 && mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (wait && nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (wait && nlh->nlmsg_type == NLMSG_ERROR)
				return e->error;
			if (nlh->nlmsg_type == NLMSG_ERROR && e->error && !first)
				first = e->error;
		}
	}
	if (wait)
		return r < 0 ? -errno : -EPROTO;
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
	replies(e->nfnl, buf, len, false);
	t0 = now_ns();
	for (i = from; !ret && i < to; i++) {
		if (mnl_socket_sendto(e->nfnl, fb->v[i].buf, fb->v[i].len) < 0)
			ret = -errno;
		else
			ret = replies(e->nfnl, buf, len, fb->v[i].request);
	}
	*ms = ms_since(t0);
	free(buf);
	return ret;
}

/*
 * The kernel's own cost of hooking 'count' NICs from 'first': one batch
 * creating a netdev table and an egress base chain on those devices, by
 * raw nfnetlink (libnftnl to build the messages), sent as a replay is,
 * timed from sendmsg to the last ack; the table is deleted again untimed.  What any per-device hook
 * costs in this namespace, whoever asks for it.
 */
static int hook_batch(struct filt_env *e, bool del, unsigned int first,
		       unsigned int count, double *ms)
{
	unsigned int nchains = del ? 0 : (count + FILT_NETDEV_MAX - 1) /
					 FILT_NETDEV_MAX;
	size_t cap = 4096 + (size_t)count * 32 + nchains * 256;
	const char **devs = calloc(FILT_NETDEV_MAX + 1, sizeof(*devs));
	char (*names)[16] = calloc(count ? count : 1, sizeof(*names));
	char *buf = malloc(cap), cname[32];
	struct nftnl_table *t = nftnl_table_alloc();
	struct mnl_nlmsg_batch *b = NULL;
	struct floor_batch one = { 0 };
	struct floor_batches fb = { .v = &one, .n = 1 };
	struct nlmsghdr *nlh;
	uint32_t seq = e->nfnl_seq;
	unsigned int i, k;
	int ret = 0;

	if (!t || !devs || !names || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	e->nfnl_seq += 3 + nchains;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, FLOOR_TABLE);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_NETDEV);
	b = mnl_nlmsg_batch_start(buf, cap);
	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq);
	mnl_nlmsg_batch_next(b);
	nlh = nftnl_table_nlmsg_build_hdr(mnl_nlmsg_batch_current(b),
					  del ? NFT_MSG_DELTABLE :
						NFT_MSG_NEWTABLE,
					  NFPROTO_NETDEV,
					  NLM_F_ACK | (del ? 0 : NLM_F_CREATE),
					  seq + 1);
	nftnl_table_nlmsg_build_payload(nlh, t);
	mnl_nlmsg_batch_next(b);
	for (k = 0; k < nchains; k++) {
		struct nftnl_chain *c = nftnl_chain_alloc();
		unsigned int lo = k * FILT_NETDEV_MAX, n = 0;

		if (!c) {
			ret = -ENOMEM;
			goto out;
		}
		for (i = lo; i < count && i < lo + FILT_NETDEV_MAX; i++) {
			filt_nic_name(first + i, names[i]);
			devs[n++] = names[i];
		}
		devs[n] = NULL;
		snprintf(cname, sizeof(cname), "floor%u", k);
		nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, FLOOR_TABLE);
		nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, cname);
		nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM,
				    e->o->kind == VNIC_KIND_VETH ?
				    NF_NETDEV_INGRESS : NF_NETDEV_EGRESS);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, 0);
		nftnl_chain_set_data(c, NFTNL_CHAIN_DEVICES, devs, 0);
		nlh = nftnl_chain_nlmsg_build_hdr(mnl_nlmsg_batch_current(b),
						  NFT_MSG_NEWCHAIN,
						  NFPROTO_NETDEV,
						  NLM_F_ACK | NLM_F_CREATE,
						  seq + 2 + k);
		nftnl_chain_nlmsg_build_payload(nlh, c);
		nftnl_chain_free(c);
		mnl_nlmsg_batch_next(b);
	}
	nftnl_batch_end(mnl_nlmsg_batch_current(b), seq + 2 + nchains);
	mnl_nlmsg_batch_next(b);
	one.buf = mnl_nlmsg_batch_head(b);
	one.len = mnl_nlmsg_batch_size(b);
	ret = floor_replay(e, &fb, 0, 1, ms);
out:
	if (b)
		mnl_nlmsg_batch_stop(b);
	if (t)
		nftnl_table_free(t);
	free(devs);
	free(names);
	free(buf);
	return ret;
}

int nfnl_hook_floor(struct filt_env *e, unsigned int first,
		    unsigned int count, double *ms)
{
	double del_ms;
	int ret = hook_batch(e, false, first, count, ms);
	int ret2 = hook_batch(e, true, 0, 0, &del_ms);

	return ret ? ret : ret2;
}
