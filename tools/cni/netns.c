// SPDX-License-Identifier: LGPL-2.1-or-later
/* The container's namespace, CNI_NETNS, opened once per call. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "tools/cni/cni.h"

/* A namespace file lives on nsfs (or is /proc/PID/ns/net). */
static bool is_ns(int fd)
{
	struct statfs sfs;

	return !fstatfs(fd, &sfs) && (sfs.f_type == NSFS_MAGIC ||
				      sfs.f_type == PROC_SUPER_MAGIC);
}

int netns_open(struct cni_run *r, const char *path, int *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return cni_fail(r, CNI_ERR_NO_CONTAINER, "container unknown or "
				"does not exist", "CNI_NETNS %s: %s", path,
				strerror(errno));
	/* Anything else is a wrong path. */
	if (!is_ns(fd)) {
		close(fd);
		return cni_fail(r, CNI_ERR_ENV, "invalid CNI_NETNS",
				"%s is not a network namespace", path);
	}
	*out = fd;
	return 0;
}

/*
 * For DEL and GC: the namespace if it is still there, else -1.  A path
 * that opens but is no namespace is one that went: a runtime unmounts
 * the namespace's bind mount, then removes the file, and a crash between
 * leaves the empty file.  Its interfaces went with it.
 */
int netns_if_there(const char *path)
{
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

	if (fd >= 0 && !is_ns(fd)) {
		close(fd);
		fd = -1;
	}
	return fd;
}
