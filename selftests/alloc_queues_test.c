// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Queue fds do what a hypervisor needs: a frame written into a macvtap fd
 * leaves through the lower device, a frame sent to the macvtap's MAC comes
 * out of the fd; the same for tap (and an IP packet for tun), one queue or
 * two.  Frames are watched with AF_PACKET sockets, outside the library.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* See alloc_kinds_test.c. */
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "util.h"

/* IEEE 802 local experimental ethertype: nothing else sends it. */
#define ETH_P_TEST	0x88b5
#define NIC_MAC		"02:00:00:00:00:10"
#define TIMEOUT_MS	2000

FIXTURE(queues) {
	struct vnic_ctx *ctx;
	struct vnic_guest *g;
};

FIXTURE_SETUP(queues)
{
	VNIC_OPTS(vnic_ctx_opts, o, .owner = "qt");

	ST_SETUP_NETNS();
	ASSERT_EQ(0, vnic_ctx_new(&o, &self->ctx));
	ASSERT_EQ(0, vnic_guest_new(self->ctx, "gq", &self->g));
}

FIXTURE_TEARDOWN(queues)
{
	st_macvtaps_flush();
}

static void create_nic(struct __test_metadata *_metadata,
		       FIXTURE_DATA(queues) *self,
		       const struct vnic_nic_opts *nic)
{
	ASSERT_EQ(0, vnic_guest_add_nic(self->g, nic, NULL));
	ASSERT_EQ(0, vnic_guest_create(self->g))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
}

/* An AF_PACKET socket on ifname: raw frames, or cooked for an L3 tun. */
static int packet_sock(const char *ifname, int type)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = if_nametoindex(ifname),
	};
	int fd;

	if (!sll.sll_ifindex)
		return -ENODEV;
	fd = socket(AF_PACKET, type | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    htons(ETH_P_ALL));
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Send a raw frame out of ifname through an AF_PACKET socket. */
static int packet_send(int sock, const char *ifname, const void *frame,
		       size_t len)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_ifindex = if_nametoindex(ifname),
		.sll_halen = ETH_ALEN,
	};

	memcpy(sll.sll_addr, frame, ETH_ALEN);
	if (sendto(sock, frame, len, 0, (struct sockaddr *)&sll,
		   sizeof(sll)) != (ssize_t)len)
		return -errno;
	return 0;
}

/* A minimum-size test frame carrying marker. */
static size_t build_frame(unsigned char *buf, const unsigned char dst[6],
			  const unsigned char src[6], const char *marker)
{
	struct ethhdr *eh = (struct ethhdr *)buf;

	memset(buf, 0, ETH_ZLEN);
	memcpy(eh->h_dest, dst, ETH_ALEN);
	memcpy(eh->h_source, src, ETH_ALEN);
	eh->h_proto = htons(ETH_P_TEST);
	memcpy(buf + ETH_HLEN, marker, strlen(marker));
	return ETH_ZLEN;
}

/*
 * Read from fd (a queue fd, or a socket) until a frame of ours carrying
 * marker shows up after skip bytes of header (vnet header or none), or
 * the time is up.  Everything else (IPv6 chatter of new links) is skipped.
 */
static bool wait_marker(int fd, size_t skip, const char *marker)
{
	long long end = st_now_ms() + TIMEOUT_MS;
	unsigned char buf[2048];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (st_now_ms() < end) {
		if (poll(&p, 1, end - st_now_ms()) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < (ssize_t)(skip + ETH_HLEN))
			continue;
		if (buf[skip + 12] != ETH_P_TEST >> 8 ||
		    buf[skip + 13] != (ETH_P_TEST & 0xff))
			continue;
		if (memmem(buf + skip + ETH_HLEN, n - skip - ETH_HLEN,
			   marker, strlen(marker)))
			return true;
	}
	return false;
}

static void mac_of(struct __test_metadata *_metadata, const char *ifname,
		   unsigned char mac[6])
{
	struct ip_link l;

	ASSERT_EQ(0, st_ip_link_get(ifname, &l));
	ASSERT_EQ(0, st_mac_parse(l.address, mac));
}

static void expect_cloexec(struct __test_metadata *_metadata, int fd)
{
	int fl = fcntl(fd, F_GETFD);

	ASSERT_LE(0, fl) TH_LOG("fd %d not open", fd);
	EXPECT_TRUE(fl & FD_CLOEXEC);
}

