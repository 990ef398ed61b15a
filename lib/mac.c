// SPDX-License-Identifier: LGPL-2.1-or-later
/* MAC addresses: parsing, and random locally administered ones. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "lib/internal.h"

/* "02:00:5e:10:00:01" (or '-' separated): exactly 17 characters, hex
 * pairs and one kind of separator; unicast, not all-zero.  *why says which
 * of these failed, for messages that must say more than "invalid". */
int mac_parse_why(const char *s, uint8_t mac[6], const char **why)
{
	unsigned int i;

	*why = "is not a MAC address like 02:00:00:00:00:01";
	if (strlen(s) != 17)
		return -EINVAL;
	for (i = 0; i < 17; i++) {
		if (i % 3 == 2 ? s[i] != s[2] || (s[i] != ':' && s[i] != '-') :
				 !isxdigit((unsigned char)s[i]))
			return -EINVAL;
	}
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)strtoul((char[]){ s[3 * i], s[3 * i + 1], 0 }, NULL, 16);
	*why = "is a multicast or broadcast MAC address (a NIC's is unicast)";
	if (mac[0] & 1)
		return -EINVAL;
	*why = "is the all-zeroes MAC address";
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return -EINVAL;
	*why = NULL;
	return 0;
}

int mac_parse(const char *s, uint8_t mac[6])
{
	const char *why;

	return mac_parse_why(s, mac, &why);
}

/*
 * We choose every MAC ourselves (rather than letting the kernel) so that a
 * NIC can be recognised by it before its name is known and before it is
 * tagged.  Octets 0..1 carry the caller's 14-bit mark (bits 13..8 in the
 * top six bits of octet 0, beside the locally administered bit set and the
 * multicast bit clear; bits 7..0 in octet 1); octets 2..5 are random: 32
 * bits, so that two NICs of one owner on one lower rarely share a MAC
 * (1,000 NICs: ~1e-4), and a duplicate refused with EADDRINUSE is drawn
 * again by the allocator.
 */
int mac_random_marked(uint8_t mac[6], uint16_t mark)
{
	if (getrandom(mac + 2, 4, 0) != 4)
		return -errno;
	mac[0] = (uint8_t)(((mark >> 6) & 0xfc) | 0x02);
	mac[1] = (uint8_t)(mark & 0xff);
	return 0;
}

bool mac_has_mark(const uint8_t mac[6], uint16_t mark)
{
	uint8_t m0 = (uint8_t)(((mark >> 6) & 0xfc) | 0x02);

	return mac[0] == m0 && mac[1] == (uint8_t)(mark & 0xff);
}
