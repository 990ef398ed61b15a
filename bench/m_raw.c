// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Methods without libvnic.
 *
 * floor: every RTM_NEWLINK, explicit names, in one sendmsg; what is left
 * is the kernel's own cost.  For taps, which rtnetlink cannot create, the
 * floor is the plain TUNSETIFF loop.
 *
 * floor-tagged: the same plus, in the same sendmsg, the alias tag libvnic
 * writes on every NIC (a second request each: the kernel ignores
 * IFLA_IFALIAS on creation).  The floor for what libvnic promises.
 *
 * ioctl-probe: what older VM runtimes did to name a macvtap: probe
 * macvtap0, macvtap1, ... with SIOCGIFFLAGS until ENODEV, then create that
 * name; (N^2+N)/2 ioctls for N NICs in an empty namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>

#include "bench.h"

static void nic_spec(const struct guest_env *e, unsigned int i, char *name,
		     char *peer, struct link_spec *ls)
{
	const struct bench_opts *o = e->o;

	memset(ls, 0, sizeof(*ls));
	ls->name = name;
	ls->kind = env_ip_kind(o->kind);
	ls->up = o->up;
	if (o->kind == VNIC_KIND_VETH) {
		env_peer_name(o, i, peer);
		ls->peer = peer;
	} else {
		ls->lower = e->lower;
		ls->mode = MACVLAN_MODE_BRIDGE;
	}
}

/* The tags of NICs 0..n-1, after their RTM_NEWLINKs. */
static int queue_tags(struct guest_env *e)
{
	char name[16], alias[64];
	unsigned int i;
	int ret = 0;

	for (i = 0; i < e->o->nics && !ret; i++) {
		env_nic_name(e->o, i, name);
		/* As long as libvnic's "vnic:OWNER:GUEST:INDEX". */
		snprintf(alias, sizeof(alias), "vnic:vnicbench:bench:%u", i);
		ret = rawnl_queue_setalias(&e->nl, name, alias);
	}
	return ret;
}

static int floor_netlink(struct guest_env *e, bool tagged, struct sample *s,
			 char *err, size_t errlen)
{
	struct rawnl *r = &e->nl;
	uint64_t calls = r->sendmsg_calls;
	char name[16], peer[16];
	struct link_spec ls;
	unsigned int i;
	uint64_t t0;
	int ret = 0;

	/* Encoded before the clock: the floor is the kernel's work alone. */
	for (i = 0; i < e->o->nics && !ret; i++) {
		env_nic_name(e->o, i, name);
		nic_spec(e, i, name, peer, &ls);
		ret = rawnl_queue_newlink(r, &ls);
	}
	if (!ret && tagged)
		ret = queue_tags(e);
	t0 = now_ns();
	if (!ret)
		ret = rawnl_flush(r, 0);
	s->ms = ms_since(t0);
	if (ret) {
		snprintf(err, errlen, "%s",
			 r->err[0] ? r->err : strerror(-ret));
		return ret;
	}
	s->sendmsg = (double)(r->sendmsg_calls - calls);
	s->requests = e->o->nics * (tagged ? 2 : 1);
	s->ioctls = 0;
	return 0;
}

static int set_up(int sock, const char *name, unsigned int *ioctls)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	(*ioctls)++;
	if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	(*ioctls)++;
	return ioctl(sock, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static int tap_one(const struct guest_env *e, unsigned int i, int sock,
		   int *fd, unsigned int *ioctls)
{
	struct ifreq ifr;

	*fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	/* The flags a VM runtime asks for. */
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	env_nic_name(e->o, i, ifr.ifr_name);
	(*ioctls)++;
	if (ioctl(*fd, TUNSETIFF, &ifr) < 0)
		return -errno;
	return e->o->up ? set_up(sock, ifr.ifr_name, ioctls) : 0;
}

static int floor_tap(struct guest_env *e, struct sample *s, char *err,
		     size_t errlen)
{
	unsigned int i, ioctls = 0;
	int sock, ret = 0;
	uint64_t t0;

	e->tap_fds = malloc(e->o->nics * sizeof(int));
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!e->tap_fds || sock < 0) {
		snprintf(err, errlen, "setup: %s", strerror(errno));
		if (sock >= 0)
			close(sock);
		return -ENOMEM;
	}
	t0 = now_ns();
	for (i = 0; i < e->o->nics && !ret; i++) {
		ret = tap_one(e, i, sock, &e->tap_fds[i], &ioctls);
		if (e->tap_fds[i] >= 0)
			e->ntap_fds = i + 1;
	}
	s->ms = ms_since(t0);
	close(sock);
	if (ret) {
		snprintf(err, errlen, "tap %u: %s", i - 1, strerror(-ret));
		return ret;
	}
	s->ioctls = ioctls;
	s->sendmsg = 0;
	s->requests = 0;
	return 0;
}

