// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Helpers for the allocator selftests: namespaces, the ip(8) oracle, fd
 * counting.  See util.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "util.h"

static int vrun(char *err, size_t len, const char *fmt, va_list ap)
{
	char *cmd, *full;
	FILE *f;
	int st;

	if (vasprintf(&cmd, fmt, ap) < 0)
		return -ENOMEM;
	/* stdout belongs to the TAP stream: never let a tool write there. */
	if (asprintf(&full, err ? "{ %s ; } 2>&1 >/dev/null" :
		     "{ %s ; } >/dev/null", cmd) < 0) {
		free(cmd);
		return -ENOMEM;
	}
	free(cmd);
	f = popen(full, "r");
	free(full);
	if (!f)
		return -errno;
	if (err && len) {
		err[0] = '\0';
		if (fgets(err, len, f))
			err[strcspn(err, "\n")] = '\0';
	}
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	if (st < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int st_run_cmd(const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vrun(NULL, 0, fmt, ap);
	va_end(ap);
	return ret;
}

int st_run_cmd_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vrun(err, len, fmt, ap);
	va_end(ap);
	return ret;
}

int st_netns_new(void)
{
	if (unshare(CLONE_NEWNET))
		return -errno;
	return st_run_cmd("ip link set lo up") ? -EIO : 0;
}

int st_lower_add(const char *lower, const char *peer)
{
	int ret;

	ret = st_run_cmd("ip link add %s type veth peer name %s && "
		      "ip link set %s up && ip link set %s up",
		      lower, peer, lower, peer);
	return ret ? -EIO : 0;
}

int st_test_netns_setup(void)
{
	int ret = st_netns_new();

	return ret ? ret : st_lower_add(LOWER, LOWER_PEER);
}

void st_macvtaps_flush(void)
{
	json_t *links = st_ip_links(-1), *l;
	size_t i;

	if (!links)
		return;
	json_array_foreach(links, i, l) {
		const char *kind, *name;

		kind = json_string_value(json_object_get(
			json_object_get(l, "linkinfo"), "info_kind"));
		name = json_string_value(json_object_get(l, "ifname"));
		if (kind && name && !strcmp(kind, "macvtap"))
			st_run_cmd("ip link del dev %s", name);
	}
	json_decref(links);
}

/* Child side of st_ip_links(): enter the namespace, exec ip. */
static void ip_links_child(int nsfd, int out)
{
	if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET))
		_exit(126);
	if (dup2(out, STDOUT_FILENO) < 0)
		_exit(126);
	execlp("ip", "ip", "-j", "-d", "link", "show", (char *)NULL);
	_exit(127);
}

json_t *st_ip_links(int nsfd)
{
	json_error_t jerr;
	json_t *links;
	int p[2], st;
	pid_t pid;
	FILE *f;

	if (pipe2(p, O_CLOEXEC))
		return NULL;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return NULL;
	}
	if (pid == 0)
		ip_links_child(nsfd, p[1]);
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f) {
		close(p[0]);
		waitpid(pid, &st, 0);
		return NULL;
	}
	links = json_loadf(f, 0, &jerr);
	fclose(f);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) || !json_is_array(links)) {
		json_decref(links);
		return NULL;
	}
	return links;
}

static void copy_str(char *dst, size_t len, json_t *v)
{
	const char *s = json_string_value(v);

	snprintf(dst, len, "%s", s ? s : "");
}

static bool has_flag(json_t *flags, const char *flag)
{
	json_t *v;
	size_t i;

	json_array_foreach(flags, i, v) {
		if (json_is_string(v) && !strcmp(json_string_value(v), flag))
			return true;
	}
	return false;
}

