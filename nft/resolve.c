// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The NICs of a policy resolved to their ifindexes (elements are keyed by
 * ifindex, so a NIC renamed or made again is a different NIC), and a
 * guest's digest over its policy and those ifindexes.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <net/if.h>
#include <linux/rtnetlink.h>

#include "lib/link.h"
#include "nft/internal.h"

/* From this many NICs, their lookups are shared among helper threads. */
#define LOOKUP_SPLIT	256
#define LOOKUP_THREADS	4

void resolved_free(struct resolved *r)
{
	free(r->ifi);
	free(r->off);
	free(r->digest);
}

/* The socket for SIOCGIFINDEX/SIOCGIFNAME, made in the context's netns. */
int ifsock_get(struct vnic_nft *n)
{
	int fd = vnic_ifsock(n->ctx, &n->ifsock);

	return fd < 0 ? fd : 0;
}

/* Guest i's digest bytes and ifindexes into bytes[j] (grown as needed). */
static int digest_input(const struct vnic_policy *p, const struct resolved *r,
			unsigned int i, uint8_t **bytes, size_t *cap, size_t *len)
{
	const struct pguest *g = p->g[i];
	size_t ilen = g->nn * sizeof(*r->ifi), need = pguest_digest_len(g) + ilen;

	if (need > *cap) {
		uint8_t *v = realloc(*bytes, need);

		if (!v)
			return -ENOMEM;
		*bytes = v;
		*cap = need;
	}
	*len = pguest_digest_bytes(g, *bytes);
	memcpy(*bytes + *len, &r->ifi[r->off[i]], ilen);
	*len += ilen;
	return 0;
}

/*
 * The digests of guests [from, to) into r->digest, four guests at a time:
 * FNV-1a is a chain of multiplies, one byte after the other, which a single
 * guest leaves mostly waiting (at 1,000 guests it was a seventh of the
 * batch's building).
 */
static int digests(const struct vnic_policy *p, struct resolved *r,
		   unsigned int from, unsigned int to)
{
	uint8_t *bytes[VNIC_HASH_LANES] = { NULL };
	size_t cap[VNIC_HASH_LANES] = { 0 }, len[VNIC_HASH_LANES];
	unsigned int i, j, k;
	int err = 0;

	for (i = from; i < to && !err; i += k) {
		k = to - i < VNIC_HASH_LANES ? to - i : VNIC_HASH_LANES;
		for (j = 0; j < k && !err; j++) {
			err = digest_input(p, r, i + j, &bytes[j], &cap[j], &len[j]);
			r->digest[i + j] = VNIC_HASH_INIT;
		}
		if (!err)
			vnic_hash64_n((const uint8_t *const *)bytes, len,
				      &r->digest[i], k);
	}
	for (j = 0; j < VNIC_HASH_LANES; j++)
		free(bytes[j]);
	return err;
}

/* One thread's share: guests [gfrom, gto), their NICs' lookups then their
 * digests. */
struct lookup {
	int fd;
	const struct vnic_policy *p;
	const char *const *names;	/* every NIC of p, flat */
	struct resolved *r;
	unsigned int gfrom, gto;
	unsigned int done;		/* ioctls made */
	unsigned int failed;		/* the first NIC that failed, or UINT_MAX */
	int err;			/* its errno, or the digests' error */
};

static void *lookup_run(void *arg)
{
	struct lookup *l = arg;
	unsigned int i;

	l->failed = UINT_MAX;
	for (i = l->r->off[l->gfrom]; i < l->r->off[l->gto]; i++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, l->names[i], IFNAMSIZ);
		l->done++;
		if (ioctl(l->fd, SIOCGIFINDEX, &ifr) < 0) {
			l->failed = i;
			l->err = -errno;
			return NULL;
		}
		l->r->ifi[i] = ifr.ifr_ifindex;
	}
	l->err = digests(l->p, l->r, l->gfrom, l->gto);
	return NULL;
}

