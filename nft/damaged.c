// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A damaged table of libvnic's (open.c opened it anyway, see
 * open_damaged()): what refuses to work on it says what is wrong.  Its own
 * file because open.c and installed.c both need it and import each other's
 * nothing else.
 */
#include <errno.h>

#include "nft/internal.h"

int refuse_damaged(struct vnic_nft *n)
{
	if (!n->damaged)
		return 0;
	return vnic_set_err(n->ctx, -EUCLEAN, VNIC_STEP_DUMP, -1, NULL,
			    "%s: damaged; a sync repairs it (vnic_nft_sync(), "
			    "vnicctl filter sync)", n->damage);
}
