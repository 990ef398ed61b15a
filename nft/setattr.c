// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libnftnl's setters that copy: names with strdup(), userdata with
 * malloc().  When the copy fails they return -1 (the object's: nothing)
 * and leave the attribute unset, so the message built from the object
 * lacks it: the kernel then refuses it with -EINVAL or -ENODATA, or takes
 * it without (a rule without its tag, a dump of every table's chains).
 * One helper per kind of object sets what every message of it names (the
 * table, its own name, the family) and says -ENOMEM where a copy failed;
 * the others copy one attribute each.
 *
 * Parsing a reply copies too, and fails the same way: NPARSE() tells that
 * failure (-ENOMEM) from a message libnftnl refused (1).
 */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft/internal.h"

int table_id(struct nftnl_table *t, const char *name)
{
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_NETDEV);
	return nftnl_table_set_str(t, NFTNL_TABLE_NAME, name) < 0 ? -ENOMEM : 0;
}

/* name NULL: the table's chains (a dump). */
int chain_id(struct nftnl_chain *c, const char *table, const char *name)
{
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_NETDEV);
	if (nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table) < 0 ||
	    (name && nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name) < 0))
		return -ENOMEM;
	return 0;
}

int rule_id(struct nftnl_rule *r, const char *table, const char *chain)
{
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_NETDEV);
	if (nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table) < 0 ||
	    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain) < 0)
		return -ENOMEM;
	return 0;
}

/* name NULL: the table's sets (a dump). */
int set_id(struct nftnl_set *s, const char *table, const char *name)
{
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_NETDEV);
	if (nftnl_set_set_str(s, NFTNL_SET_TABLE, table) < 0 ||
	    (name && nftnl_set_set_str(s, NFTNL_SET_NAME, name) < 0))
		return -ENOMEM;
	return 0;
}

/* libnftnl 1.2.4's object setters return nothing, and mark a name set
 * even when its copy failed (a NULL the message would then read): what
 * they kept says. */
int obj_id(struct nftnl_obj *o, const char *table, const char *name)
{
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, NFPROTO_NETDEV);
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, table);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	return nftnl_obj_get_str(o, NFTNL_OBJ_TABLE) &&
	       nftnl_obj_get_str(o, NFTNL_OBJ_NAME) ? 0 : -ENOMEM;
}

int expr_str(struct nftnl_expr *e, uint16_t attr, const char *s)
{
	return nftnl_expr_set_str(e, attr, s) < 0 ? -ENOMEM : 0;
}

int parse_ret(int ret)
{
	return ret >= 0 ? 0 : errno == ENOMEM ? -ENOMEM : 1;
}