static void fill_link(json_t *l, struct ip_link *out)
{
	json_t *info = json_object_get(l, "linkinfo");
	json_t *data = json_object_get(info, "info_data");
	json_t *nsid = json_object_get(l, "link_netnsid");

	memset(out, 0, sizeof(*out));
	out->ifindex = json_integer_value(json_object_get(l, "ifindex"));
	copy_str(out->ifname, sizeof(out->ifname), json_object_get(l, "ifname"));
	copy_str(out->kind, sizeof(out->kind), json_object_get(info, "info_kind"));
	copy_str(out->mode, sizeof(out->mode), json_object_get(data, "mode"));
	copy_str(out->tun_type, sizeof(out->tun_type), json_object_get(data, "type"));
	copy_str(out->address, sizeof(out->address), json_object_get(l, "address"));
	copy_str(out->alias, sizeof(out->alias), json_object_get(l, "ifalias"));
	copy_str(out->link, sizeof(out->link), json_object_get(l, "link"));
	out->link_netnsid = nsid ? (int)json_integer_value(nsid) : -1;
	out->mtu = json_integer_value(json_object_get(l, "mtu"));
	out->up = has_flag(json_object_get(l, "flags"), "UP");
	out->multi_queue = json_is_true(json_object_get(data, "multi_queue"));
	out->vnet_hdr = json_is_true(json_object_get(data, "vnet_hdr"));
	out->persist = json_is_true(json_object_get(data, "persist"));
}

int st_ip_link_find(json_t *links, const char *name, struct ip_link *out)
{
	json_t *l;
	size_t i;

	json_array_foreach(links, i, l) {
		const char *n = json_string_value(json_object_get(l, "ifname"));

		if (n && !strcmp(n, name)) {
			fill_link(l, out);
			return 0;
		}
	}
	return -ENOENT;
}

int st_ip_link_get(const char *name, struct ip_link *out)
{
	json_t *links = st_ip_links(-1);
	int ret;

	if (!links)
		return -EIO;
	ret = st_ip_link_find(links, name, out);
	json_decref(links);
	return ret;
}

int st_ip_links_count(json_t *links, const char *alias_prefix)
{
	json_t *l;
	size_t i;
	int n = 0;

	json_array_foreach(links, i, l) {
		const char *a = json_string_value(json_object_get(l, "ifalias"));

		if (!alias_prefix ||
		    (a && !strncmp(a, alias_prefix, strlen(alias_prefix))))
			n++;
	}
	return n;
}

int st_vnic_links_count(void)
{
	json_t *links = st_ip_links(-1);
	int n;

	if (!links)
		return -EIO;
	n = st_ip_links_count(links, "vnic:");
	json_decref(links);
	return n;
}

int st_prefixed_links_count(const char *prefix)
{
	json_t *links = st_ip_links(-1), *l;
	unsigned int suffix;
	size_t i;
	int n = 0;

	if (!links)
		return -EIO;
	json_array_foreach(links, i, l) {
		const char *name = json_string_value(json_object_get(l, "ifname"));

		if (name && st_name_suffix(name, prefix, &suffix))
			n++;
	}
	json_decref(links);
	return n;
}

char *st_ip_link_snapshot(void)
{
	return st_ip_link_snapshot_ns(-1);
}

char *st_ip_link_snapshot_ns(int nsfd)
{
	json_t *links = st_ip_links(nsfd), *l;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;

	if (!links)
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f) {
		json_decref(links);
		return NULL;
	}
	/* ip lists devices by ifindex, so the order is stable. */
	json_array_foreach(links, i, l) {
		fprintf(f, "%s%lld:%s", i ? " " : "",
			json_integer_value(json_object_get(l, "ifindex")),
			json_string_value(json_object_get(l, "ifname")));
	}
	fclose(f);
	json_decref(links);
	return buf;
}

const char *st_missing_feature(uint64_t mask)
{
	struct vnic_ctx *ctx;
	uint64_t have, bit;

	if (vnic_ctx_new(NULL, &ctx))
		return "a libvnic context";
	have = vnic_ctx_features(ctx);
	vnic_ctx_free(ctx);
	for (bit = 1; bit && bit <= mask; bit <<= 1)
		if ((mask & bit) && !(have & bit))
			return vnic_feature_name(bit);
	return NULL;
}

