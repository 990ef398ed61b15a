// SPDX-License-Identifier: LGPL-2.1-or-later
/* MAC addresses: parsing, and random locally administered ones. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "lib/internal.h"

/* "02:00:5e:10:00:01" (or '-' separated); unicast, not all-zero. */
int mac_parse(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char sep[5], end;
	int i;

	if (sscanf(s, "%2x%c%2x%c%2x%c%2x%c%2x%c%2x%c", &b[0], &sep[0], &b[1],
		   &sep[1], &b[2], &sep[2], &b[3], &sep[3], &b[4], &sep[4],
		   &b[5], &end) != 11)
		return -EINVAL;
	for (i = 0; i < 5; i++)
		if (sep[i] != ':' && sep[i] != '-')
			return -EINVAL;
	if (strlen(s) != 17)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
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
