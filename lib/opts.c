// SPDX-License-Identifier: LGPL-2.1-or-later
/* Options structs that carry their own size (see include/vnic/common.h). */
#include <errno.h>
#include <string.h>

#include "lib/internal.h"

int vnic_opts_copy(void *dst, size_t dst_sz, const void *src)
{
	size_t sz;
	const unsigned char *p;

	memset(dst, 0, dst_sz);
	if (!src)
		return 0;
	sz = *(const size_t *)src;
	if (sz < sizeof(size_t))
		return -EINVAL;
	/* A newer caller may pass fields we do not know: fine if unused. */
	for (p = (const unsigned char *)src + dst_sz;
	     p < (const unsigned char *)src + sz; p++)
		if (*p)
			return -E2BIG;
	memcpy(dst, src, sz < dst_sz ? sz : dst_sz);
	*(size_t *)dst = dst_sz;
	return 0;
}
