/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nftables backend internals (see Documentation/filters.rst). */
#ifndef VNIC_NFT_INTERNAL_H
#define VNIC_NFT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include "nft/nft.h"

#include "lib/internal.h"
#include "lib/strmap.h"
#include "policy/model.h"

#ifndef NFT_TABLE_F_PERSIST
#define NFT_TABLE_F_PERSIST 0x4
#endif
/* A hook on every device whose name starts with it (6.17), newer than
 * Debian 12's headers. */
#ifndef NFTA_DEVICE_PREFIX
#define NFTA_DEVICE_PREFIX 2
#endif

struct nftnl_set;

#define NFT_DEFAULT_TABLE "vnic"
#define NFT_DEFAULT_CAPACITY 4096	/* NICs: about 600 KiB of buckets */
#define NFT_MAX_CAPACITY (1u << 20)	/* about 160 MiB of buckets */
/* Every VNIC_NFT_FEAT_* bit (vnic_nft_opts.features). */
#define NFT_FEAT_ALL ((VNIC_NFT_FEAT_SET_SIZE << 1) - 1)

/* nftables' datatype ids (src/datatype.h), for set key types nft(8) can
 * print; concatenations shift each by 6 bits. */
enum {
	DT_INTEGER = 4, DT_IPADDR = 7, DT_IP6ADDR = 8, DT_ETHERADDR = 9,
	DT_MARK = 19, DT_IFINDEX = 20,
};

/* The sets and maps of the table, in creation order. */
enum nset {
	S_PROMISC,			/* ifindex: no-promisc on (veth, tap) */
	S_MAC,				/* ifindex . MAC */
	S_IP4,				/* ifindex . IPv4 */
	S_IP6,				/* ifindex . IPv6 */
	S_CTR,				/* ifindex : counter (drop counters) */
	S_CUSTOM,			/* ifindex : verdict (jump to the guest chain) */
	S_GUESTS,			/* guest-name hash, comment "NAME DIGEST" */
	S_L2OK,				/* constant: the ethertypes l2-allow keeps */
	S__MAX,
};

/* A set, as schema.c describes it and layout_set() makes it. */
struct nset_desc {
	const char *name;
	uint32_t key_type, key_len;
	uint32_t flags;			/* NFT_SET_MAP, NFT_SET_OBJECT, ... */
	uint32_t data_type;		/* maps: NFT_DATA_VERDICT */
	uint32_t obj_type;		/* object maps: NFT_OBJECT_* */
	const uint8_t *udata;		/* what nft(8) reads: typeof, byte order */
	uint32_t udata_len;
	const uint8_t *elems;		/* constant sets: nelems keys of key_len */
	uint32_t nelems;
	const char *render_type;	/* "iface_index . ether_addr" */
	uint32_t per_nic;		/* size: elements per NIC (0: unsized) */
};
extern const struct nset_desc nset_descs[S__MAX];
/* schema.c: set s's description (a mask's set: the one they share). */
const struct nset_desc *nset_desc(enum nset s);

/* The base chains, each for a hook and the NIC kinds that use it. */
enum nchain {
	C_IN,		/* ingress of veth host ends and taps: from the guest */
	C_EG,		/* egress of macvtaps and macvlans: from the guest */
	C__MAX,
	/* To the guest (egress of veth host ends and taps): one base chain
	 * per guest, "to_GUEST", made and removed with it.  A shared one
	 * would need an update adding the same devices as the update of "in",
	 * and a transaction may add a device name to one existing netdev
	 * chain of a table only (nf_tables_updchain()). */
};
extern const char *const nchain_names[C__MAX];
uint32_t nchain_hook(enum nchain c);

/* The from-guest switches (all of VNIC_SW_* but no-promisc, which is
 * to the guest).  Each mask in use has a set of the NICs with that mask,
 * "sw_7f", and a regular chain per kind of base chain, "sw_in_7f", with the
 * rules of those switches; every base chain has a rule per mask jumping
 * to its chain for the NICs in its set. */
#define SW_FROM		((uint32_t)VNIC_SW_CLEAN & ~(uint32_t)VNIC_SW_NO_PROMISC)
/* Set indexes past the fixed ones: the set of the NICs of mask m, "sw_7f". */
#define S_MASK(m)	((enum nset)(S__MAX + ((m) & SW_FROM)))
#define NSETS		(S__MAX + SW_FROM + 1)