/* Write marker through fd (after a zeroed vnet header of hdr bytes). */
static void fd_send(struct __test_metadata *_metadata, int fd, size_t hdr,
		    const unsigned char dst[6], const unsigned char src[6],
		    const char *marker)
{
	unsigned char buf[128] = { 0 };
	size_t len = hdr + build_frame(buf + hdr, dst, src, marker);

	ASSERT_EQ((ssize_t)len, write(fd, buf, len)) TH_LOG("%m");
}

static size_t vnet_hdr_size(struct __test_metadata *_metadata, int fd)
{
	int sz = 0;

	ASSERT_EQ(0, ioctl(fd, TUNGETVNETHDRSZ, &sz));
	/* virtio_net_hdr (10) or its mergeable-buffers form (12). */
	EXPECT_TRUE(sz == 10 || sz == 12) TH_LOG("vnet hdr %d", sz);
	return sz;
}

/* --- macvtap --- */

static void macvtap_nic(struct __test_metadata *_metadata,
			FIXTURE_DATA(queues) *self)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_MACVTAP,
		  .lower = LOWER, .mode = VNIC_MACVLAN_BRIDGE, .name = "mq0",
		  .mac = NIC_MAC, .up = 1);

	create_nic(_metadata, self, &nic);
}

TEST_F(queues, macvtap_frame_both_ways)
{
	unsigned char nic[6], peer[6], frame[ETH_ZLEN];
	int fd, sock;
	size_t hdr;

	macvtap_nic(_metadata, self);
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, &fd, 1));
	expect_cloexec(_metadata, fd);
	hdr = vnet_hdr_size(_metadata, fd);
	ASSERT_EQ(0, st_mac_parse(NIC_MAC, nic));
	mac_of(_metadata, LOWER_PEER, peer);
	sock = packet_sock(LOWER_PEER, SOCK_RAW);
	ASSERT_LE(0, sock);

	/* Guest to wire: out of lower0, into its peer. */
	fd_send(_metadata, fd, hdr, peer, nic, "mvt-out");
	EXPECT_TRUE(wait_marker(sock, 0, "mvt-out"));

	/* Wire to guest: sent to the macvtap's MAC from the peer side. */
	build_frame(frame, nic, peer, "mvt-in");
	ASSERT_EQ(0, packet_send(sock, LOWER_PEER, frame, sizeof(frame)));
	EXPECT_TRUE(wait_marker(fd, hdr, "mvt-in"));
	close(sock);
	close(fd);
}

TEST_F(queues, macvtap_two_queues)
{
	unsigned char nic[6], peer[6];
	int fds[2] = { -1, -1 }, sock;
	struct ifreq ifr;
	unsigned int i;
	char marker[16];

	macvtap_nic(_metadata, self);
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, fds, 2));
	ASSERT_NE(fds[0], fds[1]);
	ASSERT_EQ(0, st_mac_parse(NIC_MAC, nic));
	mac_of(_metadata, LOWER_PEER, peer);
	sock = packet_sock(LOWER_PEER, SOCK_RAW);
	ASSERT_LE(0, sock);
	for (i = 0; i < 2; i++) {
		expect_cloexec(_metadata, fds[i]);
		memset(&ifr, 0, sizeof(ifr));
		ASSERT_EQ(0, ioctl(fds[i], TUNGETIFF, &ifr));
		/* A macvtap reports no IFF_MULTI_QUEUE (drivers/net/tap.c):
		 * every open of /dev/tapN is one more queue of the device. */
		EXPECT_STREQ("mq0", ifr.ifr_name);
		snprintf(marker, sizeof(marker), "mvt-q%u", i);
		fd_send(_metadata, fds[i], vnet_hdr_size(_metadata, fds[i]),
			peer, nic, marker);
		EXPECT_TRUE(wait_marker(sock, 0, marker)) TH_LOG("%s", marker);
	}
	close(sock);
	close(fds[0]);
	close(fds[1]);
}

/*
 * /dev is not per namespace: /dev/tap<ifindex> of a macvtap here may be
 * the node of another namespace's macvtap with the same ifindex (devtmpfs
 * keeps the first one).  Handing that fd to a hypervisor would plug the
 * guest into someone else's network, so open_queues must either fail
 * cleanly or return queues of our own device, which a frame proves.
 */
