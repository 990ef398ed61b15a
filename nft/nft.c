// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The nftables backend's public face: open (create or claim the table),
 * apply, remove, sync, and reading guests and counters back.
 *
 * Every change is one batch built against the generation read just before,
 * so a concurrent change elsewhere makes the commit fail (-EAGAIN) instead
 * of interleaving.  The handle remembers what it installed, so replacing or
 * removing a guest deletes exactly its elements without reading anything;
 * after a restart, what it does not remember is read back once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <net/if.h>
#include <libnftnl/set.h>
#include <linux/rtnetlink.h>

#include "lib/link.h"
#include "lib/testing.h"
#include "nft/read.h"

/* --- the installed guests ---------------------------------------------- */

static void inst_clear(struct vnic_nft *n)
{
	unsigned int i;

	for (i = 0; i < n->ninst; i++) {
		pguest_free(n->inst[i].g);
		free(n->inst[i].ifindex);
	}
	free(n->inst);
	n->inst = NULL;
	n->ninst = n->capinst = 0;
	strmap_free(&n->inst_map);
	strmap_free(&n->nic_owner);
	for (i = 0; i < n->nnic_keys; i++)
		free(n->nic_keys[i]);
	free(n->nic_keys);
	n->nic_keys = NULL;
	n->nnic_keys = n->capnic_keys = 0;
}

/* The guest at index i claims its NICs (nic_owner). */
static int inst_claim(struct vnic_nft *n, uint32_t i)
{
	const struct pguest *g = n->inst[i].g;
	unsigned int k;
	char *key;

	for (k = 0; k < g->nn; k++) {
		if (!strmap_set(&n->nic_owner, g->nics[k].ifname, i))
			continue;
		if (n->nnic_keys == n->capnic_keys) {
			unsigned int cap = n->capnic_keys ? n->capnic_keys * 2 : 64;
			char **v = realloc(n->nic_keys, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			n->nic_keys = v;
			n->capnic_keys = cap;
		}
		key = strdup(g->nics[k].ifname);
		if (!key)
			return -ENOMEM;
		n->nic_keys[n->nnic_keys++] = key;
		if (strmap_add(&n->nic_owner, key, i))
			return -ENOMEM;
	}
	return 0;
}

/* The installed guest (known in full) that has NIC ifname, or NULL. */
static const struct installed *nic_owner(const struct vnic_nft *n,
					 const char *ifname)
{
	const struct installed *in;
	uint32_t i;
	unsigned int k;

	if (strmap_get(&n->nic_owner, ifname, &i))
		return NULL;
	in = &n->inst[i];
	for (k = 0; in->name[0] && in->g && k < in->g->nn; k++)
		if (!strcmp(in->g->nics[k].ifname, ifname))
			return in;
	return NULL;
}

static struct installed *inst_find(struct vnic_nft *n, const char *name)
{
	uint32_t i;

	if (strmap_get(&n->inst_map, name, &i) || !n->inst[i].name[0])
		return NULL;
	return &n->inst[i];
}

/* The map borrows inst[].name: the array only grows by realloc, so the
 * map is rebuilt then. */
static int inst_rehash(struct vnic_nft *n)
{
	unsigned int i;
	int err = 0;

	strmap_free(&n->inst_map);
	for (i = 0; i < n->ninst && !err; i++)
		if (n->inst[i].name[0])
			err = strmap_add(&n->inst_map, n->inst[i].name, i);
	return err;
}

static struct installed *inst_new(struct vnic_nft *n, const char *name)
{
	struct installed *in;

	if (n->ninst == n->capinst) {
		unsigned int cap = n->capinst ? n->capinst * 2 : 64;

		in = realloc(n->inst, cap * sizeof(*in));
		if (!in)
			return NULL;
		n->inst = in;
		n->capinst = cap;
		if (inst_rehash(n))
			return NULL;
	}
	in = &n->inst[n->ninst];
	memset(in, 0, sizeof(*in));
	snprintf(in->name, sizeof(in->name), "%s", name);
	if (strmap_add(&n->inst_map, in->name, n->ninst))
		return NULL;
	n->ninst++;
	return in;
}

static void inst_forget(struct vnic_nft *n, struct installed *in)
{
	pguest_free(in->g);
	free(in->ifindex);
	in->g = NULL;
	in->ifindex = NULL;
	in->name[0] = '\0';	/* a hole; the map entry no longer matches */
}

/* Order-independent digest of the whole state: XOR of these. */
uint64_t state_mix(const char *name, uint64_t digest)
{
	return vnic_hash64(&digest, sizeof(digest),
			   vnic_hash64(name, strlen(name), VNIC_HASH_INIT));
}

/* --- reading back after a restart -------------------------------------- */

/* Every element but the state's is a guest's "NAME DIGEST": another one
 * means the table is not (only) ours (check.c). */
static int guests_elem_cb(struct nftnl_set_elem *e, void *data)
{
	struct vnic_nft *n = data;
	const char *c = elem_comment(e);
	uint32_t klen = 0, key = 0;
	const void *k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &klen);
	char name[POLICY_GUEST_MAX + 1] = "";
	unsigned long long d = 0;
	struct installed *in;
	bool parsed;
	int err;

	if (k && klen == sizeof(key))
		memcpy(&key, k, sizeof(key));
	parsed = c && sscanf(c, "%64s %llx", name, &d) == 2 &&
		 strcmp(name, "libvnic-state");
	err = check_guest_elem(n, key, name, parsed);
	if (err || key == STATE_KEY)
		return err;
	in = inst_find(n, name) ? inst_find(n, name) : inst_new(n, name);
	if (!in)
		return -ENOMEM;
	in->digest = d;
	return 0;
}

