// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * IPAM delegation as the spec defines it: the plugin named by ipam.type is
 * found on CNI_PATH and executed with our environment and the network
 * configuration on stdin.  The stock plugins speak at most 1.0.0 and refuse
 * a 1.1.0 configuration, so the configuration they get carries the highest
 * version both sides know (asked with VERSION), never above the runtime's;
 * their result is converted back by result.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tools/cni/cni.h"

#define OUT_MAX		(1u << 20)

int ipam_path(struct cni_run *r, char *path, size_t len)
{
	const char *p = r->env.path, *end;

	while (p && *p) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		if (end > p && (size_t)snprintf(path, len, "%.*s/%s", (int)(end - p),
						p, r->conf.ipam_type) < len &&
		    access(path, X_OK) == 0)
			return 0;
		p = *end ? end + 1 : end;
	}
	return cni_fail(r, CNI_ERR_CONFIG, "failed to find plugin",
			"IPAM plugin \"%s\" not found in CNI_PATH %s",
			r->conf.ipam_type, r->env.path);
}

/*
 * The plugin's environment: ours, with CNI_COMMAND (and for GC's DELs
 * CNI_CONTAINERID and CNI_IFNAME) replaced.  At most 3 more entries.
 */
static char **child_env(char *cmd, char *cid, char *ifname)
{
	char *const set[] = { cmd, cid, ifname };
	size_t n = 0, k = 0, i;
	char **envp;

	while (environ[n])
		n++;
	envp = malloc((n + ARRAY_SIZE(set) + 1) * sizeof(*envp));
	if (!envp)
		return NULL;
	for (i = 0; i < n; i++) {
		bool over = false;
		size_t j;

		for (j = 0; j < ARRAY_SIZE(set) && !over; j++)
			over = set[j] && !strncmp(environ[i], set[j],
						  strcspn(set[j], "=") + 1);
		if (!over)
			envp[k++] = environ[i];
	}
	for (i = 0; i < ARRAY_SIZE(set); i++)
		if (set[i])
			envp[k++] = set[i];
	envp[k] = NULL;
	return envp;
}

/*
 * fork, not posix_spawn: glibc's posix_spawn is a vfork, which stops this
 * process until the plugin's exec is done (a Go binary: 1 ms, 5 on a busy
 * host), and ADD has its own work to do meanwhile (add.c).  Measured on
 * one ADD: 10.0 against 12.0 ms, medians of 61, load 5 (cni.rst).  The
 * child calls only async-signal-safe functions; SIGPIPE back to its
 * default (spawn() ignores it here).
 */
static int run(const char *path, int in, int out, const char *command,
	       const char *cid, const char *ifname, pid_t *pid)
{
	/* GC's DELs name the lease by the whole container id: a cut one
	 * would release nothing. */
	char e_cmd[64], e_cid[sizeof("CNI_CONTAINERID=") + CNI_ID_MAX], e_if[64];
	char *argv[] = { (char *)path, NULL };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	char **envp;
	pid_t p;

	snprintf(e_cmd, sizeof(e_cmd), "CNI_COMMAND=%s", command);
	snprintf(e_cid, sizeof(e_cid), "CNI_CONTAINERID=%s", cid ? cid : "");
	snprintf(e_if, sizeof(e_if), "CNI_IFNAME=%s", ifname ? ifname : "");
	envp = child_env(e_cmd, cid ? e_cid : NULL, ifname ? e_if : NULL);
	if (!envp)
		return ENOMEM;
	fflush(stdout);
	p = fork();
	if (p == 0) {
		sigaction(SIGPIPE, &dfl, NULL);
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0)
			_exit(127);
		execve(path, argv, envp);
		_exit(127);
	}
	free(envp);
	if (p < 0)
		return errno;
	*pid = p;
	return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One more chunk of the plugin's stdout into c->buf (kept NUL-terminated):
 * > 0 read, 0 at its end, < 0 failed or too long. */
