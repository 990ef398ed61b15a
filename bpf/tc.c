// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Attaching the programs: a clsact qdisc per NIC and a direct-action
 * cls_bpf filter named "vnic" at priority BPF_FILTER_PRIO, handle 1, on
 * each hook the NIC's kind needs, through the context's rtnetlink socket.
 *
 * A change is pipelined in two batches: every qdisc first, then every
 * filter.  The first filter on a new clsact costs an expedited RCU grace
 * period; made after all the qdiscs, the batch pays it about once instead
 * of once per NIC (Documentation/bpf.rst has the figures).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <libmnl/libmnl.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include "bpf/internal.h"

#ifndef TC_H_CLSACT
#define TC_H_CLSACT TC_H_INGRESS
#endif
#ifndef TC_H_MIN_INGRESS
#define TC_H_MIN_INGRESS 0xFFF2U
#define TC_H_MIN_EGRESS 0xFFF3U
#endif

uint32_t bpf_hooks_of(uint32_t kind)
{
	switch (kind) {
	case VNIC_KIND_MACVTAP:
	case VNIC_KIND_MACVLAN:
		return HOOK_EG;		/* the guest transmits through it */
	default:
		return HOOK_IN | HOOK_EG;	/* veth host end, tap */
	}
}

static uint32_t parent_of(uint32_t hook)
{
	return TC_H_MAKE(TC_H_CLSACT, hook == HOOK_IN ? TC_H_MIN_INGRESS
						      : TC_H_MIN_EGRESS);
}

static struct tcmsg *tc_msg(struct nlmsghdr *nlh, int ifindex, uint32_t parent,
			    uint32_t handle, uint32_t info)
{
	struct tcmsg *t = mnl_nlmsg_put_extra_header(nlh, sizeof(*t));

	t->tcm_family = AF_UNSPEC;
	t->tcm_ifindex = ifindex;
	t->tcm_parent = parent;
	t->tcm_handle = handle;
	t->tcm_info = info;
	return t;
}

static uint32_t filter_info(void)
{
	return TC_H_MAKE((uint32_t)BPF_FILTER_PRIO << 16, htons(ETH_P_ALL));
}

static int put_qdisc(struct nl_batch *nb, uint16_t type, uint16_t flags, int ifindex)
{
	struct nlmsghdr *nlh = nl_batch_msg(nb, type, NLM_F_ACK | flags);

	if (!nlh)
		return -ENOMEM;
	tc_msg(nlh, ifindex, TC_H_CLSACT, TC_H_MAKE(TC_H_CLSACT, 0), 0);
	mnl_attr_put_strz(nlh, TCA_KIND, "clsact");
	return nl_batch_end(nb, nlh, NULL, NULL);
}

static int put_filter(struct nl_batch *nb, int ifindex, uint32_t hook, int prog_fd)
{
	struct nlmsghdr *nlh = nl_batch_msg(nb, RTM_NEWTFILTER,
					    NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE);
	struct nlattr *opts;

	if (!nlh)
		return -ENOMEM;
	tc_msg(nlh, ifindex, parent_of(hook), BPF_FILTER_HANDLE, filter_info());
	mnl_attr_put_strz(nlh, TCA_KIND, "bpf");
	opts = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	mnl_attr_put_u32(nlh, TCA_BPF_FD, (uint32_t)prog_fd);
	mnl_attr_put_strz(nlh, TCA_BPF_NAME, BPF_FILTER_NAME);
	mnl_attr_put_u32(nlh, TCA_BPF_FLAGS, TCA_BPF_FLAG_ACT_DIRECT);
	mnl_attr_nest_end(nlh, opts);
	return nl_batch_end(nb, nlh, NULL, NULL);
}

/* Every filter at our priority, whatever its handle, kind or protocol:
 * protocol 0 matches any (a delete naming ours, all, does not match a
 * filter of another protocol there, and the add after it then fails). */
