// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Retrying against other processes (a name we chose taken meanwhile).
 * A count of tries alone gives up too early on a busy host, where each try
 * may lose again to a faster rival; a deadline alone gives up on a starved
 * one, where a single try may take seconds (RTNL held by others, no CPU)
 * while every try still gets somewhere.  So the retry stops only when both
 * say so: RETRY_MIN_TRIES tries in a row made no progress, and the
 * deadline has passed.  Progress is finite (a create has so many NICs), so
 * past the deadline at most RETRY_MIN_TRIES tries follow each try that made
 * progress.  A try that made no progress at all is followed by a random
 * pause of up to a few ms, so that processes retrying in lock step (each
 * choosing the same lowest free names) stop colliding.
 */
#include <time.h>
#include <sys/random.h>

#include "lib/internal.h"

#define RETRY_MIN_TRIES		8
#define RETRY_PAUSE_MAX_US	(8 * 1000)

void vnic_retry_start(struct vnic_retry *r, uint64_t deadline)
{
	r->deadline = deadline;
	r->tries = 0;
	r->idle = 0;
}

static void pause_random(unsigned int tries)
{
	uint32_t rnd = 0, max = 500u << (tries < 4 ? tries : 4);
	struct timespec ts;

	if (max > RETRY_PAUSE_MAX_US)
		max = RETRY_PAUSE_MAX_US;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)vnic_now_ms() * 2654435761u;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(rnd % max) * 1000;
	nanosleep(&ts, NULL);
}

bool vnic_retry_again(struct vnic_retry *r, bool progress)
{
	r->tries++;
	r->idle = progress ? 0 : r->idle + 1;
	if (r->idle >= RETRY_MIN_TRIES && vnic_now_ms() >= r->deadline)
		return false;
	if (!progress)
		pause_random(r->tries);
	return true;
}
