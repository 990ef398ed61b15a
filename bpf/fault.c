// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test faults (vnic_bpf_set_fault(), lib/testing.h): the lowest file of the
 * layer, so that every step can ask without importing another's. */
#include <errno.h>

#include "bpf/internal.h"

int bpf_fault(struct vnic_bpf *b, enum bpf_fault what)
{
	if (b->fault_what != (int)what)
		return 0;
	return ++b->fault_seen[what] == b->fault_nth ? -EIO : 0;
}
