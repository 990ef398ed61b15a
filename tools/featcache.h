/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The nft features of this kernel kept in a file between processes
 * (vnic_filter_opts.features), shared by vnicctl and vnic-cni.
 */
#ifndef VNIC_TOOLS_FEATCACHE_H
#define VNIC_TOOLS_FEATCACHE_H

#include <stdint.h>

uint32_t featcache_read(const char *path);
void featcache_keep(const char *path, uint32_t f);

#endif
