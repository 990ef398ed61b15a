// SPDX-License-Identifier: LGPL-2.1-or-later
/* Link kinds: names, templates, features. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "allocator/nic.h"

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

