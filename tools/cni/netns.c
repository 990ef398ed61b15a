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

int netns_open(struct cni_run *r, const char *path, int *out)
{
	struct statfs sfs;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return cni_fail(r, CNI_ERR_NO_CONTAINER, "container unknown or "
				"does not exist", "CNI_NETNS %s: %s", path,
				strerror(errno));
	/* A namespace file lives on nsfs; anything else is a wrong path. */
	if (fstatfs(fd, &sfs) || (sfs.f_type != NSFS_MAGIC &&
				  sfs.f_type != PROC_SUPER_MAGIC)) {
		close(fd);
		return cni_fail(r, CNI_ERR_ENV, "invalid CNI_NETNS",
				"%s is not a network namespace", path);
	}
	*out = fd;
	return 0;
}