/* A growing buffer of one NFNL batch. */
struct nbatch {
	char *buf;
	size_t len, cap;
	size_t zeroed;			/* [len, zeroed) is all zero */
	size_t head;			/* where the first message is */
	uint32_t seq;
	unsigned int msgs;
	struct nlmsghdr *cur;
};

/* elist.c: set elements encoded as they go on the wire, gathered for one
 * set; out as one message of at most ELIST_MAX elements. */
#define ELIST_MAX 256
struct elist {
	char *buf;
	size_t len, cap;
	unsigned int count;
};
/* What an element carries besides its key (NULL: nothing). */
struct elist_extra {
	const char *objref;		/* a counter's name */
	const char *chain;		/* a jump to it */
	const void *udata;
	uint32_t udata_len;
};
/* 0, -ENOMEM, or 1 when l is full (nothing added: flush l first). */
int elist_add(struct elist *l, const void *key, uint32_t klen,
	      const struct elist_extra *x);
/* The element would not fit in l's message: flush l first. */
bool elist_full(const struct elist *l, uint32_t klen,
		const struct elist_extra *x);
/* The same for an element e already encoded (a NFTA_LIST_ELEM nest). */
int elist_add_raw(struct elist *l, const struct nlattr *e);
bool elist_full_raw(const struct elist *l, const struct nlattr *e);
/* l's elements as one message into b; l is empty after. */
int elist_flush(struct elist *l, struct nbatch *b, const char *table,
		const char *set, bool add);
void elist_free(struct elist *l);

/* Device names of one base chain, with O(1) membership. */
struct devlist {
	char **names;
	bool *live;			/* false: removed since */
	unsigned int n, cap;
	unsigned int ndead;		/* of n, not live */
	struct strmap map;
};

/* devlist.c */
void devlist_clear(struct devlist *d);
bool devlist_has(const struct devlist *d, const char *name);
int devlist_add(struct devlist *d, const char *name);
void devlist_del(struct devlist *d, const char *name);
/* Drop the dead names once they are many (between batches only). */
void devlist_compact(struct devlist *d);
struct nftnl_chain;
int chain_set_devices(struct nftnl_chain *c, const char **devs);
int chain_parsed_devs(const struct nlmsghdr *nlh, const struct nftnl_chain *c);

/* setattr.c: the table, name and family of an object of libnftnl's, and
 * an expression's string: 0, or -ENOMEM where libnftnl's copy failed
 * (the message would lack the attribute).  name NULL: none (a dump). */
struct nftnl_table;
struct nftnl_rule;
struct nftnl_obj;
struct nftnl_expr;
int table_id(struct nftnl_table *t, const char *name);
int chain_id(struct nftnl_chain *c, const char *table, const char *name);
int rule_id(struct nftnl_rule *r, const char *table, const char *chain);
int set_id(struct nftnl_set *s, const char *table, const char *name);
int obj_id(struct nftnl_obj *o, const char *table, const char *name);
int expr_str(struct nftnl_expr *e, uint16_t attr, const char *s);
/* libnftnl's nftnl_*_nlmsg_parse(): 0 parsed, 1 refused (malformed), or
 * -ENOMEM when a copy failed (told by errno): not "the kernel has none". */
int parse_ret(int ret);
#define NPARSE(call)	(errno = 0, parse_ret(call))

/* A netdev base chain hooks at most NFT_NETDEVICE_MAX (256) devices. */
#define SHARD_DEVS 255

struct shard {
	char name[16];
	bool ready;			/* exists in the kernel */
	struct devlist devs;		/* hooked */
	/* Changes of the batch being built: a chain may be created or updated
	 * once per transaction, so they are emitted together at its end. */
	struct devlist add, del;
};

/* Shard k of kind c, made (not ready) if missing. */
struct shard *shard_get(struct vnic_nft *n, enum nchain c, unsigned int k);
void shards_clear(struct vnic_nft *n);

/* A hook by name prefix (prefix.c): base chains "pfxin_P" and "pfxeg_P". */
struct hook_prefix {
	char name[IFNAMSIZ];
	bool installed;			/* its chains exist, or are pending */
	bool pending;			/* made by the next commit */
};

#define NIC_KEYS_BLOCK 256

struct installed {
	char name[POLICY_GUEST_MAX + 1];
	uint32_t key;			/* guest_key(name) */
	uint64_t digest;
	struct pguest *g;		/* what was installed, or NULL (read back) */
	int *ifindex;			/* of g's NICs at install time */
};

