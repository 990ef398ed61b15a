// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cni-macvlan: the CNI macvlan plugin of containernetworking-plugins,
 * executed once per NIC with CNI_COMMAND=ADD, as a container runtime does.
 *
 * Each guest gets a target network namespace of its own, as each container
 * does: a child process unshares one and waits, and the plugin is handed
 * /proc/PID/ns/net.  Making it is untimed (the runtime makes the sandbox
 * before it calls CNI); the plugin execs are timed.  The plugin makes the
 * macvlan on lower0, in the bench's namespace, with a random temporary
 * name and IFLA_NET_NS_FD naming the target, then enters the target,
 * renames it to CNI_IFNAME and brings it up; the empty "ipam" object makes
 * it an L2-only NIC, so no IPAM plugin runs.
 *
 * The holder dies with the bench (PR_SET_PDEATHSIG), so a crash leaves no
 * namespace behind; its NICs go with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "bench.h"

/* Marks the NICs of a target, so that one RTM_DELLINK removes them all. */
#define CNI_GROUP	0x7e58
#define CNI_RCVBUF	(1u << 20)
#define CNI_DIR_MAX	64

static const char *const cni_dirs[] = { "/usr/lib/cni", "/opt/cni/bin" };

/* Debian's directory first, then the upstream default; "" if neither. */
void cni_find(char *dir, size_t len)
{
	char path[256];
	unsigned int i;

	for (i = 0; i < sizeof(cni_dirs) / sizeof(cni_dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/macvlan", cni_dirs[i]);
		if (access(path, X_OK) == 0) {
			snprintf(dir, len, "%s", cni_dirs[i]);
			return;
		}
	}
	dir[0] = 0;
}

static const char *cni_skip(const struct guest_env *e)
{
	char dir[CNI_DIR_MAX];

	if (e->o->kind != VNIC_KIND_MACVLAN)
		return "macvlan only: the CNI macvlan plugin makes macvlans (use --kind macvlan)";
	cni_find(dir, sizeof(dir));
	if (!dir[0])
		return "CNI macvlan plugin not found in /usr/lib/cni or /opt/cni/bin (install containernetworking-plugins)";
	return NULL;
}

/* The holder: its own netns, then nothing until it is killed. */
static void __attribute__((noreturn)) hold(int wfd, pid_t bench)
{
	char ok;

	/* Dies with the bench, even when the bench is killed; a bench gone
	 * before the prctl would never send it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Named for ps: not a second bench. */
	prctl(PR_SET_NAME, "vnic-bench-ns");
	ok = unshare(CLONE_NEWNET) == 0 && getppid() == bench;
	if (write(wfd, &ok, 1) != 1)
		_exit(1);
	close(wfd);
	for (;;)
		pause();
}

/* A socket opened inside the target stays bound to it. */
static int open_inside(struct cni_target *t)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int ret;

	if (self < 0)
		return -errno;
	if (setns(t->nsfd, CLONE_NEWNET) < 0) {
		ret = -errno;
		close(self);
		return ret;
	}
	ret = rawnl_open(&t->nl, CNI_RCVBUF);
	if (setns(self, CLONE_NEWNET) < 0) {
		/* Every later figure would be from the wrong namespace. */
		fprintf(stderr, "vnic-bench: cannot return to own netns: %s\n",
			strerror(errno));
		abort();
	}
	close(self);
	return ret;
}

