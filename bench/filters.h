/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vnic-bench: the filter scenarios (issue 3), beside bench.h.
 *
 * scn_filters.c	filters, filters-add, restart: options, runs, verdicts
 * fenv.c		the namespace: G*K NICs made by raw netlink, the
 *			policy of each NIC, and nf_tables by raw nfnetlink
 *			(flush, table count, generation id)
 * m_nft.c		anchors that run nft(8): nft -f, one process per
 *			statement, the per-guest-chain layout
 * m_xt.c		anchors that run the xtables tools (iptables,
 *			ip6tables, arptables; legacy and nft variants)
 * floor.c		the floor rows: libvnic's own batches (and reads),
 *			captured and sent again by the bench's socket, and
 *			the kernel's cost of the hooks alone
 * floor_bpf.c		the bpf floor rows: a libvnic-bpf change's writes,
 *			captured and done again by the bench alone
 * restart_proc.c	restart's rows of new vnicctl processes
 */
#ifndef VNIC_BENCH_FILTERS_H
#define VNIC_BENCH_FILTERS_H

#include <stdbool.h>
#include <stdint.h>
#include <vnic/vnic.h>

#include "bench.h"

#define FILT_DEFAULT_NICS_PER_GUEST	4
#define FILT_DEFAULT_GUESTS		1000
#define FILT_DEFAULT_EXISTING		10000
#define FILT_DEFAULT_RESTART_GUESTS	100
/* Statements timed one nft process each before extrapolating. */
#define FILT_DEFAULT_STMT_SAMPLE	200
/* macvlans per lower device (see fenv.c). */
#define FILT_NICS_PER_LOWER		1000
/* nf_tables refuses a netdev base chain with more devices (EFBIG). */
#define FILT_NETDEV_MAX			255
#define FILT_TABLE			"vnic"
/* Guests per vnic_filter_apply when installing the starting state. */
#define FILT_SETUP_CHUNK		50

/* Targets of issue 3. */
#define TARGET_APPLY_MS		25.0	/* 1000 guests x 4 NICs, one batch */
#define TARGET_APPLY_X_NFT	0.6	/* ... and <= 0.6x nft -f */
#define TARGET_ADD_MS		1.0	/* one guest next to 10,000 */
#define TARGET_ADD_X_EMPTY	1.5	/* ... and <= 1.5x next to none */
#define TARGET_RESTART_MS	5.0	/* 100 unchanged guests, zero writes */

#define PFX_SKIP "the kernel refuses prefix hooks (NFTA_DEVICE_PREFIX, Linux 6.17)"
#define FILT_NFT_MISSING "nft(8) not found in /usr/sbin, /sbin, /usr/bin, /bin, /usr/local/sbin (install nftables)"



/* ---- fenv.c ---- */

struct filt_env {
	const struct bench_opts *o;
	struct rawnl nl;
	int lower;			/* lowers[0] */
	int *lowers;			/* "lower0", "lower1", ... */
	unsigned int nlowers;
	unsigned int nnics;		/* NICs made: guests * nics_per_guest */
	struct vnic_ctx *ctx;
	char nft_path[256];		/* "" when nft(8) is missing */
	double nics_ms;			/* making the NICs, untimed setup */
	struct mnl_socket *nfnl;	/* raw nfnetlink, the bench's own */
	uint32_t nfnl_seq;
};

/* NIC i (0-based over the whole namespace) and its guest's name. */
void filt_nic_name(unsigned int i, char *buf);
void filt_guest_name(unsigned int g, char *buf);
/* Text forms: "02:00:00:00:00:01", "10.0.0.1", "fd00::1". */
void filt_nic_mac_str(unsigned int i, char *buf);
void filt_nic_ipv4(unsigned int i, bool changed, char *buf);
void filt_nic_ipv6(unsigned int i, char *buf);
/* The EUI-64 link-local of NIC i's MAC. */
void filt_nic_ll6(unsigned int i, char *buf);

/* Make lower0 and nnics NICs (untimed); the context too. */
int filt_env_setup(struct filt_env *e, const struct bench_opts *o,
		   unsigned int nnics);
void filt_env_free(struct filt_env *e);
/* growth: lowers for cap NICs, nnics of them made now. */
int filt_env_setup_cap(struct filt_env *e, const struct bench_opts *o,
		       unsigned int nnics, unsigned int cap);
/* Make NICs [first, first + count) (untimed, on the lowers made). */
int filt_env_add_nics(struct filt_env *e, unsigned int first,
		      unsigned int count);
/* Queue the RTM_NEWLINKs of NICs [first, first + count) on e->nl, for
 * the caller's rawnl_flush(). */
int filt_queue_nics(struct filt_env *e, unsigned int first,
		    unsigned int count);
/* Delete every NIC filt_env_add_nics or setup made, in one request. */
int filt_env_del_nics(struct filt_env *e);

/*
 * The clean-traffic policy of guests [first, first + count): K NICs each,
 * one IPv4 and one IPv6 per NIC.  'changed' names one guest whose first
 * NIC gets another IPv4 (-1: none).
 */
