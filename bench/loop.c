// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one run loop: runs are the outer loop and methods the inner one,
 * rotated each run, so that no method always runs right after the same
 * neighbour's cleanup and a load spike spreads over every method (unless
 * the rows are ordered: each row's state is the one before it left).
 */
#include "bench.h"

int bench_rotate(const struct bench_loop *l)
{
	unsigned int run, k;
	int ret;

	for (run = 0; run < l->runs; run++) {
		for (k = 0; k < l->n; k++) {
			unsigned int i = l->ordered ? k : (k + run) % l->n;
			const char *name = l->active(l->ctx, i);

			if (!name)
				continue;
			progress("%s run %u/%u", name, run + 1, l->runs);
			ret = l->once(l->ctx, i, run);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}
