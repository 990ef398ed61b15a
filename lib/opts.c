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

/*
 * Structs the library fills for the caller carry their size the same way.
 * A caller compiled against an older header passes a smaller sz: only its
 * bytes are written, so a field appended later cannot overrun its struct.
 * Below min_sz (the struct of libvnic 0.1, the first release) it is no
 * struct we ever defined: refused before any work is done.
 */
int vnic_out_check(struct vnic_ctx *ctx, const void *dst, size_t min_sz,
		   const char *what)
{
	size_t sz = *(const size_t *)dst;

	if (sz >= min_sz)
		return 0;
	vnic_clear_err(ctx);
	return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
			    "struct %s: sz %zu is below %zu, its size in libvnic 0.1",
			    what, sz, min_sz);
}

/* src, built whole by the library, into the caller's dst: min(dst's sz,
 * ours) bytes; dst's sz becomes that count, so a newer caller learns which
 * of its fields this library filled (the rest is not touched). */
void vnic_out_copy(void *dst, const void *src, size_t src_sz)
{
	size_t sz = *(const size_t *)dst;

	if (sz > src_sz)
		sz = src_sz;
	memcpy(dst, src, sz);
	*(size_t *)dst = sz;
}
