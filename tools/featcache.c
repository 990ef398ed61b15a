// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The nft features of this kernel, kept in a file with the boot id: probing
 * them is a checked batch the kernel aborts, and an abort waits for an RCU
 * grace period (9-14 ms a process); they cannot change before a reboot.
 * The file is one line, "BOOT-ID HEX-FEATURES".  Anything unexpected in it
 * (another boot, garbage, no file) reads as 0, which makes the library
 * probe; a file that cannot be written is left alone.  Neither is an error:
 * the file only saves time.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/featcache.h"

#define BOOT_ID "/proc/sys/kernel/random/boot_id"

static bool boot_id(char *buf, size_t len)
{
	FILE *f = fopen(BOOT_ID, "re");
	bool ok = f && fgets(buf, (int)len, f);

	if (f)
		fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok && buf[0];
}

/* The features kept in PATH on this boot, 0 if none (probe). */
uint32_t featcache_read(const char *path)
{
	char id[64], line[128], want[64];
	unsigned int f = 0;
	FILE *fp;

	if (!path || !path[0] || !boot_id(id, sizeof(id)))
		return 0;
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	if (!fgets(line, sizeof(line), fp) ||
	    sscanf(line, "%63s %x", want, &f) != 2 || strcmp(want, id))
		f = 0;
	fclose(fp);
	return f;
}

/*
 * Keep F in PATH: written to PATH.tmp and renamed over it, so a reader
 * never sees half a line (concurrent writers write the same line).
 */
void featcache_keep(const char *path, uint32_t f)
{
	char id[64], tmp[PATH_MAX];
	FILE *fp;

	if (!path || !path[0] || !f || !boot_id(id, sizeof(id)) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return;
	fp = fopen(tmp, "we");
	if (!fp)
		return;
	fprintf(fp, "%s %x\n", id, f);
	if (fclose(fp) || rename(tmp, path))
		unlink(tmp);
}
