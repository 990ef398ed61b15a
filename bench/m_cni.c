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
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
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

struct plugin_run {
	const struct cni_cmd *c;
	int in;			/* the network configuration */
};

static void exec_plugin(void *arg, int out)
{
	const struct plugin_run *p = arg;
	const struct cni_cmd *c = p->c;
	char cmd[32], cid[96], ifn[48], ns[PATH_MAX + 16], path[PATH_MAX + 16];
	char *const argv[] = { (char *)c->plugin, NULL };
	char *const envp[] = { cmd, cid, ifn, ns, path,
			       "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	bool cut = false;

	cut |= snprintf(cmd, sizeof(cmd), "CNI_COMMAND=%s", c->verb) >= (int)sizeof(cmd);
	cut |= snprintf(cid, sizeof(cid), "CNI_CONTAINERID=%s", c->cid) >= (int)sizeof(cid);
	cut |= snprintf(ifn, sizeof(ifn), "CNI_IFNAME=%s", c->ifname) >= (int)sizeof(ifn);
	cut |= snprintf(ns, sizeof(ns), "CNI_NETNS=%s", c->netns) >= (int)sizeof(ns);
	cut |= snprintf(path, sizeof(path), "CNI_PATH=%s", c->dir) >= (int)sizeof(path);
	/* A cut variable would fail the plugin with a misleading error. */
	if (cut) {
		dprintf(out, "a CNI variable of %s is too long", c->verb);
		_exit(125);
	}
	if (dup2(p->in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(126);
	execve(c->plugin, argv, envp);
	_exit(127);
}

int cni_exec(const struct cni_cmd *c, char *msg, size_t msglen)
{
	struct plugin_run p = { c, -1 };
	struct bench_child ch = { .run = exec_plugin, .arg = &p, .out = msg,
				  .len = msglen, .text = true };
	size_t len = strlen(c->conf);
	int in[2], ret;
	char *s;

	msg[0] = 0;
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	/* Far below a pipe's capacity: written before the child reads. */
	ret = write(in[1], c->conf, len) == (ssize_t)len ? 0 : -EIO;
	close(in[1]);
	p.in = in[0];
	ret = ret ?: bench_child(&ch);
	close(in[0]);
	/* The plugin's error is one JSON object over lines: one line. */
	for (s = msg; *s; s++)
		if (*s == '\n' || *s == '\t')
			*s = ' ';
	return ret;
}

static int cni_run(struct guest_env *e, struct sample *s, char *err,
		   size_t errlen)
{
	struct cni_target *t;
	char dir[CNI_DIR_MAX], plugin[CNI_DIR_MAX + 16], cid[32], name[16];
	char msg[200];
	/* "ipam": {} is an L2-only NIC: no IPAM plugin is executed. */
	struct cni_cmd c = {
		.plugin = plugin, .dir = dir, .verb = "ADD", .cid = cid,
		.ifname = name,
		.conf = "{\"cniVersion\":\"1.0.0\",\"name\":\"vnicbench\","
			"\"type\":\"macvlan\",\"master\":\"" ENV_LOWER "\","
			"\"mode\":\"bridge\",\"ipam\":{}}",
	};
	unsigned int i;
	uint64_t t0;
	int ret;

	cni_find(dir, sizeof(dir));
	snprintf(plugin, sizeof(plugin), "%s/macvlan", dir);
	ret = target_new(e, &t);
	if (ret) {
		snprintf(err, errlen, "target netns: %s", strerror(-ret));
		return ret;
	}
	/* One container per guest: its id names the guest. */
	snprintf(cid, sizeof(cid), "vnicbench-%u", e->ncni - 1);
	c.netns = t->path;
	t0 = now_ns();
	for (i = 0; i < e->o->nics && !ret; i++) {
		env_nic_name(e->o, i, name);
		ret = cni_exec(&c, msg, sizeof(msg));
	}
	s->ms = ms_since(t0);
	if (ret)
		snprintf(err, errlen, "macvlan plugin, %s: %s", name,
			 ret == -ECHILD ? msg : strerror(-ret));
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
