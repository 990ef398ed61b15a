/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vnic-cni: what the plugin's files share.  One run is one verb: main.c
 * reads the environment and the configuration into a struct cni_run, calls
 * the verb, and prints either its result or the error recorded with
 * cni_fail().  A verb returns 0 or -1 (the error is in run->err).
 *
 * Naming: an attachment (container id, interface name) of network NET is a
 * libvnic guest of owner NET whose name cni_guest_name() derives from the
 * pair; its host end, its filter guest and its state file carry that name,
 * so DEL needs nothing but the environment and GC finds a network's
 * attachments by their owner tag.
 */
#ifndef VNIC_CNI_H
#define VNIC_CNI_H

#include <stdbool.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include <vnic/vnic.h>

#include "tools/linger.h"

#ifndef VNIC_VERSION
#define VNIC_VERSION "0.1.0"
#endif

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

/* The spec's well-known error codes, then ours (100 and up). */
enum cni_code {
	CNI_ERR_VERSION		= 1,	/* incompatible CNI version */
	CNI_ERR_FIELD		= 2,	/* unsupported field in the config */
	CNI_ERR_NO_CONTAINER	= 3,	/* container unknown or gone */
	CNI_ERR_ENV		= 4,	/* invalid environment variables */
	CNI_ERR_IO		= 5,	/* I/O failure */
	CNI_ERR_DECODE		= 6,	/* failed to decode content */
	CNI_ERR_CONFIG		= 7,	/* invalid network config */
	CNI_ERR_AGAIN		= 11,	/* try again later */
	CNI_ERR_UNAVAILABLE	= 50,	/* cannot service ADD */
	CNI_ERR_NIC_MISSING	= 100,	/* CHECK: the NIC is gone */
	CNI_ERR_ADDR		= 101,	/* CHECK: an address (or the MAC) differs */
	CNI_ERR_FILTER_MISSING	= 102,	/* CHECK: the filter is gone */
	CNI_ERR_NIC		= 103,	/* making or deleting the NIC failed */
	CNI_ERR_FILTER		= 104,	/* the filter backend refused */
	CNI_ERR_IPAM		= 105,	/* the IPAM plugin failed */
};

enum cni_mode { CNI_MODE_VETH = 1, CNI_MODE_MACVLAN };

#define CNI_GUEST_MAX	64	/* libvnic's guest names */
#define CNI_ID_MAX	1024	/* CNI_CONTAINERID (cni_valid_id()) */
#define CNI_MAX_IPS	16

struct cni_err {
	int code;
	char msg[256];
	char details[1024];
};

struct cni_ip {
	char addr[64];		/* "10.0.0.2/24" */
	char gw[64];		/* "" if none */
	int v6;
};

struct cni_conf {
	json_t *root;		/* the whole configuration, as given */
	const char *version;	/* cniVersion */
	const char *name;	/* network name: the libvnic owner */
	enum cni_mode mode;
	const char *master;	/* macvlan: lower device */
	const char *macvlan_mode;
	const char *host_prefix;	/* veth host ends: "PREFIX%d" */
	const char *table;	/* nft table */
	enum vnic_backend backend;	/* "filterBackend" */
	const char *data_dir;
	uint32_t mtu;
	bool filter;		/* veth: install the anti-spoof filter */
	/* hook host ends by hostPrefix (Linux 6.17), not one by one */
	bool hook_prefix;
	json_t *ipam;		/* NULL: no IPAM */
	const char *ipam_type;
	json_t *prev;		/* prevResult or NULL */
	json_t *valid;		/* GC: cni.dev/valid-attachments */
};

struct cni_env {
	const char *command;
	const char *container_id;
	const char *netns;
	const char *ifname;
	const char *args;
	const char *path;
};

struct cni_run {
	struct cni_env env;
	struct cni_conf conf;
	struct cni_err err;
	char guest[CNI_GUEST_MAX + 1];
	json_t *result;		/* what the verb prints, or NULL */
	int lock_fd;
	const char *ipam_ver;	/* negotiated with the IPAM plugin */
};

/* main.c */
int cni_fail(struct cni_run *r, int code, const char *msg,
	     const char *fmt, ...) __printf(4, 5);
int cni_fail_vnic(struct cni_run *r, int code, const char *msg,
		  struct vnic_ctx *ctx, int err);
void cni_lap(const char *step);

/* conf.c */
int conf_parse(struct cni_run *r, const char *text);
int conf_version_ok(const char *v);
int conf_version_cmp(const char *a, const char *b);
extern const char *const cni_versions[];
extern const unsigned int cni_nversions;