/* The guests, and the digest and count the state element must have. */
static int read_guests(struct vnic_nft *n, uint64_t *digest, unsigned int *count)
{
	unsigned int i;
	int err;

	inst_clear(n);
	*digest = 0;
	*count = 0;
	err = read_elems(n, S_GUESTS, guests_elem_cb, n);
	for (i = 0; !err && i < n->ninst; i++) {
		*digest ^= state_mix(n->inst[i].name, n->inst[i].digest);
		++*count;
	}
	return err;
}

/* --- open ---------------------------------------------------------------- */

static int kernel_at_least(unsigned int maj, unsigned int min)
{
	struct utsname u;
	unsigned int a = 0, b = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &a, &b) != 2)
		return 0;
	return a > maj || (a == maj && b >= min);
}

/* Table flags and hooks cannot be probed without changing the ruleset, so
 * the kernel version tells (Documentation/filters.rst). */
static uint32_t probe(void)
{
	uint32_t f = 0;

	if (kernel_at_least(4, 11))
		f |= VNIC_NFT_FEAT_GENID;
	if (kernel_at_least(5, 12))
		f |= VNIC_NFT_FEAT_OWNER;
	if (kernel_at_least(6, 9))
		f |= VNIC_NFT_FEAT_PERSIST;
	if (kernel_at_least(5, 16))
		f |= VNIC_NFT_FEAT_EGRESS;
	if (kernel_at_least(6, 4))
		f |= VNIC_NFT_FEAT_HOOK_UPDATE;
	if (kernel_at_least(6, 5))
		f |= VNIC_NFT_FEAT_SET_SIZE;
	/* Cleared if the kernel refuses the first prefix chain. */
	if (kernel_at_least(6, 17))
		f |= VNIC_NFT_FEAT_PREFIX_HOOK;
	return f;
}

__attribute__((format(printf, 3, 4)))
static int set_err(struct vnic_nft *n, int err, const char *fmt, ...)
{
	char extack[VNIC_EXTACK_MAX];
	va_list ap;

	/* collect_errors() left the kernel's message in ctx->err.extack. */
	snprintf(extack, sizeof(extack), "%s", n->ctx->err.extack);
	n->ctx->err.extack[0] = '\0';
	va_start(ap, fmt);
	err = vnic_set_errv(n->ctx, err, VNIC_STEP_CREATE, -1, extack, fmt, ap);
	va_end(ap);
	return err;
}

static int commit(struct vnic_nft *n, struct nbatch *b, uint64_t genid,
		  struct vnic_nft_result *res)
{
	unsigned int sent = 0;
	int err = nbatch_commit(n, b, genid, &sent);

	if (res) {	/* the change's own (result_out()), never the caller's */
		res->messages += sent;
		res->batches += sent ? 1 : 0;
		res->writes = res->writes || sent;
	}
	return err;
}

/*
 * An existing table claimed (owner flag), once it was checked: nothing is
 * written to a table that is not ours.  The kernel lets a process claim a
 * table that persists and has no owner; one made without those flags
 * (VNIC_NFT_NO_OWNER) cannot be claimed.
 */
static int claim_table(struct vnic_nft *n, const struct table_info *ti)
{
	struct nbatch b;
	int err;

	/* No generation check: claiming does not depend on what else the
	 * ruleset holds (and a busy host would keep it failing). */
	nbatch_init(&b);
	err = layout_table(n, &b, false);
	if (!err)
		err = commit(n, &b, NO_GENID, NULL);
	nbatch_free(&b);
	if (err == -EPERM || err == -EBUSY)
		return set_err(n, err, "table netdev %s is owned by another process",
			       n->table);
	if (err == -EOPNOTSUPP)
		return set_err(n, err, "table netdev %s cannot be claimed: it was "
			       "made without the owner and persist flags (flags "
			       "0x%x); open it without claiming (VNIC_NFT_NO_OWNER, "
			       "vnicctl --no-owner)", n->table, ti->flags);
	if (err)
		return set_err(n, err, "claiming table netdev %s", n->table);
	return 0;
}

/* Whether opening must write: to claim the table. */
static bool open_claims(const struct vnic_nft *n, const struct table_info *ti)
{
	return ti->exists && !(n->flags & (VNIC_NFT_READ_ONLY | VNIC_NFT_NO_OWNER));
}

/* No table: no guests, and the sizes a new table gets.  A writing handle
 * makes the table with its first commit. */
static void open_empty(struct vnic_nft *n)
{
	unsigned int s;

	for (s = 0; s < S__MAX; s++)
		n->size[s] = layout_set_size(n, (enum nset)s);
	memset(n->swmasks, 0, sizeof(n->swmasks));
	memset(n->nelem, 0, sizeof(n->nelem));
	memset(n->pend, 0, sizeof(n->pend));
	inst_clear(n);
	shards_clear(n);
	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	n->pfx_shared = false;
	n->table_digest = 0;
	n->has_state = false;
	n->pending = !(n->flags & VNIC_NFT_READ_ONLY);
}

/* The table as the kernel has it, checked (check.c) and read. */
static int read_all(struct vnic_nft *n, struct table_info *ti)
{
	struct devlist names = { 0 };
	unsigned int count = 0;
	uint64_t digest = 0;
	int err = read_table(n, ti);

	if (err || !ti->exists)
		return err;
	err = read_state(n, ti);
	if (!err) {
		n->table_digest = ti->has_digest ? ti->digest : 0;
		n->has_state = ti->has_digest;
		/* Unknown counts (a table without them): from nothing; a
		 * set that is fuller than that refuses with ENFILE. */
		memset(n->nelem, 0, sizeof(n->nelem));
		memset(n->pend, 0, sizeof(n->pend));
		if (ti->has_counts)
			memcpy(n->nelem, ti->nelem, sizeof(ti->nelem));
	}
	if (!err)
		err = read_chains(n, &names);
	if (!err)
		err = check_chains(n, &names);
	devlist_clear(&names);
	if (!err)
		err = read_guests(n, &digest, &count);
	if (!err)
		err = check_state(n, ti, digest, count);
	return err;
}

