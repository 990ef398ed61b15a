// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The alias tag "vnic:OWNER:GUEST:INDEX": written on every NIC, read back
 * from aliases any process may have written.  The parser accepts only what
 * tag_format() writes (canonical form: no sign, no leading zero, no
 * whitespace, names of [A-Za-z0-9_.-]), so a parsed tag formats back to the
 * same bytes.
 */
#include <stdio.h>
#include <string.h>

#include "allocator/nic.h"

void tag_format(const struct vnic_guest *g, const struct vnic_nic *nic, char *buf)
{
	snprintf(buf, TAG_MAX, TAG_PREFIX "%s:%s:%u", g->ctx->owner, g->name,
		 nic->tag);
}

/* A canonical decimal unsigned int filling all of s. */
static int parse_index(const char *s, unsigned int *idx)
{
	unsigned long long v = 0;
	size_t i;

	if (!s[0] || (s[0] == '0' && s[1]))
		return -1;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 10)
			return -1;
		v = v * 10 + (unsigned int)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*idx = (unsigned int)v;
	return 0;
}

int tag_parse(const char *alias, const char *owner, char *guest,
	      unsigned int *idx)
{
	size_t plen = strlen(TAG_PREFIX), olen = strlen(owner), glen;
	char name[GUEST_NAME_MAX + 1];
	const char *p, *colon;

	if (strncmp(alias, TAG_PREFIX, plen))
		return -1;
	p = alias + plen;
	if (!olen || strncmp(p, owner, olen) || p[olen] != ':')
		return -1;
	p += olen + 1;
	colon = strchr(p, ':');
	if (!colon || (glen = (size_t)(colon - p)) > GUEST_NAME_MAX)
		return -1;
	memcpy(name, p, glen);
	name[glen] = '\0';
	if (!vnic_valid_tag(name, GUEST_NAME_MAX) || parse_index(colon + 1, idx))
		return -1;
	memcpy(guest, name, glen + 1);
	return 0;
}