static int put_del_filter(struct nl_batch *nb, int ifindex, uint32_t hook)
{
	struct nlmsghdr *nlh = nl_batch_msg(nb, RTM_DELTFILTER, NLM_F_ACK);

	if (!nlh)
		return -ENOMEM;
	tc_msg(nlh, ifindex, parent_of(hook), 0,
	       TC_H_MAKE((uint32_t)BPF_FILTER_PRIO << 16, 0));
	return nl_batch_end(nb, nlh, NULL, NULL);
}

/* --- reading back ------------------------------------------------------ */

struct probe {
	struct vnic_bpf *b;
	uint32_t hook;
	uint32_t *have;
	uint32_t *old;		/* our cls_bpf with another program: its id */
};

struct bpf_attrs {
	const struct nlattr *tb[TCA_BPF_MAX + 1];
};

static int bpf_attr_cb(const struct nlattr *a, void *data)
{
	struct bpf_attrs *t = data;
	uint16_t type = mnl_attr_get_type(a);

	if (type <= TCA_BPF_MAX)
		t->tb[type] = a;
	return MNL_CB_OK;
}

static int probe_cb(const struct nlmsghdr *nlh, void *data)
{
	struct probe *pr = data;
	const struct tcmsg *t = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a, *kind = NULL, *opts = NULL;
	struct bpf_attrs ba;
	uint32_t want;

	if (nlh->nlmsg_type != RTM_NEWTFILTER ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*t) ||
	    TC_H_MAJ(t->tcm_info) >> 16 != BPF_FILTER_PRIO)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*t)) {
		if (mnl_attr_get_type(a) == TCA_KIND)
			kind = a;
		else if (mnl_attr_get_type(a) == TCA_OPTIONS)
			opts = a;
	}
	if (!kind || mnl_attr_validate(kind, MNL_TYPE_NUL_STRING) < 0 ||
	    strcmp(mnl_attr_get_str(kind), "bpf") || !opts)
		return MNL_CB_OK;
	memset(&ba, 0, sizeof(ba));
	if (mnl_attr_parse_nested(opts, bpf_attr_cb, &ba) < 0 || !ba.tb[TCA_BPF_ID] ||
	    !ba.tb[TCA_BPF_NAME] ||
	    mnl_attr_validate(ba.tb[TCA_BPF_ID], MNL_TYPE_U32) < 0 ||
	    mnl_attr_validate(ba.tb[TCA_BPF_NAME], MNL_TYPE_NUL_STRING) < 0)
		return MNL_CB_OK;
	/* Without direct-action, cls_bpf takes the program's verdict for a
	 * classid and passes the frame: not a filter of ours, whatever it
	 * runs (replaced, as anything else in our slot). */
	if (!ba.tb[TCA_BPF_FLAGS] || mnl_attr_validate(ba.tb[TCA_BPF_FLAGS], MNL_TYPE_U32) < 0 ||
	    !(mnl_attr_get_u32(ba.tb[TCA_BPF_FLAGS]) & TCA_BPF_FLAG_ACT_DIRECT))
		return MNL_CB_OK;
	want = pr->hook == HOOK_IN ? pr->b->id_in : pr->b->id_eg;
	if (t->tcm_handle == BPF_FILTER_HANDLE &&
	    mnl_attr_get_u32(ba.tb[TCA_BPF_ID]) == want &&
	    !strcmp(mnl_attr_get_str(ba.tb[TCA_BPF_NAME]), BPF_FILTER_NAME)) {
		*pr->have |= pr->hook;
	} else if (t->tcm_handle == BPF_FILTER_HANDLE && pr->old &&
		   !strcmp(mnl_attr_get_str(ba.tb[TCA_BPF_NAME]), BPF_FILTER_NAME)) {
		*pr->old = mnl_attr_get_u32(ba.tb[TCA_BPF_ID]);
	}
	return MNL_CB_OK;
}

/* The namespace's NICs that have a clsact qdisc (sorted ifindexes). */
struct clsacts {
	int *v;
	unsigned int n, cap;
	int err;
};

