// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Link dump replies: link_parse() on each RTM_NEWLINK of an arbitrary
 * buffer walked as a netlink stream.  Any process of the namespace can set
 * a device's name, alias and kind-specific data, so none of it is trusted.
 */
#include <string.h>

#include "fuzz/fuzz.h"
#include "lib/link.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct nlmsghdr *nlh;
	struct link_attrs la;
	int left;

	fuzz_for_each_msg(nlh, data, size, left) {
		if (link_parse(nlh, &la))
			continue;
		/* Every pointer handed back is inside nlh and NUL-ended. */
		if (la.name)
			fuzz_touch(la.name, strlen(la.name) + 1);
		if (la.alias)
			fuzz_touch(la.alias, strlen(la.alias) + 1);
		if (la.kind)
			fuzz_touch(la.kind, strlen(la.kind) + 1);
		fuzz_touch(la.mac, la.mac ? 6 : 0);
	}
	return 0;
}