static ssize_t read_more(struct ipam_call *c)
{
	size_t cap = c->cap ? c->cap : 4096;
	ssize_t n;
	char *nb;

	if (c->len == c->cap) {
		if (c->cap)
			cap *= 2;
		nb = cap > OUT_MAX ? NULL : realloc(c->buf, cap + 1);
		if (!nb)
			return -1;
		c->buf = nb;
		c->cap = cap;
	}
	do
		n = read(c->out, c->buf + c->len, c->cap - c->len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		c->len += (size_t)n;
	c->buf[c->len] = 0;
	return n;
}

/* Start path with stdin text: c->pid runs, its stdout is c->out. */
static int spawn(struct cni_run *r, const char *command, const char *cid,
		 const char *ifname, const char *text, struct ipam_call *c)
{
	int ip[2], op[2], err;
	pid_t pid;

	if (pipe2(ip, O_CLOEXEC) < 0)
		return cni_fail(r, CNI_ERR_IO, "cannot run the IPAM plugin",
				"pipe: %s", strerror(errno));
	if (pipe2(op, O_CLOEXEC) < 0) {
		close(ip[0]);
		close(ip[1]);
		return cni_fail(r, CNI_ERR_IO, "cannot run the IPAM plugin",
				"pipe: %s", strerror(errno));
	}
	err = run(c->path, ip[0], op[1], command, cid, ifname, &pid);
	close(ip[0]);
	close(op[1]);
	if (err) {
		close(ip[1]);
		close(op[0]);
		return cni_fail(r, CNI_ERR_IO, "cannot run the IPAM plugin",
				"%s: %s", c->path, strerror(err));
	}
	/* A plugin that exits without reading stdin must not kill us.  The
	 * configuration is far below a pipe's capacity: written at once. */
	signal(SIGPIPE, SIG_IGN);
	write_all(ip[1], text, strlen(text));
	close(ip[1]);
	c->pid = pid;
	c->out = op[0];
	return 0;
}

/* The rest of its stdout and its exit status; *out is c->buf, taken. */
static int collect(struct cni_run *r, struct ipam_call *c, char **out,
		   int *status)
{
	ssize_t n;

	while ((n = read_more(c)) > 0)
		;
	close(c->out);
	c->out = -1;
	while (waitpid(c->pid, status, 0) < 0 && errno == EINTR)
		;
	c->pid = -1;
	if (n < 0) {
		free(c->buf);
		c->buf = NULL;
		return cni_fail(r, CNI_ERR_IO, "cannot run the IPAM plugin",
				"reading %s's output failed", c->path);
	}
	*out = c->buf;
	c->buf = NULL;
	return 0;
}

/* Its error object, passed on with its code, or ours when it sent none. */
static int ipam_error(struct cni_run *r, const char *path, json_t *res,
		      int status)
{
	json_t *code = json_object_get(res, "code");
	const char *msg = json_string_value(json_object_get(res, "msg"));
	const char *det = json_string_value(json_object_get(res, "details"));

	/* A code that is no error code (0, negative, past an int) would
	 * print an error object a runtime reads as something else: ours,
	 * its message kept. */
	if (json_is_integer(code) && msg && json_integer_value(code) > 0 &&
	    json_integer_value(code) <= INT_MAX)
		return cni_fail(r, (int)json_integer_value(code), msg,
				"IPAM plugin %s: %s", path, det ? det : msg);
	if (msg)
		return cni_fail(r, CNI_ERR_IPAM, "IPAM plugin failed",
				"%s: %s (its error code is not valid)", path, msg);
	if (WIFSIGNALED(status))
		return cni_fail(r, CNI_ERR_IPAM, "IPAM plugin failed",
				"%s was killed by signal %d (%s)", path,
				WTERMSIG(status), strsignal(WTERMSIG(status)));
	return cni_fail(r, CNI_ERR_IPAM, "IPAM plugin failed",
			"%s exited with status %d%s and no error object", path,
			WIFEXITED(status) ? WEXITSTATUS(status) : -1,
			WIFEXITED(status) && WEXITSTATUS(status) == 127 ?
			" (as an exec that failed does)" : "");
}

/* The highest version the plugin and we know, at most the config's. */
static int negotiate(struct cni_run *r, const char *path, const char **ver)
{
	char *out = NULL, in[64];
	json_t *root, *list, *v;
	const char *best = NULL;
	struct ipam_call c = { .pid = -1, .out = -1 };
	int status = 0;
	size_t i;

	snprintf(c.path, sizeof(c.path), "%s", path);
	snprintf(in, sizeof(in), "{\"cniVersion\": \"%s\"}", r->conf.version);
	if (spawn(r, "VERSION", NULL, NULL, in, &c) || collect(r, &c, &out, &status))
		return -1;
	root = json_loads(out, 0, NULL);
	free(out);
	/* A plugin that failed (its error, or one that could not be
	 * executed) is no version mismatch. */
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		ipam_error(r, path, root, status);
		json_decref(root);
		return -1;
	}
	list = json_object_get(root, "supportedVersions");
	json_array_foreach(list, i, v) {
		const char *s = json_string_value(v);

		if (s && conf_version_ok(s) && conf_version_cmp(s, r->conf.version) <= 0 &&
		    (!best || conf_version_cmp(s, best) > 0))
			best = s;
	}
	/* best points into root: keep the static copy instead. */
	for (i = 0; best && i < cni_nversions; i++)
		if (!strcmp(best, cni_versions[i]))
			*ver = cni_versions[i];
	json_decref(root);
	if (!best)
		return cni_fail(r, CNI_ERR_VERSION, "incompatible CNI versions",
				"IPAM plugin %s supports no version in 0.3.0..%s",
				path, r->conf.version);
	return 0;
}

