// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Kernel feature probes, done once per context and without side effects:
 * nothing is created.  A link kind is probed with an RTM_NEWLINK that names
 * it and carries a 1-byte IFLA_ADDRESS: a kernel that knows the kind runs
 * its validate hook and refuses the address (EINVAL); one that does not
 * answers EOPNOTSUPP ("Unknown device type") before looking at it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "lib/internal.h"

static const struct {
	const char *kind;
	uint64_t bit;
} kind_probes[] = {
	{ "macvlan", VNIC_FEAT_MACVLAN },
	{ "macvtap", VNIC_FEAT_MACVTAP },
	{ "veth", VNIC_FEAT_VETH },
};

static const char *const feature_names[] = {
	"ext-ack", "strict-check", "newlink-echo", "ifname-template",
	"macvlan", "macvtap", "veth", "tun",
};

VNIC_EXPORT const char *vnic_feature_name(uint64_t feature)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(feature_names); i++)
		if (feature == 1ull << i)
			return feature_names[i];
	return NULL;
}

/* The one version check of the library, for what no probe can ask
 * without changing something (see its callers). */
int vnic_kernel_at_least(unsigned int maj, unsigned int min)
{
	struct utsname u;
	unsigned int a = 0, b = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &a, &b) != 2)
		return 0;
	return a > maj || (a == maj && b >= min);
}

static int probe_kinds(struct vnic_ctx *ctx, uint64_t *features)
{
	struct nl_batch b;
	unsigned int i;
	int err = 0;

	nl_batch_init(&b);
	for (i = 0; i < ARRAY_SIZE(kind_probes) && !err; i++) {
		struct nlmsghdr *nlh = nl_batch_msg(&b, RTM_NEWLINK,
				NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
		struct ifinfomsg *ifi;
		struct nlattr *li;
		uint8_t bad = 0;

		if (!nlh) {
			err = -ENOMEM;
			break;
		}
		ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
		ifi->ifi_family = AF_UNSPEC;
		mnl_attr_put(nlh, IFLA_ADDRESS, sizeof(bad), &bad);
		li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
		mnl_attr_put_strz(nlh, IFLA_INFO_KIND, kind_probes[i].kind);
		mnl_attr_nest_end(nlh, li);
		err = nl_batch_end(&b, nlh, NULL, NULL);
	}
	if (!err)
		err = nl_batch_run(&ctx->nl, &b);
	for (i = 0; !err && i < b.n; i++)
		if (b.reqs[i].err != -EOPNOTSUPP)
			*features |= kind_probes[i].bit;
	nl_batch_free(&b);
	return err;
}

static int tun_open_fn(void *arg)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	(void)arg;
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int vnic_probe_features(struct vnic_ctx *ctx, uint64_t *out)
{
	uint64_t f = VNIC_FEAT_IFNAME_TEMPLATE;	/* every kernel since 2.6.23 */
	int err;

	/*
	 * Kernels before 6.2 accept NLM_F_ECHO on RTM_NEWLINK but send no
	 * echo, and probing it would mean creating a device; the version says
	 * it, and the allocator still copes if an echo it expected is missing.
	 */
	if (vnic_kernel_at_least(6, 2) && !(ctx->flags & VNIC_CTX_NO_ECHO))
		f |= VNIC_FEAT_NEWLINK_ECHO;
	err = probe_kinds(ctx, &f);
	if (err)
		return err;
	*out |= f;
	return 0;
}

/*
 * tun is asked on first need (a tap or tun NIC, vnic_ctx_features()), not
 * at context creation: opening /dev/net/tun is cheap, but closing it takes
 * RTNL (tun_chr_close() -> tun_detach()), which another process's link
 * work can hold for milliseconds; a context that never makes a tap
 * (vnic-cni, run once per attachment) never pays for it.
 */
uint64_t vnic_probe_tun(struct vnic_ctx *ctx)
{
	if (!ctx->tun_probed) {
		ctx->tun_probed = true;
		/* Not being able to open it is the answer, whatever the errno. */
		if (vnic_in_netns(ctx->netns_fd, tun_open_fn, NULL) == 0)
			ctx->features |= VNIC_FEAT_TUN;
	}
	return ctx->features;
}
