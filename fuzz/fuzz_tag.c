// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The alias tag "vnic:OWNER:GUEST:INDEX": any process of the namespace can
 * write any alias (IFALIASZ bytes), so tag_parse() sees arbitrary strings.
 * Input: the owner, a newline, then the alias.  A parse that succeeds must
 * give a valid guest name and format back to exactly the alias: the parser
 * accepts only the canonical form tag_format() writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator/nic.h"
#include "fuzz/fuzz.h"

#define ALIAS_MAX 256	/* IFALIASZ: the kernel's bound, NUL included */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char owner[33] = "vnic", alias[ALIAS_MAX], guest[GUEST_NAME_MAX + 1];
	char back[TAG_MAX];
	const uint8_t *nl = memchr(data, '\n', size);
	size_t olen, alen;
	unsigned int idx;

	/* An owner as vnic_ctx_new() accepts it, else the default one. */
	olen = nl ? (size_t)(nl - data) : 0;
	if (olen && olen < sizeof(owner)) {
		memcpy(owner, data, olen);
		owner[olen] = '\0';
		if (!vnic_valid_tag(owner, sizeof(owner) - 1))
			strcpy(owner, "vnic");
	}
	if (nl) {
		data = nl + 1;
		size -= olen + 1;
	}
	alen = size < ALIAS_MAX - 1 ? size : ALIAS_MAX - 1;
	memcpy(alias, data, alen);
	alias[alen] = '\0';
	if (tag_parse(alias, owner, guest, &idx))
		return 0;
	if (!vnic_valid_tag(guest, GUEST_NAME_MAX))
		abort();
	snprintf(back, sizeof(back), TAG_PREFIX "%s:%s:%u", owner, guest, idx);
	if (strcmp(back, alias))
		abort();
	return 0;
}
