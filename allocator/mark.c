// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The marks a NIC carries from the RTM_NEWLINK that creates it, before its
 * alias tag is written: its link group (IFLA_GROUP, applied by
 * rtnl_create_link(), also to a veth peer from its own nest) and, when
 * libvnic chose the MAC, a check derived from the owner in the MAC's first
 * two octets.  Both come from the owner name alone, so a later context of
 * the same owner recognises them without any state of the one that crashed.
 *
 * Group: 0x80000000 | 30 bits of the owner's hash | state bit.  Group 0 (the
 * default) and the small numbers tools name in /etc/iproute2/group are
 * never ours.  State bit 0: a live NIC; 1: being deleted (nics_delete()
 * moves NICs there and deletes that group in one unregister).
 *
 * These are marks against accidents, not credentials: any root process can
 * compute and copy them (Documentation/allocator.rst, "Trust model").
 */
#include <string.h>

#include "allocator/nic.h"

/* FNV-1a over salt, then s. */
static uint32_t hash(const char *salt, const char *s)
{
	uint32_t h = 2166136261u;

	for (; *salt; salt++)
		h = (h ^ (uint8_t)*salt) * 16777619u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

uint32_t mark_group(const char *owner)
{
	return 0x80000000u | (hash("group:", owner) & 0x7ffffffeu);
}

uint32_t mark_group_dying(const char *owner)
{
	return mark_group(owner) | 1u;
}

bool mark_group_is(const char *owner, uint32_t group)
{
	return (group & ~1u) == mark_group(owner);
}

static uint16_t mac_check(const char *owner, enum mark_role role)
{
	return (uint16_t)(hash(role == MARK_PEER ? "peer-mac:" : "mac:", owner) &
			  MAC_MARK_MASK);
}

int mark_mac(const char *owner, enum mark_role role, uint8_t mac[6])
{
	return mac_random_marked(mac, mac_check(owner, role));
}

bool mark_mac_is(const char *owner, enum mark_role role, const uint8_t mac[6])
{
	return mac_has_mark(mac, mac_check(owner, role));
}
