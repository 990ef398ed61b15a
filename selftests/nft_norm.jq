# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A table's JSON (nft_json in cli_lib.sh) made comparable across namespaces, processes and
# histories: no handles, no table flags (owner and persist belong to the
# process that made the table), counters zeroed, the elements of every set
# sorted; tables, sets, maps, counters and chains sorted (they list in the
# order they were made); rules keep their order within their chain (it is
# what they mean), grouped by chain.  The generation libvnic's state
# element records (" g=N") is history too, like handles.
#
#   nft_json netdev vnic | jq -S -f selftests/nft_norm.jq    (cli_lib.sh)

def norm: walk(if type == "object" then
		 del(.handle) |
		 (if (.comment? | type) == "string"
		  then .comment |= sub(" g=[0-9]+"; " g=G") else . end) |
		 (if has("packets") and has("bytes")
		  then .packets = 0 | .bytes = 0 else . end)
	       else . end);

[.nftables[] | select(has("metainfo") | not)
 | if has("table") then .table |= del(.flags) else . end
 | if has("set") and (.set | has("elem")) then .set.elem |= sort else . end
 | if has("map") and (.map | has("elem")) then .map.elem |= sort else . end]
as $all |
{objects: ([$all[] | select(has("rule") | not)] | norm | sort),
 rules: ([$all[] | select(has("rule")) | .rule] | norm |
	 group_by(.family, .table, .chain))}
