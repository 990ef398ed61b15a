// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What every run records of the machine: the kernel, the CPUs, the load,
 * and the version of every anchor tool the bench compares libvnic with.
 * A figure is only worth what its context is: the same ruleset loads at a
 * different speed under another nft, and the floor moves with the kernel.
 */
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <vnic/vnic.h>

#include "bench.h"

#ifndef VNIC_VERSION
#define VNIC_VERSION "unknown"
#endif

/*
 * The directories the bench finds its tools in (as bench_find_tool() below):
 * a fixed list, not root's $PATH.  CNI plugins answer CNI_COMMAND=VERSION
 * on stdout with the spec versions they speak; they have no other.
 */
#define TOOL_PATH "PATH=/usr/sbin:/sbin:/usr/bin:/bin:/usr/local/sbin; "

static const struct {
	const char *name;
	const char *cmd;	/* a shell command whose first line says it */
} tools[] = {
	{ "ip", "ip -V" },
	{ "nft", "nft --version" },
	{ "iptables", "iptables --version" },
	{ "ebtables", "ebtables --version" },
	{ "cni-macvlan",
	  "test -x /usr/lib/cni/macvlan && CNI_COMMAND=VERSION /usr/lib/cni/macvlan" },
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

/* {"cniVersion":"1.0.0",...} says "CNI spec 1.0.0": the line is JSON. */
static void cni_short(char *buf, size_t len)
{
	const char *key = "\"cniVersion\":\"", *p = strstr(buf, key);
	char v[32];

	if (buf[0] != '{' || !p)
		return;
	p += strlen(key);
	snprintf(v, sizeof(v), "%.*s", (int)strcspn(p, "\""), p);
	snprintf(buf, len, "CNI spec %s", v);
}

/* The first line cmd prints (stdout or stderr), or "missing". */
static void tool_version(const char *cmd, char *buf, size_t len)
{
	char line[512];
	size_t n;
	FILE *p;

	snprintf(line, sizeof(line), "%s%s </dev/null 2>&1", TOOL_PATH, cmd);
	snprintf(buf, len, "missing");
	/* A tool's buffered output must not be written twice. */
	fflush(NULL);
	p = popen(line, "r");
	if (!p)
		return;
	if (fgets(line, sizeof(line), p)) {
		n = strcspn(line, "\r\n");
		if (n >= len)
			n = len - 1;
		if (n) {
			memcpy(buf, line, n);
			buf[n] = 0;
		}
	}
	/* A tool that is not there exits 127 and says so: not a version. */
	if (pclose(p) != 0)
		snprintf(buf, len, "missing");
	cni_short(buf, len);
}

static void probe(struct host_info *h)
{
	FILE *f = fopen("/proc/loadavg", "re");
	struct utsname u;
	unsigned int i;

	snprintf(h->kernel, sizeof(h->kernel), "%s",
		 uname(&u) == 0 ? u.release : "?");
	h->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* Other work on a two-core machine is the first suspect of a noisy
	 * run. */
	if (!f || fscanf(f, "%lf", &h->load1) != 1)
		h->load1 = NAN;
	if (f)
		fclose(f);
	h->tools[0].name = "libvnic";
	snprintf(h->tools[0].version, sizeof(h->tools[0].version), "%s",
		 VNIC_VERSION);
	for (i = 0; i < NTOOLS && i + 1 < HOST_MAX_TOOLS; i++) {
		h->tools[i + 1].name = tools[i].name;
		tool_version(tools[i].cmd, h->tools[i + 1].version,
			     sizeof(h->tools[i + 1].version));
	}
	h->ntools = i + 1;
}

const struct host_info *host_info(void)
{
	static struct host_info h;
	static bool done;

	if (!done) {
		probe(&h);
		done = true;
	}
	return &h;
}

void host_print_versions(FILE *f)
{
	const struct host_info *h = host_info();
	unsigned int i;

	fputs("versions:", f);
	for (i = 0; i < h->ntools; i++)
		fprintf(f, "%s %s: %s", i ? ";" : "", h->tools[i].name,
			h->tools[i].version);
	fputc('\n', f);
}

void host_json(struct json *j)
{
	const struct host_info *h = host_info();
	struct json v;
	unsigned int i;

	json_str(j, "kernel", h->kernel);
	json_uint(j, "cpus", (unsigned long long)h->cpus);
	json_num(j, "load1", h->load1);
	json_sub(j, "versions", '{', &v);
	for (i = 0; i < h->ntools; i++)
		json_str(&v, h->tools[i].name, h->tools[i].version);
}

/* A fixed list rather than $PATH: root's PATH under sudo varies, and the
 * figure should not depend on which copy is found. */
bool bench_find_tool(const char *name, char *out, size_t len)
{
	static const char *const dirs[] = { "/usr/sbin", "/sbin", "/usr/bin",
					    "/bin", "/usr/local/sbin" };
	unsigned int i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, len, "%s/%s", dirs[i], name);
		if (access(out, X_OK) == 0)
			return true;
	}
	out[0] = 0;
	return false;
}

/* "what: the error: the library's message" into err; returns ret. */
int bench_lib_fail(struct vnic_ctx *ctx, const char *what, int ret, char *err,
		   size_t errlen)
{
	const char *msg = ctx ? vnic_ctx_errmsg(ctx) : "";

	snprintf(err, errlen, "%s: %s%s%s", what, vnic_strerror(ret),
		 msg && *msg ? ": " : "", msg ? msg : "");
	return ret;
}

int bench_guest_make(struct vnic_ctx *ctx, const char *name,
		     unsigned int first, unsigned int n, bench_nic_fn nic_of,
		     const void *arg, struct vnic_guest **out, char *err,
		     size_t errlen)
{
	char nic_name[16], aux[24];
	struct vnic_nic_opts nic;
	struct vnic_guest *g;
	unsigned int i;
	int ret;

	ret = vnic_guest_new(ctx, name, &g);
	if (ret)
		return bench_lib_fail(ctx, "vnic_guest_new", ret, err, errlen);
	for (i = first; i < first + n && !ret; i++) {
		nic_of(arg, i, nic_name, aux, &nic);
		ret = vnic_guest_add_nic(g, &nic, NULL);
		if (ret)
			bench_lib_fail(ctx, "vnic_guest_add_nic", ret, err, errlen);
	}
	if (!ret && (ret = vnic_guest_create(g)))
		bench_lib_fail(ctx, "vnic_guest_create", ret, err, errlen);
	if (ret) {
		vnic_guest_free(g);
		return ret;
	}
	*out = g;
	return 0;
}
