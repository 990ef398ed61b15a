// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Set elements encoded as they go on the wire, gathered per set and copied
 * into NEWSETELEM/DELSETELEM messages.  A full apply writes several
 * elements per NIC: building each as a libnftnl object (an allocation, a
 * copy per field, a list, then the encoding) cost more than the kernel's
 * own work on them.  Each element is one NFTA_LIST_ELEM nest, the type the
 * kernel dumps and libnftnl's parser wants; the kernel reads any type.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "nft/internal.h"

/* One message's elements: few enough for nbatch_msg()'s guaranteed room
 * with the set and table names besides. */
#define ELIST_MSG_BYTES	(60 * 1024)

void elist_free(struct elist *l)
{
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

static int grow_to(struct elist *l, size_t room)
{
	/* A list that fills is flushed at ELIST_MSG_BYTES: start with room
	 * for that (one allocation, where doubling from 4 KiB copied 60). */
	size_t cap = l->cap ? l->cap : 64 * 1024;
	char *p;

	while (l->len + room > cap)
		cap *= 2;
	if (cap == l->cap)
		return 0;
	p = realloc(l->buf, cap);
	if (!p)
		return -ENOMEM;
	l->buf = p;
	l->cap = cap;
	return 0;
}

/* Inline, like what they call: a full apply encodes some 26,000
 * elements, where a call per attribute and a memset() per padding were
 * most of the cost. */
static inline int grow(struct elist *l, size_t room)
{
	return l->len + room > l->cap ? grow_to(l, room) : 0;
}

/* A few bytes (keys, names, comments) by fixed-size moves: memcpy() of a
 * length known only at run time is a call, per attribute. */
static inline void copy_small(char *p, const char *d, size_t len)
{
	for (; len >= 8; p += 8, d += 8, len -= 8)
		memcpy(p, d, 8);
	if (len & 4) {
		memcpy(p, d, 4);
		p += 4;
		d += 4;
	}
	if (len & 2) {
		memcpy(p, d, 2);
		p += 2;
		d += 2;
	}
	if (len & 1)
		*p = *d;
}

/* An attribute at the end of l, its padding zeroed; where it starts.  The
 * padding's word is cleared before the data is copied over its start. */
static inline size_t put(struct elist *l, uint16_t type, const void *data,
			 size_t len)
{
	char *p = l->buf + l->len;
	struct nlattr *a = (struct nlattr *)p;
	size_t at = l->len, alen = MNL_ALIGN(len);

	a->nla_type = type;
	a->nla_len = (uint16_t)(MNL_ATTR_HDRLEN + len);
	p += MNL_ATTR_HDRLEN;
	if (alen != len)
		memset(p + alen - 4, 0, 4);
	if (len <= 64)
		copy_small(p, data, len);
	else
		memcpy(p, data, len);
	l->len += MNL_ATTR_HDRLEN + alen;
	return at;
}

static inline size_t nest(struct elist *l, uint16_t type)
{
	return put(l, NLA_F_NESTED | type, NULL, 0);
}

static inline void nest_end(struct elist *l, size_t at)
{
	((struct nlattr *)(l->buf + at))->nla_len = (uint16_t)(l->len - at);
}

static size_t strz_len(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Its size on the wire, at most: the attributes' headers and padding
 * (chain, objref: strz_len() of x's). */
static size_t room_of(uint32_t klen, const struct elist_extra *x, size_t chain,
		      size_t objref)
{
	size_t room = 4 * MNL_ATTR_HDRLEN + MNL_ALIGN(klen);

	if (x)
		room += 6 * MNL_ATTR_HDRLEN + 4 + MNL_ALIGN(chain) +
			MNL_ALIGN(x->udata_len) + MNL_ALIGN(objref);
	return room;
}

static size_t elem_room(uint32_t klen, const struct elist_extra *x)
{
	return room_of(klen, x, x ? strz_len(x->chain) : 0,
		       x ? strz_len(x->objref) : 0);
}

static bool full(const struct elist *l, size_t room);

/* In the order libnftnl encodes them: key, data (a verdict), userdata,
 * object reference. */
int elist_add(struct elist *l, const void *key, uint32_t klen,
	      const struct elist_extra *x)
{
	size_t chain = x ? strz_len(x->chain) : 0;
	size_t objref = x ? strz_len(x->objref) : 0;
	size_t e, k, d, v, room = room_of(klen, x, chain, objref);
	int err;

	if (full(l, room))
		return 1;
	err = grow(l, room);
	if (err)
		return err;
	e = nest(l, NFTA_LIST_ELEM);
	k = nest(l, NFTA_SET_ELEM_KEY);
	put(l, NFTA_DATA_VALUE, key, klen);
	nest_end(l, k);
	if (x && x->chain) {
		uint32_t code = htonl((uint32_t)NFT_JUMP);

		d = nest(l, NFTA_SET_ELEM_DATA);
		v = nest(l, NFTA_DATA_VERDICT);
		put(l, NFTA_VERDICT_CODE, &code, sizeof(code));
		put(l, NFTA_VERDICT_CHAIN, x->chain, chain);
		nest_end(l, v);
		nest_end(l, d);
	}
	if (x && x->udata_len)
		put(l, NFTA_SET_ELEM_USERDATA, x->udata, x->udata_len);
	if (x && x->objref)
		put(l, NFTA_SET_ELEM_OBJREF, x->objref, objref);
	nest_end(l, e);
	l->count++;
	return 0;
}

static bool full(const struct elist *l, size_t room)
{
	return l->count && (l->count >= ELIST_MAX ||
			    l->len + room > ELIST_MSG_BYTES);
}

bool elist_full(const struct elist *l, uint32_t klen,
		const struct elist_extra *x)
{
	return full(l, elem_room(klen, x));
}

bool elist_full_raw(const struct elist *l, const struct nlattr *e)
{
	return full(l, MNL_ALIGN(e->nla_len));
}

/* An element read from a message (want.c's), as it is. */
int elist_add_raw(struct elist *l, const struct nlattr *e)
{
	size_t len = MNL_ALIGN(e->nla_len);
	int err = grow(l, len);

	if (err)
		return err;
	memcpy(l->buf + l->len, e, e->nla_len);
	memset(l->buf + l->len + e->nla_len, 0, len - e->nla_len);
	((struct nlattr *)(l->buf + l->len))->nla_type = NLA_F_NESTED | NFTA_LIST_ELEM;
	l->len += len;
	l->count++;
	return 0;
}

static void put_strz(struct nlmsghdr *nlh, uint16_t type, const char *s)
{
	mnl_attr_put(nlh, type, strlen(s) + 1, s);
}

int elist_flush(struct elist *l, struct nbatch *b, const char *table,
		const char *set, bool add)
{
	struct nlmsghdr *nlh;
	struct nlattr *list;

	if (!l->count)
		return 0;
	nlh = nbatch_msg(b, add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM,
			 add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	if (!nlh)
		return -ENOMEM;
	put_strz(nlh, NFTA_SET_ELEM_LIST_SET, set);
	put_strz(nlh, NFTA_SET_ELEM_LIST_TABLE, table);
	list = mnl_attr_nest_start(nlh, NFTA_SET_ELEM_LIST_ELEMENTS);
	memcpy(mnl_nlmsg_get_payload_tail(nlh), l->buf, l->len);
	nlh->nlmsg_len += (uint32_t)l->len;
	mnl_attr_nest_end(nlh, list);
	nbatch_end(b, nlh);
	l->len = 0;
	l->count = 0;
	return 0;
}
