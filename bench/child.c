// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One child process and what it sends back: a new process that runs a
 * function (a restarted daemon, a new bpf handle) or execs a tool, its
 * result or its output read over a pipe, then reaped.  The reading goes on
 * to the end of the pipe, so a child never blocks on a full pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "bench.h"

int bench_child_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Up to len bytes into buf, stopping early only at the end: the count. */
static size_t read_full(int fd, char *buf, size_t len)
{
	size_t have = 0;
	ssize_t n;

	while (have < len) {
		n = read(fd, buf + have, len - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	return have;
}

static void drain(int fd)
{
	char buf[512];

	while (read_full(fd, buf, sizeof(buf)) == sizeof(buf))
		;
}

int bench_child(struct bench_child *c)
{
	size_t want = c->text ? c->len - 1 : c->len;
	bool whole;
	int pfd[2];
	uint64_t t0;
	size_t got;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		close(pfd[0]);
		c->run(c->arg, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	got = read_full(pfd[0], c->out, want);
	whole = got == want;
	if (c->text)
		((char *)c->out)[got] = '\0';
	drain(pfd[0]);
	close(pfd[0]);
	while (waitpid(pid, &c->status, 0) < 0 && errno == EINTR)
		;
	c->ms = ms_since(t0);
	if (!WIFEXITED(c->status) || WEXITSTATUS(c->status))
		return -ECHILD;
	return c->text || whole ? 0 : -ECHILD;
}

int bench_child_result(struct bench_child *c, int *ret, char *err,
		       size_t errlen)
{
	int r = bench_child(c);

	if (r == -ECHILD)
		snprintf(err, errlen, "the child died");
	else if (r)
		snprintf(err, errlen, "starting a child: %s", strerror(-r));
	return r ?: *ret;
}