int cni_target_start(struct cni_target *t)
{
	pid_t bench = getpid();
	int pfd[2];
	char ok = 0;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	t->pid = fork();
	if (t->pid < 0) {
		t->pid = 0;
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (t->pid == 0) {
		close(pfd[0]);
		hold(pfd[1], bench);
	}
	close(pfd[1]);
	if (read(pfd[0], &ok, 1) != 1)
		ok = 0;
	close(pfd[0]);
	if (!ok)
		return -ECHILD;
	snprintf(t->path, sizeof(t->path), "/proc/%d/ns/net", (int)t->pid);
	t->nsfd = open(t->path, O_RDONLY | O_CLOEXEC);
	if (t->nsfd < 0)
		return -errno;
	return open_inside(t);
}

/* One more target, kept in e->cni until release. */
static int target_new(struct guest_env *e, struct cni_target **out)
{
	struct cni_target *v, *t;
	int ret;

	v = realloc(e->cni, (e->ncni + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->cni = v;
	t = &v[e->ncni++];
	memset(t, 0, sizeof(*t));
	t->nsfd = -1;
	ret = cni_target_start(t);
	*out = t;
	return ret;
}

/* Read the plugin's stdout to the end: its result, or its error. */
static void drain(int fd, char *out, size_t len)
{
	size_t n = 0;
	ssize_t k;
	char sink[512];

	for (;;) {
		if (n + 1 < len)
			k = read(fd, out + n, len - n - 1);
		else
			k = read(fd, sink, sizeof(sink));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (n + 1 < len)
			n += (size_t)k;
	}
	out[n] = 0;
}

struct cni_call {
	const char *dir;	/* CNI_PATH */
	char plugin[CNI_DIR_MAX + 16];
	char env_id[64];
	char env_netns[80];
	char env_path[CNI_DIR_MAX + 16];
	const char *conf;
};

static void __attribute__((noreturn)) exec_plugin(const struct cni_call *c,
						  const char *ifname, int in,
						  int out)
{
	char env_if[32];
	char *const argv[] = { (char *)c->plugin, NULL };
	char *const envp[] = {
		"CNI_COMMAND=ADD", (char *)c->env_id, (char *)c->env_netns,
		env_if, (char *)c->env_path, "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		NULL,
	};

	snprintf(env_if, sizeof(env_if), "CNI_IFNAME=%s", ifname);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0)
		_exit(126);
	execve(c->plugin, argv, envp);
	_exit(127);
}

/* fork, exec with the netconf on stdin, wait: one NIC, as runtimes do. */
static int cni_add(const struct cni_call *c, const char *ifname, char *msg,
		   size_t msglen)
{
	int in[2], out[2], status;
	size_t len = strlen(c->conf);
	pid_t pid;

	msg[0] = 0;
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	/* Far below a pipe's capacity: written before the child reads. */
	if (write(in[1], c->conf, len) != (ssize_t)len) {
		status = -errno;
		goto out;
	}
	close(in[1]);
	in[1] = -1;
	pid = fork();
	if (pid < 0) {
		status = -errno;
		goto out;
	}
	if (pid == 0)
		exec_plugin(c, ifname, in[0], out[1]);
	close(out[1]);
	out[1] = -1;
	drain(out[0], msg, msglen);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -errno;
			goto out;
		}
	status = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
out:
	close(in[0]);
	if (in[1] >= 0)
		close(in[1]);
	close(out[0]);
	if (out[1] >= 0)
		close(out[1]);
	return status;
}

static void call_init(struct cni_call *c, const struct guest_env *e,
		      const struct cni_target *t, char *dir)
{
	c->dir = dir;
	snprintf(c->plugin, sizeof(c->plugin), "%s/macvlan", dir);
	/* One container per guest: its id names the guest. */
	snprintf(c->env_id, sizeof(c->env_id), "CNI_CONTAINERID=vnicbench-%u",
		 e->ncni - 1);
	snprintf(c->env_netns, sizeof(c->env_netns), "CNI_NETNS=%s", t->path);
	snprintf(c->env_path, sizeof(c->env_path), "CNI_PATH=%s", dir);
	/* "ipam": {} is an L2-only NIC: no IPAM plugin is executed. */
	c->conf = "{\"cniVersion\":\"1.0.0\",\"name\":\"vnicbench\","
		  "\"type\":\"macvlan\",\"master\":\"" ENV_LOWER "\","
		  "\"mode\":\"bridge\",\"ipam\":{}}";
}

/* The plugin's error is one JSON object over lines: keep it on one. */
static void one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\t')
			*s = ' ';
}

static int cni_run(struct guest_env *e, struct sample *s, char *err,
		   size_t errlen)
{
	struct cni_target *t;
	struct cni_call c;
	char dir[CNI_DIR_MAX], name[16], msg[200];
	unsigned int i;
	uint64_t t0;
	int ret;

	cni_find(dir, sizeof(dir));
	ret = target_new(e, &t);
	if (ret) {
		snprintf(err, errlen, "target netns: %s", strerror(-ret));
		return ret;
	}
	call_init(&c, e, t, dir);
	t0 = now_ns();
	for (i = 0; i < e->o->nics && !ret; i++) {
		env_nic_name(e->o, i, name);
		ret = cni_add(&c, name, msg, sizeof(msg));
	}
	s->ms = ms_since(t0);
	if (ret) {
		one_line(msg);
		snprintf(err, errlen, "macvlan plugin, %s: %s", name,
			 ret == -ECHILD ? msg : strerror(-ret));
	}
	return ret;
}

/* Links of a target other than its loopback. */
static int target_links(struct cni_target *t, struct link_list *l)
{
	unsigned int i, n = 0;
	int ret = rawnl_dump_links(&t->nl, l);

	if (ret)
		return ret;
	for (i = 0; i < l->n; i++)
		if (l->v[i].ifindex != 1)
			l->v[n++] = l->v[i];
	l->n = n;
	return 0;
}

static int cni_count(struct guest_env *e, unsigned int *got)
{
	struct link_list l;
	unsigned int i;
	int ret;

	*got = 0;
	for (i = 0; i < e->ncni; i++) {
		if (!e->cni[i].nl.nl)
			continue;
		ret = target_links(&e->cni[i], &l);
		if (ret)
			return ret;
		*got += l.n;
		link_list_free(&l);
	}
	return 0;
}

/*
 * Delete the NICs by group before the holder goes: the namespace's own
 * teardown would unregister them in a kworker after we return, and on two
 * cores that would run inside the next method's timing.
 */
static void target_empty(struct cni_target *t)
{
	struct link_list l;
	unsigned int i;

	if (!t->nl.nl || target_links(t, &l))
		return;
	for (i = 0; i < l.n; i++)
		rawnl_queue_setgroup(&t->nl, l.v[i].ifindex, CNI_GROUP);
	if (l.n)
		rawnl_queue_dellink_group(&t->nl, CNI_GROUP);
	rawnl_flush(&t->nl, rawnl_window(&t->nl));
	link_list_free(&l);
}

void cni_target_stop(struct cni_target *t)
{
	target_empty(t);
	rawnl_close(&t->nl);
	if (t->nsfd >= 0)
		close(t->nsfd);
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
}

static void cni_release(struct guest_env *e)
{
	unsigned int i;

	for (i = 0; i < e->ncni; i++)
		cni_target_stop(&e->cni[i]);
	free(e->cni);
	e->cni = NULL;
	e->ncni = 0;
}

const struct method method_cni_macvlan = {
	.name = "cni-macvlan",
	.skip = cni_skip,
	.run = cni_run,
	.release = cni_release,
	.count = cni_count,
};
