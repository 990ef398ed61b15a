/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvnic: conventions shared by every public header.
 *
 * Every function that returns int returns 0 or a negative errno, and then
 * the context's vnic_ctx_errmsg() says why (except where no context exists,
 * as a failed vnic_ctx_new() or a NULL handle).  -EINVAL always covers a
 * NULL handle, out-pointer or argument the call needs; the message then
 * names the call.  Out-parameters are written only on success.
 *
 * Structs start with a size_t 'sz' member that the caller sets to sizeof()
 * of the struct it was compiled against, so that fields can be appended
 * without breaking the ABI.  Options the caller passes in: the library reads
 * only the fields the caller knows, and rejects with -E2BIG a struct larger
 * than its own whose unknown tail is not all zeroes.  Structs the library
 * fills (vnic_ctx_stats, vnic_nic_info, vnic_filter_result): it writes
 * min(sz, its own size) bytes and sets sz to that count; a sz below the
 * struct's size in libvnic 0.1 is -EINVAL.  Use VNIC_OPTS() to declare one.
 * Documentation/abi.rst says what is ABI.
 */
#ifndef VNIC_COMMON_H
#define VNIC_COMMON_H

#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * VNIC_OPTS(vnic_ctx_opts, opts, .owner = "myrt");
 * declares 'struct vnic_ctx_opts opts', zeroed (padding too), with .sz set.
 * GNU C (a statement expression, as gcc and clang take it); in ISO C or
 * C++ (-pedantic warns), memset() the struct to 0 and set sz yourself.
 */
#define VNIC_OPTS(TYPE, NAME, ...)						\
	struct TYPE NAME = ({							\
		memset(&NAME, 0, sizeof(struct TYPE));				\
		(struct TYPE) {							\
			.sz = sizeof(struct TYPE),				\
			__VA_ARGS__						\
		};								\
	})

/* Longest interface name, without the NUL (the kernel's IFNAMSIZ - 1). */
#define VNIC_IFNAME_MAX 15

#ifdef __cplusplus
}
#endif

#endif /* VNIC_COMMON_H */
