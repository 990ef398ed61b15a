// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bpf floor: the very work a libvnic-bpf change does in the kernel --
 * its clsact qdiscs, cls_bpf filters (or their deletions) and map writes,
 * pipelined as it sends them -- captured once through the library's bpf
 * tap (vnic_filter_set_bpf_tap(), untimed), then done again by the bench
 * alone: each rtnetlink batch in one sendmsg() on a socket of its own,
 * then its acks; each map write by a raw bpf(2) call on the handle's map
 * fds.  libvnic's reads (the hook read-back, ifindex lookups), planning,
 * undo log and bookkeeping are taken out: libvnic-bpf over this is the
 * library's own cost (issue 11's 1.15x targets).
 *
 * A replay must run where the captured change ran (same NICs, same
 * handle open: the filter requests carry its program fds) and from the
 * same starting state: the bench replays an apply after the library
 * removed it again, and the captured remove right after (bfloor_row(),
 * the rows floor-bpf and floor-bpf-remove-all of the filters scenario).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/netlink.h>

#include "lib/testing.h"
#include "filters.h"

#define BF_BUF	(64 << 20)

/* One write a libvnic-bpf change made: a map write or an rtnetlink batch. */
struct bfloor_op {
	bool map;
	int fd;			/* map: the handle's fd */
	size_t klen, vlen;	/* map: vlen 0 is a delete */
	size_t len;		/* batch: bytes */
	unsigned char *buf;	/* batch bytes, or key then value */
};

struct bfloor {
	struct bfloor_op *op;
	unsigned int n, cap;
	int err;
};

static struct bfloor_op *next_op(struct bfloor *fl, size_t bytes)
{
	struct bfloor_op *o;

	if (fl->err)
		return NULL;
	if (fl->n == fl->cap) {
		unsigned int cap = fl->cap ? 2 * fl->cap : 256;

		o = realloc(fl->op, cap * sizeof(*o));
		if (!o) {
			fl->err = -ENOMEM;
			return NULL;
		}
		fl->op = o;
		fl->cap = cap;
	}
	o = &fl->op[fl->n];
	memset(o, 0, sizeof(*o));
	o->buf = malloc(bytes ? bytes : 1);
	if (!o->buf) {
		fl->err = -ENOMEM;
		return NULL;
	}
	fl->n++;
	return o;
}

static void tap_nl(void *arg, const void *buf, size_t len)
{
	struct bfloor_op *o = next_op(arg, len);

	if (!o)
		return;
	memcpy(o->buf, buf, len);
	o->len = len;
}

static void tap_map(void *arg, int fd, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	struct bfloor_op *o = next_op(arg, klen + vlen);

	if (!o)
		return;
	o->map = true;
	o->fd = fd;
	o->klen = klen;
	o->vlen = val ? vlen : 0;
	memcpy(o->buf, key, klen);
	if (val)
		memcpy(o->buf + klen, val, vlen);
}

/* Capture h's writes into fl from now on (NULL: stop). */
static int bfloor_capture(struct vnic_filter *h, struct bfloor *fl)
{
	struct vnic_bpf_tap t = { tap_nl, tap_map, fl };

	return vnic_filter_set_bpf_tap(h, fl ? &t : NULL);
}

static void bfloor_free(struct bfloor *fl)
{
	unsigned int i;

	for (i = 0; i < fl->n; i++)
		free(fl->op[i].buf);
	free(fl->op);
	memset(fl, 0, sizeof(*fl));
}