/*
 * The table is read in several requests, so a commit by anyone else
 * between two of them makes the pieces disagree (a state digest that is
 * not the guests', a chain not there yet): check.c would call that damage.
 * Read again while the generation moves, a bounded number of times; the
 * error of a torn read is dropped, not the caller's earlier one.  *gen:
 * the generation before the read, then the one it saw.
 */
#define READ_TRIES 5

static int read_stable(struct vnic_nft *n, struct table_info *ti, uint32_t *gen)
{
	const struct vnic_err saved = n->ctx->err;
	unsigned int i;
	uint32_t g;
	int err, gerr;

	/* A replay (fuzzing, seeds) has no other writer, and its recorded
	 * replies follow the requests of one read. */
	if (n->replay)
		return read_all(n, ti);
	for (i = 1;; i++) {
		err = read_all(n, ti);
		gerr = nfnl_genid(n, &g);
		if (gerr)
			return err ? err : gerr;
		if (g == *gen || i == READ_TRIES)
			return err;
		*gen = g;
		n->ctx->err = saved;
	}
}

/*
 * Read (and check) the table, then claim it.  Opening writes nothing else:
 * a missing table, and the chains of asked hook prefixes, are made by the
 * first commit, in its batch, so a command that fails leaves the ruleset
 * as it was.  A claim that is not the only commit since the read (someone
 * changed the table meanwhile) makes it read again.
 */
static int open_state(struct vnic_nft *n)
{
	struct table_info ti;
	uint32_t g0 = 0, g1 = 0;
	int err = nfnl_genid(n, &g0);

	n->pending = false;
	if (!err)
		err = read_stable(n, &ti, &g0);
	if (!err && open_claims(n, &ti)) {
		err = claim_table(n, &ti);
		if (!err)
			err = nfnl_genid(n, &g1);
		if (!err && g1 - g0 > 1)
			err = read_all(n, &ti);
	}
	if (!err && !ti.exists)
		open_empty(n);
	if (!err)
		prefix_plan(n, (n->features & VNIC_NFT_FEAT_PREFIX_HOOK) &&
			       !(n->flags & VNIC_NFT_READ_ONLY));
	n->stale = err != 0;
	if (err && !n->ctx->err.err)
		set_err(n, err, "reading table netdev %s", n->table);
	return err;
}

/* The handle; replay (fuzzing, seeds) stands in for the kernel or records. */
static int nft_open(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
		    struct nfnl_replay *replay, struct vnic_nft **out)
{
	const struct vnic_nft_opts o = *opts;
	struct vnic_nft *n;
	int err;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->ctx = ctx;
	n->replay = replay;
	n->flags = o.flags;
	n->features = probe();
	n->capacity = o.capacity ? o.capacity : NFT_DEFAULT_CAPACITY;
	n->ifsock = -1;
	snprintf(n->table, sizeof(n->table), "%s", o.table ? o.table : NFT_DEFAULT_TABLE);
	err = prefix_ask(n, o.hook_prefixes);
	if (err) {
		free(n);
		return err;
	}
	err = replay && !replay->record ? 0 : nfnl_open(n);
	if (err)
		vnic_set_err(ctx, err, VNIC_STEP_SOCKET, -1, NULL, "nfnetlink socket");
	if (!err)
		err = open_state(n);
	if (err) {
		vnic_nft_close(n);
		return err;
	}
	*out = n;
	return 0;
}

VNIC_EXPORT int vnic_nft_open(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
			      struct vnic_nft **out)
{
	struct vnic_nft_opts o;
	int err;

	if (!ctx || !out)
		return -EINVAL;
	vnic_clear_err(ctx);
	err = vnic_opts_copy(&o, sizeof(o), opts);
	if (err)
		return vnic_set_err(ctx, err, VNIC_STEP_VALIDATE, -1, NULL, "vnic_nft_opts");
	if (o.table && !vnic_valid_tag(o.table, 32))
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "table name '%s' must be 1..32 of [A-Za-z0-9_.-]",
				    o.table);
	if (o.capacity > NFT_MAX_CAPACITY)
		return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
				    "capacity %u is over %u NICs", o.capacity,
				    NFT_MAX_CAPACITY);
	return vnic_err_fallback(ctx, nft_open(ctx, &o, NULL, out),
				 VNIC_STEP_SOCKET, "the nftables handle");
}

int nft_open_replay(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
		    struct nfnl_replay *replay, struct vnic_nft **out)
{
	vnic_clear_err(ctx);
	return nft_open(ctx, opts, replay, out);
}

VNIC_EXPORT int vnic_nft_set_before_commit(struct vnic_nft *n, void (*fn)(void *arg),
					   void *arg)
{
	if (!n)
		return -EINVAL;
	n->before_commit = fn;
	n->before_commit_arg = arg;
	return 0;
}

VNIC_EXPORT int vnic_nft_set_batch_tap(struct vnic_nft *n,
				       void (*fn)(void *arg, const void *buf,
						  size_t len),
				       void *arg)
{
	if (!n)
		return -EINVAL;
	n->batch_tap = fn;
	n->batch_tap_arg = arg;
	return 0;
}

