// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Real frames through a filtered veth pair (frames.h): the one copy that
 * vnic-bench pkt and bpf-measure both build.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <linux/if_packet.h>

#include "frames.h"

void frame_udp4(unsigned char *f, const unsigned char *src,
		const unsigned char *saddr)
{
	unsigned char *ip = f + 14, *udp = ip + 20;
	uint32_t sum = 0;
	int k;

	memset(f, 0, FRAME_LEN);
	f[0] = 2;
	f[5] = 0xf0;
	memcpy(f + 6, src, 6);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[3] = FRAME_LEN - 14;
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, saddr, 4);
	ip[16] = 10;
	ip[19] = 2;
	for (k = 0; k < 20; k += 2)
		sum += (uint32_t)(ip[k] << 8 | ip[k + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (unsigned char)(~sum >> 8);
	ip[11] = (unsigned char)~sum;
	udp[0] = 0x9c;
	udp[1] = 0x40;
	udp[3] = 9;
	udp[5] = FRAME_LEN - 14 - 20;
}

int frames_veth_ns(bool bridge_nf)
{
	if (unshare(CLONE_NEWNET) ||
	    (!bridge_nf &&
	     system("sysctl -qw net.bridge.bridge-nf-call-iptables=0 2>/dev/null; true")) ||
	    system("ip link set lo up && sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && "
		   "ip link add name vh0 type veth peer name g0 && "
		   "ip link add name fa0 type veth peer name fa0p && "
		   "ip link add name br0 type bridge && "
		   "ip link set vh0 master br0 && ip link set fa0 master br0 && "
		   "ip link set g0 address 02:00:00:00:00:00 && "
		   "for d in vh0 g0 fa0 fa0p br0; do ip link set $d up; done"))
		return -EIO;
	return 0;
}

/* Received packets of dev in this namespace (/proc/net/dev: /sys would
 * show the namespace sysfs was mounted in). */
static unsigned long long rx_of(const char *dev)
{
	unsigned long long bytes, pk = 0;
	char line[512], name[32];
	FILE *f = fopen("/proc/net/dev", "re");

	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!c || sscanf(line, " %31[^:]", name) != 1 ||
		    strcmp(name, dev))
			continue;
		if (sscanf(c + 1, "%llu %llu", &bytes, &pk) != 2)
			pk = 0;
	}
	if (f)
		fclose(f);
	return pk;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The highest CPU this process may run on: the same one for every row of
 * a run, so that a migration mid-run cannot split the path over two CPUs
 * (the frames are delivered through the sending CPU's backlog). */
static void pin_cpu(void)
{
	cpu_set_t set;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (c = CPU_SETSIZE - 1; c >= 0; c--)
		if (CPU_ISSET(c, &set))
			break;
	if (c < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(c, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static uint64_t cpu_ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int frames_send(const unsigned char *f, unsigned int count, uint64_t *ns,
		uint64_t *cpu_ns, unsigned long long *got)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET };
	struct iovec iov = { (void *)f, FRAME_LEN };
	struct mmsghdr msgs[FRAMES_BATCH];
	unsigned long long before;
	unsigned int sent = 0, i;
	uint64_t t0, c0;
	int fd;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	ll.sll_ifindex = (int)if_nametoindex("g0");
	if (fd < 0 || bind(fd, (struct sockaddr *)&ll, sizeof(ll)))
		return -errno;
	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < FRAMES_BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	pin_cpu();
	usleep(200000);		/* the bridge ports forwarding */
	before = rx_of("fa0p");
	t0 = mono_ns();
	c0 = cpu_ns_now();
	while (sent < count) {
		int n = sendmmsg(fd, msgs, FRAMES_BATCH, 0);

		if (n > 0)
			sent += (unsigned int)n;
	}
	if (cpu_ns)
		*cpu_ns = cpu_ns_now() - c0;
	*ns = mono_ns() - t0;
	usleep(100000);
	*got = rx_of("fa0p") - before;
	close(fd);
	return 0;
}
