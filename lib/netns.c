// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Doing things inside another network namespace without touching the
 * caller's threads: setns() changes only the calling thread, so a helper
 * thread joins the namespace, opens what is needed, and exits.  Sockets and
 * tun fds keep the namespace they were opened in.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/nsfs.h>
#include <unistd.h>

#include "lib/internal.h"

struct ns_call {
	int nsfd;
	int (*fn)(void *arg);
	void *arg;
	int ret;
};

static void *ns_thread(void *p)
{
	struct ns_call *c = p;

	if (c->nsfd >= 0 && setns(c->nsfd, CLONE_NEWNET) < 0)
		c->ret = -errno;
	else
		c->ret = c->fn(c->arg);
	return NULL;
}

/* Whether the calling thread is in nsfd's namespace already. */
static bool in_netns_now(int nsfd)
{
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	bool same;

	if (self < 0)
		return false;
	same = vnic_netns_same(nsfd, self);
	close(self);
	return same;
}

/* A context's own namespace is an fd too (context.c): the thread is asked,
 * not assumed, to be there; when it is, no thread is made. */
int vnic_in_netns(int nsfd, int (*fn)(void *arg), void *arg)
{
	if (nsfd < 0 || in_netns_now(nsfd))
		return fn(arg);
	return vnic_in_thread(nsfd, fn, arg);
}

/*
 * The thread blocks every signal (it inherits the mask it is created
 * with): a process-directed signal must not run the application's handler
 * in a thread that sits in another network namespace, or in a private
 * mount namespace whose /dev is a tmpfs (allocator/queues.c).
 */
int vnic_in_thread(int nsfd, int (*fn)(void *arg), void *arg)
{
	struct ns_call c = { .nsfd = nsfd, .fn = fn, .arg = arg };
	sigset_t all, old;
	pthread_t t;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, NULL, ns_thread, &c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_join(t, NULL);
	return c.ret;
}

static int ifsock_fn(void *arg)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	*(int *)arg = fd;
	return fd < 0 ? -errno : 0;
}

int vnic_ifsock(struct vnic_ctx *ctx, int *fd)
{
	int err = 0;

	if (*fd < 0)
		err = vnic_in_netns(ctx->netns_fd, ifsock_fn, fd);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "socket for interface lookups");
	return *fd;
}

int vnic_netns_open_pid(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * A namespace fd as the caller gave it: only 0 means "none" (opts structs
 * are zeroed), so a negative one is a bug in the caller, not a default; and
 * an fd of another kind of file, or of another kind of namespace, would only
 * fail later as setns()'s bare EINVAL.  Say which, before anything is done.
 */
int vnic_netns_check(int fd, const char **why)
{
	int type;

	if (fd < 0)
		return *why = "not a file descriptor (0 means none)", -EBADF;
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type < 0 && errno == EBADF)
		return *why = "not an open file descriptor", -EBADF;
	if (type < 0)
		return *why = "not a namespace", -EINVAL;
	if (type != CLONE_NEWNET)
		return *why = "a namespace, but not a network namespace", -EINVAL;
	return 0;
}

int vnic_netns_same(int a, int b)
{
	struct stat sa, sb;

	if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int vnic_netns_is_ctx(const struct vnic_ctx *ctx, int nsfd)
{
	int self, same;

	if (ctx->netns_fd >= 0)
		return vnic_netns_same(nsfd, ctx->netns_fd);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return 0;
	same = vnic_netns_same(nsfd, self);
	close(self);
	return same;
}