static int map_write(const struct bfloor_op *o)
{
	union bpf_attr a;
	int cmd = o->vlen ? BPF_MAP_UPDATE_ELEM : BPF_MAP_DELETE_ELEM;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)o->fd;
	a.key = (uint64_t)(uintptr_t)o->buf;
	if (o->vlen)
		a.value = (uint64_t)(uintptr_t)(o->buf + o->klen);
	/* a delete of a key already gone is the library's ENOENT too */
	if (syscall(__NR_bpf, cmd, &a, sizeof(a)) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* One batch: renumbered, sent whole, every ack read (an error ack is the
 * kernel's answer, counted as the library counts it: not a failure). */
static int batch(int fd, const struct bfloor_op *o, uint32_t *seq, unsigned char *rbuf)
{
	unsigned char *p = o->buf;
	unsigned int pending = 0;
	size_t off = 0;
	uint32_t first = *seq + 1;

	while (off + NLMSG_HDRLEN <= o->len) {
		struct nlmsghdr *n = (struct nlmsghdr *)(p + off);

		if (n->nlmsg_len < NLMSG_HDRLEN || off + n->nlmsg_len > o->len)
			return -EBADMSG;
		n->nlmsg_seq = ++*seq;
		n->nlmsg_flags |= NLM_F_ACK;
		pending++;
		off += NLMSG_ALIGN(n->nlmsg_len);
	}
	if (send(fd, p, o->len, 0) < 0)
		return -errno;
	while (pending) {
		ssize_t r = recv(fd, rbuf, BF_BUF, 0);
		struct nlmsghdr *n;
		int left;

		if (r < 0)
			return -errno;
		left = (int)r;
		for (n = (struct nlmsghdr *)rbuf; NLMSG_OK(n, left); n = NLMSG_NEXT(n, left))
			if (n->nlmsg_type == NLMSG_ERROR && n->nlmsg_seq >= first &&
			    n->nlmsg_seq <= *seq)
				pending--;
	}
	return 0;
}

/* The requests in a captured batch. */
static unsigned int batch_msgs(const struct bfloor_op *o)
{
	unsigned int n = 0;
	size_t off = 0;

	while (off + NLMSG_HDRLEN <= o->len) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)(o->buf + off);

		if (h->nlmsg_len < NLMSG_HDRLEN)
			break;
		n++;
		off += NLMSG_ALIGN(h->nlmsg_len);
	}
	return n;
}

static int nl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int sz = BF_BUF, one = 1;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return fd;
}

/* Every batch in one sendmsg() on a socket of the bench's own, then its
 * acks; every map write by bpf(2).  *ms from the first write to the last
 * ack.  0 or a negative errno (err says what). */
static int bfloor_replay(const struct bfloor *fl, double *ms, char *err,
			 size_t errlen)
{
	unsigned char *rbuf = malloc(BF_BUF);
	uint32_t seq = 0;
	unsigned int i;
	uint64_t t0;
	int fd, ret = 0;

	if (fl->err || !rbuf) {
		free(rbuf);
		snprintf(err, errlen, "bpf floor: out of memory capturing the change");
		return -ENOMEM;
	}
	fd = nl_open();
	if (fd < 0) {
		free(rbuf);
		snprintf(err, errlen, "bpf floor: rtnetlink socket: %s", strerror(-fd));
		return fd;
	}
	t0 = now_ns();
	for (i = 0; i < fl->n && !ret; i++)
		ret = fl->op[i].map ? map_write(&fl->op[i]) : batch(fd, &fl->op[i], &seq, rbuf);
	*ms = ms_since(t0);
	if (ret)
		snprintf(err, errlen, "bpf floor: replaying write %u of %u: %s", i, fl->n,
			 strerror(-ret));
	close(fd);
	free(rbuf);
	return ret;
}

/*
 * One run of floor-bpf (remove false) or floor-bpf-remove-all (true): the
 * library applies p and removes it again, untimed and captured; then the
 * captured apply is replayed onto the bare NICs the remove left, and the
 * captured remove after it, which leaves them bare again.  The one the row
 * is about is timed into s.
 */
int bfloor_row(struct filt_env *e, const struct vnic_policy *p, unsigned int guests,
	       bool remove, struct sample *s, char *err, size_t errlen)
{
	struct bfloor fa = { 0 }, fr = { 0 };
	struct vnic_filter *h;
	double ams = 0, rms = 0;
	int ret = bpf_open(e, &h, err, errlen);

	if (ret)
		return ret;
	bfloor_capture(h, &fa);
	ret = vnic_filter_apply(h, p, NULL);
	if (ret)
		bench_lib_fail(e->ctx, "vnic_filter_apply (bpf floor)", ret, err, errlen);
	bfloor_capture(h, &fr);
	if (!ret)
		ret = filt_remove(e, h, 0, guests, NULL, err, errlen);
	bfloor_capture(h, NULL);
	if (!ret)
		ret = bfloor_replay(&fa, &ams, err, errlen);
	if (!ret)
		ret = bfloor_replay(&fr, &rms, err, errlen);
	if (!ret) {
		const struct bfloor *t = remove ? &fr : &fa;

		s->ms = remove ? rms : ams;
		s->writes = t->n > 0;
		s->messages = 0;
		for (unsigned int i = 0; i < t->n; i++)
			s->messages += t->op[i].map ? 1 : batch_msgs(&t->op[i]);
		s->batches = 0;
		for (unsigned int i = 0; i < t->n; i++)
			s->batches += !t->op[i].map;
	}
	bfloor_free(&fa);
	bfloor_free(&fr);
	vnic_filter_close(h);
	return ret;
}