struct vnic_nft {
	struct vnic_ctx *ctx;
	struct nl_sock nl;		/* NETLINK_NETFILTER (lib/nl.c) */
	char table[64];
	uint32_t flags, features;
	/* The shared base chains, as shards of at most SHARD_DEVS devices
	 * ("in0", "in1", ..., "eg0", ...), each with the same rules. */
	struct shard *shards[C__MAX];
	unsigned int nshards[C__MAX];
	struct hook_prefix pfx[2 * VNIC_NFT_PREFIXES];	/* asked and found */
	unsigned int npfx;
	bool pfx_shared;		/* the chains every prefix jumps to */
	uint8_t swmasks[(SW_FROM + 1) / 8];	/* made: bit = mask */
	struct devlist customs;		/* guests' custom chains */
	struct devlist tochains;	/* guests' to-guest chains */

	struct installed *inst;		/* guests in the table */
	unsigned int ninst, capinst;
	unsigned int nholes;		/* guests forgotten, still in inst */
	struct strmap inst_map;		/* name -> index in inst */
	/* guest_key() -> index in inst + 1 (0: free), open addressing,
	 * twice capinst slots: which installed guest has a key. */
	uint32_t *inst_keys;
	/* NIC name -> index in inst of the guest that last claimed it (an
	 * entry is checked against that guest before it is believed); the
	 * keys are the handle's own copies. */
	struct strmap nic_owner;
	char **nic_keys;		/* blocks of NIC_KEYS_BLOCK names */
	unsigned int nnic_keys, nkey_blocks;
	uint64_t table_digest;
	/* Sets: their kernel size (0: unsized), their elements as of the
	 * last commit, and the change the batch being built makes. */
	uint32_t capacity;		/* NICs a new table is sized for */
	uint32_t change_nics;		/* NICs of the policy being applied */
	uint32_t size[NSETS];
	uint32_t nelem[S__MAX];
	int64_t pend[NSETS];
	/* Elements the change being built adds, gathered (elems.c), and
	 * those of one guest's delete (empty between guests). */
	struct elist adds[NSETS];
	struct elist dels[NSETS];
	bool has_state;			/* the state element exists */
	/* The table does not exist yet: the next commit makes it, with its
	 * sets, in the same batch as the change (nothing is written before
	 * there is something to commit). */
	bool pending;
	bool pfx_refused;		/* the kernel refused prefix chains: redo */
	uint32_t tflags;		/* the table's flags, as last read */
	bool stale;			/* reading back failed: read again */
	int ifsock;			/* for SIOCGIFINDEX, in ctx's netns */
	void (*before_commit)(void *arg);
	void *before_commit_arg;
	/* vnic_nft_set_batch_tap(): each batch's bytes, right before sendmsg. */
	void (*batch_tap)(void *arg, const void *buf, size_t len);
	void *batch_tap_arg;
	uint32_t render_version;	/* NFT_RENDER_VERSION but in tests */
	struct nfnl_replay *replay;	/* fuzzing and seeds, or NULL */
	/* The table is as libvnic's last commit left it at generation
	 * clean_gen (sync.c): a sync may then skip reading it back. */
	bool clean;
	uint32_t clean_gen;
	/* The table is owned by another process and does not persist: the
	 * kernel deletes it when that process goes, in no transaction, so
	 * the generation vouches for nothing (owner_volatile()). */
	bool view_volatile;
	uint32_t state_gen;		/* g= the next state element says */
	/* Open found the table damaged (check.c's message): only a sync,
	 * which reads it whole, may write to it. */
	bool damaged;
	/* VNIC_NFT_CLAIM_AT_COMMIT: the table exists, unclaimed; the next
	 * commit claims it in its batch (claim_msg()). */
	bool claim_pending;
	char damage[384];
	/* The damage is a set of another type under a set's name: rules
	 * refer to it, so no sync can make it again; the table goes first. */
	bool damage_final;
};

/* nfnl.c */
int nfnl_open(struct vnic_nft *n);
void nbatch_init(struct nbatch *b);
void nbatch_free(struct nbatch *b);
/* Start a message of type NFT_MSG_*; 64 KiB of room guaranteed. */
struct nlmsghdr *nbatch_msg(struct nbatch *b, uint16_t type, uint16_t flags);
void nbatch_end(struct nbatch *b, struct nlmsghdr *nlh);
/* src's messages after dst's. */
int nbatch_append(struct nbatch *dst, const struct nbatch *src);
/* Room for about bytes of messages in one allocation (a large change,
 * whose buffer would otherwise be copied as it doubles). */
