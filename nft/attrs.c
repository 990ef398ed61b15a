// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every reply read back from nf_tables is checked here, against a policy
 * per message type, before libnftnl parses it (the way the kernel and
 * iproute2 check attributes against an nla_policy).
 *
 * libnftnl 1.2.4 trusts what it is given: its attribute callbacks report a
 * wrong length and keep the attribute anyway, strings are strdup()'d
 * without looking for their NUL, an element's attributes are indexed by
 * any type up to NFTA_SET_MAX into a table sized for NFTA_SET_ELEM_MAX (a
 * stack overflow), a set's concatenation fields are counted into a 16-slot
 * array without a bound, an expression without a name is dereferenced.
 * So a policy lists every attribute libnftnl reads, with its exact form:
 *
 *   - a u32/u64 has exactly 4/8 bytes, a string ends with its NUL and
 *     holds no more than the kernel allows, binary data has a bound;
 *   - a nest holds a well-formed attribute stream (no trailing bytes),
 *     checked against its own policy, at most a few levels deep;
 *   - a type above a policy's maximum is refused where libnftnl would
 *     still store it (strict), and skipped where libnftnl skips it;
 *   - expressions (in sets and elements) are accepted only as counters:
 *     libvnic's tables have none, and each kind of expression would need
 *     its own policy.
 *
 * Nothing here allocates.  A refused reply becomes -EBADMSG with the
 * reason, in the caller's error (nfnl_get()).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <string.h>
#include <linux/netfilter/nfnetlink.h>

#include "nft/internal.h"

/* Newer than Debian 12's headers; libnftnl 1.2.4 skips them. */
#define NFTA_SET_TYPE_	(NFTA_SET_EXPRESSIONS + 1)
#define NFTA_SET_COUNT_	(NFTA_SET_EXPRESSIONS + 2)

#define NEST_DEPTH	6
#define NAME_MAX_LEN	256	/* NFT_NAME_MAXLEN, with its NUL */
#define CONCAT_MAX	16	/* NFT_REG32_COUNT: libnftnl's field_len[] */

enum akind { A_NONE, A_U32, A_U64, A_STR, A_BIN, A_NEST };

struct apol {
	enum akind kind;
	bool required;
	bool only;			/* A_U32: must be value */
	uint32_t value;
	uint16_t max;			/* bytes (A_STR with its NUL, A_BIN) */
	const struct anest *nest;	/* A_NEST */
};

struct anest {
	const char *what;
	unsigned int max;		/* highest type in pol */
	bool strict;			/* refuse types above max */
	unsigned int max_count;		/* attributes in it (0: any) */
	const char *only_name;		/* an expression: its NFTA_EXPR_NAME */
	const struct apol *pol;
};

#define U32		{ .kind = A_U32 }
#define U64		{ .kind = A_U64 }
#define STR		{ .kind = A_STR, .max = NAME_MAX_LEN }
#define BIN(n)		{ .kind = A_BIN, .max = (n) }
#define NEST(p)		{ .kind = A_NEST, .nest = &(p) }
#define NEST_REQ(p)	{ .kind = A_NEST, .nest = &(p), .required = true }

/* --- data registers (element keys and data) --------------------------- */

static const struct apol verdict_pol[NFTA_VERDICT_MAX + 1] = {
	[NFTA_VERDICT_CODE] = { .kind = A_U32, .required = true },
	[NFTA_VERDICT_CHAIN] = STR,
	[NFTA_VERDICT_CHAIN_ID] = U32,
};
static const struct anest verdict = {
	"verdict", NFTA_VERDICT_MAX, true, 0, NULL, verdict_pol,
};

static const struct apol data_pol[NFTA_DATA_MAX + 1] = {
	[NFTA_DATA_VALUE] = BIN(NFT_DATA_VALUE_MAXLEN),
	[NFTA_DATA_VERDICT] = NEST(verdict),
};
static const struct anest data = {
	"data", NFTA_DATA_MAX, true, 0, NULL, data_pol,
};

/* --- expressions: counters only --------------------------------------- */

static const struct apol counter_pol[NFTA_COUNTER_MAX + 1] = {
	[NFTA_COUNTER_BYTES] = U64,
	[NFTA_COUNTER_PACKETS] = U64,
	[NFTA_COUNTER_PAD] = BIN(8),
};
static const struct anest counter = {
	"counter", NFTA_COUNTER_MAX, true, 0, NULL, counter_pol,
};

static const struct apol expr_pol[NFTA_EXPR_MAX + 1] = {
	[NFTA_EXPR_NAME] = { .kind = A_STR, .required = true, .max = 16 },
	[NFTA_EXPR_DATA] = NEST(counter),
};
static const struct anest expr = {
	"expression", NFTA_EXPR_MAX, true, 0, "counter", expr_pol,
};

