// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnic_guest_add_nic(): every check that can be made before anything is
 * sent, each with a reason, so that bad input never reaches the kernel and
 * never leaves anything behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>

#include "allocator/nic.h"

#define MTU_MIN		68		/* IPv4's minimum */
#define MTU_MAX		65535		/* ETH_MAX_MTU */
#define TAP_QUEUES_MAX	256		/* the kernel's MAX_TAP_QUEUES */

struct check {
	struct vnic_ctx *ctx;
	int idx;
};

__attribute__((format(printf, 3, 4)))
static int bad(const struct check *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = vnic_set_errv(c->ctx, err, VNIC_STEP_VALIDATE, c->idx, NULL, fmt, ap);
	va_end(ap);
	return err;
}

static int check_name(const struct check *c, const struct vnic_nic_opts *o,
		      struct vnic_nic *nic)
{
	const char *name = o->name ? o->name : kind_default_template(o->kind);
	const char *why = NULL;
	bool tmpl;

	if (name_check(name, &tmpl, &why))
		return vnic_set_err(c->ctx, -EINVAL, VNIC_STEP_VALIDATE, c->idx,
				    NULL, "name '%s': %s", name, why);
	snprintf(nic->tmpl, sizeof(nic->tmpl), "%s", name);
	switch (o->naming) {
	case VNIC_NAMING_AUTO:
		nic->naming = tmpl ? VNIC_NAMING_CACHE : VNIC_NAMING_EXPLICIT;
		return 0;
	case VNIC_NAMING_KERNEL:
	case VNIC_NAMING_CACHE:
		nic->naming = o->naming;
		return tmpl ? 0 : bad(c, -EINVAL, "name '%s': this naming needs a \"%%d\" template", name);
	case VNIC_NAMING_EXPLICIT:
		nic->naming = o->naming;
		return tmpl ? bad(c, -EINVAL, "name '%s': explicit naming takes no \"%%d\"", name) : 0;
	}
	return bad(c, -EINVAL, "unknown naming strategy");
}

static int open_ns(const struct check *c, int fd, pid_t pid, int *out,
		   const char *what)
{
	const char *why = NULL;
	int err;

	/* Only 0 means "none": a negative fd or pid is refused, not read as
	 * the context's namespace (where the NIC would then silently go). */
	if (pid < 0)
		return bad(c, -EINVAL, "%s: pid %d is not a process id", what, (int)pid);
	if (fd && pid)
		return bad(c, -EINVAL, "%s: give a namespace fd or a pid, not both", what);
	if (fd) {
		err = vnic_netns_check(fd, &why);
		if (err)
			return bad(c, err, "%s: fd %d is %s", what, fd, why);
		*out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	} else if (pid) {
		*out = vnic_netns_open_pid(pid);
	} else {
		return 0;
	}
	if (*out < 0) {
		err = fd ? -errno : *out;
		*out = -1;
		return bad(c, err, "%s: cannot open the target namespace", what);
	}
	/* The context's own namespace given explicitly is no target. */
	if (vnic_netns_is_ctx(c->ctx, *out)) {
		close(*out);
		*out = -1;
	}
	return 0;
}

static int check_mac(const struct check *c, const char *s, uint8_t mac[6],
		     enum mark_role role)
{
	if (!s)
		return mark_mac(c->ctx->owner, role, mac);
	if (mac_parse(s, mac))
		return bad(c, -EINVAL, "MAC '%s': not a unicast xx:xx:xx:xx:xx:xx address", s);
	return 0;
}

static int check_lower(const struct check *c, const struct vnic_nic_opts *o,
		       struct vnic_nic *nic)
{
	const char *why = NULL;
	bool tmpl;

	static const uint32_t modes[] = {
		[VNIC_MACVLAN_DEFAULT] = MACVLAN_MODE_BRIDGE,
		[VNIC_MACVLAN_PRIVATE] = MACVLAN_MODE_PRIVATE,
		[VNIC_MACVLAN_VEPA] = MACVLAN_MODE_VEPA,
		[VNIC_MACVLAN_BRIDGE] = MACVLAN_MODE_BRIDGE,
		[VNIC_MACVLAN_PASSTHRU] = MACVLAN_MODE_PASSTHRU,
	};