static int floor_run(struct guest_env *e, struct sample *s, char *err,
		     size_t errlen)
{
	if (e->o->kind == VNIC_KIND_TAP)
		return floor_tap(e, s, err, errlen);
	return floor_netlink(e, false, s, err, errlen);
}

static int floor_tagged_run(struct guest_env *e, struct sample *s, char *err,
			    size_t errlen)
{
	return floor_netlink(e, true, s, err, errlen);
}

static const char *tagged_skip(const struct guest_env *e)
{
	if (e->o->kind == VNIC_KIND_TAP)
		return "tap: libvnic tags taps in its configure step; no netlink floor to add it to";
	return NULL;
}

static void close_taps(struct guest_env *e)
{
	unsigned int i;

	/* Not persistent: the last close deletes each tap. */
	for (i = 0; i < e->ntap_fds; i++)
		if (e->tap_fds[i] >= 0)
			close(e->tap_fds[i]);
	free(e->tap_fds);
	e->tap_fds = NULL;
	e->ntap_fds = 0;
}

const struct method method_floor = {
	.name = "floor",
	.run = floor_run,
	.release = close_taps,
};

const struct method method_floor_tagged = {
	.name = "floor-tagged",
	.skip = tagged_skip,
	.run = floor_tagged_run,
};

/* The first free "kindN": probes until the kernel says no such device. */
static int probe_free(int sock, const char *prefix, char *name,
		      unsigned int *ioctls)
{
	struct ifreq ifr;
	unsigned int k;

	memset(&ifr, 0, sizeof(ifr));
	for (k = 0;; k++) {
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s%u", prefix, k);
		(*ioctls)++;
		if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
			break;
	}
	if (errno != ENODEV)
		return -errno;
	snprintf(name, 16, "%s", ifr.ifr_name);
	return 0;
}

static int probe_create(struct guest_env *e, int sock, unsigned int *ioctls,
			char *err, size_t errlen)
{
	const char *prefix = env_ip_kind(e->o->kind);
	char name[16], peer[16];
	struct link_spec ls;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < e->o->nics && !ret; i++) {
		ret = probe_free(sock, prefix, name, ioctls);
		if (ret) {
			snprintf(err, errlen, "probe %u: %s", i,
				 strerror(-ret));
			break;
		}
		/* One request per NIC, acked before the next probe: the
		 * next probe must see this name taken. */
		nic_spec(e, i, name, peer, &ls);
		ret = rawnl_queue_newlink(&e->nl, &ls);
		if (!ret)
			ret = rawnl_flush(&e->nl, 0);
		if (ret)
			snprintf(err, errlen, "create %s: %s", name, e->nl.err);
	}
	return ret;
}

static int probe_run(struct guest_env *e, struct sample *s, char *err,
		     size_t errlen)
{
	uint64_t calls = e->nl.sendmsg_calls, t0;
	unsigned int ioctls = 0;
	int sock, ret;

	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	t0 = now_ns();
	ret = probe_create(e, sock, &ioctls, err, errlen);
	s->ms = ms_since(t0);
	close(sock);
	s->ioctls = ioctls;
	s->sendmsg = (double)(e->nl.sendmsg_calls - calls);
	s->requests = e->o->nics;
	return ret;
}

static const char *probe_skip(const struct guest_env *e)
{
	if (e->o->kind == VNIC_KIND_TAP)
		return "tap: TUNSETIFF names taps itself; the floor is already the tap loop";
	return NULL;
}

const struct method method_ioctl_probe = {
	.name = "ioctl-probe",
	.skip = probe_skip,
	.run = probe_run,
};