VNIC_EXPORT void vnic_nft_close(struct vnic_nft *n)
{

	if (!n)
		return;
	inst_clear(n);
	shards_clear(n);
	guest_adds_drop(n);
	devlist_clear(&n->customs);
	devlist_clear(&n->tochains);
	layout_drop_devs(n);
	if (n->nl)
		mnl_socket_close(n->nl);
	if (n->ifsock >= 0)
		close(n->ifsock);
	free(n);
}

VNIC_EXPORT uint32_t vnic_nft_features(const struct vnic_nft *n)
{
	return n ? n->features : 0;
}

/* --- the NICs' ifindexes ---------------------------------------------- */

/* Every NIC of p, one batch of RTM_GETLINK: ifi[off[g] + k] is guest g's
 * NIC k.  A NIC that does not exist fails here, before anything is sent. */
void resolved_free(struct resolved *r)
{
	free(r->ifi);
	free(r->off);
}

static int ifindex_sock_fn(void *arg)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	*(int *)arg = fd;
	return fd < 0 ? -errno : 0;
}

/* The socket for SIOCGIFINDEX/SIOCGIFNAME, made in the context's netns. */
static int ifsock_get(struct vnic_nft *n)
{
	int err = 0;

	if (n->ifsock < 0)
		err = vnic_in_netns(n->ctx->netns_fd, ifindex_sock_fn, &n->ifsock);
	if (err)
		return vnic_set_err(n->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "socket for interface lookups");
	return 0;
}

/*
 * Every NIC of p by name: SIOCGIFINDEX on a socket of the context's
 * namespace costs a name lookup, where an RTM_GETLINK reply carries the
 * whole link (a sync of 100 unchanged guests spent most of its time there).
 * A NIC that does not exist fails here, before anything is sent.
 */
int resolve_policy(struct vnic_nft *n, const struct vnic_policy *p,
		   struct resolved *r)
{
	unsigned int gi, k, total = 0;
	int err = 0;

	r->off = calloc(p->n + 1, sizeof(*r->off));
	for (gi = 0; r->off && gi < p->n; gi++) {
		r->off[gi] = total;
		total += p->g[gi]->nn;
	}
	r->ifi = calloc(total + 1, sizeof(*r->ifi));
	if (!r->off || !r->ifi)
		return -ENOMEM;
	r->off[p->n] = total;
	err = ifsock_get(n);
	if (err)
		return err;
	for (gi = 0; gi < p->n; gi++)
		for (k = 0; k < p->g[gi]->nn; k++) {
			struct ifreq ifr;

			memset(&ifr, 0, sizeof(ifr));
			memcpy(ifr.ifr_name, p->g[gi]->nics[k].ifname, IFNAMSIZ);
			n->ctx->stats.ioctls++;
			if (ioctl(n->ifsock, SIOCGIFINDEX, &ifr) < 0)
				return vnic_set_err(n->ctx, -errno, VNIC_STEP_VALIDATE,
						    -1, NULL, "guest %s: NIC %s",
						    p->g[gi]->name,
						    p->g[gi]->nics[k].ifname);
			r->ifi[r->off[gi] + k] = ifr.ifr_ifindex;
		}
	return 0;
}

/* A guest's digest covers its NICs' ifindexes too: a NIC deleted and made
 * again under its name is a change (its elements are keyed by ifindex). */
uint64_t guest_digest(const struct pguest *g, const int *ifi)
{
	return vnic_hash64(ifi, g->nn * sizeof(*ifi), pguest_digest(g));
}

/* --- changes ------------------------------------------------------------ */

struct change {
	struct vnic_nft *n;
	struct nbatch b;
	uint64_t digest;		/* of the state after the change */
	struct vnic_nft_result *res;
};

/* Purge a guest the handle knows only by name (installed before a
 * restart): its ifindexes are the drops map's elements naming its counter;
 * every set element keyed by one of them goes. */
struct purge {
	struct change *ch;
	const char *ctr;
	int *ifi;
	unsigned int nifi, cap;
	struct nftnl_set *del;
	enum nset set;			/* of del */
};

static int drops_cb(struct nftnl_set_elem *e, void *data)
{
	struct purge *pu = data;
	const char *obj = nftnl_set_elem_get_str(e, NFTNL_SET_ELEM_OBJREF);
	uint32_t len = 0;
	const uint32_t *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);

	if (!obj || !key || len < 4 || strcmp(obj, pu->ctr))
		return 0;
	if (pu->nifi == pu->cap) {
		unsigned int cap = pu->cap ? pu->cap * 2 : 16;
		int *p = realloc(pu->ifi, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		pu->ifi = p;
		pu->cap = cap;
	}
	pu->ifi[pu->nifi++] = (int)*key;
	return 0;
}

static int purge_elem_cb(struct nftnl_set_elem *e, void *data)
{
	struct purge *pu = data;
	uint32_t len = 0, k;
	const uint8_t *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
	struct nftnl_set_elem *d;
	unsigned int i;

	if (!key || len < 4)
		return 0;
	memcpy(&k, key, 4);
	for (i = 0; i < pu->nifi && pu->ifi[i] != (int)k; i++)
		;
	if (i == pu->nifi)
		return 0;
	d = nftnl_set_elem_alloc();
	if (!d)
		return -ENOMEM;
	nftnl_set_elem_set(d, NFTNL_SET_ELEM_KEY, key, len);
	nftnl_set_elem_add(pu->del, d);
	pu->ch->n->pend[pu->set]--;
	return 0;
}