/*
 * The negotiated version is kept in dataDir, keyed by the plugin file's
 * identity (device, inode, size, mtime): asking costs one more exec of a
 * Go binary per call, as much as the IPAM call itself.  One file per
 * plugin and config version, read and written under the dataDir lock; a
 * replaced binary has another key.
 */
static void cache_key(const char *path, char *key, size_t len)
{
	struct stat st;

	if (stat(path, &st)) {
		key[0] = 0;
		return;
	}
	snprintf(key, len, "%llu:%llu:%lld:%lld.%09ld",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
}

/*
 * Written aside and renamed into place: STATUS reads the file without the
 * dataDir lock, and a call killed half-way must not leave half a line.  The
 * aside file's name is the call's own (mkostemp()), so that two STATUS
 * calls writing at once cannot mix their lines in it.  A failed write is
 * only a lost hint.
 */
static void cache_write(const char *file, const char *key, const char *ver)
{
	char tmp[PATH_MAX + 8];
	FILE *f;
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", file) >= sizeof(tmp))
		return;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	fprintf(f, "%s %s\n", key, ver);
	if (fclose(f) || rename(tmp, file))
		unlink(tmp);
}

static int cached_version(struct cni_run *r, const char *path, const char **ver)
{
	char file[PATH_MAX], name[NAME_MAX + 1], key[128], line[256], *sp;
	unsigned int i;
	FILE *f;
	int ret = -1;

	/* A name too long for a path is no cache: negotiate each call. */
	snprintf(name, sizeof(name), "ipam-%s-%s.version", r->conf.ipam_type,
		 r->conf.version);
	if (state_file(r, name, file, sizeof(file)))
		file[0] = 0;
	cache_key(path, key, sizeof(key));
	if (!file[0])
		key[0] = 0;
	f = key[0] ? fopen(file, "re") : NULL;
	if (f && fgets(line, sizeof(line), f) && (sp = strchr(line, ' ')) &&
	    (size_t)(sp - line) == strlen(key) && !strncmp(line, key, strlen(key))) {
		sp[strcspn(sp, "\n")] = 0;
		for (i = 0; i < cni_nversions; i++)
			if (!strcmp(sp + 1, cni_versions[i]) &&
			    conf_version_cmp(cni_versions[i], r->conf.version) <= 0) {
				*ver = cni_versions[i];
				ret = 0;
			}
	}
	if (f)
		fclose(f);
	if (!ret || negotiate(r, path, ver))
		return ret ? -1 : 0;
	if (key[0])
		cache_write(file, key, *ver);
	return 0;
}

int ipam_start(struct cni_run *r, const char *command, const char *cid,
	       const char *ifname, struct ipam_call *c)
{
	json_t *conf;
	char *text;
	int ret;

	*c = (struct ipam_call){ .pid = -1, .out = -1 };
	if (ipam_path(r, c->path, sizeof(c->path)))
		return -1;
	/* GC releases many leases with one plugin: ask its versions once. */
	if (!r->ipam_ver && cached_version(r, c->path, &r->ipam_ver))
		return -1;
	conf = json_deep_copy(r->conf.root);
	json_object_set_new(conf, "cniVersion", json_string(r->ipam_ver));
	/* Only GC's IPAM call carries the valid list (ipam_gc()). */
	if (strcmp(command, "GC"))
		json_object_del(conf, "cni.dev/valid-attachments");
	text = json_dumps(conf, JSON_COMPACT);
	json_decref(conf);
	ret = text ? spawn(r, command, cid, ifname, text, c) :
		     cni_fail(r, CNI_ERR_IO, "out of memory", "IPAM config");
	free(text);
	return ret;
}

int ipam_finish(struct cni_run *r, struct ipam_call *c, json_t **result)
{
	char *out = NULL;
	int status = 0, ret;
	json_t *res;

	if (c->pid < 0)
		return -1;
	if (collect(r, c, &out, &status))
		return -1;
	res = out[strspn(out, " \t\r\n")] ? json_loads(out, 0, NULL) : NULL;
	free(out);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		ret = ipam_error(r, c->path, res, status);
		json_decref(res);
		return ret;
	}
	if (result && !json_is_object(res)) {
		json_decref(res);
		return cni_fail(r, CNI_ERR_DECODE, "failed to decode the IPAM result",
				"%s printed no JSON object", c->path);
	}
	if (result)
		*result = res;
	else
		json_decref(res);
	return 0;
}

