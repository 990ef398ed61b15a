// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The attachment's NIC, through libvnic's allocator: one guest per
 * attachment, owner = network name, so the NIC's alias tag reads
 * "vnic:NETWORK:CONTAINERID.IFNAME:0" and GC finds it with
 * vnic_guest_list().  Both ends are made where they live in one
 * RTM_NEWLINK (never moved): veth's container end in CNI_NETNS under
 * CNI_IFNAME, its host end in ours under a name the kernel picks from
 * hostPrefix; a macvlan in CNI_NETNS on its lower device in ours.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "tools/cni/cni.h"

int attach_ctx(struct cni_run *r, int nsfd, struct vnic_ctx **ctx)
{
	/* A process that lives for one call needs no link monitor. */
	VNIC_OPTS(vnic_ctx_opts, opts, .owner = r->conf.name,
		  .netns_fd = nsfd > 0 ? nsfd : 0, .flags = VNIC_CTX_NO_MONITOR);
	int err = vnic_ctx_new(&opts, ctx);

	if (err)
		return cni_fail(r, CNI_ERR_IO, "cannot open a libvnic context",
				"%s", vnic_strerror(err));
	return 0;
}

/* A random locally administered unicast MAC, so the result can name it
 * (unless the runtime asked for one: mac.c). */
