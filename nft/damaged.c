// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A damaged table of libvnic's (open.c opened it anyway, see
 * open_damaged()): what refuses to work on it says what is wrong.  Its own
 * file because open.c and installed.c both need it and import each other's
 * nothing else.
 */
#include <errno.h>

#include "nft/internal.h"

int refuse_table(struct vnic_nft *n, const char *damage)
{
	return vnic_set_err(n->ctx, -EUCLEAN, VNIC_STEP_DUMP, -1, NULL,
			    "%s: not made by libvnic, or damaged; nothing was "
			    "changed; delete it (nft delete table netdev %s) and "
			    "apply the policy again", damage, n->table);
}

/* Every way out, in a message that fits (the context keeps 256 bytes of
 * it): a sync where it can repair the damage, and starting afresh. */
int refuse_damaged(struct vnic_nft *n)
{
	if (!n->damaged)
		return 0;
	if (n->damage_final)
		return refuse_table(n, n->damage);
	return vnic_set_err(n->ctx, -EUCLEAN, VNIC_STEP_DUMP, -1, NULL,
			    "%s: damaged; a sync repairs it (vnic_nft_sync(), "
			    "vnicctl filter sync), or delete it (nft delete table "
			    "netdev %s)", n->damage, n->table);
}
