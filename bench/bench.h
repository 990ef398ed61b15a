/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vnic-bench: declarations shared by the bench's files.
 *
 * main.c	arguments, privilege check, own netns, dispatch
 * stats.c	clock and summaries (median, min, max)
 * loop.c	the one run loop: runs outer, methods rotated
 * json.c	JSON output through jansson
 * report.c	the one row type; table, JSON lines and verdicts of every
 *		scenario but cni
 * table.c	the table every scenario prints (text and Markdown)
 * outdir.c	--out DIR: JSON document, Markdown summary, SVG chart
 * svg.c	line plots and bar charts, the project's own SVG writer
 * host.c	the machine's facts and the anchor tools' versions
 * progress.c	the progress line on a terminal's stderr
 * spawn.c	running the anchor tools (nft, xtables) and their errors
 * child.c	one child process: a function or a tool, its result read back
 * rawnl.c	raw libmnl batching, independent of libvnic (the floor)
 * env.c	the starting state of every run and the return to it
 * m_raw.c	methods without libvnic: floor, ioctl-probe, tap floor
 * m_tools.c	methods that run ip(8)
 * m_libvnic.c	methods that call libvnic
 * m_cni.c	the CNI macvlan plugin, one exec per NIC into a target netns
 * scn_guest.c	the "guest" scenario: which methods, in which order
 * scn_guests.c	the "guests" scenario: many guests on a filling host
 * scn_growth.c	the "growth" scenario: one guest's cost as the host fills
 * scn_pkt.c	the "pkt" scenario: ns per frame, TEST_RUN and a veth pair
 * frames.c	its real frames, also built into selftests/measure/bpf-measure
 * scn_all.c	the "all" scenario: every scenario, one child each
 * scn_cni.c	the "cni" scenario: vnic-cni beside the stock CNI plugins
 * filters.h	the filter scenarios (filters, filters-add, restart)
 */
#ifndef VNIC_BENCH_H
#define VNIC_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <jansson.h>
#include <vnic/guest.h>

#define BENCH_MAX_NICS		65536
#define BENCH_DEFAULT_RUNS	5
#define BENCH_DEFAULT_SETTLE_MS	50
/* guests: defaults that finish in well under a minute on two cores. */
#define BENCH_GUESTS_DEFAULT_COUNT	20
#define BENCH_GUESTS_DEFAULT_NICS	82
#define BENCH_GUESTS_DEFAULT_RUNS	3
/* The claim the bench checks: libvnic's best strategy within 15% of it. */
#define BENCH_TARGET_RATIO	1.15
/* Spread above which a median should not be trusted on its own. */
#define BENCH_NOISY_SPREAD	0.5

/* Every scenario's options, filled by the one parser (opts.c). */
struct bench_opts {
	const char *scenario;
	unsigned int nics;	/* guest, guests: NICs per guest */
	unsigned int guests;	/* guests: --count; filters, restart: --guests */
	unsigned int nics_per_guest;	/* filter scenarios, growth */
	enum vnic_kind kind;
	unsigned int existing;
	unsigned int runs;
	bool json;
	/* Bring every NIC up, in every method; a veth's peer stays down. */
	bool up;
	const char *methods;	/* comma list, NULL: all */
	unsigned int settle_ms;	/* idle after each cleanup */
	bool fill_other;	/* --existing devices on lower0p, not lower0 */
	const char *out_dir;	/* --out: JSON, Markdown and SVG go there */
	unsigned int stmt_sample;	/* filters: nft-per-stmt items timed */
	bool keep_files;	/* filters: leave the rendered text in /tmp */
	unsigned int max_nics, npoints;	/* growth */
	bool quick;		/* all */
	/* Index of NIC 0 in the names: guest g of the guests scenario is
	 * made of NICs g*K..g*K+K-1, so that names never collide. */
	unsigned int first_nic;
	const char *proc_guests;	/* restart: sizes of the vnicctl rows */
};

/* ---- opts.c: the one option parser ---- */

#define BENCH_MAX_FILTER_NICS	400000
#define BENCH_MAX_POINTS	16

