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
 * pairs and one kind of separator; unicast, not all-zero. */
int mac_parse(const char *s, uint8_t mac[6])
{
	unsigned int i;

	if (strlen(s) != 17)
		return -EINVAL;
	for (i = 0; i < 17; i++) {
		if (i % 3 == 2 ? s[i] != s[2] || (s[i] != ':' && s[i] != '-') :
				 !isxdigit((unsigned char)s[i]))
			return -EINVAL;
	}
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)strtoul((char[]){ s[3 * i], s[3 * i + 1], 0 }, NULL, 16);
	if (mac[0] & 1)
		return -EINVAL;		/* multicast or broadcast */
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return -EINVAL;
	return 0;
}

/*
 * We choose every MAC ourselves (rather than letting the kernel) so that a
 * NIC can be recognised by it before its name is known: 46 random bits.
 */
int mac_random(uint8_t mac[6])
{
	if (getrandom(mac, 6, 0) != 6)
		return -errno;
	mac[0] = (uint8_t)((mac[0] & 0xfe) | 0x02);
	return 0;
}
