/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvnic: conventions shared by every public header.
 *
 * Every function returns 0 or a negative errno.  Out-parameters are written
 * only on success.  Options structs start with a size_t 'sz' member that the
 * caller sets to sizeof() of the struct it was compiled against, so that
 * fields can be appended without breaking the ABI: the library reads only the
 * fields the caller knows, and rejects with -E2BIG a struct larger than its
 * own whose unknown tail is not all zeroes.  Use VNIC_OPTS() to declare one.
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
