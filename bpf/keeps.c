// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Whether a change keeps a NIC: asked by apply (the NICs that leave), by
 * diff (counters and older sets) and by the read-back (orphans), so it sits
 * below all three.
 */
#include <stdlib.h>
#include <string.h>

#include "bpf/internal.h"

static int int_cmp(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

bool change_keeps(const struct change *c, int ifindex)
{
	unsigned int i, total = c->p ? c->off[c->p->n] : 0;

	if (c->kept)
		return bsearch(&ifindex, c->kept, total, sizeof(*c->kept), int_cmp);
	for (i = 0; i < total; i++)
		if (c->ifi[i] == ifindex)
			return true;
	return false;
}

/* The policy's NICs sorted, for change_keeps(): asked once per NIC that
 * leaves, per counter of no NIC and per NIC of an older set, a scan each
 * made a sync where many guests leave quadratic.  Without memory, the
 * scan. */
void change_index_kept(struct vnic_bpf *b, struct change *c)
{
	unsigned int i, total = c->p ? c->off[c->p->n] : 0, asks = b->nfdrops + b->norphans;

	for (i = 0; i < b->ni; i++)
		asks += c->gone[i] ? b->inst[i].nn : 0;
	if (total < 16 || asks < 16)
		return;
	c->kept = malloc(total * sizeof(*c->kept));
	if (!c->kept)
		return;
	memcpy(c->kept, c->ifi, total * sizeof(*c->kept));
	qsort(c->kept, total, sizeof(*c->kept), int_cmp);
}