int filt_policy(struct filt_env *e, unsigned int first, unsigned int count,
		int changed, struct vnic_policy **out, char *err,
		size_t errlen);

/* Open FILT_TABLE on e's context, hooking the NICs by name or by their
 * prefix "nv": 0, or -EOPNOTSUPP with PFX_SKIP in err when the kernel
 * cannot hook by prefix, or the library's error. */
int filt_open(struct filt_env *e, bool prefix, struct vnic_filter **h,
	      char *err, size_t errlen);
/* A change's counts into s. */
void filt_take(struct sample *s, const struct vnic_filter_result *res);
/* Guests [0, count) on h, FILT_SETUP_CHUNK at a time, untimed; their
 * batches and messages. */
int filt_install(struct filt_env *e, struct vnic_filter *h, unsigned int count,
		 unsigned int *batches, unsigned int *messages, char *err,
		 size_t errlen);
/* Guests [first, first + count) out in one change; s (if set) timed. */
int filt_remove(struct filt_env *e, struct vnic_filter *h, unsigned int first,
		unsigned int count, struct sample *s, char *err, size_t errlen);
/* Installed guests by the library's own account (0 on an error). */
unsigned int filt_count_guests(struct vnic_filter *h);

/* nf_tables, by the bench's own nfnetlink socket (no nft, no libvnic). */
int filt_nfnl_open(struct filt_env *e);
int nfnl_flush_ruleset(struct filt_env *e);
int nfnl_count_tables(struct filt_env *e, unsigned int *count);
int nfnl_genid(struct filt_env *e, uint32_t *genid);

/* ---- floor.c ---- */

/* The nf_tables batches one libvnic change sent, as sent. */
struct floor_batch {
	char *buf;
	size_t len;
	bool request;			/* a read (get, dump), not a batch */
};

struct floor_batches {
	struct floor_batch *v;
	unsigned int n;
	int err;			/* the capture ran out of memory */
	bool requests;			/* keep the reads too */
};

/* Keep a copy of every batch handle h sends from now on (into fb; NULL:
 * stop). */
int floor_capture(struct vnic_filter *h, struct floor_batches *fb);
void floor_free(struct floor_batches *fb);
/* Send batches [from, to) of fb again, one sendmsg() each, timed to the
 * last ack (a read: to its last reply): 0 or the first error the kernel
 * gave (-ENODATA: none kept). */
int floor_replay(struct filt_env *e, struct floor_batches *fb,
		 unsigned int from, unsigned int to, double *ms);
/* One batch hooking NICs [first, first + count) in a table of the bench's
 * own (the kernel's cost of per-device hooks here), deleted after. */
int nfnl_hook_floor(struct filt_env *e, unsigned int first,
		    unsigned int count, double *ms);

/* ---- m_nft.c ---- */

/* Run nft with argv[1..] (argv[0] is filled in); 0 or -errno/-ECHILD. */
int nft_run(const struct filt_env *e, const char **argv);
/* nft -f path. */
int nft_file(const struct filt_env *e, const char *path);
/* Write text to a new temporary file; path gets its name. */
int nft_write_tmp(const char *text, size_t len, char *path, size_t pathlen);
/* The whole output of "nft list ruleset" (malloc'd), flags lines dropped. */
int nft_list_ruleset(const struct filt_env *e, char **out);

/*
 * vnic_filter_render's text as one command per statement: structure
 * (table, chains, sets, maps: each without contents) first, then items (one
 * per named object, set/map element and rule).  Base chains with more than
 * max_devs devices become copies of at most max_devs each ("eg0_0",
 * "eg0_1", ...), each with the chain's rules; *nsplit: chains split.
 */
struct stmt_list {
	char **v;
	unsigned int n, cap;
	unsigned int n_struct;		/* v[0..n_struct-1] are structure */
	unsigned int n_elements, n_rules;
};

int stmt_split(const char *text, unsigned int max_devs, struct stmt_list *out,
	       unsigned int *nsplit, char *err, size_t errlen);
void stmt_free(struct stmt_list *l);
/* Write statements [from, to) as a file nft -f takes. */
int stmt_write(const struct stmt_list *l, unsigned int from, unsigned int to,
	       char *path, size_t pathlen);

/* The per-guest-chain layout for guests [0, guests): malloc'd text. */
int chains_render(const struct filt_env *e, unsigned int guests, char **text,
		  size_t *len, unsigned int *nrules);
/* The same for guests [first, first + guests), added to the table as it
 * stands: base chains named after their first NIC ("from_nv<i>"). */
int chains_render_range(const struct filt_env *e, unsigned int first,
			unsigned int guests, char **text, size_t *len,
			unsigned int *nrules);

/* ---- m_xt.c ---- */

enum xt_variant { XT_LEGACY, XT_NFT, XT__VARIANTS };
enum xt_fam { XT_IP4, XT_IP6, XT_ARP, XT__FAMS };