static void random_mac(char *buf)
{
	unsigned char m[6] = { 0 };

	if (getrandom(m, sizeof(m), 0) != sizeof(m))
		m[5] = 1;
	m[0] = (unsigned char)((m[0] & 0xfe) | 0x02);
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

static void fmt_mac(const unsigned char *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

static enum vnic_macvlan_mode macvlan_mode(const char *s)
{
	if (!strcmp(s, "private"))
		return VNIC_MACVLAN_PRIVATE;
	if (!strcmp(s, "vepa"))
		return VNIC_MACVLAN_VEPA;
	if (!strcmp(s, "passthru"))
		return VNIC_MACVLAN_PASSTHRU;
	return VNIC_MACVLAN_BRIDGE;
}

/* by_kernel: "prefix%d", after the hashed name was taken. */
static void nic_opts(struct cni_run *r, int nsfd, struct attach *a,
		     struct vnic_nic_opts *nic, char *tmpl, bool by_kernel)
{
	nic->mtu = r->conf.mtu;
	nic->up = 1;
	if (r->conf.mode == CNI_MODE_VETH) {
		if (!a->cont_mac[0])
			random_mac(a->cont_mac);
		nic->kind = VNIC_KIND_VETH;
		/* Never a cache-named create: it would dump every link of the
		 * host first, each call, in a fresh process. */
		if (by_kernel) {
			snprintf(tmpl, VNIC_IFNAME_MAX + 1, "%s%%d", r->conf.host_prefix);
			nic->naming = VNIC_NAMING_KERNEL;
		} else {
			cni_host_name(r->conf.host_prefix, r->conf.name, r->guest, tmpl);
			nic->naming = VNIC_NAMING_EXPLICIT;
		}
		nic->name = tmpl;
		nic->peer_name = r->env.ifname;
		nic->peer_netns_fd = nsfd;
		nic->peer_mac = a->cont_mac;
		nic->peer_up = 1;
		return;
	}
	nic->kind = VNIC_KIND_MACVLAN;
	nic->mac = a->cont_mac[0] ? a->cont_mac : NULL;
	nic->name = r->env.ifname;
	nic->netns_fd = nsfd;
	nic->lower = r->conf.master;
	nic->mode = macvlan_mode(r->conf.macvlan_mode);
}

static int create(struct cni_run *r, int nsfd, struct attach *a, bool by_kernel,
		  struct vnic_guest **out)
{
	VNIC_OPTS(vnic_nic_opts, nic);
	char tmpl[VNIC_IFNAME_MAX + 1];
	struct vnic_guest *g;
	int err;

	nic_opts(r, nsfd, a, &nic, tmpl, by_kernel);
	err = vnic_guest_new(a->ctx, r->guest, &g);
	if (err)
		return err;
	err = vnic_guest_add_nic(g, &nic, NULL);
	if (!err)
		err = vnic_guest_create(g);
	if (err) {
		vnic_guest_free(g);
		return err;
	}
	*out = g;
	return 0;
}

int attach_create(struct cni_run *r, int nsfd, struct attach *a)
{
	VNIC_OPTS(vnic_nic_info, info);
	struct vnic_guest *g = NULL;
	int err;

	err = create(r, nsfd, a, false, &g);
	/* Taken: by a hash collision, or the container's name is (then the
	 * kernel-named try fails the same way and says so). */
	if (err == -EEXIST && r->conf.mode == CNI_MODE_VETH)
		err = create(r, nsfd, a, true, &g);
	if (!err)
		err = vnic_guest_nic_info(g, 0, &info);
	if (err) {
		cni_fail_vnic(r, CNI_ERR_NIC, err == -EEXIST ? "interface already exists" :
			      "cannot create the interface", a->ctx, err);
		vnic_guest_free(g);
		return -1;
	}
	if (r->conf.mode == CNI_MODE_VETH) {
		snprintf(a->host, sizeof(a->host), "%s", info.name);
		fmt_mac(info.mac, a->host_mac);
	} else {
		fmt_mac(info.mac, a->cont_mac);
	}
	vnic_guest_free(g);
	return 0;
}

/* By the host end's name kept in the state file (one RTM_GETLINK), else by
 * a dump of every link: a host with 4,000 NICs would pay that dump on each
 * DEL and CHECK.  A host end renamed behind vnic-cni's back is not under
 * the kept name (or a foreign link took it): the dump still finds it by
 * its tag, so DEL removes it and CHECK reads it.  A NIC that really is
 * gone (the container's namespace went) pays that dump. */
static int adopt(struct vnic_ctx *ctx, const char *guest, const char *hint,
		 struct vnic_guest **g)
{
	int err;

	if (hint && hint[0]) {
		err = vnic_guest_adopt_named(ctx, guest, &hint, 1, g);
		if (err != -ENOENT)
			return err;
	}
	return vnic_guest_adopt(ctx, guest, g);
}

int attach_find(struct cni_run *r, struct vnic_ctx *ctx, const char *guest,
		const char *hint, char *host)
{
	VNIC_OPTS(vnic_nic_info, info);
	struct vnic_guest *g;
	int err = adopt(ctx, guest, hint, &g);

	if (err == -ENOENT)
		return cni_fail(r, CNI_ERR_NIC_MISSING, "interface not found",
				"no NIC of network %s is tagged for %s",
				r->conf.name, guest);
	if (err)
		return cni_fail_vnic(r, CNI_ERR_IO, "cannot list interfaces", ctx, err);
	err = vnic_guest_nic_info(g, 0, &info);
	if (!err)
		snprintf(host, VNIC_IFNAME_MAX + 1, "%s", info.name);
	vnic_guest_free(g);
	if (err)
		return cni_fail_vnic(r, CNI_ERR_IO, "cannot read the interface", ctx, err);
	return 0;
}

int attach_lookup(struct cni_run *r, struct vnic_ctx *ctx, const char *guest,
		  const char *hint, struct vnic_guest **g)
{
	int err = adopt(ctx, guest, hint, g);

	if (err == -ENOENT) {
		*g = NULL;
		return 0;
	}
	if (err)
		return cni_fail_vnic(r, CNI_ERR_IO, "cannot list interfaces", ctx, err);
	return 0;
}

/* Deletes the NICs of g (from attach_lookup(), NULL: none) and frees g. */
int attach_destroy(struct cni_run *r, struct vnic_ctx *ctx, struct vnic_guest *g)
{
	int err = g ? vnic_guest_destroy(g) : 0;

	if (err)
		return cni_fail_vnic(r, CNI_ERR_NIC, "cannot delete the interface",
				     ctx, err);
	return 0;
}

int attach_delete(struct cni_run *r, struct vnic_ctx *ctx, const char *guest,
		  const char *hint)
{
	struct vnic_guest *g;

	if (attach_lookup(r, ctx, guest, hint, &g))
		return -1;
	return attach_destroy(r, ctx, g);
}