static int clsact_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct tcmsg *t = nlh ? mnl_nlmsg_get_payload(nlh) : NULL;
	struct clsacts *c = data;
	const struct nlattr *a;

	if (!nlh) {		/* nl_dump_settled(): the dump starts again */
		c->n = 0;
		return MNL_CB_OK;
	}
	if (nlh->nlmsg_type != RTM_NEWQDISC || mnl_nlmsg_get_payload_len(nlh) < sizeof(*t))
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*t)) {
		if (mnl_attr_get_type(a) != TCA_KIND ||
		    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0 ||
		    strcmp(mnl_attr_get_str(a), "clsact"))
			continue;
		if (c->n == c->cap) {
			unsigned int cap = c->cap ? 2 * c->cap : 64;
			int *v = realloc(c->v, cap * sizeof(*v));

			if (!v)
				return MNL_CB_ERROR;
			c->v = v;
			c->cap = cap;
		}
		c->v[c->n++] = t->tcm_ifindex;
	}
	return MNL_CB_OK;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static int scan_clsacts(struct vnic_bpf *b, struct clsacts *c)
{
	char req[256], ext[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	int err;

	nlh->nlmsg_type = RTM_GETQDISC;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	tc_msg(nlh, 0, 0, 0, 0);
	err = nl_dump_settled(&b->ctx->nl, nlh, clsact_cb, c, ext, sizeof(ext));
	if (err < 0 || err == NL_DUMP_INTR)
		return err < 0 ? err : -EAGAIN;
	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), int_cmp);
	return 0;
}

/*
 * One RTM_GETTFILTER per hook, all in one pipelined batch: a missing qdisc
 * or filter is an error ack, ours is a reply carrying our program's id.
 * Each get takes RTNL in the kernel (cls_bpf is not an unlocked
 * classifier): with most NICs new, one qdisc dump first spares the gets of
 * every NIC that has no clsact.
 */
int tc_check(struct vnic_bpf *b, const int *ifindex, const uint32_t *want,
	     uint32_t *have, uint32_t *old, unsigned int n, bool scan)
{
	struct clsacts cl = { 0 };
	struct nl_batch nb;
	struct probe *pr;
	unsigned int i, h, np = 0;
	int err = 0;

	memset(old, 0, 2 * n * sizeof(*old));
	if (b->tcx)
		return tcx_check(b, ifindex, want, have, old, n);
	if (scan && scan_clsacts(b, &cl)) {
		scan = false;	/* the gets alone, as without it */
		free(cl.v);
		cl.v = NULL;
		cl.n = 0;
	}
	pr = calloc(2 * n + 1, sizeof(*pr));
	if (!pr) {
		free(cl.v);
		return -ENOMEM;
	}
	nl_batch_init(&nb);
	for (i = 0; i < n && !err; i++) {
		have[i] = 0;
		if (scan && !(cl.n && bsearch(&ifindex[i], cl.v, cl.n, sizeof(*cl.v), int_cmp)))
			continue;	/* no clsact: nothing of anyone's there */
		for (h = HOOK_IN; h <= HOOK_EG && !err; h <<= 1) {
			struct nlmsghdr *nlh;

			if (!(want[i] & h))
				continue;
			/* no NLM_F_ACK: the reply (or an error) ends it */
			nlh = nl_batch_msg(&nb, RTM_GETTFILTER, 0);
			if (!nlh) {
				err = -ENOMEM;
				break;
			}
			tc_msg(nlh, ifindex[i], parent_of(h), BPF_FILTER_HANDLE,
			       filter_info());
			mnl_attr_put_strz(nlh, TCA_KIND, "bpf");
			pr[np] = (struct probe){ .b = b, .hook = h, .have = &have[i],
						 .old = &old[2 * i + (h == HOOK_EG)] };
			err = nl_batch_end(&nb, nlh, probe_cb, &pr[np++]);
		}
	}
	if (!err)
		err = nl_batch_run(&b->ctx->nl, &nb);
	nl_batch_free(&nb);
	free(pr);
	free(cl.v);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_DUMP, -1, NULL,
				    "bpf: reading the tc filters back");
	return 0;
}

