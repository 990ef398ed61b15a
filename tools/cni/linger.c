// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The last close of an nfnetlink socket waits, in the kernel, for the
 * deferred destruction of the last nf_tables commit: nft_rcv_nl_event()
 * (NETLINK_URELEASE) flushes the per-namespace destroy work, and that work
 * begins with synchronize_rcu().  So a process that commits and then closes
 * its socket (or exits: exit closes it) pays one RCU grace period, 5 to
 * 15 ms on a busy host, whoever owns the table.
 *
 * A runtime waits for the plugin's exit and the end of its stdout, not for
 * the socket.  So before the handle is closed, a child is forked that keeps
 * a copy of every nfnetlink socket and nothing else (no stdout, no dataDir
 * lock), waits until this process is gone (the pipe's other end closes with
 * it), and exits: its exit is the socket's last close, and the wait is
 * there.  It holds no claim (vnic-cni opens the table without the owner
 * flag, filter.c), so the next call does not find the table taken.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include "tools/cni/cni.h"

#define LINGER_FDS	1024	/* the descriptors the child looks at */

static bool is_nfnl(int fd)
{
	int dom = 0, proto = 0;
	socklen_t len = sizeof(dom);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) || dom != AF_NETLINK)
		return false;
	len = sizeof(proto);
	return !getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) &&
	       proto == NETLINK_NETFILTER;
}

/* The child: only async-signal-safe calls (the parent may hold locks). */
static void keeper(int wait_fd)
{
	int fd, null = open("/dev/null", O_RDWR);
	char c;

	for (fd = 0; fd < 3; fd++)
		if (null < 0 || dup2(null, fd) < 0)
			close(fd);
	for (fd = 3; fd < LINGER_FDS; fd++)
		if (fd != wait_fd && !is_nfnl(fd))
			close(fd);
	/* Whatever a runtime left open above them (vnic-cni's are below). */
	close_range(LINGER_FDS, ~0u, 0);
	while (read(wait_fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

void filter_close(struct vnic_filter *f)
{
	/* Its write end closes with this process; every keeper reads it. */
	static int wait_pipe[2] = { -1, -1 };
	pid_t pid = -1;

	if (!f)
		return;
	if (vnic_filter_backend(f) == VNIC_BACKEND_NFT &&
	    (wait_pipe[0] >= 0 || !pipe2(wait_pipe, O_CLOEXEC)))
		pid = fork();
	if (pid == 0)
		keeper(wait_pipe[0]);
	/* No keeper (bpf, or fork failed): the close waits here.  A keeper
	 * that exits first stays a zombie until this process ends, which is
	 * soon: it is nobody's to wait for (a runtime waits for this process
	 * only), and SIGCHLD is left alone for the IPAM plugin's waitpid(). */
	vnic_filter_close(f);
}