static void foreign_tap_node(struct __test_metadata *_metadata,
			     FIXTURE_DATA(queues) *self, const char *theirs,
			     bool privileged)
{
	struct netns_holder h = { .fd = -1 };
	unsigned char nic[6], peer[6];
	struct ip_link l;
	int fd = -1, sock, ret, nfd;

	ASSERT_EQ(0, st_netns_holder_start(&h));
	ASSERT_EQ(0, st_run_cmd("nsenter --net=/proc/%d/ns/net sh -c '"
				"ip link add l0 type veth peer name l0p && "
				"ip link add link l0 name %s type macvtap'",
				h.pid, theirs));
	macvtap_nic(_metadata, self);
	ASSERT_EQ(0, st_ip_link_get("mq0", &l));
	if (l.ifindex != 4)
		SKIP(goto out, "ifindexes did not line up (%d)", l.ifindex);
	if (!privileged)
		ASSERT_EQ(0, st_drop_sys_admin());
	nfd = st_count_fds();
	ret = vnic_guest_nic_open_queues(self->g, 0, &fd, 1);
	TH_LOG("open_queues: %d %s", ret, ret ? vnic_ctx_errmsg(self->ctx) : "");
	if (ret) {
		EXPECT_EQ(nfd, st_count_fds());
		goto out;
	}
	ASSERT_EQ(0, st_mac_parse(NIC_MAC, nic));
	mac_of(_metadata, LOWER_PEER, peer);
	sock = packet_sock(LOWER_PEER, SOCK_RAW);
	ASSERT_LE(0, sock);
	fd_send(_metadata, fd, vnet_hdr_size(_metadata, fd), peer, nic, "ours");
	EXPECT_TRUE(wait_marker(sock, 0, "ours"))
		TH_LOG("the queue fd is another namespace's macvtap");
	close(sock);
	close(fd);
out:
	st_run_cmd("nsenter --net=/proc/%d/ns/net ip link del %s", h.pid,
		   theirs);
	st_netns_holder_stop(&h);
}

TEST_F(queues, macvtap_foreign_node_other_name)
{
	foreign_tap_node(_metadata, self, "hm0", true);
}

TEST_F(queues, macvtap_foreign_node_same_name)
{
	foreign_tap_node(_metadata, self, "mq0", true);
}

/* Without CAP_SYS_ADMIN there is no private node: the shared one must be
 * told apart all the same. */
TEST_F(queues, macvtap_foreign_node_other_name_unprivileged)
{
	foreign_tap_node(_metadata, self, "hm0", false);
}

TEST_F(queues, macvtap_foreign_node_same_name_unprivileged)
{
	foreign_tap_node(_metadata, self, "mq0", false);
}

/* A frame written into fd leaves through the lower device, sent from mac. */
static void leaves_lower(struct __test_metadata *_metadata, int fd,
			 const char *mac, const char *marker)
{
	unsigned char src[6], peer[6];
	int sock;

	ASSERT_EQ(0, st_mac_parse(mac, src));
	mac_of(_metadata, LOWER_PEER, peer);
	sock = packet_sock(LOWER_PEER, SOCK_RAW);
	ASSERT_LE(0, sock);
	fd_send(_metadata, fd, vnet_hdr_size(_metadata, fd), peer, src, marker);
	EXPECT_TRUE(wait_marker(sock, 0, marker)) TH_LOG("%s", marker);
	close(sock);
}

/* Whether /dev/tap<ifindex of name> is the node of that macvtap (with
 * mac): devtmpfs keeps the first device of a name, whatever namespace it
 * is in. */
static bool shared_node_ours(struct __test_metadata *_metadata,
			     const char *name, const char *mac)
{
	unsigned char want[6];
	struct ifreq ifr;
	char path[32];
	bool ours;
	int fd;

	snprintf(path, sizeof(path), "/dev/tap%u", if_nametoindex(name));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	ours = !st_mac_parse(mac, want) && !ioctl(fd, SIOCGIFHWADDR, &ifr) &&
	       !strcmp(ifr.ifr_name, name) &&
	       !memcmp(ifr.ifr_hwaddr.sa_data, want, 6);
	close(fd);
	return ours;
}

/*
 * Without CAP_SYS_ADMIN the shared node is opened and checked against
 * what the NIC is now: its queues work, and still do after the MAC was
 * changed (as a queue's holder may, through the fd) since it was made.
 */
TEST_F(queues, macvtap_unprivileged_queues_after_mac_change)
{
	int fds[2] = { -1, -1 }, fd = -1;

	macvtap_nic(_metadata, self);
	if (!shared_node_ours(_metadata, "mq0", NIC_MAC))
		SKIP(return, "/dev/tap%u is another namespace's macvtap (tests "
		     "running beside this one): nothing to open without "
		     "CAP_SYS_ADMIN", if_nametoindex("mq0"));
	ASSERT_EQ(0, st_drop_sys_admin());
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, fds, 2))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	expect_cloexec(_metadata, fds[0]);
	leaves_lower(_metadata, fds[0], NIC_MAC, "unpriv-q0");
	leaves_lower(_metadata, fds[1], NIC_MAC, "unpriv-q1");
	ASSERT_EQ(0, st_run_cmd("ip link set mq0 address 02:00:00:00:00:77"));
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, &fd, 1))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	leaves_lower(_metadata, fd, "02:00:00:00:00:77", "unpriv-new-mac");
	close(fds[0]);
	close(fds[1]);
	close(fd);
}