int nbatch_expect(struct nbatch *b, size_t bytes);
/* Before b's first message, keep room for room bytes of messages that
 * nbatch_prepend() may put there later (b still empty). */
void nbatch_head_room(struct nbatch *b, size_t room);
/* head's messages before b's; head is emptied (freed) either way. */
int nbatch_prepend(struct nbatch *b, struct nbatch *head);
/* An nftnl object built into a message of b; obj freed either way. */
int nbatch_put(struct nbatch *b, uint16_t type, uint16_t flags,
	       void *obj, void (*build)(struct nlmsghdr *, const void *),
	       void (*freeobj)(void *));
#define PUT(b, type, flags, obj, kind)						\
	nbatch_put(b, type, flags, obj,						\
		   (void (*)(struct nlmsghdr *, const void *))nftnl_##kind##_nlmsg_build_payload, \
		   (void (*)(void *))nftnl_##kind##_free)
/* Wrap in BEGIN (with the genid, unless NO_GENID) / END, send in one
 * sendmsg, collect errors. */
#define NO_GENID UINT64_MAX
int nbatch_commit(struct vnic_nft *n, struct nbatch *b, uint64_t genid,
		  unsigned int *sent);
/* nbatch_commit(), counted into res (NULL: not counted). */
int nbatch_commit_res(struct vnic_nft *n, struct nbatch *b, uint64_t genid,
		      struct vnic_nft_result *res);
/* The handle's error: the kernel's extack and what failed. */
__attribute__((format(printf, 3, 4)))
int nfnl_set_err(struct vnic_nft *n, int err, const char *fmt, ...);
/* Wrap in BEGIN (genid as given, or NO_GENID) without END and send: the
 * kernel checks every message and discards the batch, changing nothing.
 * Each message should carry NLM_F_ACK; errs[i]: message i's answer (0 or
 * -errno).  Returns 0, the batch's own error (-ERESTART: genid is not the
 * ruleset's), or -errno of the transport. */
int nbatch_check(struct vnic_nft *n, struct nbatch *b, uint64_t genid, int *errs);
/* probe.c: the kernel's VNIC_NFT_FEAT_* bits, asked of it. */
int nft_probe(struct vnic_nft *n, uint32_t *features);
/* The ruleset generation. */
int nfnl_genid(struct vnic_nft *n, uint32_t *genid);
/* A GET request (dump or not); cb sees each reply, once it passed the
 * policy of r (attrs.c).  A reply that does not gets -EBADMSG, with the
 * reason in the context's error. */
struct nreply;
int nfnl_get(struct vnic_nft *n, struct nlmsghdr *req, const struct nreply *r,
	     int (*cb)(const struct nlmsghdr *, void *), void *data);

/* attrs.c: what the reply to a GET must look like before libnftnl may
 * parse it, by message type. */
struct anest;
struct nreply {
	uint16_t msg;			/* NFT_MSG_NEW* */
	const struct anest *pol;
};
extern const struct nreply nr_table, nr_chain, nr_set, nr_elems, nr_obj, nr_gen;
/* Well-formed attributes only: read by name, checked before parsing. */
extern const struct nreply nr_set_any, nr_chain_any, nr_rule_any, nr_obj_any;
/* 0, or -EBADMSG with the reason in why. */
int nreply_check(const struct nreply *r, const struct nlmsghdr *nlh,
		 char *why, size_t why_len);

/* A stand-in for the kernel (fuzzing, seeds): while n->replay is set,
 * nfnl_get() sends nothing and takes each request's reply from buf: the
 * messages up to and with the first NLMSG_DONE or NLMSG_ERROR, their seq
 * made the request's.  With record set instead, the requests go to the
 * kernel and what it answers is appended to rec (malloc'd). */
struct nfnl_replay {
	const uint8_t *buf;
	size_t len, off;
	bool record;
	uint8_t *rec;
	size_t rec_len;
};
/* open.c: vnic_nft_open() with a replay (opts whole, already checked). */
int nft_open_replay(struct vnic_ctx *ctx, const struct vnic_nft_opts *opts,
		    struct nfnl_replay *replay, struct vnic_nft **out);
struct nlmsghdr *nfnl_req(char *buf, uint16_t type, uint16_t flags, struct vnic_nft *n);

/* layout.c: the table and its sets. */
int layout_table(struct vnic_nft *n, struct nbatch *b, bool create);
/* open.c: a pending claim (VNIC_NFT_CLAIM_AT_COMMIT) committed alone,
 * pinned to *genid, which becomes the generation after it. */
int claim_commit(struct vnic_nft *n, uint64_t *genid);
int layout_skeleton(struct vnic_nft *n, struct nbatch *b);

/* shard.c: the devices of the shared base chains. */
/* Note devices to add to (del = false) or remove from a base chain. */
int shard_note_devs(struct vnic_nft *n, enum nchain c, const char **devs,
		      unsigned int ndevs, bool del);
/* Emit the noted changes: one create or update per chain. */
int shards_flush(struct vnic_nft *n, struct nbatch *b);
/* Forget noted changes (the batch was dropped). */
void shards_drop(struct vnic_nft *n);
/* Drop the names of unhooked devices once they are many (between
 * batches only). */
void shards_compact(struct vnic_nft *n);

#define PFX_FROM_IN	"pfx_from_in"
#define PFX_FROM_EG	"pfx_from_eg"
#define PFX_TO		"pfx_to"
#define PFX_CHAIN_IN	"pfxin_"	/* + the prefix */
#define PFX_CHAIN_EG	"pfxeg_"

/* layout.c: the regular chains prefix chains jump to, with their rules. */
int layout_pfx_shared(struct vnic_nft *n, struct nbatch *b);

/* rules.c: the rules of the table's chains. */
/* A base chain's (or shared prefix chain's): a jump per mask in use, then
 * the custom rules' map. */
int rules_base_chain(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		     const char *name);
/* "iif @sw_7f jump sw_in_7f" into chain, appended or first (prepend). */
int rule_mask(struct vnic_nft *n, struct nbatch *b, const char *chain,
	      enum nchain c, uint32_t mask, bool prepend);
/* The switches that check a source address: a frame whose VLAN tag is still
 * in it hides its addresses from them (rules.c r_tagged(); render.c has
 * the same rules as text). */
#define SW_ADDR	(VNIC_SW_IP_SPOOF | VNIC_SW_IP6_SPOOF | VNIC_SW_ARP_SPOOF | \
		 VNIC_SW_ND_SPOOF)