/* names.c */
int cni_guest_name(const char *cid, const char *ifname, char *out);
bool cni_valid_id(const char *s);
bool cni_valid_ifname(const char *s);
/* The veth host end's name for guest of network net (VNIC_IFNAME_MAX). */
void cni_host_name(const char *prefix, const char *net, const char *guest,
		   char *out);

/* mac.c: the MAC the runtime asks for (ADD), canonical in out[18], ""
 * if none; -1 (code 7, or 4 for CNI_ARGS) if it is no NIC's MAC. */
int mac_wanted(struct cni_run *r, char *out);

/* ipam.c */
int ipam_exec(struct cni_run *r, const char *command, json_t **result);
int ipam_path(struct cni_run *r, char *path, size_t len);
int ipam_del_for(struct cni_run *r, const char *cid, const char *ifname);
/* One call in two halves, so that work can go on while the plugin runs:
 * start forks it (cid, ifname: NULL for the environment's); finish reads
 * its result (NULL: none wanted) and reaps it, and must follow a start
 * that succeeded. */
struct ipam_call {
	pid_t pid;
	int out;
	char *buf;		/* its stdout so far */
	size_t len, cap;
	size_t used;		/* bytes of buf the result took (ipam_answer) */
	char path[PATH_MAX];
};
int ipam_start(struct cni_run *r, const char *command, const char *cid,
	       const char *ifname, struct ipam_call *c);
int ipam_finish(struct cni_run *r, struct ipam_call *c, json_t **result);
/* ADD: the result once whole, then the plugin's exit (ipam.c) */
int ipam_answer(struct cni_run *r, struct ipam_call *c, json_t **result);
int ipam_reap(struct cni_run *r, struct ipam_call *c);
/* 1 if the IPAM plugin speaks CNI 1.1 (and so GC and STATUS), 0 if not,
 * -1 on error. */
int ipam_knows_gc(struct cni_run *r);

/* result.c */
int result_ips(struct cni_run *r, json_t *res, struct cni_ip *ips,
	       unsigned int *n);
json_t *result_build(struct cni_run *r, json_t *ipam_res,
		     const char *host_name, const char *host_mac,
		     const char *cont_mac);

/*
 * What an attachment's filter needs, kept in its state file so that a
 * filter another tool removed (nft flush ruleset) can be applied again
 * (restore.c).  has_ips: the addresses are known (not while the IPAM
 * plugin runs); a file without them cannot be restored.
 */
struct cni_flt_rec {
	char host[VNIC_IFNAME_MAX + 1];
	char mac[18];
	struct cni_ip ips[CNI_MAX_IPS];
	unsigned int nips;
	uint32_t switches;
	bool has_ips;
};

/* The switches of a veth attachment's filter (filter.c says why). */
#define CNI_FILTER_SWITCHES	(VNIC_SW_CLEAN & ~VNIC_SW_NO_PROMISC)

/* state.c */
int state_lock(struct cni_run *r);
/* STATUS: 0 if state_lock() and state_write() could work (code 50 if not). */
int state_usable(struct cni_run *r);
/* dataDir's own file NAME (as "_NAME", state.c) in buf; -1 if too long
 * (no error recorded: for the caches a missing file is only a lost hint). */
int state_file(const struct cni_run *r, const char *name, char *buf, size_t len);
/* host: the veth host end's name, kept for DEL and CHECK (NULL: none);
 * flt: what its filter needs (NULL: no filter) */
int state_write(struct cni_run *r, const char *host,
		const struct cni_flt_rec *flt);
/* guest's filter record: 1 if its state file has one, 0 if it has none
 * (an earlier vnic-cni's file, or an ADD that did not finish), -1 if there
 * is no state file of guest (nothing recorded either way). */
int state_flt(struct cni_run *r, const char *guest, struct cni_flt_rec *out);
/* Each file name of the network's directory, unread (fn: 0 to go on). */
int state_names(struct cni_run *r, int (*fn)(const char *name, void *arg),
		void *arg);
/* The host end's name an attachment's state file keeps; -1 if none. */
int state_host(struct cni_run *r, const char *guest, char *host);
void state_remove(struct cni_run *r, const char *guest);
/* Each state file of the network: guest, container id, ifname, netns. */
typedef int (*state_fn)(struct cni_run *r, const char *guest,
			const char *cid, const char *ifname,
			const char *netns, void *arg);
int state_each(struct cni_run *r, state_fn fn, void *arg);

/* ifcfg.c: addresses and routes, inside a namespace (fd) */
int ifcfg_apply(struct cni_run *r, int nsfd, const char *ifname,
		const struct cni_ip *ips, unsigned int n, json_t *routes);