/*
 * A macvtap deleted behind the guest's back is "gone": -ENODEV, as
 * guest.h documents, with or without the privilege for the private node
 * (-ENOENT means the fds of a tap were handed over already), and nothing
 * left open.
 */
static void gone_enodev(struct __test_metadata *_metadata,
			FIXTURE_DATA(queues) *self, bool privileged)
{
	int fd = -1, nfd;

	macvtap_nic(_metadata, self);
	ASSERT_EQ(0, st_run_cmd("ip link del mq0"));
	if (!privileged)
		ASSERT_EQ(0, st_drop_sys_admin());
	nfd = st_count_fds();
	EXPECT_EQ(-ENODEV, vnic_guest_nic_open_queues(self->g, 0, &fd, 1))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(nfd, st_count_fds());
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "mq0"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
}

TEST_F(queues, macvtap_gone_enodev)
{
	gone_enodev(_metadata, self, true);
}

TEST_F(queues, macvtap_gone_enodev_unprivileged)
{
	gone_enodev(_metadata, self, false);
}

/* --- tap and tun --- */

static void tap_nic(struct __test_metadata *_metadata,
		    FIXTURE_DATA(queues) *self, uint32_t flags,
		    unsigned int queues)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_TAP, .name = "tq0",
		  .mac = NIC_MAC, .up = 1, .tap_flags = flags,
		  .queues = queues);

	create_nic(_metadata, self, &nic);
}

/* Frames written into a tap fd are received by the tap device; frames the
 * device transmits come out of the fd. */
static void tap_both_ways(struct __test_metadata *_metadata, int fd,
			  size_t hdr, const char *tag)
{
	unsigned char nic[6], other[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	unsigned char frame[ETH_ZLEN];
	char out[32], in[32];
	int sock;

	ASSERT_EQ(0, st_mac_parse(NIC_MAC, nic));
	sock = packet_sock("tq0", SOCK_RAW);
	ASSERT_LE(0, sock);
	snprintf(out, sizeof(out), "%s-out", tag);
	snprintf(in, sizeof(in), "%s-in", tag);
	fd_send(_metadata, fd, hdr, nic, other, out);
	EXPECT_TRUE(wait_marker(sock, 0, out)) TH_LOG("%s", out);
	build_frame(frame, other, nic, in);
	ASSERT_EQ(0, packet_send(sock, "tq0", frame, sizeof(frame)));
	EXPECT_TRUE(wait_marker(fd, hdr, in)) TH_LOG("%s", in);
	close(sock);
}

TEST_F(queues, tap_frame_both_ways)
{
	int fd;

	tap_nic(_metadata, self, VNIC_TAP_NO_PI, 1);
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, &fd, 1));
	expect_cloexec(_metadata, fd);
	tap_both_ways(_metadata, fd, 0, "tap");
	/* The fds were handed over: there are no more. */
	EXPECT_EQ(-ENOENT, vnic_guest_nic_open_queues(self->g, 0, &fd, 1));
	close(fd);
}

TEST_F(queues, tap_vnet_hdr)
{
	int fd;

	tap_nic(_metadata, self, VNIC_TAP_NO_PI | VNIC_TAP_VNET_HDR, 1);
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, &fd, 1));
	tap_both_ways(_metadata, fd, vnet_hdr_size(_metadata, fd), "vnet");
	close(fd);
}

TEST_F(queues, tap_two_queues)
{
	int fds[3] = { -1, -1, -1 }, nfd;
	struct ifreq ifr;
	unsigned int i;

	tap_nic(_metadata, self, VNIC_TAP_NO_PI | VNIC_TAP_MULTI_QUEUE, 2);
	/* More than were opened: refused, nothing handed out or leaked. */
	nfd = st_count_fds();
	EXPECT_GT(0, vnic_guest_nic_open_queues(self->g, 0, fds, 3));
	EXPECT_EQ(-1, fds[0]);
	EXPECT_EQ(nfd, st_count_fds());

	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, fds, 2));
	ASSERT_NE(fds[0], fds[1]);
	for (i = 0; i < 2; i++) {
		expect_cloexec(_metadata, fds[i]);
		memset(&ifr, 0, sizeof(ifr));
		ASSERT_EQ(0, ioctl(fds[i], TUNGETIFF, &ifr));
		EXPECT_STREQ("tq0", ifr.ifr_name);
		EXPECT_TRUE(ifr.ifr_flags & IFF_MULTI_QUEUE);
	}
	close(fds[0]);
	close(fds[1]);
}