/* The rules of the switches of mask, into its chain name for kind c. */
int rules_switch(struct vnic_nft *n, struct nbatch *b, const char *name,
		 enum nchain c, uint32_t mask);
/* The rules of one prefix's base chain for hook c. */
int rule_pfx_guard(struct vnic_nft *n, struct nbatch *b, enum nchain c,
		   const char *chain);
/* The rule of every to-guest chain. */
int rule_to_guest(struct vnic_nft *n, struct nbatch *b, const char *chain);

/* prefix.c: hooks by name prefix (see vnic_nft_opts.hook_prefixes). */
int prefix_ask(struct vnic_nft *n, const char *const *prefixes);
/* A chain name read back: note an installed prefix chain or shared chain. */
void prefix_seen(struct vnic_nft *n, const char *chain);
/* Asked prefixes whose chains are missing become pending (the next
 * commit makes them) where they can be made, else are forgotten, as are
 * those an installed prefix covers; -EINVAL for one that covers an
 * installed prefix. */
int prefix_plan(struct vnic_nft *n, bool can);
/* The chains of pending prefixes; *count: how many. */
int prefix_build(struct vnic_nft *n, struct nbatch *b, unsigned int *count);
/* After their commit: made, or refused (pending ones are forgotten). */
void prefix_done(struct vnic_nft *n, bool made);
/* The NIC's name starts with an installed prefix: it needs no own hook. */
bool prefix_covers(const struct vnic_nft *n, const char *ifname);

/* schema.c: names and masks; the kind of base chain a NIC kind uses. */
enum nchain layout_from_chain(enum vnic_kind kind);
uint32_t layout_egress_hook(void);
void swchain_name(enum nchain c, uint32_t mask, char *buf, size_t len);
/* A set's name: nset_descs' or "sw_7f". */
const char *set_name(enum nset s, char *buf, size_t len);
/* "sw_7f" -> 0x7f; 0 for another name. */
uint32_t swmask_parse(const char *set);
bool swmask_ready(const struct vnic_nft *n, uint32_t mask);
void swmask_mark(struct vnic_nft *n, uint32_t mask);
/* layout.c: make mask's set, chains and base-chain rules unless they exist. */
int layout_sw_mask(struct vnic_nft *n, struct nbatch *b, uint32_t mask);

