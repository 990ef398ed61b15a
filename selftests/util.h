/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the allocator selftests.  None of them uses the kselftest
 * harness: they return 0 or a negative errno (or a value) and the tests
 * assert on that, so that every check stays visible in the test itself.
 *
 * The independent oracle is iproute2: what a test claims about devices is
 * read back with `ip -j -d link show` and parsed with jansson, never through
 * libvnic itself.
 *
 * Everything here is prefixed st_: the tests link the static library,
 * whose internal (hidden, but still global) symbols must not collide.
 *
 * Note for test code: the harness's ASSERT_*() expands to two statements,
 * so under a for or an if it must be braced, or it bails only after the
 * loop.
 */
#ifndef VNIC_SELFTESTS_UTIL_H
#define VNIC_SELFTESTS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>
#include <net/if.h>
#include <vnic/vnic.h>

/* The lower device every test namespace gets, and its veth peer. */
#define LOWER		"lower0"
#define LOWER_PEER	"lower0p"

/* Run a shell command (printf-style), stdout discarded; its exit status. */
int st_run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, stderr captured into err (first line, trailing newline cut). */
int st_run_cmd_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* unshare(CLONE_NEWNET) and bring lo up. */
int st_netns_new(void);
/* Add a veth pair lower/peer, both up. */
int st_lower_add(const char *lower, const char *peer);
/* st_netns_new() + st_lower_add(LOWER, LOWER_PEER): every test's start. */
int st_test_netns_setup(void);
/* Delete every macvtap of the current namespace.  Their /dev/tapIFINDEX
 * nodes live in the one devtmpfs shared by all namespaces, so a dying
 * namespace must not leave a node that the next test's macvtap (same
 * ifindex in its own fresh namespace) would collide with. */
void st_macvtaps_flush(void);

/* One device as `ip -j -d link show` describes it. */
struct ip_link {
	int ifindex;
	char ifname[IFNAMSIZ];
	char kind[32];		/* linkinfo.info_kind, "" if none */
	char mode[32];		/* linkinfo.info_data.mode (macvlan/macvtap) */
	char tun_type[8];	/* linkinfo.info_data.type (tun: "tun"/"tap") */
	char address[32];	/* "" if none */
	char alias[256];	/* ifalias, "" if none */
	char link[IFNAMSIZ];	/* "link": lower or veth peer, "" if none */
	int link_netnsid;	/* -1 if the peer/lower is in this namespace */
	unsigned int mtu;
	bool up;		/* IFF_UP among the flags */
	bool multi_queue;	/* tun: info_data.multi_queue */
	bool vnet_hdr;		/* tun: info_data.vnet_hdr */
	bool persist;		/* tun: info_data.persist */
};

/* `ip -j -d link show` in the namespace nsfd (-1: the current one), as a
 * jansson array the caller json_decref()s; NULL on failure. */
json_t *st_ip_links(int nsfd);
/* Fill *out from the entry named name of links; -ENOENT if none. */
int st_ip_link_find(json_t *links, const char *name, struct ip_link *out);
/* st_ip_links(-1) + st_ip_link_find(). */
int st_ip_link_get(const char *name, struct ip_link *out);
/* Number of entries of links, or of those whose ifalias starts with
 * prefix (prefix NULL: all). */
int st_ip_links_count(json_t *links, const char *alias_prefix);
/* Devices of the current namespace whose alias starts with "vnic:";
 * negative errno on failure. */
int st_vnic_links_count(void);
/* Devices of the current namespace whose name starts with prefix and is
 * followed by digits only, e.g. "mvt" counts mvt0 and mvt17. */
int st_prefixed_links_count(const char *prefix);
/* "IFINDEX:NAME ..." of every device of the current namespace, malloc'd;
 * two snapshots compare equal iff no device came or went. */
char *st_ip_link_snapshot(void);
/* The same of the namespace nsfd (-1: ours). */
char *st_ip_link_snapshot_ns(int nsfd);

/* The link kinds the allocator tests create. */
#define ST_KINDS	(VNIC_FEAT_MACVLAN | VNIC_FEAT_MACVTAP |		\
			 VNIC_FEAT_VETH | VNIC_FEAT_TUN)
/* Name of the first feature of mask a fresh context finds missing on this
 * kernel, NULL if none: fixtures SKIP() with it. */
const char *st_missing_feature(uint64_t mask);

/*
 * In a FIXTURE_SETUP (the harness's macros in scope): a fresh namespace
 * with the lower device, or SKIP when the kernel lacks a kind we create.
 */
#define ST_SETUP_NETNS() do {						\
	const char *missing_;						\
									\
	ASSERT_EQ(0, st_test_netns_setup());				\
	missing_ = st_missing_feature(ST_KINDS);			\
	if (missing_)							\
		SKIP(return, "kernel lacks %s", missing_);		\
} while (0)

/* Open file descriptors of this process. */
int st_count_fds(void);

/* A network namespace kept alive by a child process. */
struct netns_holder {
	pid_t pid;
	int fd;			/* /proc/PID/ns/net, O_CLOEXEC */
};
int st_netns_holder_start(struct netns_holder *h);
void st_netns_holder_stop(struct netns_holder *h);

/* "aa:bb:cc:dd:ee:ff" <-> bytes. */
int st_mac_parse(const char *s, unsigned char mac[6]);
void st_mac_format(const unsigned char mac[6], char buf[18]);
/* Locally administered unicast: bit 1 of the first octet set, bit 0 clear. */
bool st_mac_is_local_unicast(const unsigned char mac[6]);

/* The alias the library writes: "vnic:OWNER:GUEST:INDEX". */
void st_vnic_alias(char *buf, size_t len, const char *owner, const char *guest,
		unsigned int idx);

/* Whether name is prefix followed by a decimal suffix in canonical form
 * (no leading zero, no sign); the suffix in *n. */
bool st_name_suffix(const char *name, const char *prefix, unsigned int *n);

/*
 * What a created NIC should look like.  st_nic_check() compares it with both
 * the library's vnic_nic_info and ip's view, and says why in 'why' when
 * something differs.
 */
struct nic_expect {
	enum vnic_kind kind;
	const char *name;	/* exact name; NULL: not checked */
	const char *mode;	/* macvlan/macvtap mode as ip prints it */
	const char *mac;	/* exact MAC; NULL: random local unicast */
	unsigned int mtu;	/* 0: not checked */
	bool up;
	const char *alias;	/* NULL: not checked */
	const char *lower;	/* ip's "link" (macv*); NULL: not checked */
	const char *peer;	/* veth peer name; NULL: not checked */
};
int st_nic_check(const struct vnic_nic_info *info, const struct ip_link *l,
	      const struct nic_expect *e, char *why, size_t len);

/* CAP_SYS_ADMIN out of the calling thread's effective, permitted and
 * inheritable sets, the others (CAP_NET_ADMIN, CAP_BPF) kept: what a
 * runtime without it has.  0 or -errno. */
int st_drop_sys_admin(void);

/* Milliseconds of CLOCK_MONOTONIC. */
long long st_now_ms(void);

/* The context's counters into *st, in a test case (asserts the call). */
#define ST_STATS(ctx, st) do {						\
		memset((st), 0, sizeof(*(st)));				\
		(st)->sz = sizeof(*(st));				\
		ASSERT_EQ(0, vnic_ctx_stats((ctx), (st)));		\
	} while (0)

#endif /* VNIC_SELFTESTS_UTIL_H */
