// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An attachment's name: the libvnic guest (and filter guest, and state
 * file) of one (container id, interface name).  "CID.IFNAME" when it fits
 * libvnic's 64 characters and CID has no '.': the first '.' then tells the
 * two apart, where "a.b" + "c" and "a" + "b.c" would share one name (and
 * one filter, one state file, one tag).  Runtimes use 64-character ids,
 * which do not fit, so those (and ids with a '.') get the id's first 47
 * characters, '-' and 16 hex digits of a 64-bit FNV-1a over id and name;
 * after its first '.' such a name has more than an interface name's 15
 * characters, so it is never a "CID.IFNAME".  Deterministic, so DEL and
 * CHECK need only the environment; GC learns the full pair from the state
 * file.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cni/cni.h"

#define SHORT_ID	47

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

bool cni_valid_id(const char *s)
{
	size_t i;

	if (!alnum(s[0]))
		return false;
	for (i = 1; s[i]; i++)
		if (!alnum(s[i]) && !strchr("_.-", s[i]))
			return false;
	return i <= CNI_ID_MAX;
}

/* The kernel's dev_valid_name(), and no '%': the kernel takes a name
 * with one for a template ("eth%d") and picks another name. */
bool cni_valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > VNIC_IFNAME_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	return strcspn(s, "/:% \t\n\r\v\f") == n;
}

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int cni_guest_name(const char *cid, const char *ifname, char *out)
{
	size_t lc = strlen(cid), li = strlen(ifname), i;
	bool plain = lc + 1 + li <= CNI_GUEST_MAX;
	uint64_t h;

	if (strchr(cid, '.'))
		plain = false;
	for (i = 0; plain && i < li; i++)
		plain = alnum(ifname[i]) || strchr("_.-", ifname[i]);
	if (plain) {
		snprintf(out, CNI_GUEST_MAX + 1, "%s.%s", cid, ifname);
		return 0;
	}
	h = fnv1a(0xcbf29ce484222325ull, cid, lc + 1);
	h = fnv1a(h, ifname, li);
	snprintf(out, CNI_GUEST_MAX + 1, "%.*s-%016llx",
		 (int)(lc < SHORT_ID ? lc : SHORT_ID), cid, (unsigned long long)h);
	return 0;
}

/*
 * The host end's name: hostPrefix and as many hex digits of a 64-bit
 * FNV-1a over network and guest as fit (13 after "vc").  The kernel
 * resolves "prefix%d" by scanning every link of the namespace (0.65 ms
 * more per create next to 4,000 links, measured); an explicit name is a
 * hash lookup.  A name taken (a collision, short with a long prefix) makes
 * attach.c fall back to "%d".
 */
void cni_host_name(const char *prefix, const char *net, const char *guest,
		   char *out)
{
	size_t lp = strlen(prefix), room = VNIC_IFNAME_MAX > lp ? VNIC_IFNAME_MAX - lp : 0;
	uint64_t h = fnv1a(0xcbf29ce484222325ull, net, strlen(net) + 1);
	char hex[17];

	h = fnv1a(h, guest, strlen(guest));
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)h);
	snprintf(out, VNIC_IFNAME_MAX + 1, "%s%.*s", prefix,
		 (int)(room < 16 ? room : 16), hex);
}