/* schema.c: comment userdata as nft(8) writes it into out; its length, or
 * 0 when it does not fit. */
size_t udata_comment(const char *s, uint8_t *out, size_t max);

/* elems.c: one guest's elements, objects and chains in or out.  When a
 * guest is replaced, what both versions have stays (keep). */
enum {
	GP_KEEP_COUNTER	= 1 << 0,	/* its drop counter (and count) */
	GP_KEEP_CHAIN	= 1 << 1,	/* its custom chain: rules only */
	GP_KEEP_TO	= 1 << 2,	/* its to-guest base chain */
};
int guest_put(struct vnic_nft *n, struct nbatch *b, const struct pguest *g,
	      const int *ifindex, uint64_t digest, bool add, unsigned int keep);
/* The gathered adds out into b, or dropped (the batch was). */
int guest_adds_flush(struct vnic_nft *n, struct nbatch *b);
void guest_adds_drop(struct vnic_nft *n);
/* The to-guest chain of a guest known only by name. */
int guest_del_to_chain(struct vnic_nft *n, struct nbatch *b, const char *guest);
/* Its devices: the guest's veth and tap NICs that no prefix of n covers
 * (n NULL: all of them); NULL-terminated, malloc'd. */
const char **guest_to_devs(const struct vnic_nft *n, const struct pguest *g,
			   unsigned int *count);
/* How many guest_to_devs() has (no allocation). */
unsigned int guest_to_count(const struct vnic_nft *n, const struct pguest *g);

/* The guests set's key for a guest, and its counter and chain names. */
uint32_t guest_key(const char *name);
void guest_names(const char *guest, char *ctr, char *chain, size_t len);

/* The digest of the whole state: an element of the guests set with key
 * STATE_KEY, its comment "libvnic-state HEX" (table userdata cannot be
 * changed once the table exists; an element can, within the batch). */
#define STATE_KEY 0u
#define STATE_COUNTS	(S_GUESTS + 1)	/* sets counted in its comment */
int state_elem(struct vnic_nft *n, struct nbatch *b, uint64_t digest, bool add);
/* NEWSET for set s of size (0: unsized); an update if it exists. */
int layout_set(struct vnic_nft *n, struct nbatch *b, enum nset s, uint32_t size);
/* schema.c: the size a new table gives set s. */
uint32_t layout_set_size(const struct vnic_nft *n, enum nset s);
/* resolve.c: every NIC of a policy resolved to its ifindex, in one batch:
 * guest g's NIC k is ifi[off[g] + k]. */
struct resolved {
	int *ifi;
	unsigned int *off;
	/* Guest g's digest: vnic_hash64() of the rendering's version, its
	 * policy's digest bytes (pguest_digest_bytes()) and then its NICs'
	 * ifindexes, so a NIC made again under its name is a change (its
	 * elements are keyed by ifindex), and so is a guest an older library
	 * rendered. */
	uint64_t *digest;
};
int resolve_policy(struct vnic_nft *n, const struct vnic_policy *p,
		   struct resolved *r);
/*
 * The version of what a policy renders into: each guest's digest covers
 * it (resolve.c), so a guest installed by a library that rendered its
 * objects otherwise reads as changed, and apply and sync write it again
 * instead of trusting the digest.  Bump it with any change to the
 * messages some policy renders into (rules, elements, chains, counters).
 * 0 is a library before the version: its digests covered none.
 *   1: a custom rule's port range starting at 0 gets its port match.
 *   2: rules that read the transport header match a first fragment only;
 *      a frame with its VLAN tag still in it is dropped where an address
 *      switch is on and l2-allow off.
 */
#define NFT_RENDER_VERSION 2
void resolved_free(struct resolved *r);
/* No guest of p has the guests-set key of an installed guest of another
 * name: 0, or -EEXIST naming both (resolve_policy() checks p's own). */
int keys_untaken(struct vnic_nft *n, const struct vnic_policy *p);
/* The handle's socket for SIOCGIFINDEX / SIOCGIFNAME, in ctx's netns. */
int ifsock_get(struct vnic_nft *n);

