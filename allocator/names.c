// SPDX-License-Identifier: LGPL-2.1-or-later
/* Interface names, templates and kinds. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "allocator/nic.h"

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

static const struct {
	const char *name;		/* vnic_kind_name() */
	const char *link;		/* IFLA_INFO_KIND */
	const char *tmpl;
	uint64_t feature;
} kinds[VNIC_KIND__MAX] = {
	[VNIC_KIND_MACVTAP] = { "macvtap", "macvtap", "macvtap%d", VNIC_FEAT_MACVTAP },
	[VNIC_KIND_MACVLAN] = { "macvlan", "macvlan", "macvlan%d", VNIC_FEAT_MACVLAN },
	[VNIC_KIND_VETH] = { "veth", "veth", "veth%d", VNIC_FEAT_VETH },
	[VNIC_KIND_TAP] = { "tap", "tun", "tap%d", VNIC_FEAT_TUN },
	[VNIC_KIND_TUN] = { "tun", "tun", "tun%d", VNIC_FEAT_TUN },
};

static bool kind_valid(enum vnic_kind kind)
{
	return kind > 0 && kind < VNIC_KIND__MAX;
}

VNIC_EXPORT const char *vnic_kind_name(enum vnic_kind kind)
{
	return kind_valid(kind) ? kinds[kind].name : NULL;
}

VNIC_EXPORT enum vnic_kind vnic_kind_from_name(const char *name)
{
	int k;

	for (k = 1; name && k < VNIC_KIND__MAX; k++)
		if (!strcmp(kinds[k].name, name))
			return (enum vnic_kind)k;
	return 0;
}

const char *kind_default_template(enum vnic_kind kind)
{
	return kind_valid(kind) ? kinds[kind].tmpl : NULL;
}

const char *kind_link_name(enum vnic_kind kind)
{
	return kind_valid(kind) ? kinds[kind].link : NULL;
}

uint64_t kind_feature(enum vnic_kind kind)
{
	return kind_valid(kind) ? kinds[kind].feature : 0;
}

bool kind_is_tun(enum vnic_kind kind)
{
	return kind == VNIC_KIND_TAP || kind == VNIC_KIND_TUN;
}

/* prefixN; the cache only picks suffixes that fit IFNAMSIZ. */
void name_format(char *out, const char *prefix, uint32_t suffix)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%s%u", prefix, suffix);
	memcpy(out, tmp, IFNAMSIZ - 1);
	out[IFNAMSIZ - 1] = '\0';
}
