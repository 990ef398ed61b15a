// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Addresses and routes, the part of an attachment libvnic's allocator does
 * not do: the container end gets the IPAM plugin's addresses and routes;
 * the veth host end gets, as the stock ptp plugin's does, each gateway as
 * a /32 or /128 (the container resolves it there) and a host route to each
 * container address.  One rtnetlink socket per namespace, opened from
 * inside it; requests acked one by one (a handful per attachment).
 *
 * A veth is a routed point-to-point link: only the host end is on it.  So
 * an address's subnet is not on-link in the container (the kernel's prefix
 * route would make it ARP for a neighbour in the subnet, which nothing on
 * the link answers): the subnet goes via the gateway, which the host end
 * answers for, and the host, forwarding, routes it to the neighbour's host
 * end (cni.rst, "Routing").
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "tools/cni/cni.h"

struct nlsock {
	struct mnl_socket *nl;
	unsigned int seq, portid;
	int ifindex;
};

/* Open a socket (and resolve ifname) inside nsfd; -1 nsfd: our own. */
static int nl_open(struct cni_run *r, int nsfd, const char *ifname,
		   struct nlsock *s)
{
	int self = -1, err = 0;

	if (nsfd >= 0) {
		self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (self < 0 || setns(nsfd, CLONE_NEWNET)) {
			if (self >= 0)
				close(self);
			return cni_fail(r, CNI_ERR_IO, "cannot enter the container's "
					"namespace", "setns: %s", strerror(errno));
		}
	}
	s->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!s->nl || mnl_socket_bind(s->nl, 0, MNL_SOCKET_AUTOPID))
		err = -errno;
	s->ifindex = ifname ? (int)if_nametoindex(ifname) : 0;
	if (self >= 0) {
		/* Every later step would run in the container: stop here. */
		if (setns(self, CLONE_NEWNET))
			abort();
		close(self);
	}
	if (err) {
		if (s->nl)
			mnl_socket_close(s->nl);
		return cni_fail(r, CNI_ERR_IO, "netlink", "%s", strerror(-err));
	}
	if (ifname && !s->ifindex) {
		mnl_socket_close(s->nl);
		return cni_fail(r, CNI_ERR_NIC_MISSING, "interface not found",
				"%s does not exist in %s", ifname,
				nsfd >= 0 ? "the container's namespace" : "the host");
	}
	s->portid = mnl_socket_get_portid(s->nl);
	s->seq = (unsigned int)time(NULL);
	return 0;
}

/* Send one request, wait for its ack (or dump, with cb). */
static int nl_talk(struct nlsock *s, struct nlmsghdr *nlh, mnl_cb_t cb, void *arg)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t n;
	int ret;

	nlh->nlmsg_seq = ++s->seq;
	if (mnl_socket_sendto(s->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(s->nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		ret = mnl_cb_run(buf, (size_t)n, s->seq, s->portid, cb, arg);
	} while (ret > 0);
	return ret < 0 ? -errno : 0;
}

/* "10.0.0.2/24" -> family, bytes, prefix length.  The length is 1 to 3
 * digits and nothing else: atoi() made "10.1.0.0/x" a default route. */
static int parse_cidr(const char *cidr, int *family, void *addr, int *plen)
{
	char buf[64], *slash;
	size_t digits;

	snprintf(buf, sizeof(buf), "%s", cidr);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	*family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(*family, buf, addr) != 1)
		return -1;
	if (!slash) {
		*plen = *family == AF_INET ? 32 : 128;
		return 0;
	}
	digits = strspn(slash + 1, "0123456789");
	if (!digits || digits > 3 || slash[1 + digits])
		return -1;
	*plen = atoi(slash + 1);
	return *plen > (*family == AF_INET ? 32 : 128) ? -1 : 0;
}