enum {
	O_NICS = 1u << 0, O_COUNT = 1u << 1, O_GUESTS = 1u << 2,
	O_NPG = 1u << 3, O_EXISTING = 1u << 4, O_RUNS = 1u << 5,
	O_SETTLE = 1u << 6, O_STMT_SAMPLE = 1u << 7, O_MAX_NICS = 1u << 8,
	O_POINTS = 1u << 9, O_KIND = 1u << 10, O_FILL = 1u << 11,
	O_METHODS = 1u << 12, O_OUT = 1u << 13, O_JSON = 1u << 14,
	O_UP = 1u << 15, O_KEEP = 1u << 16, O_QUICK = 1u << 17,
	O_PROC = 1u << 18,
};

#define KBIT(k)		(1u << VNIC_KIND_##k)

/*
 * A scenario: one file (scn_*.c) defines it, main.c's table lists it.
 * Adding a scenario is that file and one row.
 */
struct scenario {
	const char *name;
	const char *usage;	/* its lines of the usage text */
	unsigned int opts;	/* the O_* it takes */
	unsigned int kinds;	/* KBIT(MACVTAP) | ...: the --kind it takes */
	void (*defaults)(struct bench_opts *o);
	/* After parsing: refuse what it cannot do (with a message). */
	int (*check)(struct bench_opts *o);
	int (*run)(const struct bench_opts *o);
	/* Runs in the caller's namespace (all: its children make theirs). */
	bool no_netns;
};

extern const struct scenario scn_guest, scn_guests, scn_filters,
	scn_filters_add, scn_restart, scn_growth, scn_cni, scn_all, scn_pkt;

/* The scenario's defaults, then argv[1..]: 0, 1 for --help, or -EINVAL
 * (said on stderr). */
int bench_parse_opts(const struct scenario *s, int argc, char **argv,
		     struct bench_opts *o);
/* A whole number in min..max for option opt (else -EINVAL). */
int bench_parse_uint(const char *opt, const char *s, unsigned int min,
		     unsigned int max, unsigned int *out);
/* name is one of list's comma-separated words (NULL: all). */
bool bench_in_list(const char *list, const char *name);
/* Every word of list is one of known (else a message). */
int bench_check_methods(const char *list, const char *const *known,
			unsigned int nknown);

/* ---- loop.c ---- */

/* What bench_rotate() runs: rows 0..n-1 of a scenario, runs times. */
struct bench_loop {
	unsigned int runs, n;
	bool ordered;			/* rows in order every run */
	void *ctx;
	/* Row i's name, or NULL when it is skipped or has failed. */
	const char *(*active)(void *ctx, unsigned int i);
	/* One timed run of row i and its untimed cleanup: 0 (a failure is
	 * the row's own, said in it), or negative to stop everything. */
	int (*once)(void *ctx, unsigned int i, unsigned int run);
};

/* Runs outer, rows inner and rotated: 0, or the first negative once(). */
int bench_rotate(const struct bench_loop *l);

/* ---- stats.c ---- */

/* One timed run of one row.  Counters are NAN where unknown. */
struct sample {
	double ms;
	double table_ms;	/* libvnic-cache: the refresh before */
	double destroy_ms;	/* libvnic: vnic_guest_destroy, first run */
	double cleanup_ms;	/* the bench's own untimed cleanup */
	double sendmsg, recvmsg;	/* guest: per guest; restart: per sync */
	double requests;
	double ioctls;
	double retries;		/* cache strategy EEXIST retries */
	double writes, messages, batches, changed;	/* vnic_filter_result */
	double genid_delta;	/* by the bench's own read */
	double dumps;		/* vnicctl -s, per sync: link dumps only */
};

struct summary {
	unsigned int n;
	double median, min, max;
};

uint64_t now_ns(void);
double ms_since(uint64_t t0);
void sample_init(struct sample *s);
/* Summary of vals[0..n-1], NAN entries left out; vals is not changed. */
void summarize(const double *vals, unsigned int n, struct summary *out);
/* Summary of one field of samples[0..n-1], picked by offsetof(). */
void summarize_field(const struct sample *s, unsigned int n, size_t off,
		     struct summary *out);
bool summary_noisy(const struct summary *s);

/* ---- json.c ---- */

struct json {
	FILE *f;
	json_t *v;	/* the object or array being filled */
};

void json_begin(struct json *j, FILE *f);
void json_end(struct json *j);
void json_str(struct json *j, const char *key, const char *val);
void json_num(struct json *j, const char *key, double val);
void json_uint(struct json *j, const char *key, unsigned long long val);
void json_bool(struct json *j, const char *key, bool val);
void json_nums(struct json *j, const char *key, const double *vals,
	       unsigned int n);
