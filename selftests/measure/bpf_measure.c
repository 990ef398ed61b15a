// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bpf-measure: the bpf backend's figures side by side with the nft
 * backend's, with the tcx attach mode (VNIC_FILTER_TCX) that vnic-bench
 * leaves out (16 ms a hook: minutes at the bench's sizes).  vnic-bench
 * covers the rest: its filter scenarios' libvnic-bpf rows and its pkt
 * scenario.  Each scenario runs in a child process in a fresh namespace.
 *
 *   build/bpf-measure [GUESTS]   (default 250 guests of 4 veth NICs)
 *
 * Rows: apply GUESTS x 4 NICs in one change; add one guest of 4 next to
 * them; sync of 100 unchanged guests from a new handle (restart); remove
 * every guest; ns per packet through BPF_PROG_TEST_RUN.  Medians of RUNS.
 * Uses the private test hooks (lib/testing.h): not an installed program.
 */
#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/wait.h>
#include <vnic/vnic.h>

#include "lib/testing.h"
#include "bench/frames.h"

#define RUNS 3

enum backend { B_BPF, B_BPF_TCX, B_NFT_NAME, B_NFT_PREFIX };
static const char *const bname[] = { "libvnic-bpf", "libvnic-bpf (tcx)",
				     "libvnic-nft (by name)", "libvnic-nft (by prefix)" };
static const char *const prefixes[] = { "vh", NULL };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* n veth pairs vhI/gI, host ends up. */
static int make_nics(unsigned int from, unsigned int n)
{
	FILE *f = popen("ip -batch - >/dev/null", "w");
	unsigned int i;

	if (!f)
		return -1;
	for (i = from; i < from + n; i++) {
		fprintf(f, "link add name vh%u type veth peer name g%u\n", i, i);
		fprintf(f, "link set vh%u up\n", i);
	}
	return pclose(f) == 0 ? 0 : -1;
}

static int add_guest(struct vnic_policy *p, unsigned int g)
{
	char name[32], ifn[4][IFNAMSIZ], mac[4][18], v4[4][16], v6[4][40];
	unsigned int k;
	int err;

	snprintf(name, sizeof(name), "vm%u", g);
	err = vnic_policy_add_guest(p, name, NULL);
	for (k = 0; !err && k < 4; k++) {
		unsigned int i = g * 4 + k;
		const char *a4[1] = { v4[k] }, *a6[1] = { v6[k] };
		VNIC_OPTS(vnic_nic_policy, nic, .kind = VNIC_KIND_VETH);

		snprintf(ifn[k], IFNAMSIZ, "vh%u", i);
		snprintf(mac[k], 18, "02:00:%02x:%02x:%02x:%02x", (i >> 24) & 0xff,
			 (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
		snprintf(v4[k], 16, "10.%u.%u.%u", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
		snprintf(v6[k], 40, "2001:db8::%x:%x", i >> 16, i & 0xffff);
		nic.ifname = ifn[k];
		nic.mac = mac[k];
		nic.ipv4 = a4;
		nic.n_ipv4 = 1;
		nic.ipv6 = a6;
		nic.n_ipv6 = 1;
		err = vnic_policy_add_nic(p, name, &nic);
	}
	return err;
}

static struct vnic_policy *policy(struct vnic_ctx *ctx, unsigned int from, unsigned int n)
{
	struct vnic_policy *p;
	unsigned int g;

	if (vnic_policy_new(ctx, &p))
		return NULL;
	for (g = from; g < from + n; g++)
		if (add_guest(p, g)) {
			fprintf(stderr, "policy: %s\n", vnic_ctx_errmsg(ctx));
			exit(1);
		}
	return p;
}

struct h {
	enum backend b;
	struct vnic_bpf *bpf;
	struct vnic_filter *nft;
};

static int h_open(struct vnic_ctx *ctx, struct h *h)
{
	if (h->b == B_BPF || h->b == B_BPF_TCX) {
		VNIC_OPTS(vnic_bpf_opts, o, .flags = h->b == B_BPF_TCX ? VNIC_BPF_TCX : 0);

		return vnic_bpf_open(ctx, &o, &h->bpf);
	}
	{
		VNIC_OPTS(vnic_filter_opts, o, .hook_prefixes = h->b == B_NFT_PREFIX ? prefixes : NULL,
			  .capacity = 8192);
		return vnic_filter_open(ctx, &o, &h->nft);
	}
}

static void h_close(struct h *h)
{
	if (h->bpf)
		vnic_bpf_close(h->bpf);
	if (h->nft)
		vnic_filter_close(h->nft);
	h->bpf = NULL;
	h->nft = NULL;
}

static int h_apply(struct h *h, struct vnic_policy *p, bool sync, struct vnic_filter_result *r)
{
	if (h->bpf)
		return sync ? vnic_bpf_sync(h->bpf, p, r) : vnic_bpf_apply(h->bpf, p, r);
	return sync ? vnic_filter_sync(h->nft, p, r) : vnic_filter_apply(h->nft, p, r);
}

static int h_remove(struct h *h, const char *const *g, unsigned int n)
{
	if (h->bpf)
		return vnic_bpf_remove(h->bpf, g, n, NULL);
	return vnic_filter_remove(h->nft, g, n, NULL);
}

static void die(struct vnic_ctx *ctx, const char *what)
{
	fprintf(stderr, "%s: %s\n", what, ctx ? vnic_ctx_errmsg(ctx) : "");
	exit(1);
}

/* One child: a fresh namespace, G guests applied, then the other rows.
 * Writes "apply add restart remove" in ms to fd. */
static void scenario(enum backend b, unsigned int guests, int fd)
{
	struct vnic_ctx *ctx;
	struct vnic_policy *p, *one, *hundred;
	VNIC_OPTS(vnic_filter_result, r);
	struct h h = { .b = b };
	double t0, apply, add, restart, rem;
	const char **names;
	unsigned int g;
	char out[256];

	if (unshare(CLONE_NEWNET) || system("ip link set lo up"))
		die(NULL, "unshare");
	if (make_nics(0, guests * 4 + 4))
		die(NULL, "veth");
	if (vnic_ctx_new(NULL, &ctx))
		die(NULL, "ctx");
	p = policy(ctx, 0, guests);
	one = policy(ctx, guests, 1);
	hundred = policy(ctx, 0, guests < 100 ? guests : 100);
	if (h_open(ctx, &h))
		die(ctx, "open");
	t0 = now_ms();
	if (h_apply(&h, p, false, &r))
		die(ctx, "apply");
	apply = now_ms() - t0;
	t0 = now_ms();
	if (h_apply(&h, one, false, &r))
		die(ctx, "add");
	add = now_ms() - t0;
	/* restart: a new handle, 100 guests unchanged (the others removed
	 * first so that a sync of these 100 is a no-op) */
	{
		const char *gone[1] = { "vm0" };

		names = calloc(guests + 1, sizeof(*names));
		for (g = 100; g < guests; g++) {
			char *s = malloc(16);

			snprintf(s, 16, "vm%u", g);
			names[g - 100] = s;
		}
		names[guests > 100 ? guests - 100 : 0] = strdup("x");
		if (guests > 100 && h_remove(&h, names, guests - 100))
			die(ctx, "trim");
		{
			char s[16];

			snprintf(s, sizeof(s), "vm%u", guests);
			gone[0] = s;
			if (h_remove(&h, gone, 1))
				die(ctx, "trim one");
		}
	}
	h_close(&h);
	t0 = now_ms();
	if (h_open(ctx, &h) || h_apply(&h, hundred, true, &r))
		die(ctx, "restart");
	restart = now_ms() - t0;
	if (r.writes)
		fprintf(stderr, "%s: restart wrote (%u messages)\n", bname[b], r.messages);
	/* remove: everything back, then all removed in one change */
	if (h_apply(&h, p, true, &r))
		die(ctx, "reapply");
	for (g = 0; g < guests; g++) {
		char *s = malloc(16);

		snprintf(s, 16, "vm%u", g);
		names[g] = s;
	}
	t0 = now_ms();
	if (h_remove(&h, names, guests))
		die(ctx, "remove");
	rem = now_ms() - t0;
	snprintf(out, sizeof(out), "%.2f %.3f %.3f %.2f\n", apply, add, restart, rem);
	if (write(fd, out, strlen(out)) < 0)
		exit(1);
	h_close(&h);
	exit(0);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void rows(unsigned int guests)
{
	enum backend b;

	printf("| backend | apply %u x 4 NICs | add 1 guest next to them | restart, 100 unchanged | remove all |\n",
	       guests);
	printf("|---|---|---|---|---|\n");
	for (b = B_BPF; b <= B_NFT_PREFIX; b++) {
		double v[4][RUNS];
		int run, k;

		for (run = 0; run < RUNS; run++) {
			int pfd[2], st;
			char buf[256] = "";
			pid_t pid;

			if (pipe(pfd))
				exit(1);
			pid = fork();
			if (!pid) {
				close(pfd[0]);
				scenario(b, guests, pfd[1]);
			}
			close(pfd[1]);
			if (read(pfd[0], buf, sizeof(buf) - 1) < 0)
				buf[0] = 0;
			close(pfd[0]);
			waitpid(pid, &st, 0);
			if (sscanf(buf, "%lf %lf %lf %lf", &v[0][run], &v[1][run], &v[2][run],
				   &v[3][run]) != 4) {
				printf("| %s | failed | | | |\n", bname[b]);
				goto next;
			}
		}
		for (k = 0; k < 4; k++)
			qsort(v[k], RUNS, sizeof(double), cmp_d);
		printf("| %s | %.1f ms | %.2f ms | %.2f ms | %.1f ms |\n", bname[b],
		       v[0][RUNS / 2], v[1][RUNS / 2], v[2][RUNS / 2], v[3][RUNS / 2]);
next:;
	}
}

/* --- ns per packet ------------------------------------------------------- */

static void pkt_rows(void)
{
	static const unsigned char own[6] = { 2, 0, 0, 0, 0, 0 };
	static const unsigned char spoof[6] = { 2, 0, 0, 0, 0, 0x66 };
	struct vnic_ctx *ctx;
	struct vnic_policy *p;
	struct vnic_bpf *b;
	unsigned char f[64];
	int verdict, ifindex;
	uint32_t ns;
	/* 10.0.0.0: vh0's address in policy() */
	static const unsigned char ip[4] = { 10, 0, 0, 0 };
	static const unsigned char ip_spoof[4] = { 10, 10, 0, 99 };
	struct { const char *name; int prog; const unsigned char *mac, *saddr; } c[] = {
		{ "empty program (vnic_nop)", 2, own, ip },
		{ "clean policy, legit IPv4/UDP", 0, own, ip },
		{ "clean policy, spoofed MAC (dropped)", 0, spoof, ip },
		{ "clean policy, spoofed IPv4 source (dropped)", 0, own, ip_spoof },
	};
	unsigned int i;

	if (unshare(CLONE_NEWNET) || system("ip link set lo up") || make_nics(0, 4))
		die(NULL, "netns");
	if (vnic_ctx_new(NULL, &ctx) || !(p = policy(ctx, 0, 1)) ||
	    vnic_bpf_open(ctx, NULL, &b) || vnic_bpf_sync(b, p, NULL))
		die(ctx, "setup");
	ifindex = (int)if_nametoindex("vh0");
	printf("\n| BPF_PROG_TEST_RUN, 1,000,000 repeats | ns per packet (median of %d) |\n", RUNS);
	printf("|---|---|\n");
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint32_t v[RUNS];
		int run;

		frame_udp4(f, c[i].mac, c[i].saddr);
		for (run = 0; run < RUNS; run++) {
			if (vnic_bpf_test_run(b, c[i].prog, ifindex, f, sizeof(f), 1000000,
					      &verdict, &ns))
				die(ctx, "test run");
			v[run] = ns;
		}
		for (run = 1; run < RUNS; run++)	/* 3 values: sort */
			for (int k = run; k > 0 && v[k] < v[k - 1]; k--) {
				uint32_t t = v[k];

				v[k] = v[k - 1];
				v[k - 1] = t;
			}
		printf("| %s | %u ns (verdict %d) |\n", c[i].name, v[RUNS / 2], verdict);
	}
}

/* --- frames per second through a filtered veth ---------------------------- */

#define PPS_FRAMES	200000

/*
 * The guest's end g0 sends PPS_FRAMES legit frames through vh0's ingress
 * hook, the bridge br0 and fa0 (frames.h).  Returns frames per second that
 * arrived, or -1.
 */
static double pps_run(int backend)
{
	static const unsigned char src[6] = { 2, 0, 0, 0, 0, 0 };
	static const unsigned char saddr[4] = { 10, 0, 0, 0 };
	struct vnic_ctx *ctx;
	struct vnic_filter *f = NULL;
	unsigned char frame[FRAME_LEN];
	unsigned long long got;
	uint64_t ns;

	if (frames_veth_ns(false) || vnic_ctx_new(NULL, &ctx))
		return -1;
	if (backend >= 0) {
		static const char *const pfx[] = { "vh", NULL };
		VNIC_OPTS(vnic_filter_opts, o, .backend = backend == 3 ? VNIC_BACKEND_BPF
								      : VNIC_BACKEND_NFT,
			  .hook_prefixes = backend == 2 ? pfx : NULL);
		struct vnic_policy *one;
		const char *a4[1] = { "10.0.0.0" };
		VNIC_OPTS(vnic_nic_policy, nic, .ifname = "vh0", .kind = VNIC_KIND_VETH,
			  .mac = "02:00:00:00:00:00", .ipv4 = a4, .n_ipv4 = 1);

		if (vnic_policy_new(ctx, &one) || vnic_policy_add_guest(one, "vm0", NULL) ||
		    vnic_policy_add_nic(one, "vm0", &nic) || vnic_filter_open(ctx, &o, &f) ||
		    vnic_filter_apply(f, one, NULL)) {
			fprintf(stderr, "pps: %s\n", vnic_ctx_errmsg(ctx));
			return -1;
		}
	}
	frame_udp4(frame, src, saddr);
	if (frames_send(frame, PPS_FRAMES, &ns, NULL, &got))
		return -1;
	return (double)got / (ns / 1e9);
}

static void pps_rows(void)
{
	static const char *const names[] = { "no filter", "libvnic-nft (by name)",
					     "libvnic-nft (by prefix)", "libvnic-bpf" };
	int b;

	printf("\n| %d legit 64-byte frames through a filtered veth + bridge | frames/s (median of %d) |\n",
	       PPS_FRAMES, RUNS);
	printf("|---|---|\n");
	for (b = 0; b < 4; b++) {
		double v[RUNS];
		int run, k;

		for (run = 0; run < RUNS; run++) {
			int pfd[2], st;
			pid_t pid;

			v[run] = -1;
			if (pipe(pfd))
				exit(1);
			pid = fork();
			if (!pid) {
				double r = pps_run(b == 0 ? -1 : b);

				if (write(pfd[1], &r, sizeof(r)) < 0)
					exit(1);
				exit(0);
			}
			close(pfd[1]);
			if (read(pfd[0], &v[run], sizeof(v[run])) != sizeof(v[run]))
				v[run] = -1;
			close(pfd[0]);
			waitpid(pid, &st, 0);
		}
		for (run = 1; run < RUNS; run++)
			for (k = run; k > 0 && v[k] < v[k - 1]; k--) {
				double t = v[k];

				v[k] = v[k - 1];
				v[k - 1] = t;
			}
		printf("| %s | %.0f |\n", names[b], v[RUNS / 2]);
	}
}

int main(int argc, char **argv)
{
	unsigned int guests = argc > 1 ? (unsigned int)atoi(argv[1]) : 250;

	if (argc > 2 && !strcmp(argv[2], "pps")) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		pps_rows();
		return 0;
	}
	pid_t pid;
	int st;

	if (!guests || guests > 5000) {
		fprintf(stderr, "usage: bpf-measure [GUESTS 1..5000]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	rows(guests);
	pid = fork();
	if (!pid) {
		pkt_rows();
		exit(0);
	}
	waitpid(pid, &st, 0);
	pps_rows();
	return 0;
}