static const struct apol exprs_pol[NFTA_LIST_MAX + 1] = {
	[NFTA_LIST_ELEM] = NEST(expr),
};
static const struct anest exprs = {
	"expressions", NFTA_LIST_MAX, true, 0, NULL, exprs_pol,
};

/* --- tables ------------------------------------------------------------ */

static const struct apol table_pol[NFTA_TABLE_MAX + 1] = {
	[NFTA_TABLE_NAME] = STR,
	[NFTA_TABLE_FLAGS] = U32,
	[NFTA_TABLE_USE] = U32,
	[NFTA_TABLE_HANDLE] = U64,
	[NFTA_TABLE_PAD] = BIN(8),
	[NFTA_TABLE_USERDATA] = BIN(256),
	[NFTA_TABLE_OWNER] = U32,
};
static const struct anest table = {
	"table", NFTA_TABLE_MAX, false, 0, NULL, table_pol,
};

/* --- chains ------------------------------------------------------------ */

static const struct apol devs_pol[NFTA_DEVICE_PREFIX + 1] = {
	[NFTA_DEVICE_NAME] = { .kind = A_STR, .max = IFNAMSIZ },
	[NFTA_DEVICE_PREFIX] = { .kind = A_STR, .max = IFNAMSIZ },
};
static const struct anest devs = {
	"hook devices", NFTA_DEVICE_PREFIX, true, 256, NULL, devs_pol,
};

static const struct apol hook_pol[NFTA_HOOK_MAX + 1] = {
	[NFTA_HOOK_HOOKNUM] = U32,
	[NFTA_HOOK_PRIORITY] = U32,
	[NFTA_HOOK_DEV] = { .kind = A_STR, .max = IFNAMSIZ },
	[NFTA_HOOK_DEVS] = NEST(devs),
};
static const struct anest hook = {
	"hook", NFTA_HOOK_MAX, false, 0, NULL, hook_pol,
};

static const struct apol ctrs_pol[NFTA_COUNTER_MAX + 1] = {
	[NFTA_COUNTER_BYTES] = U64,
	[NFTA_COUNTER_PACKETS] = U64,
	[NFTA_COUNTER_PAD] = BIN(8),
};
static const struct anest ctrs = {
	"chain counters", NFTA_COUNTER_MAX, false, 0, NULL, ctrs_pol,
};

static const struct apol chain_pol[NFTA_CHAIN_MAX + 1] = {
	[NFTA_CHAIN_TABLE] = STR,
	[NFTA_CHAIN_HANDLE] = U64,
	[NFTA_CHAIN_NAME] = STR,
	[NFTA_CHAIN_HOOK] = NEST(hook),
	[NFTA_CHAIN_POLICY] = U32,
	[NFTA_CHAIN_USE] = U32,
	[NFTA_CHAIN_TYPE] = { .kind = A_STR, .max = 16 },
	[NFTA_CHAIN_COUNTERS] = NEST(ctrs),
	[NFTA_CHAIN_PAD] = BIN(8),
	[NFTA_CHAIN_FLAGS] = U32,
	[NFTA_CHAIN_ID] = U32,
	[NFTA_CHAIN_USERDATA] = BIN(256),
};
static const struct anest chain = {
	"chain", NFTA_CHAIN_MAX, false, 0, NULL, chain_pol,
};

/* --- sets -------------------------------------------------------------- */

static const struct apol field_pol[NFTA_SET_FIELD_MAX + 1] = {
	[NFTA_SET_FIELD_LEN] = U32,
};
static const struct anest field = {
	"concatenation field", NFTA_SET_FIELD_MAX, true, 1, NULL, field_pol,
};

static const struct apol concat_pol[NFTA_LIST_MAX + 1] = {
	[NFTA_LIST_ELEM] = NEST(field),
};
static const struct anest concat = {
	"concatenation", NFTA_LIST_MAX, true, CONCAT_MAX, NULL, concat_pol,
};

static const struct apol desc_pol[NFTA_SET_DESC_MAX + 1] = {
	[NFTA_SET_DESC_SIZE] = U32,
	[NFTA_SET_DESC_CONCAT] = NEST(concat),
};
static const struct anest desc = {
	"set description", NFTA_SET_DESC_MAX, false, 0, NULL, desc_pol,
};