/* Both queues deliver into the device.  (Frames out of the device are
 * spread over the queues by flow, so that direction is not per fd.) */
TEST_F(queues, tap_two_queues_deliver)
{
	unsigned char nic[6], other[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	int fds[2], sock;
	unsigned int i;
	char tag[8];

	tap_nic(_metadata, self, VNIC_TAP_NO_PI | VNIC_TAP_MULTI_QUEUE, 2);
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, fds, 2));
	ASSERT_EQ(0, st_mac_parse(NIC_MAC, nic));
	sock = packet_sock("tq0", SOCK_RAW);
	ASSERT_LE(0, sock);
	for (i = 0; i < 2; i++) {
		snprintf(tag, sizeof(tag), "tq%u", i);
		fd_send(_metadata, fds[i], 0, nic, other, tag);
		EXPECT_TRUE(wait_marker(sock, 0, tag)) TH_LOG("%s", tag);
	}
	close(sock);
	close(fds[0]);
	close(fds[1]);
}

/*
 * A persistent tap adopted after its creator went: the fds it was made
 * with died with that creator, so there are none to hand over (-ENOENT),
 * and the message says why rather than that they were handed over.
 */
TEST_F(queues, tap_adopted_has_no_queue_fds)
{
	struct vnic_guest *a;
	int fd = -1, nfd;

	tap_nic(_metadata, self, VNIC_TAP_NO_PI | VNIC_TAP_PERSIST, 1);
	vnic_guest_free(self->g);
	self->g = NULL;
	ASSERT_EQ(0, vnic_guest_adopt(self->ctx, "gq", &a))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	nfd = st_count_fds();
	EXPECT_EQ(-ENOENT, vnic_guest_nic_open_queues(a, 0, &fd, 1));
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(nfd, st_count_fds());
	EXPECT_EQ(NULL, strstr(vnic_ctx_errmsg(self->ctx), "handed over"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_NE(NULL, strstr(vnic_ctx_errmsg(self->ctx), "adopted"))
		TH_LOG("%s", vnic_ctx_errmsg(self->ctx));
	EXPECT_EQ(0, vnic_guest_destroy(a));
}

/* An L3 tun: an IPv4 packet written into the fd is received by tun0. */
TEST_F(queues, tun_packet_in)
{
	VNIC_OPTS(vnic_nic_opts, nic, .kind = VNIC_KIND_TUN, .name = "tn0",
		  .up = 1, .tap_flags = VNIC_TAP_NO_PI);
	unsigned char pkt[64] = {
		0x45, 0, 0, 64, 0, 0, 0, 0, 64, 253, 0, 0,
		192, 0, 2, 1, 192, 0, 2, 2,
	};
	unsigned char buf[256];
	struct pollfd p;
	long long end;
	int fd, sock;
	bool seen = false;
	ssize_t n;

	create_nic(_metadata, self, &nic);
	ASSERT_EQ(0, vnic_guest_nic_open_queues(self->g, 0, &fd, 1));
	sock = packet_sock("tn0", SOCK_DGRAM);
	ASSERT_LE(0, sock);
	memcpy(pkt + 20, "tun-in", 6);
	ASSERT_EQ((ssize_t)sizeof(pkt), write(fd, pkt, sizeof(pkt)));
	p.fd = sock;
	p.events = POLLIN;
	end = st_now_ms() + TIMEOUT_MS;
	while (!seen && st_now_ms() < end) {
		if (poll(&p, 1, end - st_now_ms()) <= 0)
			continue;
		n = read(sock, buf, sizeof(buf));
		seen = n > 20 && memmem(buf, n, "tun-in", 6);
	}
	EXPECT_TRUE(seen);
	close(sock);
	close(fd);
}

/* open_queues on a NIC index that does not exist. */
TEST_F(queues, bad_index)
{
	int fd = -1;

	macvtap_nic(_metadata, self);
	EXPECT_GT(0, vnic_guest_nic_open_queues(self->g, 1, &fd, 1));
	EXPECT_EQ(-1, fd);
	EXPECT_GT(0, vnic_guest_nic_open_queues(self->g, 0, &fd, 0));
	EXPECT_EQ(-1, fd);
}

TEST_HARNESS_MAIN