/*
 * ADD's answer as soon as it is whole (jansson reads one value and stops
 * there, JSON_DISABLE_EOF_CHECK): the plugin's exit, a Go runtime's
 * teardown, then runs beside ADD's filter and addresses, and ipam_reap()
 * checks its exit status before ADD answers.  An error object (it has
 * "code") or output that ends before a whole object waits for the exit,
 * as ipam_finish() does.
 */
int ipam_answer(struct cni_run *r, struct ipam_call *c, json_t **result)
{
	json_error_t je;
	json_t *res;
	ssize_t n;

	if (c->pid < 0)
		return -1;
	while ((n = read_more(c)) > 0) {
		/* An object ends with a brace: a plugin writing a byte at a
		 * time is not parsed again for each. */
		if (!memchr(c->buf + c->len - (size_t)n, '}', (size_t)n))
			continue;
		res = json_loadb(c->buf, c->len, JSON_DISABLE_EOF_CHECK, &je);
		if (json_is_object(res) && !json_object_get(res, "code")) {
			c->used = (size_t)je.position;
			*result = res;
			return 0;
		}
		json_decref(res);
	}
	return ipam_finish(r, c, result);
}

/*
 * After ipam_answer(): the rest of the plugin's output, read to its end
 * (a plugin that writes after its result must not die of SIGPIPE), which
 * may only be white space or, from a plugin that fails, its error object;
 * then its exit, which must be a success.
 */
int ipam_reap(struct cni_run *r, struct ipam_call *c)
{
	const char *rest;
	json_t *err = NULL;
	int status = 0, ret = 0;
	ssize_t n;

	if (c->pid < 0)
		return 0;
	while ((n = read_more(c)) > 0)
		;
	rest = c->buf ? c->buf + c->used : "";
	rest += strspn(rest, " \t\r\n");
	if (*rest)
		err = json_loads(rest, 0, NULL);
	close(c->out);
	c->out = -1;
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	c->pid = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		ret = ipam_error(r, c->path, err, status);
	else if (n < 0 || *rest)
		ret = cni_fail(r, CNI_ERR_DECODE, "failed to decode the IPAM result",
			       "%s printed %s after its result", c->path,
			       n < 0 ? "too much" : "more than white space");
	json_decref(err);
	free(c->buf);
	c->buf = NULL;
	return ret;
}

static int exec_as(struct cni_run *r, const char *command, const char *cid,
		   const char *ifname, json_t **result)
{
	struct ipam_call c;

	if (ipam_start(r, command, cid, ifname, &c))
		return -1;
	return ipam_finish(r, &c, result);
}

int ipam_exec(struct cni_run *r, const char *command, json_t **result)
{
	return exec_as(r, command, NULL, NULL, result);
}

int ipam_del_for(struct cni_run *r, const char *cid, const char *ifname)
{
	return exec_as(r, "DEL", cid, ifname, NULL);
}

int ipam_knows_gc(struct cni_run *r)
{
	char path[PATH_MAX];

	if (ipam_path(r, path, sizeof(path)) ||
	    (!r->ipam_ver && cached_version(r, path, &r->ipam_ver)))
		return -1;
	/* GC came with 1.1.0 and stays in every later version. */
	return conf_version_cmp(r->ipam_ver, "1.1.0") >= 0;
}
