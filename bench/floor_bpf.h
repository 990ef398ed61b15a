/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bpf floor (floor_bpf.c): what a libvnic-bpf change wrote, captured
 * through the library's bpf tap, replayed by the bench alone.
 */
#ifndef VNIC_BENCH_FLOOR_BPF_H
#define VNIC_BENCH_FLOOR_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <vnic/filter.h>

struct bfloor_op {
	bool map;		/* a map write; else an rtnetlink batch */
	int fd;			/* map: the handle's fd */
	size_t klen, vlen;	/* map: vlen 0 is a delete */
	size_t len;		/* batch: bytes */
	unsigned char *buf;	/* batch bytes, or key then value */
};

struct bfloor {
	struct bfloor_op *op;
	unsigned int n, cap;
	int err;
};

/* Capture h's writes into fl from now on (NULL: stop). */
int bfloor_capture(struct vnic_filter *h, struct bfloor *fl);
void bfloor_free(struct bfloor *fl);
/* Replay fl: every batch in one sendmsg() on a socket of the bench's own,
 * then its acks; every map write by bpf(2).  *ms from the first write to
 * the last ack.  0 or a negative errno (err says what). */
int bfloor_replay(const struct bfloor *fl, double *ms, char *err, size_t errlen);

/* One run of the filters scenario's floor-bpf row (remove false) or
 * floor-bpf-remove-all (true), timed into s. */
struct filt_env;
struct sample;
int bfloor_row(struct filt_env *e, const struct vnic_policy *p, unsigned int guests,
	       bool remove, struct sample *s, char *err, size_t errlen);

#endif