static int purge_set(struct purge *pu, enum nset s)
{
	char name[16];
	struct nftnl_set_elems_iter *it;
	struct nlmsghdr *nlh;
	bool any;
	int err;

	pu->del = nftnl_set_alloc();
	if (!pu->del)
		return -ENOMEM;
	pu->set = s;
	nftnl_set_set_str(pu->del, NFTNL_SET_TABLE, pu->ch->n->table);
	nftnl_set_set_str(pu->del, NFTNL_SET_NAME, set_name(s, name, sizeof(name)));
	err = read_elems(pu->ch->n, s, purge_elem_cb, pu);
	/* A mask's set made earlier in this batch is not in the kernel yet
	 * and holds none of the guest's elements. */
	if (err == -ENOENT && s >= S__MAX)
		err = 0;
	it = err ? NULL : nftnl_set_elems_iter_create(pu->del);
	any = it && nftnl_set_elems_iter_next(it);
	nftnl_set_elems_iter_destroy(it);
	if (any) {
		nlh = nbatch_msg(&pu->ch->b, NFT_MSG_DELSETELEM, 0);
		if (nlh) {
			nftnl_set_elems_nlmsg_build_payload(nlh, pu->del);
			nbatch_end(&pu->ch->b, nlh);
		} else {
			err = -ENOMEM;
		}
	}
	nftnl_set_free(pu->del);
	pu->del = NULL;
	return err;
}

/*
 * A purged guest's NICs, known by ifindex, leave the shared chains under
 * the names they have now.  A NIC gone since has left its chain by itself
 * (the kernel unhooks a device that goes); only hooked names are removed.
 */
static int unhook_ifindexes(struct vnic_nft *n, const int *ifi, unsigned int k)
{
	char names[k + 1][IFNAMSIZ];
	const char *devs[k + 1];
	unsigned int i, m = 0, c;
	int err = k ? ifsock_get(n) : 0;

	for (i = 0; !err && i < k; i++) {
		struct ifreq ifr = { .ifr_ifindex = ifi[i] };

		n->ctx->stats.ioctls++;
		if (ioctl(n->ifsock, SIOCGIFNAME, &ifr) < 0)
			continue;
		memcpy(names[m], ifr.ifr_name, IFNAMSIZ);
		devs[m] = names[m];
		m++;
	}
	for (c = 0; !err && m && c < C__MAX; c++)
		err = layout_chain_devs(n, (enum nchain)c, devs, m, true);
	return err;
}

static int purge_guest(struct change *ch, const char *name, unsigned int keep)
{
	struct pguest g = { 0 };
	char ctr[80], chain[80];
	struct purge pu = { .ch = ch, .ctr = ctr };
	unsigned int s;
	int err;

	guest_names(name, ctr, chain, sizeof(ctr));
	err = read_elems(ch->n, S_CTR, drops_cb, &pu);
	for (s = 0; !err && s < NSETS; s++)
		if (s != S_GUESTS && s != S_L2OK &&
		    (s < S__MAX || swmask_ready(ch->n, s - S__MAX)))
			err = purge_set(&pu, (enum nset)s);
	if (!err)
		err = unhook_ifindexes(ch->n, pu.ifi, pu.nifi);
	free(pu.ifi);
	/* Its to-guest chain goes whole: its old devices are unknown. */
	if (!err)
		err = guest_del_to_chain(ch->n, &ch->b, name);
	if (err)
		return err;
	snprintf(g.name, sizeof(g.name), "%s", name);
	g.nr = devlist_has(&ch->n->customs, chain);
	return guest_put(ch->n, &ch->b, &g, NULL, 0, false, keep & ~GP_KEEP_TO);
}

static int drop_guest(struct change *ch, struct installed *in, unsigned int keep)
{
	int err;

	if (in->g)
		err = guest_put(ch->n, &ch->b, in->g, in->ifindex, in->digest, false,
				keep);
	else
		err = purge_guest(ch, in->name, keep);
	if (!err) {
		ch->digest ^= state_mix(in->name, in->digest);
		inst_forget(ch->n, in);
	}
	return err;
}

static int add_guest(struct change *ch, const struct pguest *g, const int *ifi,
		     unsigned int keep)
{
	uint64_t d = guest_digest(g, ifi);
	struct installed *in;
	int *copy = calloc(g->nn + 1, sizeof(*copy));
	int err = copy ? 0 : -ENOMEM;

	if (!err)
		err = guest_put(ch->n, &ch->b, g, ifi, d, true, keep);
	in = err ? NULL : inst_new(ch->n, g->name);
	if (!err && !in)
		err = -ENOMEM;
	if (err) {
		free(copy);
		return err;
	}
	memcpy(copy, ifi, g->nn * sizeof(*copy));
	in->g = pguest_dup(g);
	in->ifindex = copy;
	in->digest = d;
	ch->digest ^= state_mix(g->name, d);
	return in->g ? inst_claim(ch->n, (uint32_t)(in - ch->n->inst)) : -ENOMEM;
}

static bool same_to_devs(const struct vnic_nft *n, const struct pguest *a,
			 const struct pguest *b)
{
	unsigned int na, nb, i;
	const char **da = guest_to_devs(n, a, &na), **db = guest_to_devs(n, b, &nb);
	bool same = da && db && na == nb;

	for (i = 0; same && i < na; i++)
		same = !strcmp(da[i], db[i]);
	free(da);
	free(db);
	return same;
}

/* What a replacement of in by g keeps: the counter always, the custom
 * chain if both have one, the to-guest chain if its devices stay. */
static unsigned int keep_of(struct vnic_nft *n, const struct installed *in,
			    const struct pguest *g)
{
	char ctr[80], chain[80];
	unsigned int keep = GP_KEEP_COUNTER;
	bool old_chain;

	guest_names(g->name, ctr, chain, sizeof(ctr));
	old_chain = in->g ? in->g->nr > 0 : devlist_has(&n->customs, chain);
	if (old_chain && g->nr)
		keep |= GP_KEEP_CHAIN;
	if (in->g && same_to_devs(n, in->g, g))
		keep |= GP_KEEP_TO;
	return keep;
}