/* A nested object ('{') or array ('[') under key (NULL: an element of the
 * parent array), filled through child; the parent owns it. */
void json_sub(struct json *parent, const char *key, char open,
	      struct json *child);

/* ---- host.c ---- */

#define HOST_MAX_TOOLS	8

struct host_tool {
	const char *name;
	char version[96];	/* the tool's first line, or "missing" */
};

struct host_info {
	char kernel[65];
	long cpus;
	double load1;		/* at the first host_info() call */
	struct host_tool tools[HOST_MAX_TOOLS];
	unsigned int ntools;
};

/*
 * The machine and the anchor tools' versions, found on the first call
 * (which runs each tool once: call it before any clock starts) and the
 * same for the rest of the process.
 */
const struct host_info *host_info(void);
/* name's path in /usr/sbin, /sbin, /usr/bin, /bin, /usr/local/sbin into
 * out ("" and false if in none). */
bool bench_find_tool(const char *name, char *out, size_t len);
/* "what: error: the context's message" into err; returns ret. */
struct vnic_ctx;
int bench_lib_fail(struct vnic_ctx *ctx, const char *what, int ret, char *err,
		   size_t errlen);
/* NIC i's options into *nic; name (16 bytes) and aux (24: a peer's name,
 * a MAC) hold its strings. */
typedef void (*bench_nic_fn)(const void *arg, unsigned int i, char *name,
			     char *aux, struct vnic_nic_opts *nic);
/* vnic_guest_new, NICs first..first+n-1 of nic_of, vnic_guest_create:
 * the guest in *out, or an error said in err and nothing kept. */
int bench_guest_make(struct vnic_ctx *ctx, const char *name,
		     unsigned int first, unsigned int n, bench_nic_fn nic_of,
		     const void *arg, struct vnic_guest **out, char *err,
		     size_t errlen);
/* "versions: libvnic 0.1.0, ip ..., nft ..." on one line. */
void host_print_versions(FILE *f);
/* kernel, cpus, load1 and a "versions" object, as fields of j. */
void host_json(struct json *j);

/* ---- spawn.c: the anchor tools, started as a runtime starts them ---- */

#define BENCH_ERR_TEXT	528

/* argv[0] (a path) with stdin from in_path (NULL: /dev/null), stdout into
 * out_fd (-1: /dev/null); its stderr on *err_fd for bench_reap. */
int bench_spawn(const char *const *argv, const char *in_path, int out_fd,
		pid_t *pid, int *err_fd);
/* Read its stderr, reap it: 0, -ECHILD when it failed (its stderr, after
 * "who: " if who is set, is then the last error), -ETIMEDOUT when it was
 * killed (by the caller, who says why), or -errno. */
int bench_reap(pid_t pid, int err_fd, const char *who);
/* Both. */
int bench_exec(const char *const *argv, const char *in_path, int out_fd,
	       const char *who);
/* Its stdout, whole (malloc'd and NUL-ended; *outlen bytes if set); killed
 * after timeout_ms (0: never) with -ETIMEDOUT, said as the last error. */
int bench_capture(const char *const *argv, int timeout_ms, const char *who,
		  char **out, size_t *outlen);
/* The last failed tool's stderr, on one line; or set it. */
const char *bench_last_error(void);
void bench_set_last_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* ---- child.c: one child process and what it sends back ---- */

struct bench_child {
	/* In the child, fd the pipe's write end: send the result on it
	 * (bench_child_send), or make it stdout/stderr and exec.  The child
	 * exits 0 when run returns. */
	void (*run)(void *arg, int fd);
	void *arg;
	/* What comes back: len bytes into out; text: up to len - 1 bytes
	 * and a NUL (the rest is read and dropped). */
	void *out;
	size_t len;
	bool text;
	int status;		/* the child's, from waitpid */
	double ms;		/* from the fork to the reap */
};

/* Fork, read, reap: 0; -ECHILD when the child did not exit 0 or (not
 * text) sent less than out; -errno when it could not start. */
int bench_child(struct bench_child *c);
/* bench_child for a child whose out holds its own *ret and err: *ret,
 * or bench_child's error with "the child died" in err. */
int bench_child_result(struct bench_child *c, int *ret, char *err,
		       size_t errlen);