/* --- attaching ------------------------------------------------------------ */

static int batch_fail(struct vnic_bpf *b, struct nl_batch *nb, unsigned int i,
		      const int *ifindex, const char *what)
{
	const struct nl_req *r = &nb->reqs[i];

	return vnic_set_err(b->ctx, r->err, VNIC_STEP_CONFIGURE, -1, r->extack,
			    "bpf: %s on ifindex %d", what, ifindex ? *ifindex : 0);
}

/* What a failed attach made goes: a qdisc it made, a filter it added; a
 * filter of ours it re-pointed from an older program (old id) gets that
 * program back, in place, so the hook is never empty. */
static void undo(struct vnic_bpf *b, const struct tc_made *a)
{
	struct nl_batch nb;
	unsigned int i, h;

	nl_batch_init(&nb);
	for (i = 0; i < a->n; i++) {
		if (a->made_q[i]) {
			put_qdisc(&nb, RTM_DELQDISC, 0, a->ifi[i]);
			continue;
		}
		for (h = HOOK_IN; h <= HOOK_EG; h <<= 1) {
			int fd = a->old_fd ? a->old_fd[2 * i + (h == HOOK_EG)] : -1;

			if (!(a->hooks[i] & h))
				continue;
			if (fd >= 0)
				put_filter(&nb, a->ifi[i], h, fd);
			else
				put_del_filter(&nb, a->ifi[i], h);
		}
	}
	nl_batch_run(&b->ctx->nl, &nb);
	nl_batch_free(&nb);
}


/* The kind of the qdisc at clsact's handle, from a get's reply. */
struct qkind {
	char kind[IFNAMSIZ];
};

static int qkind_cb(const struct nlmsghdr *nlh, void *data)
{
	struct qkind *q = data;
	const struct nlattr *a;

	if (nlh->nlmsg_type != RTM_NEWQDISC ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(struct tcmsg))
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(struct tcmsg))
		if (mnl_attr_get_type(a) == TCA_KIND &&
		    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
			snprintf(q->kind, sizeof(q->kind), "%s", mnl_attr_get_str(a));
	return MNL_CB_OK;
}

/*
 * The qdiscs that were there (EEXIST) are clsacts.  An "ingress" qdisc has
 * clsact's handle (ffff:) too, and takes a filter for either of clsact's
 * parents into its one block: our egress program would run at ingress and
 * the egress hook stay unfiltered.  Another tool's qdisc: refused, -EBUSY.
 * One pipelined batch of gets, only when a qdisc was there before.
 */
static int existing_are_clsact(struct vnic_bpf *b, const struct tc_made *a,
			       const struct nl_batch *made)
{
	struct qkind *q;
	struct nl_batch nb;
	unsigned int i, n = 0, *at;
	int err = 0;

	for (i = 0; i < a->n; i++)
		n += made->reqs[i].err == -EEXIST;
	if (!n)
		return 0;
	q = calloc(n, sizeof(*q));
	at = calloc(n, sizeof(*at));
	if (!q || !at) {
		free(q);
		free(at);
		return vnic_set_err(b->ctx, -ENOMEM, VNIC_STEP_CONFIGURE, -1, NULL,
				    "bpf: out of memory checking %u qdiscs", n);
	}
	nl_batch_init(&nb);
	for (i = 0, n = 0; i < a->n && !err; i++) {
		struct nlmsghdr *nlh;

		if (made->reqs[i].err != -EEXIST)
			continue;
		/* a get of a qdisc is answered as a notification, to its
		 * sender only with NLM_F_ECHO; the ack ends it */
		nlh = nl_batch_msg(&nb, RTM_GETQDISC, NLM_F_ACK | NLM_F_ECHO);
		if (!nlh) {
			err = -ENOMEM;
			break;
		}
		tc_msg(nlh, a->ifi[i], TC_H_CLSACT, TC_H_MAKE(TC_H_CLSACT, 0), 0);
		at[n] = i;
		err = nl_batch_end(&nb, nlh, qkind_cb, &q[n++]);
	}
	if (!err)
		err = nl_batch_run(&b->ctx->nl, &nb);
	if (err)
		err = vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
				   "bpf: reading back the qdiscs that were there");
	for (i = 0; !err && i < n; i++) {
		if (nb.reqs[i].err)
			err = batch_fail(b, &nb, i, &a->ifi[at[i]], "reading back its qdisc");
		else if (strcmp(q[i].kind, "clsact"))
			err = vnic_set_err(b->ctx, -EBUSY, VNIC_STEP_CONFIGURE, -1, NULL,
					   "bpf: ifindex %d has a qdisc \"%s\" at ffff:, not "
					   "clsact (another tool's: a filter there would not "
					   "run on egress); remove it first", a->ifi[at[i]],
					   q[i].kind);
	}
	nl_batch_free(&nb);
	free(q);
	free(at);
	return err;
}

