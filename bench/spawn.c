// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The anchor tools (nft, the xtables tools) run as a runtime that shells
 * out runs them: posix_spawn (vfork in glibc), so that the bench's address
 * space (tens of thousands of NICs' worth of state) does not inflate the
 * start-up measured.  stderr is kept for the error line of a failed row.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "bench.h"

extern char **environ;

static char last_err[BENCH_ERR_TEXT];

int bench_spawn(const char *const *argv, const char *in_path, int out_fd,
		pid_t *pid, int *err_fd)
{
	posix_spawn_file_actions_t fa;
	int pipefd[2], ret;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null",
					 O_RDONLY, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY,
						 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	ret = posix_spawn(pid, argv[0], &fa, NULL, (char *const *)argv,
			  environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (ret) {
		close(pipefd[0]);
		return -ret;
	}
	*err_fd = pipefd[0];
	return 0;
}

int bench_reap(pid_t pid, int err_fd, const char *who)
{
	char buf[BENCH_ERR_TEXT - 128];
	size_t have = 0;
	ssize_t n;
	int status;

	/* Read to the end, keeping the first bytes: the child must not
	 * block on a full pipe. */
	for (;;) {
		n = read(err_fd, have < sizeof(buf) - 1 ? buf + have : buf,
			 have < sizeof(buf) - 1 ? sizeof(buf) - 1 - have :
						  sizeof(buf) - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (have < sizeof(buf) - 1)
			have += (size_t)n;
	}
	buf[have] = 0;
	close(err_fd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return -ETIMEDOUT;	/* ours: the caller says why */
	if (who)
		snprintf(last_err, sizeof(last_err), "%.100s: %s", who,
			 buf[0] ? buf : "failed");
	else
		snprintf(last_err, sizeof(last_err), "%s", buf);
	return -ECHILD;
}

int bench_exec(const char *const *argv, const char *in_path, int out_fd,
	       const char *who)
{
	pid_t pid;
	int fd, ret = bench_spawn(argv, in_path, out_fd, &pid, &fd);

	return ret ? ret : bench_reap(pid, fd, who);
}

int bench_capture(const char *const *argv, int timeout_ms, const char *who,
		  char **out, size_t *outlen)
{
	struct pollfd pfd = { .events = POLLIN };
	uint64_t t0 = now_ns();
	size_t len = 0, cap = 0;
	int pipefd[2], fd, ret;
	char *buf = NULL;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	ret = bench_spawn(argv, NULL, pipefd[1], &pid, &fd);
	close(pipefd[1]);
	if (ret) {
		close(pipefd[0]);
		return ret;
	}
	pfd.fd = pipefd[0];
	for (;;) {
		int left = timeout_ms - (int)ms_since(t0);
		ssize_t n;

		if (len + 65536 + 1 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 1 << 20);

			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
		}
		if (timeout_ms && (left <= 0 || poll(&pfd, 1, left) <= 0)) {
			kill(pid, SIGKILL);
			ret = -ETIMEDOUT;
			break;
		}
		n = read(pipefd[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pipefd[0]);
	if (ret == -ETIMEDOUT)
		bench_set_last_error("%s did not finish in %d s", argv[0],
				     timeout_ms / 1000);
	ret = bench_reap(pid, fd, who) ?: ret;
	if (ret || !buf) {
		free(buf);
		return ret ? ret : -ENOMEM;
	}
	buf[len] = 0;
	*out = buf;
	if (outlen)
		*outlen = len;
	return 0;
}

void bench_set_last_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
}

const char *bench_last_error(void)
{
	char *p;

	for (p = last_err; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return last_err;
}
