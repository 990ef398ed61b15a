// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The state every timed run starts from, and the way back to it.
 *
 * A lower veth pair (the dummy kind is not built here) and, with
 * --existing N, N macvlans "fill0".."fillN-1" on it.  After each run the
 * links that were not there before are deleted, untimed, and the count
 * must be back to the baseline: a leak would make the next method pay for
 * a bigger namespace and bias the comparison.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>

#include "bench.h"

/* Marks what a run created, so that one RTM_DELLINK removes all of it. */
#define RESTORE_GROUP	0x7e57

const char *env_prefix(enum vnic_kind kind)
{
	static const char *const prefix[VNIC_KIND__MAX] = {
		[VNIC_KIND_MACVLAN] = "mvl", [VNIC_KIND_VETH] = "vth",
		[VNIC_KIND_TAP] = "tp",
	};

	return kind < VNIC_KIND__MAX && prefix[kind] ? prefix[kind] : "mvt";
}

/* The kind as rtnetlink and ip(8) spell it (the library's name); NULL
 * for a tap, which neither makes. */
const char *env_ip_kind(enum vnic_kind kind)
{
	return kind == VNIC_KIND_TAP ? NULL : vnic_kind_name(kind);
}

unsigned int env_links_per_nic(const struct bench_opts *o)
{
	return o->kind == VNIC_KIND_VETH ? 2 : 1;
}

void env_nic_name(const struct bench_opts *o, unsigned int i, char *buf)
{
	snprintf(buf, 16, "%s%u", env_prefix(o->kind), o->first_nic + i);
}

void env_peer_name(const struct bench_opts *o, unsigned int i, char *buf)
{
	snprintf(buf, 16, "vthp%u", o->first_nic + i);
}

static int cmp_ifindex(const void *a, const void *b)
{
	const struct link_entry *x = a, *y = b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

static bool env_in_base(const struct guest_env *e, int ifindex)
{
	struct link_entry key = { .ifindex = ifindex };

	return bsearch(&key, e->base.v, e->base.n, sizeof(key),
		       cmp_ifindex) != NULL;
}

/*
 * Veth pairs "lower0"/"lower0p", "lower1"/"lower1p", ... (up; in group,
 * unless 0), made in one flush: lowers[i] gets lower<i>'s ifindex and
 * *peer0, when set, lower0p's.
 */
int env_make_lowers(struct rawnl *nl, unsigned int n, uint32_t group,
		    int *lowers, int *peer0)
{
	char name[24], peer[24], rest[16];	/* at most "lower400p" here */
	struct link_spec ls = {
		.name = name, .kind = "veth", .peer = peer, .up = true,
		.group = group,
	};
	unsigned int i, k;
	struct link_list l;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		snprintf(name, sizeof(name), "lower%u", i);
		snprintf(peer, sizeof(peer), "lower%up", i);
		err = rawnl_queue_newlink(nl, &ls);
		if (!err)
			err = rawnl_queue_setup(nl, peer);
	}
	if (!err)
		err = rawnl_flush(nl, rawnl_window(nl));
	if (err) {
		fprintf(stderr, "vnic-bench: creating the lowers: %s\n", nl->err);
		return err;
	}
	err = rawnl_dump_links(nl, &l);
	if (err)
		return err;
	for (i = 0; i < l.n; i++) {
		int got = sscanf(l.v[i].name, "lower%u%15s", &k, rest);

		if (got == 1 && k < n)
			lowers[k] = l.v[i].ifindex;
		else if (got == 2 && k == 0 && !strcmp(rest, "p") && peer0)
			*peer0 = l.v[i].ifindex;
	}
	link_list_free(&l);
	for (i = 0; i < n; i++)
		if (!lowers[i])
			return -ENODEV;
	return 0;
}

static int make_fill(struct guest_env *e, unsigned int count)
{
	char name[16];
	/* Same lower as the NICs by default: a host's guests share its
	 * uplink, and the kernel's cost of each new macvlan grows with the
	 * uppers the lower already has (its adjacency lists). */
	struct link_spec ls = {
		.name = name, .kind = "macvlan",
		.lower = e->o->fill_other ? e->lower_peer : e->lower,
		.mode = MACVLAN_MODE_BRIDGE,
	};
	unsigned int i;
	int err;

	for (i = 0; i < count; i++) {
		snprintf(name, sizeof(name), "fill%u", i);
		err = rawnl_queue_newlink(&e->nl, &ls);
		if (err)
			return err;
	}
	/* Windowed: thousands of acks would overflow the receive buffer. */
	err = rawnl_flush(&e->nl, rawnl_window(&e->nl));
	if (err)
		fprintf(stderr, "vnic-bench: creating %u fill devices: %s\n",
			count, e->nl.err);
	return err;
}