	if ((unsigned int)o->mode >= ARRAY_SIZE(modes))
		return bad(c, -EINVAL, "unknown macvlan mode");
	nic->mode = modes[o->mode];
	if (o->lower && o->lower_ifindex)
		return bad(c, -EINVAL, "lower device: give a name or an ifindex, not both");
	if (o->lower_ifindex < 0)
		return bad(c, -EINVAL, "lower ifindex must be positive");
	if (o->lower_ifindex) {
		nic->lower_ifindex = o->lower_ifindex;
		return 0;
	}
	if (!o->lower)
		return bad(c, -EINVAL, "%s needs a lower device", vnic_kind_name(o->kind));
	if (name_check(o->lower, &tmpl, &why) || tmpl)
		return bad(c, -EINVAL, "lower device '%s': not an interface name", o->lower);
	snprintf(nic->lower, sizeof(nic->lower), "%s", o->lower);
	return 0;
}

static int check_peer(const struct check *c, const struct vnic_nic_opts *o,
		      struct vnic_nic *nic)
{
	const char *why = NULL;
	bool tmpl;
	int err;

	if (!o->peer_name)
		return bad(c, -EINVAL, "veth needs a peer name");
	if (name_check(o->peer_name, &tmpl, &why) || tmpl)
		return vnic_set_err(c->ctx, -EINVAL, VNIC_STEP_VALIDATE, c->idx, NULL,
				    "peer name '%s': %s", o->peer_name,
				    tmpl ? "must be an exact name" : why);
	snprintf(nic->peer_name, sizeof(nic->peer_name), "%s", o->peer_name);
	nic->peer_up = o->peer_up;
	err = check_mac(c, o->peer_mac, nic->peer_mac, MARK_PEER);
	if (!err)
		err = open_ns(c, o->peer_netns_fd, o->peer_netns_pid,
			      &nic->peer_netns_fd, "peer namespace");
	return err;
}

static int check_tap(const struct check *c, const struct vnic_nic_opts *o,
		     struct vnic_nic *nic)
{
	nic->queues = o->queues ? o->queues : 1;
	if (nic->queues > TAP_QUEUES_MAX)
		return bad(c, -EINVAL, "at most 256 queues");
	if (o->tap_flags & ~(uint32_t)(VNIC_TAP_PERSIST | VNIC_TAP_VNET_HDR |
				       VNIC_TAP_MULTI_QUEUE | VNIC_TAP_NO_PI))
		return bad(c, -EINVAL, "unknown tap flags 0x%x", o->tap_flags);
	nic->tap_flags = o->tap_flags;
	if (nic->queues > 1)
		nic->tap_flags |= VNIC_TAP_MULTI_QUEUE;
	nic->owner_set = o->owner_set;
	nic->owner_uid = o->owner_uid;
	nic->owner_gid = o->owner_gid;
	if (o->owner_set && (o->owner_uid < -1 || o->owner_gid < -1 ||
			     o->owner_uid > UINT32_MAX || o->owner_gid > UINT32_MAX))
		return bad(c, -EINVAL, "owner uid/gid out of range");
	return 0;
}

/* Fields that belong to other kinds are refused rather than ignored. */
static int check_unrelated(const struct check *c, const struct vnic_nic_opts *o)
{
	bool macv = o->kind == VNIC_KIND_MACVTAP || o->kind == VNIC_KIND_MACVLAN;

	if (!macv && (o->lower || o->lower_ifindex || o->mode))
		return bad(c, -EINVAL, "%s takes no lower device or mode", vnic_kind_name(o->kind));
	if (o->kind != VNIC_KIND_VETH && (o->peer_name || o->peer_netns_fd ||
					  o->peer_netns_pid || o->peer_mac))
		return bad(c, -EINVAL, "%s has no peer", vnic_kind_name(o->kind));
	if (!kind_is_tun(o->kind) && (o->tap_flags || o->queues || o->owner_set))
		return bad(c, -EINVAL, "%s takes no tap options", vnic_kind_name(o->kind));
	if (o->kind == VNIC_KIND_TUN && o->mac)
		return bad(c, -EINVAL, "a tun device has no MAC address");
	return 0;
}

/* Two owned namespace fds (-1: the context's) name one namespace. */
static bool same_ns(int a, int b)
{
	if (a < 0 || b < 0)
		return a == b;
	return vnic_netns_same(a, b);
}

bool nic_peer_beside(const struct vnic_nic *nic)
{
	return same_ns(nic->netns_fd, nic->peer_netns_fd);
}

/* An explicit name another NIC of the guest has (or will have) in the same
 * namespace: refused here, as guest.h says, not by the kernel at create. */