int st_count_fds(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	/* The directory's own fd is not the caller's. */
	return n - 1;
}

/* Holder child: its own namespace, then wait to be killed. */
static void holder_child(int ready)
{
	char ok = 1;

	/* Dies with the test even if the test is killed. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNET))
		ok = 0;
	if (write(ready, &ok, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

int st_netns_holder_start(struct netns_holder *h)
{
	char path[64], ok = 0;
	int p[2], st;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	h->pid = fork();
	if (h->pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (h->pid == 0) {
		close(p[0]);
		holder_child(p[1]);
	}
	close(p[1]);
	if (read(p[0], &ok, 1) != 1 || !ok) {
		close(p[0]);
		kill(h->pid, SIGKILL);
		waitpid(h->pid, &st, 0);
		return -EIO;
	}
	close(p[0]);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", h->pid);
	h->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (h->fd < 0) {
		int err = -errno;

		kill(h->pid, SIGKILL);
		waitpid(h->pid, &st, 0);
		return err;
	}
	return 0;
}

void st_netns_holder_stop(struct netns_holder *h)
{
	int st;

	if (h->fd >= 0)
		close(h->fd);
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, &st, 0);
	}
	h->fd = -1;
	h->pid = 0;
}

int st_mac_parse(const char *s, unsigned char mac[6])
{
	unsigned int b[6];
	char end;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2],
		   &b[3], &b[4], &b[5], &end) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = b[i];
	return 0;
}

void st_mac_format(const unsigned char mac[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x",
		 mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

bool st_mac_is_local_unicast(const unsigned char mac[6])
{
	return (mac[0] & 0x02) && !(mac[0] & 0x01);
}

void st_vnic_alias(char *buf, size_t len, const char *owner, const char *guest,
		unsigned int idx)
{
	snprintf(buf, len, "vnic:%s:%s:%u", owner, guest, idx);
}

bool st_name_suffix(const char *name, const char *prefix, unsigned int *n)
{
	size_t plen = strlen(prefix);
	const char *p = name + plen;
	unsigned long v = 0;

	if (strncmp(name, prefix, plen) || !*p)
		return false;
	/* Canonical like the kernel's printf/sscanf round trip: "q01" and
	 * "q+1" are not suffix 1 of "q%d". */
	if (p[0] == '0' && p[1])
		return false;
	for (; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return false;
		v = v * 10 + (*p - '0');
	}
	*n = v;
	return true;
}

long long st_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static const char *kind_ip_name(enum vnic_kind kind)
{
	switch (kind) {
	case VNIC_KIND_MACVTAP:	return "macvtap";
	case VNIC_KIND_MACVLAN:	return "macvlan";
	case VNIC_KIND_VETH:	return "veth";
	case VNIC_KIND_TAP:
	case VNIC_KIND_TUN:	return "tun";	/* both are tun devices */
	default:		return "?";
	}
}

#define FAIL(...) do { snprintf(why, len, __VA_ARGS__); return -1; } while (0)

/* The MAC: the library's, ip's and the expected one must agree. */
static int mac_check(const struct vnic_nic_info *info, const struct ip_link *l,
		     const struct nic_expect *e, char *why, size_t len)
{
	unsigned char seen[6], want[6];
	char lib[18];

	st_mac_format(info->mac, lib);
	if (st_mac_parse(l->address, seen))
		FAIL("%s: ip shows no MAC ('%s')", l->ifname, l->address);
	if (memcmp(seen, info->mac, 6))
		FAIL("%s: vnic_nic_info MAC %s but ip shows %s", l->ifname,
		     lib, l->address);
	if (e->mac) {
		if (st_mac_parse(e->mac, want) || memcmp(want, seen, 6))
			FAIL("%s: MAC %s, expected %s", l->ifname, l->address,
			     e->mac);
	} else if (!st_mac_is_local_unicast(seen)) {
		FAIL("%s: random MAC %s is not locally administered unicast",
		     l->ifname, l->address);
	}
	return 0;
}

