# SPDX-License-Identifier: LGPL-2.1-or-later
# The public filter API renamed once, nft-only names to backend-neutral ones
# (include/vnic/nft.h -> include/vnic/filter.h).  Applied to the callers:
#   sed -i -E -f scripts/rename-filter-api.sed \
#     $(grep -rlE 'vnic_nft|VNIC_NFT_|vnic/nft\.h' tools bench selftests \
#       Documentation README include/vnic/common.h)
# Not to nft/, bpf/, filter/, lib/ or fuzz/: the nft backend keeps its
# internal vnic_nft_* names behind the filter layer.
s,vnic/nft\.h,vnic/filter.h,g
s,struct vnic_nft\b,struct vnic_filter,g
s,\bvnic_nft_,vnic_filter_,g
s,\bVNIC_NFT_,VNIC_FILTER_,g