static int add_addr(struct nlsock *s, int family, const void *a, int plen,
		    uint32_t flags)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;
	size_t alen = family == AF_INET ? 4 : 16;
	int err;

	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (unsigned char)family;
	ifa->ifa_prefixlen = (unsigned char)plen;
	ifa->ifa_index = (unsigned int)s->ifindex;
	/* No DAD: the runtime starts the container at once, and the IPAM
	 * plugin already made the address unique. */
	if (family == AF_INET6)
		flags |= IFA_F_NODAD;
	/* The flags above the first 8 bits are read from IFA_FLAGS only. */
	ifa->ifa_flags = (unsigned char)flags;
	mnl_attr_put(nlh, IFA_LOCAL, alen, a);
	mnl_attr_put(nlh, IFA_ADDRESS, alen, a);
	mnl_attr_put_u32(nlh, IFA_FLAGS, flags);
	err = nl_talk(s, nlh, NULL, NULL);
	return err == -EEXIST ? 0 : err;
}

static int add_route(struct nlsock *s, int family, const void *dst, int plen,
		     const void *gw)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	size_t alen = family == AF_INET ? 4 : 16;
	struct rtmsg *rtm;
	int err;

	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)family;
	rtm->rtm_dst_len = (unsigned char)plen;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_BOOT;
	rtm->rtm_scope = gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	if (plen)
		mnl_attr_put(nlh, RTA_DST, alen, dst);
	if (gw) {
		/* The gateway may lie outside the address's prefix (ptp). */
		rtm->rtm_flags |= RTNH_F_ONLINK;
		mnl_attr_put(nlh, RTA_GATEWAY, alen, gw);
	}
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)s->ifindex);
	err = nl_talk(s, nlh, NULL, NULL);
	return err == -EEXIST ? 0 : err;
}

/* The gateway of the route: its own "gw", else the first IP's of the
 * family, else none (on-link). */
static const char *route_gw(json_t *rt, int family, const struct cni_ip *ips,
			    unsigned int n)
{
	const char *gw = json_string_value(json_object_get(rt, "gw"));
	unsigned int i;

	if (gw)
		return gw;
	for (i = 0; i < n; i++)
		if (ips[i].gw[0] && ips[i].v6 == (family == AF_INET6))
			return ips[i].gw;
	return NULL;
}

static int apply_routes(struct cni_run *r, struct nlsock *s, json_t *routes,
			const struct cni_ip *ips, unsigned int n)
{
	unsigned char dst[16], gwb[16];
	int fam, gfam, plen, gplen, err;
	const char *d, *gw;
	json_t *rt;
	size_t i;

	json_array_foreach(routes, i, rt) {
		d = json_string_value(json_object_get(rt, "dst"));
		if (!d || parse_cidr(d, &fam, dst, &plen))
			return cni_fail(r, CNI_ERR_DECODE, "invalid route",
					"routes[%zu]: \"dst\" must be a CIDR", i);
		gw = route_gw(rt, fam, ips, n);
		if (gw && (parse_cidr(gw, &gfam, gwb, &gplen) || gfam != fam))
			return cni_fail(r, CNI_ERR_DECODE, "invalid route",
					"routes[%zu]: bad gateway \"%s\"", i, gw);
		err = add_route(s, fam, dst, plen, gw ? gwb : NULL);
		if (err)
			return cni_fail(r, CNI_ERR_IO, "cannot add a route",
					"%s via %s: %s", d, gw ? gw : "link",
					strerror(-err));
	}
	return 0;
}

/* Keep the first plen bits of the address a (len bytes). */
static void mask_prefix(unsigned char *a, size_t len, int plen)
{
	size_t i;

	for (i = 0; i < len; i++, plen -= 8)
		if (plen < 8)
			a[i] &= plen > 0 ? (unsigned char)(0xff << (8 - plen)) : 0;
}

/*
 * veth: the address without its prefix route, then a route to the gateway
 * on the link and the subnet via the gateway (what the stock ptp plugin
 * gives its containers).  An address without a gateway, or a host address
 * (/32, /128), keeps the kernel's prefix route: there is no router to send
 * the subnet to, or no subnet.
 */