static unsigned int rcvbuf_for(const struct bench_opts *o)
{
	unsigned long want = (unsigned long)o->nics * 2048;

	/* The floor sends every NIC in one sendmsg: room for all acks. */
	if (want < 4u << 20)
		want = 4u << 20;
	return want > INT_MAX ? INT_MAX : (unsigned int)want;
}

int env_setup(struct guest_env *e, const struct bench_opts *o)
{
	int err;

	memset(e, 0, sizeof(*e));
	e->o = o;
	bench_find_tool("ip", e->ip_path, sizeof(e->ip_path));
	err = rawnl_open(&e->nl, rcvbuf_for(o));
	if (err)
		return err;
	err = env_make_lowers(&e->nl, 1, 0, &e->lower, &e->lower_peer);
	if (!err && o->existing)
		err = make_fill(e, o->existing);
	if (!err)
		err = rawnl_dump_links(&e->nl, &e->base);
	if (err)
		return err;
	qsort(e->base.v, e->base.n, sizeof(e->base.v[0]), cmp_ifindex);
	return 0;
}

/*
 * Delete the baseline too, in one unregister batch, before leaving: the
 * namespace's own teardown would do it in a kworker after we exit, and on
 * two cores that would run inside the next bench's timings.
 */
static void teardown(struct guest_env *e)
{
	unsigned int i, n = 0;

	for (i = 0; i < e->base.n; i++) {
		if (e->base.v[i].ifindex == 1)
			continue;	/* lo cannot be deleted */
		rawnl_queue_setgroup(&e->nl, e->base.v[i].ifindex,
				     RESTORE_GROUP);
		n++;
	}
	if (n)
		rawnl_queue_dellink_group(&e->nl, RESTORE_GROUP);
	rawnl_flush(&e->nl, rawnl_window(&e->nl));
}

void env_free(struct guest_env *e)
{
	if (e->nl.nl)
		teardown(e);
	link_list_free(&e->base);
	rawnl_close(&e->nl);
}

static unsigned int queue_extra(struct guest_env *e, const struct link_list *l,
				bool by_group)
{
	unsigned int i, n = 0;

	for (i = 0; i < l->n; i++) {
		if (env_in_base(e, l->v[i].ifindex))
			continue;
		if (by_group)
			rawnl_queue_setgroup(&e->nl, l->v[i].ifindex,
					     RESTORE_GROUP);
		else
			rawnl_queue_dellink(&e->nl, l->v[i].ifindex);
		n++;
	}
	return n;
}

/* Delete what is not in the baseline: by group, else one by one. */
static int delete_extra(struct guest_env *e, unsigned int *deleted)
{
	unsigned int win = rawnl_window(&e->nl);
	struct link_list l;
	int err;

	err = rawnl_dump_links(&e->nl, &l);
	if (err)
		return err;
	*deleted = queue_extra(e, &l, true);
	if (*deleted) {
		rawnl_queue_dellink_group(&e->nl, RESTORE_GROUP);
		err = rawnl_flush(&e->nl, win);
	}
	if (err) {
		/* A veth whose peer went first is already gone: ignore. */
		queue_extra(e, &l, false);
		rawnl_flush(&e->nl, win);
		err = 0;
	}
	link_list_free(&l);
	return err;
}

static unsigned int count_extra(struct guest_env *e, const struct link_list *l)
{
	unsigned int i, n = 0;

	for (i = 0; i < l->n; i++)
		n += !env_in_base(e, l->v[i].ifindex);
	return n;
}

int env_count_new(struct guest_env *e, unsigned int *got)
{
	struct link_list l;
	int ret = rawnl_dump_links(&e->nl, &l);

	*got = 0;
	if (ret)
		return ret;
	*got = count_extra(e, &l);
	link_list_free(&l);
	return 0;
}

static void print_extra(struct guest_env *e, const struct link_list *l)
{
	unsigned int i, shown = 0;

	for (i = 0; i < l->n && shown < 8; i++) {
		if (env_in_base(e, l->v[i].ifindex))
			continue;
		fprintf(stderr, " %s", l->v[i].name);
		shown++;
	}
}

int env_restore(struct guest_env *e, unsigned int *deleted)
{
	struct link_list l;
	int err = delete_extra(e, deleted);

	if (!err)
		err = rawnl_dump_links(&e->nl, &l);
	if (err) {
		fprintf(stderr, "vnic-bench: restoring the baseline: %s\n",
			strerror(-err));
		return err;
	}
	if (l.n != e->base.n || count_extra(e, &l)) {
		fprintf(stderr,
			"vnic-bench: %u links, baseline %u: later runs would be biased; left:",
			l.n, e->base.n);
		print_extra(e, &l);
		fputc('\n', stderr);
		err = -EEXIST;
	}
	link_list_free(&l);
	return err;
}
