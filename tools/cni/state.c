// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * State on disk, under dataDir: one lock that serializes every call of the
 * plugin sharing it (the nft table is claimed by one socket at a time, and
 * libvnic's orphan collection must not run beside a creator of the same
 * owner), and per network one file per attachment holding what GC needs
 * and cannot derive from a NIC: the full container id and interface name
 * (the IPAM plugin's lease key) and, for macvlan, the namespace the NIC
 * lives in; for veth, the host end's name and what its filter needs (MAC,
 * switches, addresses), so that a filter another tool removed can be
 * applied again (restore.c).  Files of an earlier vnic-cni lack the last:
 * they are read as before, and their filters cannot be restored.
 *
 * dataDir/NETWORK is a network's directory; dataDir's own files (the lock,
 * the nft features, the IPAM version cache) are named "_NAME": a network's
 * name starts with a letter or a digit (conf.c, as the spec says), so no
 * network can take one of theirs.  A network named "lock" made its
 * directory where the lock file was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "tools/cni/cni.h"

static int mkdirs(const char *path)
{
	char buf[PATH_MAX], *p;
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	/* A file there (an earlier vnic-cni's "lock", say) is no directory:
	 * say so here rather than at the first file written in it. */
	if (stat(buf, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int state_file(const struct cni_run *r, const char *name, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "%s/_%s", r->conf.data_dir, name) >= len ?
	       -1 : 0;
}

static int net_dir(struct cni_run *r, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", r->conf.data_dir, r->conf.name) >= len)
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"dataDir\" is too long");
	return 0;
}

int state_lock(struct cni_run *r)
{
	char path[PATH_MAX];
	int err, fd;

	if (net_dir(r, path, sizeof(path)))
		return -1;
	err = mkdirs(path);
	if (err)
		return cni_fail(r, CNI_ERR_IO, "cannot use dataDir", "%s: %s",
				path, strerror(-err));
	if (state_file(r, "lock", path, sizeof(path)))
		return cni_fail(r, CNI_ERR_CONFIG, "invalid network config",
				"\"dataDir\" is too long");
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return cni_fail(r, CNI_ERR_IO, "cannot use dataDir", "%s: %s",
				path, strerror(errno));
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return cni_fail(r, CNI_ERR_IO, "cannot lock dataDir",
					"%s: %s", path, strerror(errno));
		}
	}
	r->lock_fd = fd;
	return 0;
}

/*
 * STATUS: what state_lock() and state_write() need, without the lock (a
 * running call holds it): the network's directory (made, as an ADD would
 * make it), writable, and the lock file.  Code 50 with the reason.
 */
int state_usable(struct cni_run *r)
{
	char path[PATH_MAX];
	int err, fd;

	if (net_dir(r, path, sizeof(path)))
		return -1;
	err = mkdirs(path);
	if (!err && access(path, W_OK | X_OK))
		err = -errno;
	if (!err && state_file(r, "lock", path, sizeof(path)))
		err = -ENAMETOOLONG;
	if (!err) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			err = -errno;
		else
			close(fd);
	}
	if (err)
		return cni_fail(r, CNI_ERR_UNAVAILABLE, "plugin not available: "
				"cannot use dataDir", "%s: %s", path,
				strerror(-err));
	return 0;
}

/* What the filter needs: its host end, MAC and switches, and once the
 * IPAM plugin answered, the addresses ("ips": [] when it gave none). */
static void put_flt(json_t *o, const struct cni_flt_rec *flt)
{
	json_t *ips;
	unsigned int i;

	json_object_set_new(o, "mac", json_string(flt->mac));
	json_object_set_new(o, "switches", json_integer(flt->switches));
	if (!flt->has_ips)
		return;
	ips = json_array();
	for (i = 0; i < flt->nips; i++)
		json_array_append_new(ips, json_string(flt->ips[i].addr));
	json_object_set_new(o, "ips", ips);
}

int state_write(struct cni_run *r, const char *host,
		const struct cni_flt_rec *flt)
{
	char dir[PATH_MAX], path[PATH_MAX + 80], tmp[PATH_MAX + 96];
	json_t *o;
	int err;

	if (net_dir(r, dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, r->guest);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	o = json_pack("{s:s, s:s, s:s}", "containerID", r->env.container_id,
		      "ifname", r->env.ifname, "netns", r->env.netns);
	if (host)
		json_object_set_new(o, "host", json_string(host));
	if (host && flt)
		put_flt(o, flt);
	err = json_dump_file(o, tmp, JSON_COMPACT);
	json_decref(o);
	if (err || rename(tmp, path)) {
		unlink(tmp);
		return cni_fail(r, CNI_ERR_IO, "cannot write state", "%s: %s",
				path, strerror(errno));
	}
	return 0;
}

/* The addresses of a filter record; false if one is not an address's. */
static bool get_ips(json_t *a, struct cni_flt_rec *out)
{
	json_t *v;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > CNI_MAX_IPS)
		return false;
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (!s || !s[0] || strlen(s) >= sizeof(out->ips[0].addr))
			return false;
		snprintf(out->ips[i].addr, sizeof(out->ips[i].addr), "%s", s);
		out->ips[i].gw[0] = 0;
		out->ips[i].v6 = strchr(s, ':') != NULL;
	}
	out->nips = (unsigned int)i;
	return true;
}