/* All of len bytes, or -EIO. */
int bench_child_send(int fd, const void *buf, size_t len);

/* ---- progress.c ---- */

/*
 * "\r[scenario] what" on stderr, rewritten in place, and only when stderr
 * is a terminal: pipes and tests see nothing.  progress_end() clears the
 * line; the reports call it before they print.
 */
void progress_begin(const char *scenario);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_end(void);
/* Erase the line before a message of one's own; the next progress()
 * draws it again. */
void progress_clear(void);

/* ---- table.c ---- */

#define TABLE_MAX_EXTRA	6

/* One row of a scenario's table, whichever scenario made it. */
struct trow {
	const char *method;
	const char *skip;	/* skipped: why, or NULL */
	const char *error;	/* failed: why, or NULL / "" */
	struct summary ms;
	bool aside;		/* not an alternative: no ratios (e.g. setup) */
	bool libvnic_ref;	/* the row x_libvnic is taken to */
	double extra[TABLE_MAX_EXTRA];	/* NAN: "-" */
	const void *data;	/* the scenario's own row, for its JSON */
};

struct tcol {
	const char *head;
	int prec;		/* digits after the point */
};

struct table {
	const char *scenario;
	struct trow *rows;
	unsigned int nrows;
	int ms_prec;
	struct tcol extra[TABLE_MAX_EXTRA];
	unsigned int nextra;
	/* table_finish() fills these. */
	double best_ms, libvnic_ms;
	unsigned int measured, noisy, unjudged;
};

enum table_style { TABLE_TEXT, TABLE_MARKDOWN };

/* The best median, the libvnic reference and the noisy count. */
void table_finish(struct table *t);
/* Columns: method, n, median, min, max, x_best, x_libvnic, the extra
 * ones, noisy; then rows that did not run, with the reason. */
void table_print(FILE *f, const struct table *t, enum table_style style);
/* The closing line on spread: which rows are too noisy to trust. */
void table_spread_line(FILE *f, const struct table *t);
/* runs, median_ms, min_ms, max_ms, ratio_to_best, ratio_to_libvnic, noisy;
 * skipped or failed and the reason, for a row that did not run. */
void table_json(struct json *j, const struct table *t, const struct trow *r);

/* ---- svg.c ---- */

struct svg_series {
	const char *name;
	const double *x, *y;	/* NAN points are left out */
	unsigned int n;
};

struct svg_bar {
	const char *name;
	double value;		/* NAN: no bar */
	double lo, hi;		/* a whisker (min..max), or NAN */
};

#define SVG_LOG_Y	1u	/* log10 y axis (values <= 0 left out) */

/* A line plot with axes, ticks and a legend, one line per series. */
void svg_plot(FILE *f, const char *title, const char *xlabel,
	      const char *ylabel, const struct svg_series *s,
	      unsigned int ns, unsigned int flags);
/* One bar per entry, names under the bars. */
void svg_bars(FILE *f, const char *title, const char *ylabel,
	      const struct svg_bar *b, unsigned int nb, unsigned int flags);
/* Whether values spanning lo..hi read better on a log axis. */
bool svg_wants_log(double lo, double hi);

/* ---- outdir.c ---- */

/* What a scenario hands to --out; the callbacks take ctx. */
struct out_doc {
	const char *dir;
	const char *title;	/* the header line, without "vnic-bench " */
	const struct table *t;
	/* The scenario's parameters, as fields of j. */
	void (*params)(struct json *j, const void *ctx);
	/* One row's own fields (scenario, method, its counters); the table's
	 * (table_json) and the host's (host_json) follow. */
	void (*json_row)(struct json *j, const struct trow *r,
			 const void *ctx);
	/* Notes and verdicts, one per line (NULL: none). */
	void (*notes)(FILE *f, const void *ctx);
	/* The scenario's own chart (NULL: one bar per row). */
	void (*svg)(FILE *f, const void *ctx);
	const void *ctx;
};

/* DIR/NAME.EXT open for writing (its name in path), or NULL (said on
 * stderr); out_close(): 0, or -EIO for a write that failed (said). */
FILE *out_open(const char *dir, const char *name, const char *ext,
	       char *path, size_t len);
