// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The nftables read-back: a read-only vnic_nft_open() whose kernel is the
 * input (struct nfnl_replay): each request it sends (table, sets, the state
 * element, chains, the guests set's elements, the generation again before
 * the guests are listed, then each guest's counter)
 * takes the next reply of the input, the messages up to an NLMSG_DONE or
 * NLMSG_ERROR.  Everything that reaches libnftnl has passed nft/attrs.c;
 * every failure must carry a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "nft/internal.h"

static struct vnic_ctx *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (vnic_ctx_new(NULL, &ctx))
		abort();
	return 0;
}

static void guests(struct vnic_nft *n)
{
	unsigned int i, count = 0;
	uint64_t pkts, bytes;
	char **names = NULL;

	if (vnic_nft_guests(n, &names, &count)) {
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "guests: %s\n", vnic_ctx_errmsg(ctx));
		return;
	}
	for (i = 0; i < count; i++) {
		int err;

		fuzz_touch(names[i], strlen(names[i]) + 1);
		err = vnic_nft_counter(n, names[i], &pkts, &bytes);
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "guest %s: counter %s\n", names[i],
				err ? vnic_ctx_errmsg(ctx) : "read");
	}
	free(names);	/* one block */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vnic_nft_opts o = { .sz = sizeof(o), .flags = VNIC_NFT_READ_ONLY };
	struct nfnl_replay r = { .buf = data, .len = size };
	struct vnic_nft *n;
	int err = nft_open_replay(ctx, &o, &r, &n);

	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "open: %s\n", err ? vnic_ctx_errmsg(ctx) : "ok");
	if (err) {
		/* Every error says what went wrong. */
		if (!vnic_ctx_errmsg(ctx) || !*vnic_ctx_errmsg(ctx))
			abort();
		return 0;
	}
	guests(n);
	vnic_nft_close(n);
	return 0;
}
