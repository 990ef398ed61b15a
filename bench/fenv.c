// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The namespace the filter scenarios work in: lower veth pairs and G*K
 * NICs on them ("nv0", "nv1", ...; macvlans by default: one link each, the
 * cheapest kind to make by the tens of thousands), made by raw rtnetlink,
 * windowed, before any clock starts.  NIC i belongs to guest i / K and has
 * a MAC, an IPv4 and an IPv6 address derived from i, so that every method
 * and every run sees the same policy.
 *
 * nf_tables is reset and inspected by the bench's own nfnetlink socket:
 * neither nft(8) (which may be missing) nor libvnic (which is measured)
 * decides what state a run starts from.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>

#include "filters.h"

/* Every NIC is made in this group: one RTM_DELLINK removes them all. */
#define FILT_GROUP	0x7e58
/* The NICs have a group of their own: growth deletes them, not the lowers. */
#define FILT_GROUP_NICS	0x7e59
#define FILT_RCVBUF	(8u << 20)
#define BENCH_OWNER	"vnicbench"

void filt_nic_name(unsigned int i, char *buf)
{
	snprintf(buf, 16, "nv%u", i);
}

void filt_guest_name(unsigned int g, char *buf)
{
	snprintf(buf, 32, "g%u", g);
}

/* Locally administered unicast, never 00:00:00:00:00:00 in the tail. */
static void filt_nic_mac(unsigned int i, unsigned char mac[6])
{
	uint32_t n = i + 1;

	mac[0] = 0x02;
	mac[1] = 0x00;
	mac[2] = (n >> 24) & 0xff;
	mac[3] = (n >> 16) & 0xff;
	mac[4] = (n >> 8) & 0xff;
	mac[5] = n & 0xff;
}