static int qdiscs(struct vnic_bpf *b, struct tc_made *a, struct vnic_filter_result *res)
{
	struct nl_batch nb;
	unsigned int i;
	int err = 0;

	nl_batch_init(&nb);
	for (i = 0; i < a->n && !err; i++)
		err = put_qdisc(&nb, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, a->ifi[i]);
	if (!err)
		err = nl_batch_run(&b->ctx->nl, &nb);
	if (!err)
		bpf_tap_nl(b, nb.buf, nb.len);
	if (err) {
		nl_batch_free(&nb);
		return vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
				    "bpf: sending the clsact qdiscs");
	}
	res->messages += nb.n;
	res->batches++;
	res->writes = 1;
	for (i = 0; i < a->n; i++) {
		int e = nb.reqs[i].err;

		if (!e && bpf_fault(b, BPF_FAULT_QDISC))
			e = -EIO;
		a->made_q[i] = nb.reqs[i].err == 0;
		if (e && e != -EEXIST && !err) {
			err = e;
			if (nb.reqs[i].err)
				batch_fail(b, &nb, i, &a->ifi[i], "clsact qdisc");
			else
				vnic_set_err(b->ctx, e, VNIC_STEP_CONFIGURE, -1, NULL,
					     "bpf: clsact qdisc on ifindex %d (injected)",
					     a->ifi[i]);
		}
	}
	if (!err)
		err = existing_are_clsact(b, a, &nb);
	nl_batch_free(&nb);
	return err;
}

/* On a clsact that was there before, whatever sits at our priority goes
 * first (a foreign filter in our slot, or ours with a stale program); the
 * delete's own ENOENT is no failure. */
static bool is_delete(const struct nl_batch *nb, unsigned int k)
{
	return ((const struct nlmsghdr *)(nb->buf + nb->reqs[k].off))->nlmsg_type ==
	       RTM_DELTFILTER;
}

static int filters(struct vnic_bpf *b, struct tc_made *a, struct vnic_filter_result *res)
{
	struct nl_batch nb;
	unsigned int i, h, k;
	int err = 0;

	nl_batch_init(&nb);
	for (i = 0; i < a->n && !err; i++) {
		a->req[i] = nb.n;
		for (h = HOOK_IN; h <= HOOK_EG && !err; h <<= 1) {
			if (!(a->hooks[i] & h))
				continue;
			/* our filter with an older program is re-pointed in
			 * place (cls_bpf swaps it atomically); anything else
			 * in our slot goes first */
			if (!a->made_q[i] && !a->old[2 * i + (h == HOOK_EG)])
				err = put_del_filter(&nb, a->ifi[i], h);
			if (!err)
				err = put_filter(&nb, a->ifi[i], h,
						 h == HOOK_IN ? b->prog_in : b->prog_eg);
		}
	}
	if (!err)
		err = nl_batch_run(&b->ctx->nl, &nb);
	if (!err)
		bpf_tap_nl(b, nb.buf, nb.len);
	if (err) {
		nl_batch_free(&nb);
		return vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
				    "bpf: sending the filters");
	}
	res->messages += nb.n;
	res->batches++;
	for (k = 0, i = 0; k < nb.n && !err; k++) {
		while (i + 1 < a->n && a->req[i + 1] <= k)
			i++;
		err = is_delete(&nb, k) ? 0 : nb.reqs[k].err;
		if (err) {
			batch_fail(b, &nb, k, &a->ifi[i], "cls_bpf filter");
		} else if (!is_delete(&nb, k) && bpf_fault(b, BPF_FAULT_FILTER)) {
			err = vnic_set_err(b->ctx, -EIO, VNIC_STEP_CONFIGURE, -1, NULL,
					   "bpf: cls_bpf filter on ifindex %d (injected)",
					   a->ifi[i]);
		}
	}
	nl_batch_free(&nb);
	return err;
}

