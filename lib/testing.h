/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test hooks: exported under the LIBVNIC_PRIVATE version node
 * (lib/libvnic.map), never installed, never part of the ABI.  The selftests
 * include this header; programs (vnicctl, the bench) must not.  A hook may
 * change or go in any release.
 */
#ifndef VNIC_LIB_TESTING_H
#define VNIC_LIB_TESTING_H

#include <stdint.h>
#include <vnic/context.h>
#include <vnic/nft.h>

/*
 * vnic_ctx_new(), with a fault armed from the start: the fault_nth
 * (1-based) unit of work at step fault_step fails with -EIO (for per-NIC
 * steps the unit is the NIC index + 1; the context's own socket is unit 1
 * of VNIC_STEP_SOCKET; unit 1 of VNIC_STEP_DUMP is before the link table's
 * dump, unit k + 1 that dump's reply callback for its k-th link, which
 * then returns -EIO to the netlink engine).  fault_step 0 arms nothing.  Returns what
 * vnic_ctx_new() returns, or -EINVAL (with a message, no context) for a
 * fault_step outside enum vnic_step.
 */
int vnic_ctx_new_faulty(const struct vnic_ctx_opts *opts, int fault_step,
			uint32_t fault_nth, struct vnic_ctx **out);

/*
 * Call fn(arg) after each change has read the ruleset generation and built
 * its batch, right before sending it (NULL: no hook).  A ruleset change made
 * there makes the commit fail with -EAGAIN.  Returns 0, or -EINVAL for a
 * NULL handle.
 */
int vnic_nft_set_before_commit(struct vnic_nft *n, void (*fn)(void *arg),
			       void *arg);

#endif /* VNIC_LIB_TESTING_H */
