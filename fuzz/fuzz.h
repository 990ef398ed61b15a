/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the fuzz targets share.  Each fuzz/fuzz_NAME.c defines the libFuzzer
 * entry points; built with clang -fsanitize=fuzzer it is a fuzzer, built
 * with fuzz/run.c instead it runs each file it is given once (the corpus
 * as a regression test, with any compiler).
 */
#ifndef VNIC_FUZZ_H
#define VNIC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <libmnl/libmnl.h>

#include "lib/internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each netlink message of data, as a receive loop walks a buffer. */
#define fuzz_for_each_msg(nlh, data, size, left)				\
	for (left = (int)((size) > 1u << 20 ? 1u << 20 : (size)),		\
	     nlh = (const struct nlmsghdr *)(data); nl_msg_ok(nlh, left);	\
	     nlh = mnl_nlmsg_next(nlh, &left))

/* Read every byte a parser handed back, so ASan sees any that is not. */
static inline size_t fuzz_touch(const void *p, size_t len)
{
	const volatile uint8_t *b = p;
	size_t i, sum = 0;

	for (i = 0; p && i < len; i++)
		sum += b[i];
	return sum;
}

#endif
