// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Anchors that run ip(8), as runtimes and scripts do today: one process
 * per NIC, and one "ip -batch" of all of them.  Process start-up is part
 * of what they cost, so it is inside the timed part.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "bench.h"

#define ARGV_MAX 24

/* "link add ..." for NIC i, as words; returns the word count. */
static int add_words(const struct guest_env *e, unsigned int i,
		     char *name, char *peer, const char **w)
{
	const struct bench_opts *o = e->o;
	int n = 0;

	env_nic_name(o, i, name);
	w[n++] = "link";
	w[n++] = "add";
	if (o->kind != VNIC_KIND_VETH) {
		w[n++] = "link";
		w[n++] = ENV_LOWER;
	}
	w[n++] = "name";
	w[n++] = name;
	if (o->up)
		w[n++] = "up";
	w[n++] = "type";
	w[n++] = env_ip_kind(o->kind);
	if (o->kind == VNIC_KIND_VETH) {
		env_peer_name(o, i, peer);
		w[n++] = "peer";
		w[n++] = "name";
		w[n++] = peer;
	} else {
		w[n++] = "mode";
		w[n++] = "bridge";
	}
	w[n] = NULL;
	return n;
}

/* fork, exec, wait: what a runtime that shells out pays per call. */
static int run_ip(const struct guest_env *e, const char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execv(e->ip_path, (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -ECHILD;
	return 0;
}

static int link_add_run(struct guest_env *e, struct sample *s, char *err,
			size_t errlen)
{
	const char *argv[ARGV_MAX];
	char name[16], peer[16];
	unsigned int i;
	uint64_t t0;
	int ret = 0;

	argv[0] = e->ip_path;
	t0 = now_ns();
	for (i = 0; i < e->o->nics && !ret; i++) {
		add_words(e, i, name, peer, argv + 1);
		ret = run_ip(e, argv);
	}
	s->ms = ms_since(t0);
	if (ret)
		snprintf(err, errlen, "ip link add %s: %s", name,
			 ret == -ECHILD ? "ip failed" : strerror(-ret));
	return ret;
}

static int write_batch(const struct guest_env *e, char *path, size_t len)
{
	const char *w[ARGV_MAX];
	char name[16], peer[16];
	FILE *f = bench_tmpfile("ip", path, len);
	unsigned int i;
	int k, n;

	if (!f)
		return -errno;
	for (i = 0; i < e->o->nics; i++) {
		n = add_words(e, i, name, peer, w);
		for (k = 0; k < n; k++)
			fprintf(f, "%s%c", w[k], k + 1 < n ? ' ' : '\n');
	}
	return bench_tmpfile_close(f, path);
}

static int batch_run(struct guest_env *e, struct sample *s, char *err,
		     size_t errlen)
{
	char path[64];
	const char *argv[] = { e->ip_path, "-batch", path, NULL };
	uint64_t t0;
	int ret;

	/* Written before the clock starts: a runtime would generate it in
	 * memory, the file is only how ip(8) takes it. */
	ret = write_batch(e, path, sizeof(path));
	if (ret) {
		snprintf(err, errlen, "batch file: %s", strerror(-ret));
		return ret;
	}
	t0 = now_ns();
	ret = run_ip(e, argv);
	s->ms = ms_since(t0);
	unlink(path);
	if (ret)
		snprintf(err, errlen, "ip -batch: %s",
			 ret == -ECHILD ? "ip failed" : strerror(-ret));
	return ret;
}

static const char *ip_skip(const struct guest_env *e)
{
	if (!e->ip_path[0])
		return "ip(8) not found (install iproute2)";
	if (e->o->kind == VNIC_KIND_TAP)
		return "tap: ip(8) makes taps with TUNSETIFF persistent, not comparable";
	return NULL;
}

const struct method method_ip_link_add = {
	.name = "ip-link-add",
	.skip = ip_skip,
	.run = link_add_run,
};

const struct method method_ip_batch = {
	.name = "ip-batch",
	.skip = ip_skip,
	.run = batch_run,
};
