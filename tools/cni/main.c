// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnic-cni: a CNI 1.1 plugin on libvnic.  The runtime executes it once per
 * call: the verb and the attachment in CNI_* variables, the network
 * configuration on stdin, the result (or an error object) on stdout; exit
 * 0 or 1.  stderr carries nothing a runtime parses.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/cni/cni.h"

#define STDIN_MAX	(1u << 20)

int cni_fail(struct cni_run *r, int code, const char *msg, const char *fmt, ...)
{
	va_list ap;

	/* The first failure is the one worth reporting: later ones are
	 * usually its consequences (cleanup that could not finish). */
	if (r->err.code)
		return -1;
	r->err.code = code;
	snprintf(r->err.msg, sizeof(r->err.msg), "%s", msg);
	va_start(ap, fmt);
	vsnprintf(r->err.details, sizeof(r->err.details), fmt, ap);
	va_end(ap);
	return -1;
}

int cni_fail_vnic(struct cni_run *r, int code, const char *msg,
		  struct vnic_ctx *ctx, int err)
{
	const char *m = ctx ? vnic_ctx_errmsg(ctx) : "";

	return cni_fail(r, code, msg, "%s", m[0] ? m : vnic_strerror(err));
}

/* VNIC_CNI_TIMING=1: each step's wall time on stderr, for measuring. */
void cni_lap(const char *step)
{
	static struct timespec last;
	struct timespec now;

	if (!getenv("VNIC_CNI_TIMING"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (last.tv_sec)
		fprintf(stderr, "vnic-cni: %-8s %9.3f ms\n", step,
			(double)(now.tv_sec - last.tv_sec) * 1e3 +
			(double)(now.tv_nsec - last.tv_nsec) / 1e6);
	last = now;
}

/* Whether standard input has another byte (read and dropped): 1, 0 at
 * its end, -1 on an error (errno set). */
static int stdin_more(void)
{
	ssize_t got;
	char c;

	do
		got = read(0, &c, 1);
	while (got < 0 && errno == EINTR);
	return got < 0 ? -1 : got > 0;
}

static char *read_stdin(void)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	ssize_t got;

	while (buf) {
		/* Full at the limit: a configuration of exactly STDIN_MAX bytes
		 * is allowed, so only a byte more is too much. */
		if (len == cap && cap >= STDIN_MAX) {
			int more = stdin_more();

			if (!more)
				break;
			free(buf);
			if (more > 0)
				errno = EFBIG;
			return NULL;
		}
		if (len == cap) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		got = read(0, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			return NULL;
		}
		if (!got)
			break;
		len += (size_t)got;
	}
	if (buf)
		buf[len] = 0;
	return buf;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

/* What each verb needs from the environment (the spec's table). */
static int check_env(struct cni_run *r)
{
	const char *c = r->env.command;
	bool attach = !strcmp(c, "ADD") || !strcmp(c, "DEL") || !strcmp(c, "CHECK");

	if (attach && !r->env.container_id)
		return cni_fail(r, CNI_ERR_ENV, "CNI_CONTAINERID is required",
				"%s needs CNI_CONTAINERID", c);
	if (attach && !cni_valid_id(r->env.container_id))
		return cni_fail(r, CNI_ERR_ENV, "invalid CNI_CONTAINERID",
				"a container id starts with an alphanumeric "
				"character and holds only [A-Za-z0-9_.-]");
	if (attach && !r->env.ifname)
		return cni_fail(r, CNI_ERR_ENV, "CNI_IFNAME is required",
				"%s needs CNI_IFNAME", c);
	if (attach && !cni_valid_ifname(r->env.ifname))
		return cni_fail(r, CNI_ERR_ENV, "invalid CNI_IFNAME",
				"\"%s\": 1..15 bytes, no '/', ':', '%%' or "
				"whitespace, not \".\" or \"..\"", r->env.ifname);
	if ((!strcmp(c, "ADD") || !strcmp(c, "CHECK")) && !r->env.netns)
		return cni_fail(r, CNI_ERR_ENV, "CNI_NETNS is required",
				"%s needs CNI_NETNS", c);
	/* Only to find the IPAM plugin: the spec makes it optional for most
	 * verbs (STATUS among them), and without IPAM nothing is searched. */
	if (!r->env.path && r->conf.ipam)
		return cni_fail(r, CNI_ERR_ENV, "CNI_PATH is required",
				"%s needs CNI_PATH to find the IPAM plugin", c);
	if (attach && cni_guest_name(r->env.container_id, r->env.ifname, r->guest))
		return cni_fail(r, CNI_ERR_ENV, "invalid attachment",
				"cannot name container %s interface %s",
				r->env.container_id, r->env.ifname);
	return 0;
}

static int version(struct cni_run *r, const char *in)
{
	json_t *root = json_loads(in, 0, NULL), *list = json_array();
	json_t *v = root ? json_object_get(root, "cniVersion") : NULL;
	unsigned int i;

	for (i = 0; i < cni_nversions; i++)
		json_array_append_new(list, json_string(cni_versions[i]));
	r->result = json_pack("{s:s, s:o}", "cniVersion",
			      json_is_string(v) ? json_string_value(v) : "1.1.0",
			      "supportedVersions", list);
	json_decref(root);
	return 0;
}

/* since: the first spec version with the verb; a configuration of an older
 * version cannot ask for it (the spec, and libcni's skel, refuse it with
 * code 1): a GC sent with a 1.0.0 list carries no valid list to keep. */
static const struct {
	const char *name;
	int (*fn)(struct cni_run *r);
	const char *since;
} verbs[] = {
	{ "ADD", cni_add, "0.3.0" },
	{ "DEL", cni_del, "0.3.0" },
	{ "CHECK", cni_check, "0.4.0" },
	{ "GC", cni_gc, "1.1.0" },
	{ "STATUS", cni_status, "1.1.0" },
};

static int dispatch(struct cni_run *r, const char *in)
{
	unsigned int i;

	if (!r->env.command)
		return cni_fail(r, CNI_ERR_ENV, "CNI_COMMAND is required",
				"one of ADD, DEL, CHECK, GC, STATUS, VERSION");
	if (!strcmp(r->env.command, "VERSION"))
		return version(r, in);
	for (i = 0; i < ARRAY_SIZE(verbs); i++)
		if (!strcmp(r->env.command, verbs[i].name))
			break;
	if (i == ARRAY_SIZE(verbs))
		return cni_fail(r, CNI_ERR_ENV, "unknown CNI_COMMAND",
				"\"%s\": one of ADD, DEL, CHECK, GC, STATUS, "
				"VERSION", r->env.command);
	if (conf_parse(r, in))
		return -1;
	if (conf_version_cmp(r->conf.version, verbs[i].since) < 0)
		return cni_fail(r, CNI_ERR_VERSION, "incompatible CNI versions",
				"config version %s does not allow %s (since %s)",
				r->conf.version, verbs[i].name, verbs[i].since);
	if (check_env(r))
		return -1;
	return verbs[i].fn(r);
}

static void print_error(struct cni_run *r)
{
	const char *v = r->conf.version ? r->conf.version : "1.1.0";
	json_t *e = json_pack("{s:s, s:i, s:s}", "cniVersion", v,
			      "code", r->err.code, "msg", r->err.msg);

	if (r->err.details[0])
		json_object_set_new(e, "details", json_string(r->err.details));
	json_dumpf(e, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(e);
}

int main(int argc, char **argv)
{
	struct cni_run r = { .lock_fd = -1 };
	char *in;
	int ret;

	if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("vnic-cni %s (CNI 0.3.0 to 1.1.0)\n", VNIC_VERSION);
		return 0;
	}
	r.env.command = env("CNI_COMMAND");
	r.env.container_id = env("CNI_CONTAINERID");
	r.env.netns = env("CNI_NETNS");
	r.env.ifname = env("CNI_IFNAME");
	r.env.args = env("CNI_ARGS");
	r.env.path = env("CNI_PATH");
	in = read_stdin();
	if (!in)
		ret = cni_fail(&r, CNI_ERR_IO, "cannot read the configuration",
			       "stdin: %s (at most %u bytes)", strerror(errno),
			       STDIN_MAX);
	else
		ret = dispatch(&r, in);
	if (ret) {
		print_error(&r);
	} else if (r.result) {
		json_dumpf(r.result, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	}
	json_decref(r.result);
	json_decref(r.conf.root);
	free(in);
	if (r.lock_fd >= 0)
		close(r.lock_fd);
	return fflush(stdout) || ret ? 1 : 0;
}