/*
 * A change counts into a whole struct of ours (res NULL: the caller wants
 * none, and no generation is read for it); the caller's gets the fields it
 * knows, on success only (result_out()).
 */
static void result_reset(struct vnic_nft_result *res)
{
	if (!res)
		return;
	memset(res, 0, sizeof(*res));
	res->sz = sizeof(*res);
}

static int result_check(struct vnic_nft *n, const struct vnic_nft_result *res)
{
	if (!n)
		return -EINVAL;
	return res ? vnic_out_check(n->ctx, res, VNIC_SZ_0_1(vnic_nft_result, writes),
				    "vnic_nft_result") : 0;
}

static int result_out(struct vnic_nft_result *res, const struct vnic_nft_result *r,
		      int err)
{
	if (!err && res)
		vnic_out_copy(res, r, sizeof(*r));
	return err;
}

static int change_begin(struct vnic_nft *n, struct change *ch,
			struct vnic_nft_result *res)
{
	memset(ch, 0, sizeof(*ch));
	ch->n = n;
	ch->digest = n->table_digest;
	ch->res = res;
	nbatch_init(&ch->b);
	result_reset(res);
	return 0;
}

/*
 * Sets the change would fill past their size grow first, in a commit of
 * their own: a new size takes effect at commit, so elements of the same
 * batch would still meet the old one.  That commit carries the generation
 * the change was built on and the change the one after it, so a change by
 * anyone else in between still fails the change.
 */
/* The size set s needs after the change being built: its size doubled
 * until the elements fit (0: unsized). */
static uint32_t fit_size(const struct vnic_nft *n, enum nset s)
{
	/* A mask's set holds at most every NIC: drops has them all. */
	unsigned int c = s < S__MAX ? s : S_CTR;
	int64_t need = (int64_t)n->nelem[c] + n->pend[c] + (s == S_GUESTS);
	uint64_t sz = n->size[s];

	while (sz && need > 0 && sz < (uint64_t)need)
		sz *= 2;
	return sz > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)sz;
}

static int grow_sets(struct change *ch, uint64_t *genid)
{
	struct vnic_nft *n = ch->n;
	uint32_t size[NSETS], now;
	unsigned int s, k = 0;
	struct nbatch b;
	int err = 0;

	nbatch_init(&b);
	for (s = 0; s < NSETS && !err; s++) {
		size[s] = fit_size(n, (enum nset)s);
		if (size[s] == n->size[s])
			continue;
		err = layout_set(n, &b, (enum nset)s, size[s]);
		k++;
	}
	if (!err && k)
		err = commit(n, &b, *genid, ch->res);
	nbatch_free(&b);
	if (err || !k)
		return err;
	memcpy(n->size, size, sizeof(size));
	err = nfnl_genid(n, &now);
	if (!err && *genid != NO_GENID && now != (uint32_t)(*genid + 1))
		err = -ERESTART;	/* someone else's commit came between */
	if (*genid != NO_GENID)
		*genid = now;
	return err;
}

static void counts_done(struct vnic_nft *n, bool committed)
{
	unsigned int s;

	for (s = 0; s < NSETS; s++) {
		if (committed && s < S__MAX)
			n->nelem[s] = (uint32_t)((int64_t)n->nelem[s] + n->pend[s]);
		n->pend[s] = 0;
	}
}

/*
 * A table that does not exist yet is made in the change's batch: the table
 * and its sets, sized for what the change adds, go before the change's
 * messages.  NLM_F_EXCL and the generation make a table someone else made
 * meanwhile fail the commit rather than be taken over.
 */
static int prepend_table(struct change *ch)
{
	struct vnic_nft *n = ch->n;
	struct nbatch head;
	unsigned int s;
	int err;

	for (s = 0; s < S__MAX; s++)
		n->size[s] = fit_size(n, (enum nset)s);
	nbatch_init(&head);
	err = layout_table(n, &head, true);
	if (!err)
		err = layout_skeleton(n, &head);
	if (!err)
		err = nbatch_append(&head, &ch->b);
	if (!err) {
		nbatch_free(&ch->b);
		ch->b = head;
	} else {
		nbatch_free(&head);
	}
	return err;
}

/* The chains of the asked prefixes, after the change's messages (their
 * rules jump to the switch chains the change may make). */
static int append_prefixes(struct change *ch, unsigned int *count)
{
	return prefix_build(ch->n, &ch->b, count);
}

/* Commit: the table if it is new, the guest changes, the hooks, the prefix
 * chains, the new state element, all in one batch (after the sets of an
 * existing table grew if they must).  On failure the kernel kept the old
 * state: so does the handle, by reading it back. */