void tc_made_free(struct tc_made *a)
{
	free(a->ifi);
	free(a->hooks);
	free(a->made_q);
	free(a->req);
	free(a->old);
	for (unsigned int i = 0; a->old_fd && i < 2 * a->n; i++)
		if (a->old_fd[i] >= 0)
			close(a->old_fd[i]);
	free(a->old_fd);
	memset(a, 0, sizeof(*a));
}

void tc_undo(struct vnic_bpf *b, const struct tc_made *a)
{
	if (b->tcx) {
		tcx_undo(b, a);
		return;
	}
	if (a->n)
		undo(b, a);
}

static uint32_t stale_hooks(const uint32_t *old, unsigned int i)
{
	return (old[2 * i] ? HOOK_IN : 0) | (old[2 * i + 1] ? HOOK_EG : 0);
}

/*
 * The older program our filter on a hook runs (a->old[j]), held before it
 * is swapped: once replaced nothing else holds it, and the undo needs it
 * to put it back.  Without it (out of fds, or gone since the check) the
 * undo could only delete our filter and leave the hook unfiltered: the
 * change fails here instead, before anything is swapped.
 */
static int hold_old(struct vnic_bpf *b, struct tc_made *a, unsigned int j)
{
	int err;

	if (!a->old[j])
		return 0;
	a->old_fd[j] = bpf_prog_get_fd_by_id(a->old[j]);
	if (a->old_fd[j] >= 0)
		return 0;
	err = -errno;
	a->old_fd[j] = -1;
	return vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
			    "bpf: opening program %u, which our filter on ifindex %d "
			    "runs, to swap it back if the change fails%s", a->old[j],
			    a->ifi[j / 2], err == -EMFILE ? " (out of file descriptors: "
			    "raise RLIMIT_NOFILE)" : "");
}