int out_close(FILE *f, const char *path);
/* Make DIR if needed, early: a bad path must fail before the runs. */
int out_prepare(const char *dir);
/* What every scenario ends with: the progress line cleared, the table,
 * notes and spread line on stdout (json: one row object per line), then
 * with d->dir DIR/<scenario>.json, .md and .svg.  0 or -errno (said on
 * stderr). */
int out_report(const struct out_doc *d, bool json);

/* ---- report.c: the one row type and its report ---- */

/* What a row is held to; NAN and NULL: no such target. */
struct bench_target {
	double max_ms;
	double max_ratio;
	const char *ratio_to;		/* the row the ratio is taken to */
	/* The floor of its own layout: at most BENCH_TARGET_RATIO of it. */
	const char *floor;
	bool zero_writes;
};

/* One method of one scenario: its samples and what is known of them. */
struct bench_row {
	const char *method;
	const char *skip;		/* why it did not run, or NULL */
	char error[256];		/* why it stopped, or "" */
	bool libvnic;			/* guest: counts for the verdict */
	bool aside;			/* not an alternative: no ratios */
	unsigned int existing;
	unsigned int runs;		/* samples filled */
	struct sample *s;
	bool has_result;		/* writes/messages/batches are known */
	bool has_calls;			/* sendmsg/recvmsg/dumps are known */
	bool extrapolated;
	unsigned int sample_items, total_items;
	unsigned int rules;		/* rule-based anchors: rules loaded */
	char note[640];
	struct bench_target target;
	double per_doubling;		/* restart_proc.c: to the size before */
	void *priv;			/* the scenario's own, for its style */
};

struct report;

/* How a scenario's report differs from the filter scenarios'. */
struct report_style {
	int ms_prec;
	/* Its table columns, by report_col(). */
	void (*cols)(struct report *o);
	/* Its own fields of every row's JSON object (NULL: none), and of
	 * a measured row's. */
	void (*row)(struct json *j, const struct report *o,
		    const struct bench_row *r);
	void (*json)(struct json *j, const struct report *o,
		     const struct bench_row *r);
	/* Its own parameters and notes (NULL: none). */
	void (*params)(struct json *j, const struct report *o);
	void (*notes)(FILE *f, const struct report *o);
	bool failed_fails;		/* a failed row fails the run */
	/* Rows without kind, n, existing or samples_ms (pkt: frames). */
	bool lean;
	/* Its own chart for --out (NULL: one bar per row). */
	void (*svg)(FILE *f, const struct report *o);
};

struct report_env {
	const char *scenario;
	const char *kind;
	/* guests 0: one guest of n NICs (the guest scenario). */
	unsigned int guests, nics_per_guest, n, existing, runs_asked;
	char kernel[65];
	long cpus;
	double load1;
	const char *ratio_a;		/* first ratio column: row name */
	const char *ratio_b;		/* second, or NULL */
	const char *label_a, *label_b;	/* their column heads, "x_nft-f" */
	const char *out_dir;		/* --out, or NULL */
	const struct report_style *style;	/* NULL: the filter scenarios' */
	const void *priv;		/* the scenario's own, for its style */
	char title[256];		/* "" : made of the fields above */
};

/* What the style's callbacks see. */
struct report {
	const struct report_env *re;
	const struct bench_row *rows;
	unsigned int n;
	const struct report_style *style;
	const struct bench_row *ref;	/* x_libvnic's row, or NULL */
	struct trow *trows;
	struct table t;
};

void bench_row_init(struct bench_row *r, const char *method, unsigned int runs);
void bench_row_free(struct bench_row *r);
struct sample *bench_row_next(struct bench_row *r);
void row_field(const struct bench_row *r, size_t off, struct summary *out);
double row_median(const struct bench_row *r, size_t off);
void report_env_init(struct report_env *re, const struct bench_opts *o,
		     unsigned int guests, unsigned int existing);
void report_header(const struct report_env *re, bool json);
/* Rows, then (table mode) notes and verdicts.  1 if a target was missed
 * (or, by the style, a row failed).  A failed row's runs are set to 0:
 * it shows no figures and nothing is judged against it. */
int report_rows(const struct report_env *re, struct bench_row *rows,
		unsigned int n, bool json);
/* For styles: a row by name (that ran), r's ratio to it, us per NIC, r's
 * ratio to re->ratio_a, a table column of val(row), a median as a JSON
 * field. */
const struct bench_row *report_find(const struct report *o,
				    const char *method);