/* CPUs the caller may run on, at most LOOKUP_THREADS. */
static unsigned int lookup_threads(unsigned int total)
{
	cpu_set_t set;
	int c;

	if (total < LOOKUP_SPLIT || sched_getaffinity(0, sizeof(set), &set))
		return 1;
	c = CPU_COUNT(&set);
	return c < 1 ? 1 : c > LOOKUP_THREADS ? LOOKUP_THREADS : (unsigned int)c;
}

/*
 * Every NIC looked up and every guest digested; the index of the first NIC
 * that failed (total: none) and its error, or another error.  The lookups'
 * time is the syscalls' (each about a microsecond here, most of it
 * entering and leaving the kernel: SIOCGIFNAME, one index lookup, costs
 * the same), so a large policy's are shared out to helper threads, one per
 * CPU, each on whole guests, about as many NICs each (the lookups are RCU
 * readers in the kernel: they scale), which digest their guests as well.
 * A helper that cannot be started leaves its share to the caller's thread.
 */
static unsigned int lookup_all(struct vnic_nft *n, const struct vnic_policy *p,
			       const char *const *names, struct resolved *r,
			       int *err)
{
	unsigned int total = r->off[p->n], k = lookup_threads(total);
	unsigned int i, g = 0, failed = total;
	struct lookup l[LOOKUP_THREADS];
	bool started[LOOKUP_THREADS] = { false };
	pthread_t t[LOOKUP_THREADS];

	for (i = 0; i < k; i++) {
		l[i] = (struct lookup){ .fd = n->ifsock, .p = p, .names = names,
					.r = r, .gfrom = g };
		while (g < p->n && r->off[g] < (uint64_t)total * (i + 1) / k)
			g++;
		l[i].gto = i == k - 1 ? p->n : g;
		if (i)
			started[i] = !pthread_create(&t[i], NULL, lookup_run, &l[i]);
	}
	lookup_run(&l[0]);
	for (i = 1; i < k; i++)
		if (started[i])
			pthread_join(t[i], NULL);
		else
			lookup_run(&l[i]);
	for (i = 0; i < k; i++) {
		n->ctx->stats.ioctls += l[i].done;
		if (l[i].failed < failed) {
			failed = l[i].failed;
			*err = l[i].err;
		} else if (failed == total && l[i].err && !*err) {
			*err = l[i].err;
		}
	}
	return failed;
}

/*
 * Every NIC of p by name, ifi[off[g] + k] being guest g's NIC k:
 * SIOCGIFINDEX on a socket of the context's namespace costs a name lookup,
 * where an RTM_GETLINK reply carries the whole link (a sync of 100
 * unchanged guests spent most of its time there).  A NIC that does not
 * exist fails here, before anything is sent.
 */
int resolve_policy(struct vnic_nft *n, const struct vnic_policy *p,
		   struct resolved *r)
{
	unsigned int gi, k, total = 0, failed;
	const char **names;
	int err = 0;

	r->off = calloc(p->n + 1, sizeof(*r->off));
	for (gi = 0; r->off && gi < p->n; gi++) {
		r->off[gi] = total;
		total += p->g[gi]->nn;
	}
	r->ifi = calloc(total + 1, sizeof(*r->ifi));
	r->digest = calloc(p->n + 1, sizeof(*r->digest));
	names = calloc(total + 1, sizeof(*names));
	if (!r->off || !r->ifi || !r->digest || !names) {
		free(names);
		return -ENOMEM;
	}
	r->off[p->n] = total;
	for (gi = 0; gi < p->n; gi++)
		for (k = 0; k < p->g[gi]->nn; k++)
			names[r->off[gi] + k] = p->g[gi]->nics[k].ifname;
	err = ifsock_get(n);
	failed = err ? total : lookup_all(n, p, names, r, &err);
	free(names);
	if (failed < total) {
		for (gi = 0; r->off[gi + 1] <= failed; gi++)
			;
		return vnic_set_err(n->ctx, err, VNIC_STEP_VALIDATE, -1, NULL,
				    "guest %s: NIC %s", p->g[gi]->name,
				    p->g[gi]->nics[failed - r->off[gi]].ifname);
	}
	return err;
}