static const struct apol set_pol[NFTA_SET_COUNT_ + 1] = {
	[NFTA_SET_TABLE] = STR,
	[NFTA_SET_NAME] = STR,
	[NFTA_SET_FLAGS] = U32,
	[NFTA_SET_KEY_TYPE] = U32,
	[NFTA_SET_KEY_LEN] = U32,
	[NFTA_SET_DATA_TYPE] = U32,
	[NFTA_SET_DATA_LEN] = U32,
	[NFTA_SET_POLICY] = U32,
	[NFTA_SET_DESC] = NEST(desc),
	[NFTA_SET_ID] = U32,
	[NFTA_SET_TIMEOUT] = U64,
	[NFTA_SET_GC_INTERVAL] = U32,
	[NFTA_SET_USERDATA] = BIN(256),
	[NFTA_SET_PAD] = BIN(8),
	[NFTA_SET_OBJ_TYPE] = U32,
	[NFTA_SET_HANDLE] = U64,
	[NFTA_SET_EXPR] = NEST(expr),
	[NFTA_SET_EXPRESSIONS] = NEST(exprs),
	[NFTA_SET_TYPE_] = { .kind = A_STR, .max = 32 },
	[NFTA_SET_COUNT_] = U32,
};
static const struct anest set = {
	"set", NFTA_SET_COUNT_, false, 0, NULL, set_pol,
};

/* --- set elements ------------------------------------------------------ */

/* Strict: libnftnl 1.2.4 stores types up to NFTA_SET_MAX into an array of
 * NFTA_SET_ELEM_MAX + 1 on its stack. */
static const struct apol elem_pol[NFTA_SET_ELEM_MAX + 1] = {
	[NFTA_SET_ELEM_KEY] = NEST(data),
	[NFTA_SET_ELEM_DATA] = NEST(data),
	[NFTA_SET_ELEM_FLAGS] = U32,
	[NFTA_SET_ELEM_TIMEOUT] = U64,
	[NFTA_SET_ELEM_EXPIRATION] = U64,
	[NFTA_SET_ELEM_USERDATA] = BIN(256),
	[NFTA_SET_ELEM_EXPR] = NEST(expr),
	[NFTA_SET_ELEM_PAD] = BIN(8),
	[NFTA_SET_ELEM_OBJREF] = STR,
	[NFTA_SET_ELEM_KEY_END] = NEST(data),
	[NFTA_SET_ELEM_EXPRESSIONS] = NEST(exprs),
};
static const struct anest elem = {
	"element", NFTA_SET_ELEM_MAX, true, 0, NULL, elem_pol,
};

/* libnftnl refuses anything but NFTA_LIST_ELEM here by itself. */
static const struct apol elems_pol[NFTA_LIST_MAX + 1] = {
	[NFTA_LIST_ELEM] = NEST(elem),
};
static const struct anest elems = {
	"elements", NFTA_LIST_MAX, true, 0, NULL, elems_pol,
};

static const struct apol elem_list_pol[NFTA_SET_ELEM_LIST_MAX + 1] = {
	[NFTA_SET_ELEM_LIST_TABLE] = STR,
	[NFTA_SET_ELEM_LIST_SET] = STR,
	[NFTA_SET_ELEM_LIST_ELEMENTS] = NEST(elems),
	[NFTA_SET_ELEM_LIST_SET_ID] = U32,
};
static const struct anest elem_list = {
	"set elements", NFTA_SET_ELEM_LIST_MAX, false, 0, NULL, elem_list_pol,
};

/* --- objects (counters only) and the generation ------------------------ */

static const struct apol obj_pol[NFTA_OBJ_MAX + 1] = {
	[NFTA_OBJ_TABLE] = STR,
	[NFTA_OBJ_NAME] = STR,
	[NFTA_OBJ_TYPE] = { .kind = A_U32, .required = true, .only = true,
			    .value = NFT_OBJECT_COUNTER },
	[NFTA_OBJ_DATA] = NEST(counter),
	[NFTA_OBJ_USE] = U32,
	[NFTA_OBJ_HANDLE] = U64,
	[NFTA_OBJ_PAD] = BIN(8),
	[NFTA_OBJ_USERDATA] = BIN(256),
};
static const struct anest obj = {
	"object", NFTA_OBJ_MAX, false, 0, NULL, obj_pol,
};

static const struct apol gen_pol[NFTA_GEN_MAX + 1] = {
	[NFTA_GEN_ID] = U32,
	[NFTA_GEN_PROC_PID] = U32,
	[NFTA_GEN_PROC_NAME] = { .kind = A_STR, .max = 32 },
};
static const struct anest gen = {
	"generation", NFTA_GEN_MAX, false, 0, NULL, gen_pol,
};

const struct nreply nr_table = { NFT_MSG_NEWTABLE, &table };
const struct nreply nr_chain = { NFT_MSG_NEWCHAIN, &chain };
const struct nreply nr_set = { NFT_MSG_NEWSET, &set };
const struct nreply nr_elems = { NFT_MSG_NEWSETELEM, &elem_list };
const struct nreply nr_obj = { NFT_MSG_NEWOBJ, &obj };
const struct nreply nr_gen = { NFT_MSG_NEWGEN, &gen };

/* --- the walk ---------------------------------------------------------- */

