// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The vnicctl policy file: cli_policy_load() (JSON syntax, keys and types
 * in vnicctl, every value through the library's policy model).
 * The input is a file, as an operator would hand it over.  Each bad input
 * is reported on stderr, as vnicctl does: `make fuzz` runs the fuzzers
 * with -close_fd_mask=3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "tools/cli.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fd = memfd_create("policy.json", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vnic_policy *p = NULL;

	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	if (!cli_policy_load(path, &p))
		vnic_policy_free(p);
	return 0;
}