static int add_ip(struct cni_run *r, struct nlsock *s, const struct cni_ip *ip,
		  int fam, const unsigned char *a, int plen)
{
	int full = fam == AF_INET ? 32 : 128, gfam, gplen, err;
	size_t alen = fam == AF_INET ? 4 : 16;
	unsigned char gw[16], net[16];

	if (r->conf.mode != CNI_MODE_VETH || !ip->gw[0] || plen == full ||
	    parse_cidr(ip->gw, &gfam, gw, &gplen) || gfam != fam ||
	    !memcmp(gw, a, alen))
		return add_addr(s, fam, a, plen, 0);
	err = add_addr(s, fam, a, plen, IFA_F_NOPREFIXROUTE);
	if (!err)
		err = add_route(s, fam, gw, full, NULL);
	memcpy(net, a, alen);
	mask_prefix(net, alen, plen);
	return err ?: add_route(s, fam, net, plen, gw);
}

int ifcfg_apply(struct cni_run *r, int nsfd, const char *ifname,
		const struct cni_ip *ips, unsigned int n, json_t *routes)
{
	unsigned char a[16];
	struct nlsock s;
	int fam, plen, err = 0, ret = 0;
	unsigned int i;

	if (!n && !json_array_size(routes))
		return 0;
	if (nl_open(r, nsfd, ifname, &s))
		return -1;
	for (i = 0; i < n && !err; i++) {
		if (parse_cidr(ips[i].addr, &fam, a, &plen)) {
			ret = cni_fail(r, CNI_ERR_DECODE, "invalid address",
				       "\"%s\"", ips[i].addr);
			break;
		}
		err = add_ip(r, &s, &ips[i], fam, a, plen);
		if (err)
			ret = cni_fail(r, CNI_ERR_IO, "cannot add an address",
				       "%s (or its subnet's route) on %s: %s",
				       ips[i].addr, ifname,
				       strerror(-err));
	}
	if (!ret)
		ret = apply_routes(r, &s, routes, ips, n);
	mnl_socket_close(s.nl);
	return ret;
}

/*
 * The host is the containers' router: their subnet and their default route
 * go through it, host end to host end.  Forwarding is turned on as the
 * stock ptp plugin turns it on, for the families that have a gateway; read
 * first, so that a host that forwards already sees no write.
 */
static int forwarding_on(int family)
{
	const char *path = family == AF_INET ? "/proc/sys/net/ipv4/ip_forward" :
			   "/proc/sys/net/ipv6/conf/all/forwarding";
	int fd = open(path, O_RDWR | O_CLOEXEC), err = 0;
	char c = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, &c, 1, 0) != 1 || c != '1')
		err = pwrite(fd, "1", 1, 0) == 1 ? 0 : -errno;
	close(fd);
	return err;
}

static int host_forwarding(struct cni_run *r, const struct cni_ip *ips,
			   unsigned int n)
{
	bool want[2] = { false, false };
	unsigned int i;
	int err;

	for (i = 0; i < n; i++)
		if (ips[i].gw[0])
			want[ips[i].v6 ? 1 : 0] = true;
	for (i = 0; i < 2; i++) {
		if (!want[i])
			continue;
		err = forwarding_on(i ? AF_INET6 : AF_INET);
		if (err)
			return cni_fail(r, CNI_ERR_IO, "cannot turn forwarding on",
					"IPv%c: %s", i ? '6' : '4', strerror(-err));
	}
	return 0;
}