struct why {
	char *buf;
	size_t len;
};

__attribute__((format(printf, 2, 3)))
static int refuse(const struct why *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->buf, w->len, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static int check_stream(const uint8_t *p, size_t len, const struct anest *t,
			int depth, const struct why *w);

static int check_one(const struct nlattr *a, const struct apol *pol,
		     const struct anest *t, unsigned int type, int depth,
		     const struct why *w)
{
	const uint8_t *v = mnl_attr_get_payload(a);
	size_t len = mnl_attr_get_payload_len(a);

	switch (pol->kind) {
	case A_NONE:
		return 0;
	case A_U32:
		if (len != 4)
			return refuse(w, "%s attribute %u: %zu bytes, not 4",
				      t->what, type, len);
		if (pol->only && ntohl(mnl_attr_get_u32(a)) != pol->value)
			return refuse(w, "%s attribute %u: %u, not %u", t->what,
				      type, ntohl(mnl_attr_get_u32(a)), pol->value);
		return 0;
	case A_U64:
		if (len != 8)
			return refuse(w, "%s attribute %u: %zu bytes, not 8",
				      t->what, type, len);
		return 0;
	case A_STR:
		if (!len || v[len - 1] || len > pol->max)
			return refuse(w, "%s attribute %u: not a string of at most %u bytes ending with its NUL",
				      t->what, type, pol->max - 1u);
		return 0;
	case A_BIN:
		if (len > pol->max)
			return refuse(w, "%s attribute %u: %zu bytes, over %u",
				      t->what, type, len, pol->max);
		return 0;
	case A_NEST:
		return check_stream(v, len, pol->nest, depth + 1, w);
	}
	return 0;
}

static int check_stream(const uint8_t *p, size_t len, const struct anest *t,
			int depth, const struct why *w)
{
	uint64_t seen = 0;
	unsigned int count = 0, type;
	size_t off = 0;
	int err;

	if (depth > NEST_DEPTH)
		return refuse(w, "%s: nested over %d levels", t->what, NEST_DEPTH);
	while (off < len) {
		const struct nlattr *a = (const struct nlattr *)(p + off);

		if (len - off < NLA_HDRLEN || a->nla_len < NLA_HDRLEN ||
		    a->nla_len > len - off)
			return refuse(w, "%s: an attribute overruns it (at byte %zu of %zu)",
				      t->what, off, len);
		type = a->nla_type & NLA_TYPE_MASK;
		if (type > t->max && t->strict)
			return refuse(w, "%s: unexpected attribute %u", t->what, type);
		if (t->max_count && ++count > t->max_count)
			return refuse(w, "%s: over %u attributes", t->what, t->max_count);
		if (type <= t->max) {
			err = check_one(a, &t->pol[type], t, type, depth, w);
			if (err)
				return err;
			seen |= 1ull << type;
		}
		if (t->only_name && type == NFTA_EXPR_NAME &&
		    strcmp(mnl_attr_get_str(a), t->only_name))
			return refuse(w, "%s '%s': only %s is expected", t->what,
				      mnl_attr_get_str(a), t->only_name);
		off += MNL_ALIGN(a->nla_len);
	}
	for (type = 0; type <= t->max; type++)
		if (t->pol[type].required && !(seen & (1ull << type)))
			return refuse(w, "%s: attribute %u is missing", t->what, type);
	return 0;
}

int nreply_check(const struct nreply *r, const struct nlmsghdr *nlh,
		 char *why, size_t why_len)
{
	const struct why w = { why, why_len };
	uint16_t want = (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | r->msg);
	size_t hdr = MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct nfgenmsg));

	if (nlh->nlmsg_type != want)
		return refuse(&w, "message type 0x%x, not 0x%x", nlh->nlmsg_type, want);
	if (nlh->nlmsg_len < hdr)
		return refuse(&w, "%u bytes: no room for its header", nlh->nlmsg_len);
	return check_stream((const uint8_t *)nlh + hdr, nlh->nlmsg_len - hdr,
			    r->pol, 0, &w);
}

/*
 * Any message of its type whose attributes are well formed: for a reader
 * that takes a few attributes itself and judges the rest by name
 * (installed.c), so that a foreign object in libvnic's table (a set with an
 * expression, a quota) is named and removed rather than refused whole.
 * What it hands libnftnl it checks against the policies above first.
 */
static const struct apol any_pol[1];
static const struct anest any = { "message", 0, false, 0, NULL, any_pol };
const struct nreply nr_set_any = { NFT_MSG_NEWSET, &any };
const struct nreply nr_chain_any = { NFT_MSG_NEWCHAIN, &any };
const struct nreply nr_rule_any = { NFT_MSG_NEWRULE, &any };
const struct nreply nr_obj_any = { NFT_MSG_NEWOBJ, &any };