int tc_attach(struct vnic_bpf *b, const int *ifindex, const uint32_t *want,
		  const uint32_t *have, const uint32_t *old, unsigned int n,
		  bool repoint, struct tc_made *made, struct vnic_filter_result *res)
{
	struct tc_made a = { 0 };
	uint32_t hooks;
	unsigned int i;
	int err;

	a.ifi = calloc(n + 1, sizeof(*a.ifi));
	a.hooks = calloc(n + 1, sizeof(*a.hooks));
	a.made_q = calloc(n + 1, sizeof(*a.made_q));
	a.req = calloc(n + 1, sizeof(*a.req));
	a.old = calloc(2 * n + 2, sizeof(*a.old));
	a.old_fd = malloc((2 * n + 2) * sizeof(*a.old_fd));
	err = a.ifi && a.hooks && a.made_q && a.req && a.old && a.old_fd ? 0 : -ENOMEM;
	for (i = 0; !err && i < 2 * n + 2; i++)
		a.old_fd[i] = -1;
	if (err)
		vnic_set_err(b->ctx, err, VNIC_STEP_CONFIGURE, -1, NULL,
			     "bpf: out of memory for %u NICs' filters", n);
	for (i = 0; !err && i < n; i++) {
		uint32_t h = want[i] & ~have[i], st = stale_hooks(old, i);

		h &= repoint ? st : ~st;
		if (!h)
			continue;
		a.ifi[a.n] = ifindex[i];
		a.hooks[a.n] = h;
		if (repoint) {
			a.old[2 * a.n] = h & HOOK_IN ? old[2 * i] : 0;
			a.old[2 * a.n + 1] = h & HOOK_EG ? old[2 * i + 1] : 0;
			err = hold_old(b, &a, 2 * a.n);
			if (!err)
				err = hold_old(b, &a, 2 * a.n + 1);
		}
		a.n++;
	}
	for (i = 0, hooks = 0; !err && i < a.n; i++)
		hooks |= a.hooks[i];
	/* An adopted set's programs are loaded lazily (bpf_progs_ready()):
	 * a caller that skipped it would attach fd -1, an EBADF from deep in
	 * a batch; say what is wrong instead. */
	if (!err && ((hooks & HOOK_IN && b->prog_in < 0) ||
		     (hooks & HOOK_EG && b->prog_eg < 0)))
		err = vnic_set_err(b->ctx, -EINVAL, VNIC_STEP_CONFIGURE, -1, NULL,
				   "bpf: attaching a program not loaded "
				   "(bpf_progs_ready() not called first)");
	if (!err && a.n && b->tcx) {
		err = tcx_attach(b, &a, res);
	} else if (!err && a.n) {
		err = repoint ? 0 : qdiscs(b, &a, res);	/* re-pointed: clsact is there */
		if (!err)
			err = filters(b, &a, res);
		if (err)
			undo(b, &a);
	}
	if (err)
		tc_made_free(&a);
	else
		*made = a;
	return err;
}

/* --- what is on a damaged hook -------------------------------------------- */

struct slot {
	unsigned int at_prio;
};

static int slot_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct tcmsg *t = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type == RTM_NEWTFILTER && mnl_nlmsg_get_payload_len(nlh) >= sizeof(*t) &&
	    TC_H_MAJ(t->tcm_info) >> 16 == BPF_FILTER_PRIO)
		((struct slot *)data)->at_prio++;
	return MNL_CB_OK;
}

/*
 * A hook tc_check() found without our filter: no clsact (a get of it
 * fails), something else at our priority, or nothing there.  A get and a
 * dump, for the damaged hooks only, so that a diff can name what it
 * repairs.
 */
int tc_damage(struct vnic_bpf *b, int ifindex, uint32_t hook)
{
	char req[512], buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct slot s = { 0 };
	const char *bad;

	if (b->tcx)
		return DMG_NOFILTER;
	nlh->nlmsg_type = RTM_GETQDISC;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	tc_msg(nlh, ifindex, TC_H_CLSACT, TC_H_MAKE(TC_H_CLSACT, 0), 0);
	if (nl_request(&b->ctx->nl, nlh, NULL, NULL, buf, sizeof(buf), &bad) < 0)
		return DMG_NOQDISC;
	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_GETTFILTER;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	tc_msg(nlh, ifindex, parent_of(hook), 0, 0);
	/* The qdisc is there (asked above): a dump that failed or was cut
	 * short (a filter larger than its skb) leaves only "ours missing". */
	if (nl_dump(&b->ctx->nl, nlh, slot_cb, &s, buf, sizeof(buf)) < 0)
		return DMG_NOFILTER;
	return s.at_prio ? DMG_FOREIGN : DMG_NOFILTER;
}

/* --- detaching ------------------------------------------------------------ */

struct others {
	unsigned int count;
};

/* A filter not in our slot: ours (or what sits at our priority, deleted
 * with them) is not counted, so that a diff, which runs with them still
 * there, counts what the sync's detach will. */
static int count_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct tcmsg *t = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type == RTM_NEWTFILTER && mnl_nlmsg_get_payload_len(nlh) >= sizeof(*t) &&
	    t->tcm_handle && TC_H_MAJ(t->tcm_info) >> 16 != BPF_FILTER_PRIO)
		((struct others *)data)->count++;
	return MNL_CB_OK;
}