int ifcfg_host(struct cni_run *r, const char *host_if, const struct cni_ip *ips,
	       unsigned int n)
{
	unsigned char a[16];
	struct nlsock s;
	int fam, plen, err = 0;
	unsigned int i;

	if (!n)
		return 0;
	if (nl_open(r, -1, host_if, &s))
		return -1;
	/* Each gateway, IPv4 and IPv6: the container resolves it here (ARP,
	 * neighbour solicitation), and nothing else on the link would answer.
	 * The gateways first: an IPv4 route through a device with no address
	 * makes fib_create_info() look for a source address on every device
	 * of the namespace (inet_select_addr()), 1 ms next to 4,000 pairs. */
	for (i = 0; i < n && !err; i++)
		if (ips[i].gw[0] && !parse_cidr(ips[i].gw, &fam, a, &plen) &&
		    fam == (ips[i].v6 ? AF_INET6 : AF_INET))
			err = add_addr(&s, fam, a, fam == AF_INET ? 32 : 128, 0);
	for (i = 0; i < n && !err; i++)
		if (!parse_cidr(ips[i].addr, &fam, a, &plen))
			err = add_route(&s, fam, a, fam == AF_INET ? 32 : 128, NULL);
	mnl_socket_close(s.nl);
	if (err)
		return cni_fail(r, CNI_ERR_IO, "cannot configure the host end",
				"%s: %s", host_if, strerror(-err));
	return host_forwarding(r, ips, n);
}

struct addr_dump {
	int ifindex;
	const struct cni_ip *ips;
	unsigned int n;
	bool seen[CNI_MAX_IPS];
};

static int addr_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	struct addr_dump *d = arg;
	unsigned char want[16];
	struct nlattr *at;
	int fam, plen;
	unsigned int i;

	if ((int)ifa->ifa_index != d->ifindex)
		return MNL_CB_OK;
	mnl_attr_for_each(at, nlh, sizeof(*ifa)) {
		if (mnl_attr_get_type(at) != IFA_ADDRESS)
			continue;
		for (i = 0; i < d->n; i++)
			if (!parse_cidr(d->ips[i].addr, &fam, want, &plen) &&
			    fam == ifa->ifa_family && plen == ifa->ifa_prefixlen &&
			    mnl_attr_get_payload_len(at) == (fam == AF_INET ? 4u : 16u) &&
			    !memcmp(mnl_attr_get_payload(at), want,
				    fam == AF_INET ? 4 : 16))
				d->seen[i] = true;
	}
	return MNL_CB_OK;
}

int ifcfg_has_addrs(struct cni_run *r, int nsfd, const char *ifname,
		    const struct cni_ip *ips, unsigned int n)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct addr_dump d = { .ips = ips, .n = n };
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	struct nlsock s;
	unsigned int i;
	int err;

	if (nl_open(r, nsfd, ifname, &s))
		return -1;
	d.ifindex = s.ifindex;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_UNSPEC;
	err = nl_talk(&s, nlh, addr_cb, &d);
	mnl_socket_close(s.nl);
	if (err)
		return cni_fail(r, CNI_ERR_IO, "cannot read addresses", "%s: %s",
				ifname, strerror(-err));
	for (i = 0; i < n; i++)
		if (!d.seen[i])
			return cni_fail(r, CNI_ERR_ADDR, "address missing",
					"%s lacks %s", ifname, ips[i].addr);
	return 0;
}

static int link_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	const unsigned char *m;
	struct nlattr *at;

	mnl_attr_for_each(at, nlh, sizeof(*ifi)) {
		if (mnl_attr_get_type(at) != IFLA_ADDRESS ||
		    mnl_attr_get_payload_len(at) != 6)
			continue;
		m = mnl_attr_get_payload(at);
		snprintf(arg, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1],
			 m[2], m[3], m[4], m[5]);
	}
	/* The one answer (no dump, no ack asked): nothing follows it. */
	return MNL_CB_STOP;
}

int ifcfg_mac(struct cni_run *r, int nsfd, const char *ifname, char *mac)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], got[18] = "";
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlsock s;
	int err;

	if (nl_open(r, nsfd, ifname, &s))
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_index = s.ifindex;
	err = nl_talk(&s, nlh, link_cb, got);
	mnl_socket_close(s.nl);
	if (err)
		return cni_fail(r, CNI_ERR_IO, "cannot read the interface", "%s: %s",
				ifname, strerror(-err));
	memcpy(mac, got, sizeof(got));
	return 0;
}
