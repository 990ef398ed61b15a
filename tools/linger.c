// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The last close of an nfnetlink socket waits, in the kernel, for the
 * deferred destruction of the last nf_tables commit: nft_rcv_nl_event()
 * (NETLINK_URELEASE) flushes the per-namespace destroy work, and that work
 * begins with synchronize_rcu().  So a process that commits and then closes
 * its socket (or exits: exit closes it) pays one RCU grace period, 5 to
 * 15 ms on a busy host, whoever owns the table.
 *
 * A caller (a CNI runtime, a shell's $(...), prove) waits for the process's
 * exit and the end of its stdout, not for the socket.  So before the handle
 * is closed (vnic-cni's ADD: as soon as it is open, while the IPAM plugin
 * runs; vnicctl: after the command's output), a child is forked that keeps
 * a copy of every nfnetlink socket and nothing else (no stdout, no stderr,
 * no lock), waits until this process is gone (the socket pair's other
 * end closes with it), and exits: its exit is the socket's last close, and
 * the wait is there.  The flush runs under the namespace's nf_tables commit mutex,
 * which every commit and (Linux 6.16 and later) every device registered in
 * that namespace also takes: a close that flushes stalls the next vnic-cni
 * call's veth, or another plugin's, for a grace period.  So the keeper
 * waits one grace period holding nothing (membarrier's GLOBAL command is a
 * synchronize_rcu()), started when the handle is closed right after its
 * commit and run while this process finishes, and its close then finds
 * the work done.  Not after this process's exit: by then the next call may
 * have committed, and the close would flush that call's work instead.
 * Where membarrier is refused (nohz_full, a seccomp filter) the keeper
 * closes at once, as it did before.  Its sockets must hold no claim: the
 * kernel releases an owned table only after that wait, so the next process
 * would find the table taken.  vnic-cni and a lingering vnicctl open
 * without the owner flag (tools/cni/filter.c, tools/cli_filter.c).
 *
 * The keeper is a grandchild: the child between them exits at once and is
 * reaped here, so the caller never has a child of its own left (no zombie
 * in its waitpid(-1), none at its exit).  The keeper, an orphan from its
 * start, is re-parented to the nearest child subreaper or init, which
 * reaps it when it exits (cni.rst).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/membarrier.h>
#include <linux/netlink.h>

#include "tools/linger.h"

#define LINGER_FDS	1024	/* without /proc: the descriptors looked at */

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

static void drop(int fd, int wait_fd, int dir)
{
	if (fd > 2 && fd != wait_fd && fd != dir && !is_nfnl(fd))
		close(fd);
}

struct dent {
	unsigned long long ino;
	long long off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* The open descriptors, as /proc/self/fd lists them: as many steps as
 * there are, whatever their numbers.  false: no /proc. */
static bool drop_listed(int wait_fd)
{
	char buf[4096] __attribute__((aligned(8)));
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n, i;

	if (dir < 0)
		return false;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i += ((struct dent *)(buf + i))->reclen) {
			const char *p = ((struct dent *)(buf + i))->name;
			int fd = 0;

			for (; *p >= '0' && *p <= '9' && fd < (1 << 24); p++)
				fd = fd * 10 + (*p - '0');
			if (!*p && p != ((struct dent *)(buf + i))->name)
				drop(fd, wait_fd, dir);
		}
	close(dir);
	return n == 0;
}

/* The keeper: only async-signal-safe calls (the parent may hold locks). */
static void keeper(int wait_fd)
{
	int fd, null = open("/dev/null", O_RDWR | O_CLOEXEC);
	ssize_t n;
	char c;

	for (fd = 0; fd < 3; fd++)
		if (null < 0 || dup2(null, fd) < 0)
			close(fd);
	if (!drop_listed(wait_fd)) {
		for (fd = 3; fd < LINGER_FDS; fd++)
			drop(fd, wait_fd, -1);
		close_range(LINGER_FDS, ~0u, 0);
	}
	/* A byte: a handle was closed, its commit done; then the grace
	 * period the destroy work waits for runs here, holding nothing,
	 * while this process finishes.  End of file: it is gone. */
	do
		n = read(wait_fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
	while (n != 0 && (n > 0 || errno == EINTR))
		n = read(wait_fd, &c, 1);
	_exit(0);
}

/*
 * Each keeper has a socket pair of its own: this end stays here until
 * this process exits (the keeper's end of file), and the byte the handle's
 * close writes starts that keeper's grace period.  One pair for all would
 * let a keeper take the byte meant for another, which would then close
 * at this process's exit without its grace period.  A slot whose handle
 * is closed keeps its write end (f NULL).  More handles than slots get
 * no keeper: their close waits, as without one.
 */
#define LINGER_KEEPERS	8

static struct lingering {
	const struct vnic_filter *f;
	int wfd;
} keepers[LINGER_KEEPERS] = { [0 ... LINGER_KEEPERS - 1] = { NULL, -1 } };

/* The child between this process and a keeper, reaped at the close:
 * waiting for it at once would put its exit (1.7 ms on a busy host) on
 * ADD's path. */
static pid_t between = -1;

static void reap_between(void)
{
	while (between > 0 && waitpid(between, NULL, 0) < 0 && errno == EINTR)
		;
	between = -1;
}

static struct lingering *keeper_of(const struct vnic_filter *f)
{
	unsigned int i;

	for (i = 0; i < LINGER_KEEPERS; i++)
		if (keepers[i].wfd >= 0 && keepers[i].f == f)
			return &keepers[i];
	return NULL;
}

void filter_linger(struct vnic_filter *f)
{
	struct lingering *slot;
	int p[2];
	pid_t pid;

	if (!f || keeper_of(f) || vnic_filter_backend(f) != VNIC_BACKEND_NFT)
		return;
	for (slot = keepers; slot < keepers + LINGER_KEEPERS && slot->wfd >= 0; slot++)
		;
	if (slot == keepers + LINGER_KEEPERS)
		return;
	reap_between();
	/* A socket pair, not a pipe: the byte filter_close() sends must not
	 * raise SIGPIPE when the keeper is not there (its fork failed, or it
	 * was killed), and this end is closed here, not kept for it. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p))
		return;
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		if (fork() == 0)
			keeper(p[0]);
		_exit(0);
	}
	/* The child between exits at once (its fork failing only means no
	 * keeper: the close then waits).  Reaped by pid, so an IPAM
	 * plugin's exit is left to ipam.c. */
	close(p[0]);
	slot->f = f;
	slot->wfd = p[1];
	between = pid;
}

void filter_close(struct vnic_filter *f)
{
	struct lingering *k;

	if (!f)
		return;
	filter_linger(f);
	reap_between();
	/* The keeper's grace period starts now, not at this process's
	 * exit: it ends about when the destroy work's does. */
	k = keeper_of(f);
	if (k) {
		/* Never full (one byte a pair), never blocks; no keeper
		 * left to read it is EPIPE, not a signal. */
		ssize_t w = send(k->wfd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);

		(void)w;
		k->f = NULL;
	}
	/* No keeper (bpf, no slot, or a fork failed): the close waits here. */
	vnic_filter_close(f);
}
