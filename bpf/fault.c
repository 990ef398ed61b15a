// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test faults (vnic_bpf_set_fault(), lib/testing.h) and the bench's tap
 * (vnic_bpf_set_tap()): the lowest file of the layer, so that every step
 * can call them without importing another's. */
#include <errno.h>
#include <bpf/libbpf.h>

#include "bpf/internal.h"

int bpf_fault(struct vnic_bpf *b, enum bpf_fault what)
{
	if (what == BPF_FAULT_SWAP_BACK)
		return b->fault_back_nth &&
		       ++b->fault_seen[what] == b->fault_back_nth ? -EIO : 0;
	if (b->fault_what != (int)what)
		return 0;
	return ++b->fault_seen[what] == b->fault_nth ? -EIO : 0;
}

/* The size of a value of map fd (one of the handle's). */
static size_t vsize(const struct vnic_bpf *b, int fd)
{
	int ncpu;

	if (fd == b->map_nics)
		return sizeof(struct bpf_nic);
	if (fd == b->map_guests)
		return sizeof(struct bpf_guest);
	if (fd == b->map_state)
		return sizeof(struct bpf_state);
	if (fd == b->map_drops) {
		ncpu = libbpf_num_possible_cpus();
		return (size_t)(ncpu > 0 ? ncpu : 1) * sizeof(struct bpf_drop);
	}
	return 1;	/* ip4s, ip6s */
}

void bpf_tap_nl(struct vnic_bpf *b, const void *buf, size_t len)
{
	if (b->tap.nl && len)
		b->tap.nl(b->tap.arg, buf, len);
}

void bpf_tap_map(struct vnic_bpf *b, int fd, const void *key, size_t klen,
		 const void *val)
{
	if (b->tap.map)
		b->tap.map(b->tap.arg, fd, key, klen, val, val ? vsize(b, fd) : 0);
}
