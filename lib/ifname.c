// SPDX-License-Identifier: LGPL-2.1-or-later
/* Interface names and "%d" templates. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>

#include "lib/internal.h"

/*
 * The kernel's dev_valid_name() plus the template rule of its
 * dev_alloc_name(): exactly one "%d" and no other '%'.  Checked here so that
 * a bad name fails before anything is sent, with a reason.
 */
int name_check(const char *name, bool *is_template, const char **why)
{
	const char *pct;
	size_t len;

	*is_template = false;
	if (!name || !*name)
		return *why = "empty name", -EINVAL;
	len = strlen(name);
	if (len > VNIC_IFNAME_MAX)
		return *why = "longer than 15 characters", -EINVAL;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return *why = "'.' and '..' are not interface names", -EINVAL;
	for (const char *p = name; *p; p++) {
		if (*p == '/' || *p == ':' || isspace((unsigned char)*p))
			return *why = "'/', ':' and whitespace are not allowed", -EINVAL;
		if (!isprint((unsigned char)*p))
			return *why = "non-printable character", -EINVAL;
	}
	pct = strchr(name, '%');
	if (!pct)
		return 0;
	if (pct[1] != 'd' || strchr(pct + 2, '%'))
		return *why = "a template has exactly one \"%d\" and no other '%'", -EINVAL;
	/* A template fits 15 characters, so its prefix leaves room for at
	 * least two digits. */
	if (pct[2] != '\0')
		return *why = "\"%d\" must end the template", -EINVAL;
	*is_template = true;
	return 0;
}

void name_prefix(const char *tmpl, char *prefix)
{
	size_t n = strcspn(tmpl, "%");

	memcpy(prefix, tmpl, n);
	prefix[n] = '\0';
}

/* prefixN; the cache only picks suffixes that fit IFNAMSIZ. */
void name_format(char *out, const char *prefix, uint32_t suffix)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%s%u", prefix, suffix);
	memcpy(out, tmp, IFNAMSIZ - 1);
	out[IFNAMSIZ - 1] = '\0';
}
