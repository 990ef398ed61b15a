// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Extended acks: parse_extack() on every message of an arbitrary buffer,
 * as the request engine and the nfnetlink batch reader call it on each
 * NLMSG_ERROR they receive.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "lib/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct nlmsghdr *nlh;
	int left;

	fuzz_for_each_msg(nlh, data, size, left) {
		char *msg = parse_extack(nlh);

		if (msg)
			fuzz_touch(msg, strlen(msg) + 1);
		free(msg);
	}
	return 0;
}
