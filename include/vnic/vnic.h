/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libvnic: everything public.  Each header also compiles on its own. */
#ifndef VNIC_VNIC_H
#define VNIC_VNIC_H

#include <vnic/common.h>
#include <vnic/context.h>
#include <vnic/guest.h>
#include <vnic/policy.h>
#include <vnic/filter.h>

#endif /* VNIC_VNIC_H */