/* installed.c: the guests the handle knows. */
void inst_clear(struct vnic_nft *n);
struct installed *inst_find(struct vnic_nft *n, const char *name);
/* The installed guest whose guests-set key is key, or NULL. */
const struct installed *inst_by_key(const struct vnic_nft *n, uint32_t key);
struct installed *inst_new(struct vnic_nft *n, const char *name);
/* Room for more guests (and nics NICs) without moving the array or
 * growing the maps again. */
int inst_reserve(struct vnic_nft *n, unsigned int more, unsigned int nics);
void inst_forget(struct vnic_nft *n, struct installed *in);
/* Drop the holes inst_forget() left once they are many: between changes
 * only (it moves the guests, whose indexes the maps hold). */
void inst_compact(struct vnic_nft *n);
/* Guest i's NICs are its own now (nic_owner()). */
int inst_claim(struct vnic_nft *n, uint32_t i);
/* The names of the guests the handle knows (vnic_nft_guests()'s list). */
int inst_names(const struct vnic_nft *n, char ***names, unsigned int *count);
/* The installed guest that claims NIC ifname, or NULL. */
const struct installed *nic_owner(const struct vnic_nft *n, const char *ifname);
/* The guests set read back: each guest known by name and digest; the XOR
 * of their state_mix() and their count out. */
int read_guests(struct vnic_nft *n, uint64_t *digest, unsigned int *count);
/* One guest's part of the state digest (the digest XORs them). */
uint64_t state_mix(const char *name, uint64_t digest);

/* open.c: read (and check) the table, then claim it; reading fails: the
 * handle is stale and reads again before its next change. */
int open_state(struct vnic_nft *n);
/* A table of these flags and owner goes, without a transaction, with a
 * process other than this handle's. */
bool owner_volatile(const struct vnic_nft *n, uint32_t flags, uint32_t owner);

/* purge.c: a guest known by name only out, into b.  The table is read
 * back at the first such guest of a change, into *pr, which the others
 * reuse (purge_read_free() at the change's end). */
struct purge_read;
int purge_guest(struct vnic_nft *n, struct nbatch *b, struct purge_read **pr,
		const char *name, unsigned int keep);
void purge_read_free(struct purge_read *pr);

/* change.c: one batch of guest changes, from begin to its commit. */
struct change {
	struct vnic_nft *n;
	struct nbatch b;
	uint64_t digest;		/* of the state after the change */
	struct vnic_nft_result *res;
	struct purge_read *pr;		/* the table read back, or NULL */
};
/* res: the change's own counts (reset here), or NULL. */
void result_reset(struct vnic_nft_result *res);
int change_begin(struct vnic_nft *n, struct change *ch, struct vnic_nft_result *res);
/* err: of building; the batch is committed only without one. */
int change_end(struct change *ch, int err, uint64_t genid);
int change_drop(struct change *ch, struct installed *in, unsigned int keep);
int change_add(struct change *ch, const struct pguest *g, const int *ifi,
	       uint64_t digest, unsigned int keep);
/* What replacing in by g keeps (GP_KEEP_*). */
unsigned int change_keep(struct vnic_nft *n, const struct installed *in,
			 const struct pguest *g);

/* diff.c: sync (commit) or diff (report only) the table to p; p NULL:
 * the table against its own state element. */
struct vnic_nft_diff;
int diff_sync(struct vnic_nft *n, const struct vnic_policy *p,
	      const struct resolved *r, bool commit,
	      int (*fn)(const struct vnic_nft_diff *d, void *arg), void *arg,
	      struct vnic_nft_result *res);

/* ruletag.c: the tag of every rule libvnic writes (its userdata). */
/* 0, or -ENOMEM where libnftnl could not copy it. */
int rule_tag(struct nftnl_rule *r);
bool rule_tag_parse(const uint8_t *ud, uint32_t len, uint64_t *tag);

/* damaged.c: -EUCLEAN with what open found damaged, or 0. */
int refuse_damaged(struct vnic_nft *n);
/* -EUCLEAN: damage ("table netdev T: WHAT") that only deleting the table
 * mends, and how. */
int refuse_table(struct vnic_nft *n, const char *damage);
/* apply.c: shared with sync.c. */
int result_check(struct vnic_nft *n, const struct vnic_nft_result *res);
int result_out(struct vnic_nft_result *res, const struct vnic_nft_result *r,
	       int err);
bool redo(struct vnic_nft *n, int err);

#endif /* VNIC_NFT_INTERNAL_H */