struct xt_cmd {
	enum xt_fam fam;
	char *line;			/* "-A vx-nv0 ...", no "-t raw" */
};

/* An equivalent ruleset as commands, per NIC, per family (see m_xt.c). */
struct xt_set {
	struct xt_cmd *v;
	unsigned int n, cap;
	unsigned int nics;
	unsigned int rules[XT__FAMS], chains[XT__FAMS];
	bool arp;			/* has an ARP part */
	char path[XT__FAMS][64];	/* restore files, "" if none */
};

/* Why variant v cannot run here (tool missing or refused), or NULL. */
const char *xt_skip(enum xt_variant v);
int xt_set_build(const struct filt_env *e, enum xt_variant v,
		 unsigned int first_guest, unsigned int guests,
		 struct xt_set *s);
void xt_set_free(struct xt_set *s);
int xt_set_files(struct xt_set *s);
void xt_set_unlink(struct xt_set *s);
/* One restore process per family, timed; 0, -ECHILD or -errno. */
int xt_restore(enum xt_variant v, const struct xt_set *s, bool noflush,
	       double *ms);
/* Commands [0, to) by one restore per family, untimed. */
int xt_preload(enum xt_variant v, const struct xt_set *s, unsigned int to);
/* The commands that take guests [first, first + guests) out again. */
int xt_set_build_remove(const struct filt_env *e, enum xt_variant v,
			unsigned int first_guest, unsigned int guests,
			struct xt_set *s);
/* Empty the legacy tables (nft variant: the nfnetlink flush does). */
int xt_flush(enum xt_variant v);

/* filters: the ruleset of every guest, its files and the rows' notes. */
int xt_filters_prepare(const struct filt_env *e, enum xt_variant v,
		       struct xt_set *s, struct bench_row *restore,
		       struct bench_row *per_rule);
/* One timed run of a row (restore, or one process per command from a
 * sample of 'sample'), then the legacy tables flushed, untimed. */
int xt_filters_run(enum xt_variant v, bool by_rule, const struct xt_set *s,
		   unsigned int sample, struct bench_row *r, struct sample *smp);
/* restart: every guest's rules loaded, untimed; each run restores them
 * all again over themselves, timed; release: the files gone, the tables
 * flushed (0 or -errno). */
int xt_restart_prepare(struct filt_env *e, enum xt_variant v,
		       struct xt_set *s, struct bench_row *r);
int xt_restart_run(enum xt_variant v, const struct xt_set *s,
		   struct bench_row *r, struct sample *smp);
int xt_restart_release(const struct filt_env *e, enum xt_variant v,
		       struct xt_set *s);

/* ---- floor_bpf.c ---- */

/* One run of the filters scenario's floor-bpf row (remove false) or
 * floor-bpf-remove-all (true), timed into s. */
int bfloor_row(struct filt_env *e, const struct vnic_policy *p,
	       unsigned int guests, bool remove, struct sample *s, char *err,
	       size_t errlen);

/* ---- restart_proc.c ---- */

/* --proc-guests is a list of sizes (or "none"): 0 or -EINVAL. */
int restart_proc_check(const struct bench_opts *o);

/*
 * restart's rows of new vnicctl processes: RP_ROWS for each size and hook
 * mode (by name, by prefix), a group of methods_run() each.  Row i's
 * group is i / RP_ROWS; its first prepare makes the group's namespace
 * (the process moves into it), a release deletes it.
 */
#define RP_ROWS	7
struct rproc;

/* *p NULL and *nrows 0 with --proc-guests none. */
int rproc_new(const struct bench_opts *o, struct rproc **p,
	      unsigned int *nrows);
void rproc_free(struct rproc *p);
const char *rproc_name(const struct rproc *p, unsigned int i);
/* Row i's existing, targets and why it is skipped, into r. */
void rproc_row(const struct rproc *p, unsigned int i, struct bench_row *r);
int rproc_prepare(struct rproc *p, unsigned int i, char *err, size_t errlen);
int rproc_run(struct rproc *p, unsigned int i, struct sample *s, char *err,
	      size_t errlen);
void rproc_release(struct rproc *p);
/* After the runs: each row's cost per doubling of N, from the size
 * before (rows: the first of them). */
void rproc_notes(const struct rproc *p, struct bench_row *rows);

/* ---- m_bpf.c: the libvnic-bpf rows ---- */

/* A bpf handle (VNIC_BACKEND_BPF) sized for e's NICs. */
int bpf_open(struct filt_env *e, struct vnic_filter **h, char *err,
	     size_t errlen);
/* filters: vnic_filter_apply of p (guests [0, guests)) on a new handle,
 * then every guest removed in one change (bare NICs again); s times the
 * apply, or with time_remove the remove. */
int bpf_apply_row(struct filt_env *e, const struct vnic_policy *p,
		  unsigned int guests, bool time_remove, struct sample *s,
		  char *err, size_t errlen);
#endif /* VNIC_BENCH_FILTERS_H */
