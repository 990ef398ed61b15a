// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Seeds for the fuzz targets, from the running kernel's own replies (run
 * by scripts/fuzz-seeds.sh, in a private network namespace):
 *
 *   seeds link DIR      an RTM_GETLINK dump, as received
 *   seeds extack DIR    NLMSG_ERRORs with extended acks (capped, and not)
 *   seeds nft FILE      what a read-only vnic_nft_open(), vnic_nft_guests()
 *                       and vnic_nft_counter() of each guest receive, in
 *                       order: the input fuzz_nft replays
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "lib/link.h"
#include "nft/internal.h"

static int save(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		return 1;
	}
	printf("seeds: %s, %zu bytes\n", path, len);
	return 0;
}

static struct mnl_socket *rt_open(int cap)
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	int one = 1;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return NULL;
	setsockopt(mnl_socket_get_fd(nl), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(mnl_socket_get_fd(nl), SOL_NETLINK, NETLINK_CAP_ACK, &cap, sizeof(cap));
	return nl;
}

/* Everything received until NLMSG_DONE or NLMSG_ERROR. */
static int rt_collect(struct mnl_socket *nl, char *out, size_t cap, size_t *len)
{
	static char buf[65536];
	bool done = false;

	*len = 0;
	while (!done) {
		ssize_t r = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		const struct nlmsghdr *nlh = (void *)buf;
		int left = (int)r;

		if (r <= 0 || *len + (size_t)r > cap) {
			perror("seeds: recv");
			return 1;
		}
		memcpy(out + *len, buf, (size_t)r);
		*len += (size_t)r;
		for (; nl_msg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left))
			if (nlh->nlmsg_type == NLMSG_DONE || nlh->nlmsg_type == NLMSG_ERROR)
				done = true;
	}
	return 0;
}

static int seed_link(const char *dir)
{
	static char out[1 << 20];
	char req[8192], path[512];
	struct mnl_socket *nl = rt_open(1);
	struct nlmsghdr *nlh = link_dump_request(req);
	size_t len;

	if (!nl)
		return 1;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0 ||
	    rt_collect(nl, out, sizeof(out), &len))
		return 1;
	snprintf(path, sizeof(path), "%s/dump", dir);
	return save(path, out, len);
}

/* RTM_NEWLINK of a kind the kernel does not know: an error with a message. */
static int seed_extack(const char *dir)
{
	static char out[65536];
	char req[8192], path[512];
	int cap;

	for (cap = 0; cap < 2; cap++) {
		struct mnl_socket *nl = rt_open(cap);
		struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
		struct ifinfomsg *ifi;
		struct nlattr *info;
		size_t len;

		if (!nl)
			return 1;
		nlh->nlmsg_type = RTM_NEWLINK;
		nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
		ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
		ifi->ifi_family = AF_UNSPEC;
		mnl_attr_put_strz(nlh, IFLA_IFNAME, "seed0");
		info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
		mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "nosuchkind");
		mnl_attr_nest_end(nlh, info);
		/* "Unknown device type" */
		if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0 ||
		    rt_collect(nl, out, sizeof(out), &len))
			return 1;
		mnl_socket_close(nl);
		snprintf(path, sizeof(path), "%s/%s", dir, cap ? "capped" : "echoed");
		if (save(path, out, len))
			return 1;
	}
	return 0;
}

static int seed_nft(const char *file)
{
	struct vnic_nft_opts o = { .sz = sizeof(o), .flags = VNIC_NFT_READ_ONLY };
	struct nfnl_replay r = { .record = true };
	struct vnic_ctx *ctx;
	struct vnic_nft *n;
	char **names = NULL;
	unsigned int i, count = 0;
	uint64_t p, b;
	int err;

	if (vnic_ctx_new(NULL, &ctx))
		return 1;
	err = nft_open_replay(ctx, &o, &r, &n);
	if (err) {
		fprintf(stderr, "seeds: nft open: %s\n", vnic_ctx_errmsg(ctx));
		return 1;
	}
	if (!vnic_nft_guests(n, &names, &count))
		for (i = 0; i < count; i++)
			vnic_nft_counter(n, names[i], &p, &b);
	free(names);
	vnic_nft_close(n);
	vnic_ctx_free(ctx);
	err = save(file, r.rec, r.rec_len);
	free(r.rec);
	return err;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "link"))
		return seed_link(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "extack"))
		return seed_extack(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "nft"))
		return seed_nft(argv[2]);
	fprintf(stderr, "usage: seeds link|extack DIR | nft FILE\n");
	return 2;
}