int ifcfg_host(struct cni_run *r, const char *host_if,
	       const struct cni_ip *ips, unsigned int n);
int ifcfg_has_addrs(struct cni_run *r, int nsfd, const char *ifname,
		    const struct cni_ip *ips, unsigned int n);
/* ifname's MAC in mac[18] ("" if it has none) */
int ifcfg_mac(struct cni_run *r, int nsfd, const char *ifname, char *mac);

/* attach.c: the NIC through libvnic's allocator */
struct attach {
	struct vnic_ctx *ctx;
	char host[VNIC_IFNAME_MAX + 1];	/* veth host end */
	char host_mac[18];
	char cont_mac[18];	/* set before attach_create(): the one asked */
};
int attach_ctx(struct cni_run *r, int nsfd, struct vnic_ctx **ctx);
int attach_create(struct cni_run *r, int nsfd, struct attach *a);
/* hint: the host end's name from the state file, or NULL (a full dump) */
int attach_find(struct cni_run *r, struct vnic_ctx *ctx, const char *guest,
		const char *hint, char *host);
int attach_delete(struct cni_run *r, struct vnic_ctx *ctx, const char *guest,
		  const char *hint);
/* attach_delete() in two steps: *g the guest's NICs, NULL when it has none
 * (0), or -1 on an error; attach_destroy() deletes them and frees g. */
int attach_lookup(struct cni_run *r, struct vnic_ctx *ctx, const char *guest,
		  const char *hint, struct vnic_guest **g);
int attach_destroy(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_guest *g);

/* filter.c: the anti-spoof filter through the nft or bpf backend */
struct cni_restore;
/* 0, or the negative errno (its CNI error recorded) */
int filter_open(struct cni_run *r, struct vnic_ctx *ctx, bool read_only,
		struct vnic_filter **out);
/* ADD's handle, opened while the IPAM plugin runs (filter_prepare()) */
struct cni_filter {
	struct vnic_filter *f;
	bool cached;		/* on dataDir's features, not a probe's */
};
int filter_prepare(struct cni_run *r, struct vnic_ctx *ctx,
		   struct cni_filter *cf);
/* rec: this attachment's filter; rs: others' to restore in the same
 * commit (NULL: none; if that commit fails, this one's alone is tried). */
int filter_apply(struct cni_run *r, struct vnic_ctx *ctx, struct cni_filter *cf,
		 const struct cni_flt_rec *rec, const struct cni_restore *rs);
int filter_remove(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *n,
		  const char *const *guests, unsigned int count, bool *left);
/* Attachments of this network whose filter is missing from the table
 * (restore.c): filled by restore_scan(), emptied by restore_free(). */
struct cni_restore {
	struct { char guest[CNI_GUEST_MAX + 1]; struct cni_flt_rec rec; } *ent;
	unsigned int n, cap;
};
void restore_scan(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *f,
		  const char *const *skip, unsigned int nskip,
		  struct cni_restore *rs);
void restore_free(struct cni_restore *rs);
/* DEL and GC: restore_scan(), then one commit of what it found; a failure
 * is said on stderr, never the verb's. */
void filter_restore(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *f,
		    const char *const *skip, unsigned int nskip);
/* guest's filter into p (cni_fail recorded on an error) */
int filter_add_guest(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_policy *p,
		     const char *guest, const struct cni_flt_rec *rec);
/* Whether err is the refusal of a table another process owns (nft). */
bool filter_owned(const struct cni_run *r, int err);
/* Whether err (of filter_open() if open, else of filter_remove()) lasts
 * until someone else acts: an owned or a damaged table (nft). */
bool filter_stuck(const struct cni_run *r, int err, bool open);
/* CHECK: nothing of what rec records of guest r->guest missing (102) */
int filter_intact(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *n,
		  const struct cni_flt_rec *rec);
int filter_has(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_filter *n,
	       const char *guest);
/* STATUS: 0 if an ADD could write the filter now (nothing written). */
int filter_usable(struct cni_run *r, struct vnic_ctx *ctx);

/* tools/linger.c: filter_linger(), filter_close() */

/* the verbs */
int cni_add(struct cni_run *r);
int cni_del(struct cni_run *r);
int cni_check(struct cni_run *r);
int cni_gc(struct cni_run *r);
int cni_status(struct cni_run *r);

/* netns.c */
int netns_open(struct cni_run *r, const char *path, int *fd);
/* An fd of the namespace at path, -1 if it is gone (no error recorded). */
int netns_if_there(const char *path);

#endif /* VNIC_CNI_H */