void filt_nic_mac_str(unsigned int i, char *buf)
{
	unsigned char m[6];

	filt_nic_mac(i, m);
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

/* 10.0.0.1 upwards; a changed NIC moves to 10.128.0.0/9. */
void filt_nic_ipv4(unsigned int i, bool changed, char *buf)
{
	uint32_t n = i + 1;

	snprintf(buf, 16, "10.%u.%u.%u", ((n >> 16) & 0x7f) | (changed ? 0x80 : 0),
		 (n >> 8) & 0xff, n & 0xff);
}

void filt_nic_ipv6(unsigned int i, char *buf)
{
	uint32_t n = i + 1;

	snprintf(buf, 40, "fd00::%x:%x", n >> 16, n & 0xffff);
}

void filt_nic_ll6(unsigned int i, char *buf)
{
	unsigned char m[6];

	filt_nic_mac(i, m);
	snprintf(buf, 40, "fe80::%x:%x:%x:%x", ((m[0] ^ 2) << 8) | m[1],
		 (m[2] << 8) | 0xff, 0xfe00 | m[3], (m[4] << 8) | m[5]);
}

/*
 * One lower veth pair per FILT_NICS_PER_LOWER NICs: the kernel walks a
 * lower's upper devices on every macvlan it links (O(uppers)), so 40,000
 * macvlans on one lower take minutes; on 40 lowers, seconds.
 */
static int make_lowers(struct filt_env *e, unsigned int nnics)
{
	int err;

	e->nlowers = nnics ? (nnics + FILT_NICS_PER_LOWER - 1) /
			     FILT_NICS_PER_LOWER : 1;
	e->lowers = calloc(e->nlowers, sizeof(*e->lowers));
	if (!e->lowers)
		return -ENOMEM;
	err = env_make_lowers(&e->nl, e->nlowers, FILT_GROUP, e->lowers, NULL);
	e->lower = e->lowers[0];
	return err;
}

int filt_queue_nics(struct filt_env *e, unsigned int first,
		    unsigned int count)
{
	char name[16], peer[16];
	unsigned char mac[6];
	struct link_spec ls = {
		.name = name, .group = FILT_GROUP_NICS, .mac = mac,
	};
	unsigned int i;
	int err = 0;

	switch (e->o->kind) {
	case VNIC_KIND_VETH:
		/* The policy's MAC is the guest end's; the host end (the
		 * filtered one) keeps the kernel's. */
		ls.kind = "veth";
		ls.peer = peer;
		ls.mac = NULL;
		break;
	case VNIC_KIND_MACVTAP:
		ls.kind = "macvtap";
		ls.lower = e->lower;
		ls.mode = MACVLAN_MODE_BRIDGE;
		break;
	default:
		ls.kind = "macvlan";
		ls.lower = e->lower;
		ls.mode = MACVLAN_MODE_BRIDGE;
	}
	for (i = first; i < first + count && !err; i++) {
		if (ls.lower)
			ls.lower = e->lowers[i / FILT_NICS_PER_LOWER];
		filt_nic_name(i, name);
		snprintf(peer, sizeof(peer), "nvp%u", i);
		filt_nic_mac(i, mac);
		err = rawnl_queue_newlink(&e->nl, &ls);
	}
	return err;
}

static int make_nics(struct filt_env *e, unsigned int first,
		     unsigned int count)
{
	int err;

	progress("making %u NICs (untimed)", count);
	err = filt_queue_nics(e, first, count);
	if (!err)
		err = rawnl_flush(&e->nl, rawnl_window(&e->nl));
	progress_clear();
	if (err)
		fprintf(stderr, "vnic-bench: creating %u NICs: %s\n", count,
			e->nl.err[0] ? e->nl.err : strerror(-err));
	return err;
}

/* The bench's NICs are "nv0", "nv1", ...: one prefix hooks them all. */
static const char *const nic_prefixes[] = { "nv", NULL };

int filt_open(struct filt_env *e, bool prefix, struct vnic_filter **h,
	      char *err, size_t errlen)
{
	VNIC_OPTS(vnic_filter_opts, opts, .table = FILT_TABLE,
		  .hook_prefixes = prefix ? nic_prefixes : NULL);
	int ret = vnic_filter_open(e->ctx, &opts, h);

	if (ret) {
		*h = NULL;
		return bench_lib_fail(e->ctx, "vnic_filter_open", ret, err, errlen);
	}
	if (prefix && !(vnic_filter_features(*h) & VNIC_FILTER_FEAT_PREFIX_HOOK)) {
		vnic_filter_close(*h);
		*h = NULL;
		snprintf(err, errlen, "%s", PFX_SKIP);
		return -EOPNOTSUPP;
	}
	return 0;
}

int filt_nfnl_open(struct filt_env *e)
{
	e->nfnl = mnl_socket_open(NETLINK_NETFILTER);
	if (!e->nfnl)
		return -errno;
	if (mnl_socket_bind(e->nfnl, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	e->nfnl_seq = 1;
	return 0;
}

int filt_env_setup(struct filt_env *e, const struct bench_opts *o,
		   unsigned int nnics)
{
	int err = filt_env_setup_cap(e, o, nnics, nnics);

	if (!err && !o->json)
		fprintf(stderr, "setup: %u %s NICs in %.0f ms (untimed)\n",
			e->nnics, vnic_kind_name(o->kind), e->nics_ms);
	return err;
}

int filt_env_setup_cap(struct filt_env *e, const struct bench_opts *o,
		       unsigned int nnics, unsigned int cap)
{
	VNIC_OPTS(vnic_ctx_opts, copts, .owner = BENCH_OWNER,
		  .flags = VNIC_CTX_NO_MONITOR);
	uint64_t t0;
	int err;

	memset(e, 0, sizeof(*e));
	e->o = o;
	bench_find_tool("nft", e->nft_path, sizeof(e->nft_path));
	err = rawnl_open(&e->nl, FILT_RCVBUF);
	if (!err)
		err = filt_nfnl_open(e);
	if (!err)
		err = nfnl_flush_ruleset(e);
	if (err)
		return err;
	t0 = now_ns();
	err = make_lowers(e, cap > nnics ? cap : nnics);
	if (!err)
		err = make_nics(e, 0, nnics);
	e->nics_ms = ms_since(t0);
	if (err)
		return err;
	e->nnics = nnics;
	err = vnic_ctx_new(&copts, &e->ctx);
	if (err) {
		e->ctx = NULL;
		fprintf(stderr, "vnic-bench: vnic_ctx_new: %s\n",
			vnic_strerror(err));
	}
	return err;
}

int filt_env_add_nics(struct filt_env *e, unsigned int first,
		      unsigned int count)
{
	int err;

	if ((first + count + FILT_NICS_PER_LOWER - 1) / FILT_NICS_PER_LOWER >
	    e->nlowers)
		return -ERANGE;
	err = make_nics(e, first, count);
	if (!err && first + count > e->nnics)
		e->nnics = first + count;
	return err;
}

int filt_env_del_nics(struct filt_env *e)
{
	int err;

	rawnl_queue_dellink_group(&e->nl, FILT_GROUP_NICS);
	err = rawnl_flush(&e->nl, 0);
	/* An empty group is no error: there was nothing to delete. */
	if (err == -ENODEV)
		err = 0;
	if (!err)
		e->nnics = 0;
	return err;
}

void filt_env_free(struct filt_env *e)
{
	if (e->ctx)
		vnic_ctx_free(e->ctx);
	e->ctx = NULL;
	if (e->nfnl) {
		nfnl_flush_ruleset(e);
		mnl_socket_close(e->nfnl);
		e->nfnl = NULL;
	}
	/* One unregister batch for every NIC and the lower, before we leave:
	 * the namespace's own teardown would run in a kworker later, inside
	 * the next bench's timings. */
	if (e->nl.nl) {
		rawnl_queue_dellink_group(&e->nl, FILT_GROUP_NICS);
		rawnl_queue_dellink_group(&e->nl, FILT_GROUP);
		rawnl_flush(&e->nl, 0);
	}
	rawnl_close(&e->nl);
	free(e->lowers);
	e->lowers = NULL;
}

void filt_take(struct sample *s, const struct vnic_filter_result *res)
{
	s->writes = res->writes;
	s->messages = res->messages;
	s->batches = res->batches;
	s->changed = res->guests_changed;
}

/*
 * Guests [0, count) in chunks of FILT_SETUP_CHUNK, untimed: the setup
 * must not depend on one huge batch working (the filters scenario
 * measures that).
 */
int filt_install(struct filt_env *e, struct vnic_filter *h, unsigned int count,
		 unsigned int *batches, unsigned int *messages, char *err,
		 size_t errlen)
{
	unsigned int first, n;
	int ret = 0;

	*batches = *messages = 0;
	for (first = 0; first < count && !ret; first += n) {
		struct vnic_filter_result res = { .sz = sizeof(res) };
		struct vnic_policy *p;

		n = count - first < FILT_SETUP_CHUNK ? count - first :
						       FILT_SETUP_CHUNK;
		progress("installing guests %u/%u (untimed)", first, count);
		ret = filt_policy(e, first, n, -1, &p, err, errlen);
		if (ret)
			break;
		ret = vnic_filter_apply(h, p, &res);
		if (ret) {
			char what[96];

			snprintf(what, sizeof(what),
				 "vnic_filter_apply (guests %u..%u, setup)", first,
				 first + n - 1);
			bench_lib_fail(e->ctx, what, ret, err, errlen);
		}
		*batches += res.batches;
		*messages += res.messages;
		vnic_policy_free(p);
	}
	return ret;
}

int filt_remove(struct filt_env *e, struct vnic_filter *h, unsigned int first,
		unsigned int count, struct sample *s, char *err, size_t errlen)
{
	struct vnic_filter_result res = { .sz = sizeof(res) };
	char (*buf)[32] = calloc(count ? count : 1, sizeof(*buf));
	const char **names = calloc(count ? count : 1, sizeof(*names));
	unsigned int i;
	uint64_t t0;
	int ret;

	if (!buf || !names) {
		free(buf);
		free(names);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < count; i++) {
		filt_guest_name(first + i, buf[i]);
		names[i] = buf[i];
	}
	t0 = now_ns();
	ret = vnic_filter_remove(h, names, count, &res);
	if (s) {
		s->ms = ms_since(t0);
		filt_take(s, &res);
	}
	if (ret)
		bench_lib_fail(e->ctx, "vnic_filter_remove", ret, err, errlen);
	free(buf);
	free(names);
	return ret;
}

unsigned int filt_count_guests(struct vnic_filter *h)
{
	unsigned int n = 0;
	char **names;

	if (vnic_filter_guests(h, &names, &n))
		return 0;
	free(names);
	return n;
}

static int policy_fail(struct filt_env *e, const char *what, const char *who,
		       int ret, char *err, size_t errlen)
{
	const char *msg = vnic_ctx_errmsg(e->ctx);

	snprintf(err, errlen, "%s %s: %s%s%s", what, who, vnic_strerror(ret),
		 msg && *msg ? ": " : "", msg ? msg : "");
	return ret;
}

static int add_nic(struct filt_env *e, struct vnic_policy *p,
		   const char *guest, unsigned int i, bool changed, char *err,
		   size_t errlen)
{
	char name[16], mac[18], v4[16], v6[40];
	const char *v4s[] = { v4 }, *v6s[] = { v6 };
	VNIC_OPTS(vnic_nic_policy, nic, .ifname = name, .kind = e->o->kind,
		  .mac = mac, .ipv4 = v4s, .n_ipv4 = 1, .ipv6 = v6s,
		  .n_ipv6 = 1);
	int ret;

	filt_nic_name(i, name);
	filt_nic_mac_str(i, mac);
	filt_nic_ipv4(i, changed, v4);
	filt_nic_ipv6(i, v6);
	ret = vnic_policy_add_nic(p, guest, &nic);
	return ret ? policy_fail(e, "vnic_policy_add_nic", name, ret, err,
				 errlen) : 0;
}

int filt_policy(struct filt_env *e, unsigned int first, unsigned int count,
		int changed, struct vnic_policy **out, char *err, size_t errlen)
{
	unsigned int k = e->o->nics_per_guest, g, j;
	struct vnic_policy *p;
	char guest[32];
	int ret;

	ret = vnic_policy_new(e->ctx, &p);
	if (ret)
		return policy_fail(e, "vnic_policy_new", "", ret, err, errlen);
	for (g = first; g < first + count && !ret; g++) {
		filt_guest_name(g, guest);
		ret = vnic_policy_add_guest(p, guest, NULL);
		if (ret) {
			policy_fail(e, "vnic_policy_add_guest", guest, ret, err,
				    errlen);
			break;
		}
		for (j = 0; j < k && !ret; j++)
			ret = add_nic(e, p, guest, g * k + j,
				      (int)g == changed && j == 0, err, errlen);
	}
	if (!ret) {
		ret = vnic_policy_check(p);
		if (ret)
			policy_fail(e, "vnic_policy_check", "", ret, err,
				    errlen);
	}
	if (ret) {
		vnic_policy_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

/* ---- nfnetlink ---- */

static struct nlmsghdr *nfnl_hdr(char *buf, uint16_t type, uint8_t family,
				 uint16_t flags, uint32_t seq, uint16_t res_id)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = family;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(res_id);
	return nlh;
}

/*
 * DELTABLE without a name and family UNSPEC is what "nft flush ruleset"
 * sends: every table of every family goes, in one transaction.
 */
int nfnl_flush_ruleset(struct filt_env *e)
{
	char buf[512];
	size_t off = 0;
	uint32_t seq = e->nfnl_seq;
	struct nlmsghdr *nlh;

	e->nfnl_seq += 3;
	nlh = nfnl_hdr(buf, NFNL_MSG_BATCH_BEGIN, AF_UNSPEC, 0, seq,
		       NFNL_SUBSYS_NFTABLES);
	off += nlh->nlmsg_len;
	nlh = nfnl_hdr(buf + off, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE,
		       NFPROTO_UNSPEC, NLM_F_ACK, seq + 1, 0);
	off += nlh->nlmsg_len;
	nlh = nfnl_hdr(buf + off, NFNL_MSG_BATCH_END, AF_UNSPEC, 0, seq + 2,
		       NFNL_SUBSYS_NFTABLES);
	off += nlh->nlmsg_len;
	/* From the begin's seq: a batch refused at its begin (no nf_tables)
	 * is acked there alone, and must end the wait too. */
	return rawnl_talk(e->nfnl, buf, off, seq, NULL, NULL);
}

static int count_cb(const struct nlmsghdr *nlh, void *data)
{
	if ((nlh->nlmsg_type & 0xff) == NFT_MSG_NEWTABLE)
		(*(unsigned int *)data)++;
	return MNL_CB_OK;
}

int nfnl_count_tables(struct filt_env *e, unsigned int *count)
{
	char buf[128];
	struct nlmsghdr *nlh;
	uint32_t seq = e->nfnl_seq++;

	*count = 0;
	nlh = nfnl_hdr(buf, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE,
		       NFPROTO_UNSPEC, NLM_F_DUMP, seq, 0);
	return rawnl_talk(e->nfnl, buf, nlh->nlmsg_len, seq, count_cb, count);
}

static int gen_attr_cb(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == NFTA_GEN_ID &&
	    mnl_attr_validate(a, MNL_TYPE_U32) == 0)
		*(uint32_t *)data = ntohl(mnl_attr_get_u32(a));
	return MNL_CB_OK;
}

static int gen_cb(const struct nlmsghdr *nlh, void *data)
{
	if ((nlh->nlmsg_type & 0xff) == NFT_MSG_NEWGEN)
		mnl_attr_parse(nlh, sizeof(struct nfgenmsg), gen_attr_cb,
			       data);
	return MNL_CB_OK;
}

int nfnl_genid(struct filt_env *e, uint32_t *genid)
{
	char buf[128];
	struct nlmsghdr *nlh;
	uint32_t seq = e->nfnl_seq++;

	*genid = 0;
	nlh = nfnl_hdr(buf, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETGEN,
		       AF_UNSPEC, NLM_F_ACK, seq, 0);
	return rawnl_talk(e->nfnl, buf, nlh->nlmsg_len, seq, gen_cb, genid);
}