static int kind_check(const struct vnic_nic_info *info, const struct ip_link *l,
		      const struct nic_expect *e, char *why, size_t len)
{
	if (info->kind != e->kind)
		FAIL("%s: vnic_nic_info kind %d, expected %d", l->ifname,
		     info->kind, e->kind);
	if (strcmp(l->kind, kind_ip_name(e->kind)))
		FAIL("%s: ip info_kind '%s', expected '%s'", l->ifname, l->kind,
		     kind_ip_name(e->kind));
	if (e->kind == VNIC_KIND_TAP && strcmp(l->tun_type, "tap"))
		FAIL("%s: tun type '%s', expected 'tap'", l->ifname, l->tun_type);
	if (e->kind == VNIC_KIND_TUN && strcmp(l->tun_type, "tun"))
		FAIL("%s: tun type '%s', expected 'tun'", l->ifname, l->tun_type);
	if (e->mode && strcmp(l->mode, e->mode))
		FAIL("%s: mode '%s', expected '%s'", l->ifname, l->mode, e->mode);
	return 0;
}

static int link_check(const struct vnic_nic_info *info, const struct ip_link *l,
		      const struct nic_expect *e, char *why, size_t len)
{
	if (e->lower && strcmp(l->link, e->lower))
		FAIL("%s: lower '%s', expected '%s'", l->ifname, l->link,
		     e->lower);
	if (e->kind != VNIC_KIND_VETH || !e->peer)
		return 0;
	if (strcmp(info->peer_name, e->peer))
		FAIL("%s: vnic_nic_info peer '%s', expected '%s'", l->ifname,
		     info->peer_name, e->peer);
	/* ip names the peer only when it is in the same namespace. */
	if (l->link_netnsid < 0 && strcmp(l->link, e->peer))
		FAIL("%s: ip shows peer '%s', expected '%s'", l->ifname, l->link,
		     e->peer);
	return 0;
}

int st_nic_check(const struct vnic_nic_info *info, const struct ip_link *l,
	      const struct nic_expect *e, char *why, size_t len)
{
	why[0] = '\0';
	if (!info->created)
		FAIL("%s: vnic_nic_info says not created", info->name);
	if (strcmp(info->name, l->ifname))
		FAIL("vnic_nic_info name '%s' but ip shows '%s'", info->name,
		     l->ifname);
	if (e->name && strcmp(info->name, e->name))
		FAIL("name '%s', expected '%s'", info->name, e->name);
	if (info->ifindex != l->ifindex)
		FAIL("%s: vnic_nic_info ifindex %d but ip shows %d", l->ifname,
		     info->ifindex, l->ifindex);
	if (kind_check(info, l, e, why, len))
		return -1;
	/* An L3 tun has no MAC at all. */
	if (e->kind != VNIC_KIND_TUN && mac_check(info, l, e, why, len))
		return -1;
	if (e->mtu && l->mtu != e->mtu)
		FAIL("%s: MTU %u, expected %u", l->ifname, l->mtu, e->mtu);
	if (l->up != e->up)
		FAIL("%s: %s, expected %s", l->ifname, l->up ? "up" : "down",
		     e->up ? "up" : "down");
	if (e->alias && strcmp(l->alias, e->alias))
		FAIL("%s: alias '%s', expected '%s'", l->ifname, l->alias,
		     e->alias);
	return link_check(info, l, e, why, len);
}

int st_drop_sys_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[0].effective &= ~(1u << CAP_SYS_ADMIN);
	d[0].permitted &= ~(1u << CAP_SYS_ADMIN);
	d[0].inheritable &= ~(1u << CAP_SYS_ADMIN);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}