static int change_end(struct change *ch, int err, uint64_t genid)
{
	struct vnic_nft *n = ch->n;
	bool wrote = ch->b.msgs;
	unsigned int npfx = 0;

	if (!err && wrote) {
		err = guest_adds_flush(n, &ch->b);
		if (!err)
			err = layout_flush_devs(n, &ch->b);
		if (!err)
			err = append_prefixes(ch, &npfx);
		if (!err && n->has_state)
			err = state_elem(n, &ch->b, 0, false);
		if (!err)
			err = state_elem(n, &ch->b, ch->digest, true);
		if (!err && n->pending)
			err = prepend_table(ch);
		else if (!err)
			err = grow_sets(ch, &genid);
		if (!err && n->before_commit)
			n->before_commit(n->before_commit_arg);
		if (!err)
			err = commit(n, &ch->b, genid, ch->res);
		if (npfx && (err == -EINVAL || err == -EOPNOTSUPP)) {
			/* No NFTA_DEVICE_PREFIX here: the caller builds the
			 * change again with every NIC hooked by name. */
			n->features &= ~VNIC_NFT_FEAT_PREFIX_HOOK;
			n->pfx_refused = true;
			n->ctx->err.extack[0] = '\0';
		}
		if (err == -EEXIST && n->pending) {
			set_err(n, err, "table netdev %s was made by someone else "
				"while this commit was built", n->table);
		} else if (err == -EEXIST) {
			/* A guest read back is known by name only, so a NIC it
			 * has is not refused up front: its elements are. */
			set_err(n, err, "commit to table netdev %s: an element of "
				"this change exists already: a NIC of the policy "
				"belongs to another installed guest", n->table);
		} else if (err == -ERESTART || err == -EINTR) {
			err = -EAGAIN;
			set_err(n, err, "the ruleset of table %s changed while this "
				"commit was built", n->table);
		} else if (err == -ENFILE) {
			set_err(n, err, "a set of table netdev %s is full: its size "
				"could not be raised (a kernel before 6.5, or "
				"elements added by another process)", n->table);
		} else if (err) {
			set_err(n, err, "commit to table netdev %s", n->table);
		}
	}
	nbatch_free(&ch->b);
	guest_adds_drop(n);
	layout_drop_devs(n);
	counts_done(n, !err && wrote);
	if (err) {
		open_state(n);	/* the kernel's state is the truth */
		return err;
	}
	if (wrote) {
		prefix_done(n, true);
		n->pending = false;
	}
	n->table_digest = ch->digest;
	n->has_state = n->has_state || wrote;
	if (ch->res)
		nfnl_genid(n, &ch->res->genid);
	return 0;
}

/* A NIC may belong to one guest: p may not claim the NICs of an installed
 * guest it does not replace. */
/* A NIC of p that an installed guest p does not replace has: refused.
 * Looked up per NIC of p, so the cost does not grow with the table. */
static int check_claims(struct vnic_nft *n, const struct vnic_policy *p)
{
	unsigned int i, k;
	uint32_t gi;

	for (i = 0; i < p->n; i++)
		for (k = 0; k < p->g[i]->nn; k++) {
			const char *nic = p->g[i]->nics[k].ifname;
			const struct installed *in = nic_owner(n, nic);

			if (in && policy_find(p, in->name, &gi))
				return vnic_set_err(n->ctx, -EEXIST, VNIC_STEP_VALIDATE,
						    -1, NULL, "NIC %s belongs to installed "
						    "guest %s", nic, in->name);
		}
	return 0;
}

/* Add what is new, replace what changed, leave what is equal. */
static int apply_guests(struct change *ch, const struct vnic_policy *p,
			const struct resolved *r, struct vnic_nft_result *res)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < p->n && !err; i++) {
		const struct pguest *g = p->g[i];
		const int *ifi = &r->ifi[r->off[i]];
		struct installed *in = inst_find(ch->n, g->name);
		unsigned int keep = 0;

		if (in && in->digest == guest_digest(g, ifi)) {
			if (res)
				res->guests_unchanged++;
			continue;
		}
		if (in) {
			keep = keep_of(ch->n, in, g);
			err = drop_guest(ch, in, keep);
		}
		if (!err)
			err = add_guest(ch, g, ifi, keep);
		if (!err && res) {
			if (in)
				res->guests_changed++;
			else
				res->guests_added++;
		}
	}
	return err;
}

static uint64_t policy_digest(const struct vnic_policy *p, const struct resolved *r)
{
	uint64_t d = 0;
	unsigned int i;

	for (i = 0; i < p->n; i++)
		d ^= state_mix(p->g[i]->name,
			       guest_digest(p->g[i], &r->ifi[r->off[i]]));
	return d;
}

static int prepare(struct vnic_nft *n, const struct vnic_policy *p,
		   struct vnic_nft_result *res, struct resolved *r, uint32_t *genid)
{
	int err;

	memset(r, 0, sizeof(*r));
	if (!n || !p)
		return -EINVAL;
	err = vnic_policy_check(p);
	if (!err && (n->flags & VNIC_NFT_READ_ONLY))
		err = vnic_set_err(n->ctx, -EROFS, VNIC_STEP_VALIDATE, -1, NULL,
				   "table %s was opened read-only", n->table);
	/* A table missing at open may have been made since: read it. */
	if (!err && (n->stale || n->pending))
		err = open_state(n);
	if (!err)
		err = check_claims(n, p);
	if (!err)
		err = resolve_policy(n, p, r);
	if (!err)
		n->change_nics = r->off[p->n];
	if (!err)
		err = nfnl_genid(n, genid);
	return err;
}

/* A change whose prefix chains the kernel refused is built again without
 * them (once: the feature is off by then). */
static bool redo(struct vnic_nft *n, int err)
{
	if (!err || !n || !n->pfx_refused)
		return false;
	n->pfx_refused = false;
	vnic_clear_err(n->ctx);
	return true;
}

static int apply_once(struct vnic_nft *n, const struct vnic_policy *p,
		      struct vnic_nft_result *res)
{
	struct resolved r;
	struct change ch;
	uint32_t genid = 0;
	int err = prepare(n, p, res, &r, &genid);

	if (!err) {
		change_begin(n, &ch, res);
		err = apply_guests(&ch, p, &r, res);
		err = change_end(&ch, err, genid);
	}
	resolved_free(&r);
	return err;
}

VNIC_EXPORT int vnic_nft_apply(struct vnic_nft *n, const struct vnic_policy *p,
			       struct vnic_nft_result *res)
{
	struct vnic_nft_result r, *rp = res ? &r : NULL;
	int err = result_check(n, res);