static int check_dup(const struct check *c, const struct vnic_guest *g,
		     const struct vnic_nic *nic)
{
	unsigned int i;

	if (nic->naming != VNIC_NAMING_EXPLICIT)
		return 0;
	for (i = 0; i + 1 < g->n; i++) {
		const struct vnic_nic *o = &g->nics[i];
		const char *name = o->created ? o->name :
				   o->naming == VNIC_NAMING_EXPLICIT ? o->tmpl : "";

		if (!strcmp(name, nic->tmpl) && same_ns(o->netns_fd, nic->netns_fd))
			return bad(c, -EEXIST, "name '%s': NIC %u of the guest has it",
				   nic->tmpl, i);
	}
	return 0;
}

/* A veth whose two ends would need the same name in one namespace. */
static bool same_name_same_ns(const struct vnic_nic *nic)
{
	if (nic->naming != VNIC_NAMING_EXPLICIT || strcmp(nic->tmpl, nic->peer_name))
		return false;
	return nic_peer_beside(nic);
}

static int check_nic(const struct check *c, const struct vnic_nic_opts *o,
		     struct vnic_nic *nic)
{
	int err;

	if (!vnic_kind_name(o->kind))
		return vnic_set_err(c->ctx, -EINVAL, VNIC_STEP_VALIDATE, c->idx,
				    NULL, "unknown kind %d", (int)o->kind);
	if (kind_feature(o->kind) == VNIC_FEAT_TUN)
		vnic_probe_tun(c->ctx);
	if (!(c->ctx->features & kind_feature(o->kind)))
		return bad(c, -EOPNOTSUPP, "kind %s is not supported by this kernel",
			   vnic_kind_name(o->kind));
	nic->kind = o->kind;
	if (o->mtu && (o->mtu < MTU_MIN || o->mtu > MTU_MAX))
		return vnic_set_err(c->ctx, -EINVAL, VNIC_STEP_VALIDATE, c->idx,
				    NULL, "MTU %u out of range 68..65535", o->mtu);
	nic->mtu = o->mtu;
	nic->up = o->up;
	err = check_unrelated(c, o);
	if (!err)
		err = check_name(c, o, nic);
	if (!err && o->kind != VNIC_KIND_TUN)
		err = check_mac(c, o->mac, nic->mac, MARK_NIC);
	nic->mac_given = o->mac != NULL;
	/* Born with the owner's MAC check even when the caller chose (msg.c). */
	if (!err && nic->mac_given)
		err = mark_mac(c->ctx->owner, MARK_NIC, nic->birth_mac);
	else
		memcpy(nic->birth_mac, nic->mac, 6);
	if (!err && (o->kind == VNIC_KIND_MACVTAP || o->kind == VNIC_KIND_MACVLAN))
		err = check_lower(c, o, nic);
	if (!err && o->kind == VNIC_KIND_VETH)
		err = check_peer(c, o, nic);
	if (!err && kind_is_tun(o->kind))
		err = check_tap(c, o, nic);
	if (!err)
		err = open_ns(c, o->netns_fd, o->netns_pid, &nic->netns_fd, "namespace");
	if (!err && o->kind == VNIC_KIND_VETH && same_name_same_ns(nic))
		/* The kernel's answer would be a bare EEXIST about a name
		 * that may well look free. */
		err = bad(c, -EINVAL, "peer name '%s' is the NIC's own name, in the same namespace",
			  nic->peer_name);
	return err;
}

VNIC_EXPORT int vnic_guest_add_nic(struct vnic_guest *g,
				   const struct vnic_nic_opts *opts,
				   unsigned int *idx)
{
	struct vnic_nic_opts o;
	struct vnic_nic *nic;
	struct check c;
	int err;

	if (!g)
		return -EINVAL;
	c = (struct check){ g->ctx, (int)g->n };
	vnic_clear_err(g->ctx);
	if (!opts)
		return vnic_null_arg(g->ctx, __func__, "options");
	err = vnic_opts_copy(&o, sizeof(o), opts);
	if (err)
		return bad(&c, err, "vnic_nic_opts");
	err = guest_push_nic(g, &nic);
	if (err)
		return vnic_err_fallback(g->ctx, err, VNIC_STEP_VALIDATE, "NIC slot");
	err = check_nic(&c, &o, nic);
	if (!err)
		err = check_dup(&c, g, nic);
	if (err) {
		nic_release(nic);
		/* Nothing added: its slot and its tag index are the next
		 * NIC's (tag_index equals the position, guest.h). */
		g->next_tag = nic->tag;
		g->n--;
		return vnic_err_fallback(g->ctx, err, VNIC_STEP_VALIDATE, "NIC options");
	}
	if (idx)
		*idx = g->n - 1;
	return 0;
}