/*
 * The socket the clsact checks dump on, opened on first use in the
 * context's namespace and only ever read a page (at most 8 KiB) at a time.
 * The kernel allocates each dump's skb by the largest buffer its socket was
 * read with, at least a page: on the context's socket, read 64 KiB at a
 * time, every dump of an empty hook costs a 32 KiB (order-3) allocation;
 * here one page, which fits the read.  Measured: 8,000 empty hooks dumped
 * one at a time, 34 ms against 43 ms (medians of 5, Documentation/bpf.rst).
 * NULL (no socket, or a stand-in answers the context's): the context's.
 */
static struct nl_sock *chk_sock(struct vnic_bpf *b)
{
	long page = sysconf(_SC_PAGESIZE);

	if (!b->ctx->nl.mnl)
		return NULL;
	if (!b->chk.mnl && nl_open(&b->chk, NETLINK_ROUTE, b->ctx->netns_fd, 1u << 20, 0,
				   &b->ctx->stats, NULL))
		return NULL;
	b->chk.recv_len = page > 0 && page < 8192 ? (size_t)page : 8192;
	return &b->chk;
}

/*
 * Filters left on a NIC's clsact once ours go.  A filter whose message
 * does not fit the dump's skb (a page on the check socket: a classic BPF
 * filter of 600 instructions, 4.9 KiB) ends the dump early with -EMSGSIZE
 * in its DONE, that filter not sent: an error, so the clsact stays.
 */
unsigned int tc_filters_left(struct vnic_bpf *b, int ifindex)
{
	struct nl_sock *s = chk_sock(b);
	struct others o = { 0 };
	uint32_t h;
	char buf[256];

	for (h = HOOK_IN; h <= HOOK_EG; h <<= 1) {
		char req[512];
		struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);

		nlh->nlmsg_type = RTM_GETTFILTER;
		nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
		tc_msg(nlh, ifindex, parent_of(h), 0, 0);
		if (nl_dump(s ? s : &b->ctx->nl, nlh, count_cb, &o, buf,
			    sizeof(buf)) < 0) {
			/* a dump left half read would answer the next one
			 * -EBUSY: the check socket is made again */
			if (s)
				nl_close(s);
			return 1;	/* unknown: keep the qdisc */
		}
	}
	return o.count;
}

/*
 * Our filters off each NIC: the clsact qdisc, with them, where nothing else
 * is on it (another tc user's filters keep it), else our slot on both
 * hooks.  The check runs first, with ours still there (what sits at our
 * priority is not counted): a clsact that goes takes our filters along, so
 * a NIC needs one request instead of three (two filter deletes, then the
 * qdisc).  Between the check and the delete another tool could add a
 * filter that the delete takes along; deleting our filters before the
 * check left the same window.  Best effort per NIC: a NIC that went away
 * meanwhile took both with it.
 */
int tc_detach(struct vnic_bpf *b, const int *ifindex, unsigned int n,
		  struct vnic_filter_result *res)
{
	struct nl_batch nb;
	unsigned int i, h;
	int err = 0;

	if (!n)
		return 0;
	err = bpf_fault(b, BPF_FAULT_DETACH);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_DELETE, -1, NULL,
				    "bpf: detaching the filters (injected)");
	if (b->tcx) {
		tcx_detach(b, ifindex, n);
		res->messages += n;
		res->writes = 1;
		return 0;
	}
	nl_batch_init(&nb);
	for (i = 0; i < n && !err; i++) {
		if (!tc_filters_left(b, ifindex[i])) {
			err = put_qdisc(&nb, RTM_DELQDISC, 0, ifindex[i]);
			continue;
		}
		for (h = HOOK_IN; h <= HOOK_EG && !err; h <<= 1)
			err = put_del_filter(&nb, ifindex[i], h);
	}
	if (!err)
		err = nl_batch_run(&b->ctx->nl, &nb);
	if (!err)
		bpf_tap_nl(b, nb.buf, nb.len);
	res->messages += nb.n;
	res->batches++;
	res->writes = 1;
	nl_batch_free(&nb);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_DELETE, -1, NULL,
				    "bpf: detaching the filters");
	return 0;
}
