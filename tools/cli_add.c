// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl guest add: parse the NIC options, check them against the kind,
 * then make the guest's NICs in one vnic_guest_create() call.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define CMD "guest add"
#define MAX_NICS 65535

enum add_opt {
	O_KIND = 256, O_NICS, O_NAME, O_NAMING, O_LOWER, O_MODE, O_MTU, O_MAC,
	O_UP, O_NIC_NETNS, O_PEER_NAME, O_PEER_NETNS, O_PEER_UP, O_QUEUES,
	O_PERSIST, O_VNET_HDR, O_MULTI_QUEUE, O_NO_PI, O_USER, O_GROUP,
	O_APPEND, O__END
};

#define K(kind)		(1u << VNIC_KIND_##kind)
#define K_MACVLAN	(K(MACVTAP) | K(MACVLAN))
#define K_TUN		(K(TAP) | K(TUN))
#define K_ALL		0u

static const struct option add_opts[] = {
	{ "kind",		required_argument,	NULL, O_KIND },
	{ "nics",		required_argument,	NULL, O_NICS },
	{ "name",		required_argument,	NULL, O_NAME },
	{ "naming",		required_argument,	NULL, O_NAMING },
	{ "lower",		required_argument,	NULL, O_LOWER },
	{ "mode",		required_argument,	NULL, O_MODE },
	{ "mtu",		required_argument,	NULL, O_MTU },
	{ "mac",		required_argument,	NULL, O_MAC },
	{ "up",			no_argument,		NULL, O_UP },
	{ "nic-netns",		required_argument,	NULL, O_NIC_NETNS },
	{ "peer-name",		required_argument,	NULL, O_PEER_NAME },
	{ "peer-netns",		required_argument,	NULL, O_PEER_NETNS },
	{ "peer-up",		no_argument,		NULL, O_PEER_UP },
	{ "queues",		required_argument,	NULL, O_QUEUES },
	{ "persist",		no_argument,		NULL, O_PERSIST },
	{ "vnet-hdr",		no_argument,		NULL, O_VNET_HDR },
	{ "multi-queue",	no_argument,		NULL, O_MULTI_QUEUE },
	{ "no-pi",		no_argument,		NULL, O_NO_PI },
	{ "user",		required_argument,	NULL, O_USER },
	{ "group",		required_argument,	NULL, O_GROUP },
	{ "append",		no_argument,		NULL, O_APPEND },
	{ "help",		no_argument,		NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

_Static_assert(ARRAY_SIZE(add_opts) == O__END - O_KIND + 2,
	       "add_opts[] must list the options in enum add_opt order");

/* The kinds each option applies to; K_ALL: every kind. */
static const unsigned int opt_kinds[O__END - O_KIND] = {
	[O_LOWER - O_KIND]	= K_MACVLAN,
	[O_MODE - O_KIND]	= K_MACVLAN,
	[O_MAC - O_KIND]	= K_MACVLAN | K(VETH) | K(TAP),
	[O_PEER_NAME - O_KIND]	= K(VETH),
	[O_PEER_NETNS - O_KIND]	= K(VETH),
	[O_PEER_UP - O_KIND]	= K(VETH),
	[O_QUEUES - O_KIND]	= K_TUN,
	[O_PERSIST - O_KIND]	= K_TUN,
	[O_VNET_HDR - O_KIND]	= K_TUN,
	[O_MULTI_QUEUE - O_KIND] = K_TUN,
	[O_NO_PI - O_KIND]	= K_TUN,
	[O_USER - O_KIND]	= K_TUN,
	[O_GROUP - O_KIND]	= K_TUN,
};

struct add_args {
	const char *guest;
	enum vnic_kind kind;
	uint32_t nics;
	const char *name;
	enum vnic_naming naming;
	const char *lower;
	enum vnic_macvlan_mode mode;
	uint32_t mtu;
	const char *mac;
	bool up, peer_up, append;
	const char *nic_netns, *peer_netns, *peer_name;
	uint32_t queues, tap_flags;
	int64_t uid, gid;
	bool owner_set;
	uint64_t seen;		/* bit (option - O_KIND) per option given */
	int nic_netns_fd, peer_netns_fd;
};

struct word {
	const char *name;
	int value;
};

static const struct word namings[] = {
	{ "auto", VNIC_NAMING_AUTO }, { "kernel", VNIC_NAMING_KERNEL },
	{ "cache", VNIC_NAMING_CACHE }, { "explicit", VNIC_NAMING_EXPLICIT },
	{ NULL, 0 }
};

static const struct word modes[] = {
	{ "private", VNIC_MACVLAN_PRIVATE }, { "vepa", VNIC_MACVLAN_VEPA },
	{ "bridge", VNIC_MACVLAN_BRIDGE }, { "passthru", VNIC_MACVLAN_PASSTHRU },
	{ NULL, 0 }
};

static int parse_word(const char *opt, const char *arg,
		      const struct word *words, int *out)
{
	for (; words->name; words++) {
		if (!strcmp(arg, words->name)) {
			*out = words->value;
			return 0;
		}
	}
	return cli_usage_err(CMD, "%s: unknown value '%s'", opt, arg);
}

static int parse_kind(const char *arg, enum vnic_kind *kind)
{
	*kind = vnic_kind_from_name(arg);
	if (*kind <= 0 || *kind >= VNIC_KIND__MAX)
		return cli_usage_err(CMD, "--kind: unknown kind '%s' (macvtap, macvlan, veth, tap, tun)",
				     arg);
	return 0;
}

/* A user or group: a number, or a name from the system's databases. */
static int parse_id(const char *opt, const char *arg, bool group,
		    int64_t *out)
{
	struct passwd *pw;
	struct group *gr;
	uint32_t id;

	if (arg[0] >= '0' && arg[0] <= '9') {
		if (cli_parse_u32(CMD, opt, arg, 0, UINT32_MAX - 1, &id))
			return CLI_USAGE;
		*out = id;
		return 0;
	}
	if (group) {
		gr = getgrnam(arg);
		if (gr) {
			*out = gr->gr_gid;
			return 0;
		}
	} else {
		pw = getpwnam(arg);
		if (pw) {
			*out = pw->pw_uid;
			return 0;
		}
	}
	return cli_usage_err(CMD, "%s: unknown %s '%s'", opt,
			     group ? "group" : "user", arg);
}

static int parse_value(struct add_args *a, int c, const char *arg)
{
	int v = 0, err = 0;

	switch (c) {
	case O_KIND:
		return parse_kind(arg, &a->kind);
	case O_NICS:
		return cli_parse_u32(CMD, "--nics", arg, 1, MAX_NICS, &a->nics);
	case O_MTU:
		/* The library's range; 0 is not "the default": omit --mtu. */
		return cli_parse_u32(CMD, "--mtu", arg, 68, 65535, &a->mtu);
	case O_QUEUES:
		return cli_parse_u32(CMD, "--queues", arg, 1, 256, &a->queues);
	case O_USER:
		a->owner_set = true;
		return parse_id("--user", arg, false, &a->uid);
	case O_GROUP:
		a->owner_set = true;
		return parse_id("--group", arg, true, &a->gid);
	case O_NAMING:
		err = parse_word("--naming", arg, namings, &v);
		a->naming = v;
		break;
	case O_MODE:
		err = parse_word("--mode", arg, modes, &v);
		a->mode = v;
		break;
	case O_NAME:
		a->name = arg;
		break;
	case O_LOWER:
		a->lower = arg;
		break;
	case O_MAC:
		a->mac = arg;
		break;
	case O_NIC_NETNS:
		a->nic_netns = arg;
		break;
	case O_PEER_NAME:
		a->peer_name = arg;
		break;
	case O_PEER_NETNS:
		a->peer_netns = arg;
		break;
	}
	return err;
}

static void parse_flag(struct add_args *a, int c)
{
	switch (c) {
	case O_UP:
		a->up = true;
		break;
	case O_PEER_UP:
		a->peer_up = true;
		break;
	case O_APPEND:
		a->append = true;
		break;
	case O_PERSIST:
		a->tap_flags |= VNIC_TAP_PERSIST;
		break;
	case O_VNET_HDR:
		a->tap_flags |= VNIC_TAP_VNET_HDR;
		break;
	case O_MULTI_QUEUE:
		a->tap_flags |= VNIC_TAP_MULTI_QUEUE;
		break;
	case O_NO_PI:
		a->tap_flags |= VNIC_TAP_NO_PI;
		break;
	}
}

/* Returns -1 to go on, else an exit status. */
static int parse_args(struct add_args *a, int argc, char **argv)
{
	int c, err;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", add_opts, NULL)) != -1) {
		if (c == 'h') {
			usage_guest_add(stdout);
			return CLI_OK;
		}
		if (c < O_KIND || c >= O__END)
			return cli_bad_opt(CMD, add_opts, argv, c);
		a->seen |= 1ull << (c - O_KIND);
		if (!add_opts[c - O_KIND].has_arg) {
			parse_flag(a, c);
			continue;
		}
		err = parse_value(a, c, optarg);
		if (err)
			return CLI_USAGE;
	}
	if (optind >= argc)
		return cli_usage_err(CMD, "missing guest name");
	if (optind + 1 < argc)
		return cli_usage_err(CMD, "unexpected argument '%s'", argv[optind + 1]);
	a->guest = argv[optind];
	return -1;
}

static bool seen(const struct add_args *a, int opt)
{
	return a->seen & (1ull << (opt - O_KIND));
}

/* Every option given must apply to the kind. */
static int check_kind(const struct add_args *a)
{
	int o;

	if (!a->kind)
		return cli_usage_err(CMD, "--kind is required");
	for (o = O_KIND; o < O__END; o++) {
		if (!seen(a, o) || !opt_kinds[o - O_KIND] ||
		    (opt_kinds[o - O_KIND] & (1u << a->kind)))
			continue;
		return cli_usage_err(CMD, "--%s does not apply to --kind %s",
				     add_opts[o - O_KIND].name,
				     vnic_kind_name(a->kind));
	}
	if ((a->kind == VNIC_KIND_MACVTAP || a->kind == VNIC_KIND_MACVLAN) &&
	    !a->lower)
		return cli_usage_err(CMD, "--kind %s needs --lower",
				     vnic_kind_name(a->kind));
	if (a->kind == VNIC_KIND_VETH && !a->peer_name)
		return cli_usage_err(CMD, "--kind veth needs --peer-name");
	return 0;
}

/* The names vnicctl expands must fit, up to the last NIC's index. */
static int check_lengths(const struct add_args *a)
{
	char buf[VNIC_IFNAME_MAX + 1];

	if (a->name && a->naming == VNIC_NAMING_EXPLICIT &&
	    cli_expand(CMD, "--name", a->name, a->nics - 1, buf, sizeof(buf)))
		return CLI_USAGE;
	if (a->peer_name &&
	    cli_expand(CMD, "--peer-name", a->peer_name, a->nics - 1, buf,
		       sizeof(buf)))
		return CLI_USAGE;
	return 0;
}

/* Names: what a template, an exact name and the naming strategy allow. */
static int check_names(const struct add_args *a)
{
	bool tmpl = cli_has_template(a->name);

	if (a->nics > 1 && a->mac)
		return cli_usage_err(CMD, "--mac needs --nics 1");
	if (a->nics > 1 && a->name && !tmpl)
		return cli_usage_err(CMD, "--name without %%d needs --nics 1");
	if (a->nics > 1 && a->peer_name && !cli_has_template(a->peer_name))
		return cli_usage_err(CMD, "--peer-name without %%d needs --nics 1");
	if (a->naming == VNIC_NAMING_EXPLICIT && !a->name)
		return cli_usage_err(CMD, "--naming explicit needs --name");
	if ((a->naming == VNIC_NAMING_KERNEL ||
	     a->naming == VNIC_NAMING_CACHE) && a->name && !tmpl)
		return cli_usage_err(CMD, "--naming %s needs a --name with %%d",
				     a->naming == VNIC_NAMING_KERNEL ?
				     "kernel" : "cache");
	return check_lengths(a);
}

static int check_args(struct add_args *a)
{
	if (check_kind(a) || check_names(a))
		return CLI_USAGE;
	/* A CLI's tap/tun would vanish with the fds it holds at exit. */
	if (a->kind == VNIC_KIND_TAP || a->kind == VNIC_KIND_TUN)
		a->tap_flags |= VNIC_TAP_PERSIST;
	return 0;
}

/* The options of the NIC with index idx in the guest. */
static int nic_opts(const struct add_args *a, unsigned int idx,
		    struct vnic_nic_opts *o, char *name, char *peer)
{
	o->kind = a->kind;
	o->naming = a->naming;
	o->name = a->name;
	if (a->name && a->naming == VNIC_NAMING_EXPLICIT) {
		if (cli_expand(CMD, "--name", a->name, idx, name, VNIC_IFNAME_MAX + 1))
			return CLI_USAGE;
		o->name = name;
	}
	if (a->peer_name) {
		if (cli_expand(CMD, "--peer-name", a->peer_name, idx, peer,
			       VNIC_IFNAME_MAX + 1))
			return CLI_USAGE;
		o->peer_name = peer;
	}
	o->lower = a->lower;
	o->mode = a->mode;
	o->mac = a->mac;
	o->mtu = a->mtu;
	o->up = a->up;
	o->peer_up = a->peer_up;
	o->netns_fd = a->nic_netns_fd;
	o->peer_netns_fd = a->peer_netns_fd;
	o->tap_flags = a->tap_flags;
	o->queues = a->queues;
	o->owner_set = a->owner_set;
	o->owner_uid = a->uid;
	o->owner_gid = a->gid;
	return 0;
}

/*
 * The tag index the next NIC gets: the guest's highest one + 1 (guest.h).
 * Not the count of NICs: an adopted guest keeps its gaps (a NIC deleted
 * behind its back), and a %d expanded from the count would name the new
 * NIC after another index, or after a NIC that still exists.
 */
static unsigned int next_index(const struct vnic_guest *g)
{
	unsigned int i, next = 0, n = vnic_guest_nic_count(g);
	VNIC_OPTS(vnic_nic_info, info);

	for (i = 0; i < n; i++)
		if (!vnic_guest_nic_info(g, i, &info) && info.tag_index >= next)
			next = info.tag_index + 1;
	return next;
}

static int add_nics(struct cli *cli, const struct add_args *a,
		    struct vnic_guest *g)
{
	char name[VNIC_IFNAME_MAX + 1], peer[VNIC_IFNAME_MAX + 1];
	unsigned int i, base = next_index(g);
	int err;

	for (i = 0; i < a->nics; i++) {
		VNIC_OPTS(vnic_nic_opts, o);

		err = nic_opts(a, base + i, &o, name, peer);
		if (err)
			return err;
		err = vnic_guest_add_nic(g, &o, NULL);
		if (err)
			return cli_fail(cli, err, "guest %s", a->guest);
	}
	return CLI_OK;
}

/* A handle for the guest: a new one, or with --append the existing one. */
static int get_guest(struct cli *cli, const struct add_args *a,
		     struct vnic_guest **g)
{
	int err = vnic_guest_adopt(cli->ctx, a->guest, g);

	if (!err && !a->append) {
		vnic_guest_free(*g);
		fprintf(stderr, "vnicctl: guest %s already exists (add --append to add NICs to it)\n",
			a->guest);
		return CLI_FAIL;
	}
	if (!err)
		return CLI_OK;
	if (err != -ENOENT)
		return cli_fail(cli, err, "guest %s", a->guest);
	err = vnic_guest_new(cli->ctx, a->guest, g);
	return err ? cli_fail(cli, err, "guest %s", a->guest) : CLI_OK;
}

/*
 * vnic_guest_create() with the signals that end vnicctl (^C, timeout(1),
 * systemctl, a closed terminal) held until it returns: killed inside, it
 * would leave the NICs made but not yet tagged, which no command but gc
 * (which takes every guest not kept) can find.  After it, the guest is
 * whole or gone, and a signal that came ends vnicctl then.
 */
static int create_held(struct vnic_guest *g)
{
	sigset_t stop, old;
	int err, blocked;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	blocked = !sigprocmask(SIG_BLOCK, &stop, &old);
	err = vnic_guest_create(g);
	if (blocked)
		sigprocmask(SIG_SETMASK, &old, NULL);
	return err;
}

static int create(struct cli *cli, const struct add_args *a)
{
	struct vnic_guest *g;
	unsigned int from;
	int ret;

	ret = get_guest(cli, a, &g);
	if (ret)
		return ret;
	from = vnic_guest_nic_count(g);
	ret = add_nics(cli, a, g);
	if (!ret) {
		ret = create_held(g);
		if (ret)
			ret = cli_fail(cli, ret, "guest %s", a->guest);
	}
	if (!ret)
		ret = cli_guest_print(cli, g, from);
	vnic_guest_free(g);
	return ret;
}

static int open_netns(const struct add_args *a, int *nic_fd, int *peer_fd)
{
	if (a->nic_netns && cli_open_netns(a->nic_netns, nic_fd))
		return CLI_FAIL;
	if (a->peer_netns && cli_open_netns(a->peer_netns, peer_fd))
		return CLI_FAIL;
	return CLI_OK;
}

int cmd_guest_add(struct cli *cli, int argc, char **argv)
{
	struct add_args a = { .nics = 1, .uid = -1, .gid = -1 };
	int nic_fd = -1, peer_fd = -1;
	int ret;

	ret = parse_args(&a, argc, argv);
	if (ret >= 0)
		return ret;
	if (check_args(&a))
		return CLI_USAGE;
	ret = open_netns(&a, &nic_fd, &peer_fd);
	if (!ret)
		ret = cli_open(cli);
	if (!ret) {
		a.nic_netns_fd = nic_fd > 0 ? nic_fd : 0;
		a.peer_netns_fd = peer_fd > 0 ? peer_fd : 0;
		ret = create(cli, &a);
	}
	if (nic_fd >= 0)
		close(nic_fd);
	if (peer_fd >= 0)
		close(peer_fd);
	return ret;
}