	if (err)
		return err;
	err = apply_once(n, p, rp);
	if (redo(n, err))
		err = apply_once(n, p, rp);
	if (err)
		err = vnic_err_fallback(n->ctx, err, VNIC_STEP_DUMP,
					"applying the policy");
	return result_out(res, rp, err);
}

static int remove_once(struct vnic_nft *n, const char *const *guests,
		       unsigned int count, struct vnic_nft_result *res)
{
	struct change ch;
	uint32_t genid = 0;
	unsigned int i;
	int err = 0;

	if (!n || (count && !guests))
		return -EINVAL;
	vnic_clear_err(n->ctx);
	if (n->flags & VNIC_NFT_READ_ONLY)
		return vnic_set_err(n->ctx, -EROFS, VNIC_STEP_VALIDATE, -1, NULL,
				    "table %s was opened read-only", n->table);
	if ((n->stale || n->pending) && (err = open_state(n)))
		return err;
	for (i = 0; i < count; i++)
		if (!guests[i] || !inst_find(n, guests[i]))
			return vnic_set_err(n->ctx, -ENOENT, VNIC_STEP_VALIDATE, -1,
					    NULL, "guest %s is not installed",
					    guests[i] ? guests[i] : "(null)");
	err = nfnl_genid(n, &genid);
	if (err)
		return err;
	change_begin(n, &ch, res);
	for (i = 0; i < count && !err; i++) {
		struct installed *in = inst_find(n, guests[i]);

		if (!in)
			continue;	/* named twice */
		err = drop_guest(&ch, in, 0);
		if (!err && res)
			res->guests_removed++;
	}
	return change_end(&ch, err, genid);
}

VNIC_EXPORT int vnic_nft_remove(struct vnic_nft *n, const char *const *guests,
				unsigned int count, struct vnic_nft_result *res)
{
	struct vnic_nft_result r, *rp = res ? &r : NULL;
	int err = result_check(n, res);

	if (err)
		return err;
	err = remove_once(n, guests, count, rp);
	if (redo(n, err))
		err = remove_once(n, guests, count, rp);
	if (err)
		err = vnic_err_fallback(n->ctx, err, VNIC_STEP_DUMP,
					"removing guests");
	return result_out(res, rp, err);
}

static int sync_once(struct vnic_nft *n, const struct vnic_policy *p,
		     struct vnic_nft_result *res)
{
	struct table_info ti;
	struct resolved r;
	struct change ch;
	uint32_t genid = 0, gi;
	unsigned int i;
	int err = prepare(n, p, res, &r, &genid);

	if (!err)
		err = read_state(n, &ti);
	if (err)
		goto out;
	/* One read, and nothing to write when the digests agree. */
	if (ti.has_digest && ti.digest == policy_digest(p, &r)) {
		result_reset(res);
		if (res) {
			res->guests_unchanged = p->n;
			res->genid = genid;
		}
		goto out;
	}
	if (!ti.has_digest || ti.digest != n->table_digest)
		err = open_state(n);	/* changed behind our back */
	change_begin(n, &ch, res);
	for (i = 0; !err && i < n->ninst; i++) {
		struct installed *in = &n->inst[i];

		if (!in->name[0] || !policy_find(p, in->name, &gi))
			continue;
		err = drop_guest(&ch, in, 0);
		if (!err && res)
			res->guests_removed++;
	}
	if (!err)
		err = apply_guests(&ch, p, &r, res);
	err = change_end(&ch, err, genid);
out:
	resolved_free(&r);
	return err;
}

VNIC_EXPORT int vnic_nft_sync(struct vnic_nft *n, const struct vnic_policy *p,
			      struct vnic_nft_result *res)
{
	struct vnic_nft_result r, *rp = res ? &r : NULL;
	int err = result_check(n, res);

	if (err)
		return err;
	err = sync_once(n, p, rp);
	if (redo(n, err))
		err = sync_once(n, p, rp);
	if (err)
		err = vnic_err_fallback(n->ctx, err, VNIC_STEP_DUMP,
					"syncing the policy");
	return result_out(res, rp, err);
}

VNIC_EXPORT int vnic_nft_guests(struct vnic_nft *n, char ***names, unsigned int *count)
{
	unsigned int i, k = 0;
	size_t bytes = 0;
	char **out, *s;

	if (!n || !names || !count)
		return -EINVAL;
	for (i = 0; i < n->ninst; i++)
		if (n->inst[i].name[0])
			bytes += strlen(n->inst[i].name) + 1, k++;
	out = malloc((k + 1) * sizeof(*out) + bytes);
	if (!out)
		return -ENOMEM;
	s = (char *)(out + k + 1);
	for (i = 0, k = 0; i < n->ninst; i++) {
		if (!n->inst[i].name[0])
			continue;
		out[k++] = strcpy(s, n->inst[i].name);
		s += strlen(s) + 1;
	}
	out[k] = NULL;
	*names = out;
	*count = k;
	return 0;
}

VNIC_EXPORT int vnic_nft_counter(struct vnic_nft *n, const char *guest,
				 uint64_t *packets, uint64_t *bytes)
{
	char ctr[80], chain[80];
	uint64_t p, b;
	int err;

	if (!n || !guest || !packets || !bytes)
		return -EINVAL;
	vnic_clear_err(n->ctx);
	guest_names(guest, ctr, chain, sizeof(ctr));
	err = read_counter(n, ctr, &p, &b);
	if (err)
		return vnic_set_err(n->ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "counter of guest %s", guest);
	*packets = p;
	*bytes = b;
	return 0;
}
