// SPDX-License-Identifier: LGPL-2.1-or-later
/* The monotonic clock in milliseconds: deadlines (retry.c), the link
 * cache's ages (linkcache.c), the context's timeouts.  At the bottom of
 * lib/, so that none of them imports another for the time. */
#include <time.h>

#include "lib/internal.h"

uint64_t vnic_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