double report_ratio(const struct report *o, const struct bench_row *r,
		    const char *method);
double report_per_nic(const struct report *o, const struct bench_row *r);
double report_ratio_a(const struct report *o, const struct bench_row *r);
void report_col(struct report *o, const char *head, int prec,
		double (*val)(const struct report *, const struct bench_row *));
void report_json_median(struct json *j, const char *key,
			const struct bench_row *r, size_t off);

/* ---- rawnl.c ---- */

struct rawnl {
	struct mnl_socket *nl;
	uint32_t portid;
	uint32_t seq;
	char *buf;		/* queued requests, back to back */
	size_t cap, len;
	unsigned int queued;
	unsigned int rcvbuf;
	uint64_t sendmsg_calls;
	uint64_t requests;
	char err[256];		/* the first failure of the last flush */
};

struct link_spec {
	const char *name;
	const char *kind;	/* "macvtap", "macvlan", "veth" */
	int lower;		/* ifindex, macvlan/macvtap */
	uint32_t mode;		/* MACVLAN_MODE_* */
	const char *peer;	/* veth */
	bool up;		/* not a veth's peer: see rawnl_queue_setup */
	const unsigned char *mac;	/* 6 bytes, or NULL: the kernel's */
	uint32_t group;		/* IFLA_GROUP, 0: the default group */
};

struct link_entry {
	int ifindex;
	char name[16];
};

struct link_list {
	struct link_entry *v;
	unsigned int n, cap;
};

/* rcvbuf: bytes the acks of one sendmsg may take (forced when root). */
int rawnl_open(struct rawnl *r, unsigned int rcvbuf);
void rawnl_close(struct rawnl *r);
int rawnl_queue_newlink(struct rawnl *r, const struct link_spec *ls);
/* Set IFF_UP on a link by name. */
int rawnl_queue_setup(struct rawnl *r, const char *name);
/* Set a link's alias by name (the kernel ignores it on RTM_NEWLINK). */
int rawnl_queue_setalias(struct rawnl *r, const char *name, const char *alias);
int rawnl_queue_setgroup(struct rawnl *r, int ifindex, uint32_t group);
int rawnl_queue_dellink(struct rawnl *r, int ifindex);
int rawnl_queue_dellink_group(struct rawnl *r, uint32_t group);
/*
 * Send what is queued, 'window' requests per sendmsg (0: all in one), and
 * collect one ack per request.  Returns 0 or the first request's error
 * (negative errno; r->err says which request and why).
 */
int rawnl_flush(struct rawnl *r, unsigned int window);
/* Requests that fit in the receive buffer's acks at once. */
unsigned int rawnl_window(const struct rawnl *r);
int rawnl_dump_links(struct rawnl *r, struct link_list *out);
/* Send req on nl (any netlink protocol) and read the replies of seq: cb
 * (NULL: none) for each message, until NLMSG_DONE or the ack.  0, the
 * kernel's error, -EINTR for an interrupted dump, or -errno. */
struct nlmsghdr;
typedef int (*rawnl_cb)(const struct nlmsghdr *nlh, void *data);
int rawnl_talk(struct mnl_socket *nl, const void *req, size_t len,
	       uint32_t seq, rawnl_cb cb, void *data);
void link_list_free(struct link_list *l);

/* ---- env.c ---- */

/* m_cni.c: a container's network namespace, held by a child. */
struct cni_target {
	pid_t pid;		/* the holder, or 0 */
	int nsfd;
	char path[64];		/* CNI_NETNS */
	struct rawnl nl;	/* a socket inside the target */
};

/* Start one (t->nsfd = -1 before); stop it and the NICs made in it. */
int cni_target_start(struct cni_target *t);
void cni_target_stop(struct cni_target *t);
/* The stock plugins' directory, "" if none. */
void cni_find(char *dir, size_t len);

/* One CNI plugin call, executed as a runtime executes it. */
struct cni_cmd {
	const char *plugin;		/* its path */
	const char *dir;		/* CNI_PATH */
	const char *verb, *cid, *ifname, *netns;
	const char *conf;		/* the network configuration, stdin */
};

/* fork, exec, wait (bench_child): 0, or -ECHILD with its output on one
 * line in msg, or -errno. */
int cni_exec(const struct cni_cmd *c, char *msg, size_t msglen);