int state_flt(struct cni_run *r, const char *guest, struct cni_flt_rec *out)
{
	char dir[PATH_MAX], path[PATH_MAX + 80], name[CNI_GUEST_MAX + 1];
	const char *cid, *ifn, *host, *mac;
	json_int_t sw;
	json_t *o;
	int ret = 0;

	if (net_dir(r, dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, guest);
	o = json_load_file(path, 0, NULL);
	cid = json_string_value(json_object_get(o, "containerID"));
	ifn = json_string_value(json_object_get(o, "ifname"));
	/* Only the file state_write() gives this attachment (state_each()). */
	if (!cid || !ifn || !cni_valid_id(cid) || !cni_valid_ifname(ifn)) {
		json_decref(o);
		return -1;
	}
	cni_guest_name(cid, ifn, name);
	if (strcmp(name, guest)) {
		json_decref(o);
		return -1;
	}
	host = json_string_value(json_object_get(o, "host"));
	mac = json_string_value(json_object_get(o, "mac"));
	sw = json_integer_value(json_object_get(o, "switches"));
	if (host && host[0] && strlen(host) <= VNIC_IFNAME_MAX &&
	    mac && strlen(mac) == 17 && json_is_integer(json_object_get(o, "switches")) &&
	    sw > 0 && sw <= VNIC_SW_CLEAN &&
	    get_ips(json_object_get(o, "ips"), out)) {
		snprintf(out->host, sizeof(out->host), "%s", host);
		snprintf(out->mac, sizeof(out->mac), "%s", mac);
		out->switches = (uint32_t)sw;
		out->has_ips = true;
		ret = 1;
	}
	json_decref(o);
	return ret;
}

int state_names(struct cni_run *r, int (*fn)(const char *name, void *arg),
		void *arg)
{
	char dir[PATH_MAX];
	struct dirent *de;
	int ret = 0;
	DIR *d;

	if (net_dir(r, dir, sizeof(dir)))
		return -1;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -1;
	while (!ret && (de = readdir(d)))
		if (de->d_name[0] != '.' && strlen(de->d_name) <= CNI_GUEST_MAX)
			ret = fn(de->d_name, arg);
	closedir(d);
	return ret;
}

int state_host(struct cni_run *r, const char *guest, char *host)
{
	char dir[PATH_MAX], path[PATH_MAX + 80];
	const char *h;
	json_t *o;
	int ret = -1;

	if (net_dir(r, dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, guest);
	o = json_load_file(path, 0, NULL);
	h = json_string_value(json_object_get(o, "host"));
	if (h && h[0] && strlen(h) <= VNIC_IFNAME_MAX) {
		snprintf(host, VNIC_IFNAME_MAX + 1, "%s", h);
		ret = 0;
	}
	json_decref(o);
	return ret;
}

void state_remove(struct cni_run *r, const char *guest)
{
	char dir[PATH_MAX], path[PATH_MAX + 80];

	if (net_dir(r, dir, sizeof(dir)))
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, guest);
	unlink(path);
}

/*
 * Whether the file name is the one state_write() gives the attachment it
 * holds.  Anything else is not an attachment's state: GC would release the
 * lease it names, which may be a valid attachment's.  A write's temporary
 * copy that an ADD killed before its rename left behind is removed: every
 * write happens under the dataDir lock, which the caller holds.
 */
static bool own_file(const char *name, const char *cid, const char *ifname,
		     const char *path)
{
	char guest[CNI_GUEST_MAX + 1];
	size_t n;

	if (!cni_valid_id(cid) || !cni_valid_ifname(ifname))
		return false;
	cni_guest_name(cid, ifname, guest);
	n = strlen(guest);
	if (!strncmp(name, guest, n) && !strcmp(name + n, ".tmp"))
		unlink(path);
	return !strcmp(name, guest);
}

int state_each(struct cni_run *r, state_fn fn, void *arg)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	struct dirent *de;
	int ret = 0;
	DIR *d;

	if (net_dir(r, dir, sizeof(dir)))
		return -1;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 :
		       cni_fail(r, CNI_ERR_IO, "cannot read state", "%s: %s",
				dir, strerror(errno));
	while (!ret && (de = readdir(d))) {
		const char *cid, *ifn, *ns;
		json_t *o;

		if (de->d_name[0] == '.' || strlen(de->d_name) > CNI_GUEST_MAX + 4)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		o = json_load_file(path, 0, NULL);
		cid = json_string_value(json_object_get(o, "containerID"));
		ifn = json_string_value(json_object_get(o, "ifname"));
		ns = json_string_value(json_object_get(o, "netns"));
		if (cid && ifn && own_file(de->d_name, cid, ifn, path))
			ret = fn(r, de->d_name, cid, ifn, ns, arg);
		json_decref(o);
	}
	closedir(d);
	return ret;
}