struct guest_env {
	const struct bench_opts *o;
	struct rawnl nl;
	int lower;			/* ifindex of lower0 */
	int lower_peer;			/* ifindex of lower0p */
	struct link_list base;		/* the links every run starts from */
	char ip_path[256];		/* "" if ip(8) was not found */
	/* What a method leaves for its release step. */
	int *tap_fds;
	unsigned int ntap_fds;
	struct vnic_ctx *ctx;
	struct vnic_guest *guest;
	unsigned int run;		/* 0-based, of the current method */
	double destroy_ms;
	/* cni-macvlan: the target namespaces made so far, one per guest. */
	struct cni_target *cni;
	unsigned int ncni;
};

#define ENV_LOWER	"lower0"

/* Veth pairs lower<i>/lower<i>p, i < n, up, in group (0: none): their
 * ifindexes in lowers[], lower0p's in *peer0 (if set). */
int env_make_lowers(struct rawnl *nl, unsigned int n, uint32_t group,
		    int *lowers, int *peer0);
int env_setup(struct guest_env *e, const struct bench_opts *o);
void env_free(struct guest_env *e);
/* Delete every link that is not in the baseline, untimed, and check that
 * the count is back to it.  *deleted: how many had to go.  */
int env_restore(struct guest_env *e, unsigned int *deleted);
/* Links of the bench's namespace that are not in the baseline. */
int env_count_new(struct guest_env *e, unsigned int *got);
/* The explicit name of NIC i for a kind ("mvt17"), and of a veth's peer. */
void env_nic_name(const struct bench_opts *o, unsigned int i, char *buf);
void env_peer_name(const struct bench_opts *o, unsigned int i, char *buf);
const char *env_prefix(enum vnic_kind kind);
const char *env_ip_kind(enum vnic_kind kind);
/* How many links one NIC adds: a veth is two. */
unsigned int env_links_per_nic(const struct bench_opts *o);

/* ---- methods ---- */

struct method {
	const char *name;
	bool libvnic;
	/* Why it cannot run here, or NULL. */
	const char *(*skip)(const struct guest_env *e);
	/* One timed run; fills s->ms and what else it knows. */
	int (*run)(struct guest_env *e, struct sample *s, char *err,
		   size_t errlen);
	/* Untimed: close or destroy what run() keeps (may be NULL). */
	void (*release)(struct guest_env *e);
	/* Untimed: links it made outside the bench's namespace (NULL: it
	 * makes them in the bench's namespace, where they are counted). */
	int (*count)(struct guest_env *e, unsigned int *got);
};

extern const struct method method_floor;
extern const struct method method_floor_tagged;
extern const struct method method_ioctl_probe;
extern const struct method method_ip_link_add;
extern const struct method method_ip_batch;
extern const struct method method_libvnic_kernel;
extern const struct method method_libvnic_cache;
extern const struct method method_libvnic_explicit;
extern const struct method method_cni_macvlan;

/* m_libvnic.c: the options of NIC i, as every libvnic method sets them. */
void libvnic_nic_opts(const struct guest_env *e, unsigned int i,
		      enum vnic_naming naming, char *name, char *peer,
		      struct vnic_nic_opts *nic);

/* outdir.c: a new file /tmp/vnic-bench-TAG.XXXXXX (its name in path) open
 * for writing, or NULL with errno set; bench_tmpfile_close() closes it and
 * on a write error removes it: 0 or a negative errno. */
FILE *bench_tmpfile(const char *tag, char *path, size_t pathlen);
int bench_tmpfile_close(FILE *f, const char *path);

/* scn_guest.c: after a method's success, want links where it puts them
 * (m NULL or without count: the bench's namespace) and none left in the
 * bench's otherwise; else -EPROTO and why in err. */
int bench_check_links(struct guest_env *e, const struct method *m,
		      unsigned int want, char *err, size_t errlen);
/* env_setup, said on stderr (the environment freed on failure). */
int bench_env_start(struct guest_env *e, const struct bench_opts *o);
/* One untimed floor guest, back to the baseline, then bench_rotate()
 * over the rows that neither skip nor failed, one() timing one run of
 * one (guest and guests); -EIO (said) when the baseline was lost. */
int bench_run_rows(struct guest_env *e, struct bench_row *res,
		   unsigned int nres,
		   int (*one)(struct guest_env *e, struct bench_row *r,
			      bool *fatal));

#endif /* VNIC_BENCH_H */
