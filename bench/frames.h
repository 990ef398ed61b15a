/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Real frames through a filtered veth pair, for vnic-bench's pkt scenario
 * and selftests/measure/bpf_measure.c alike: the frame, the namespace both
 * send it through and the bounded sender.  It includes nothing of the
 * bench's, so that both build it as it is.
 */
#ifndef VNIC_BENCH_FRAMES_H
#define VNIC_BENCH_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#define FRAME_LEN	64
#define FRAMES_BATCH	64	/* frames a sendmmsg() */

/* A 64-byte IPv4/UDP frame from src (6 bytes) and saddr (4 bytes, in
 * network order) to 02:00:00:00:00:f0, 10.0.0.2. */
void frame_udp4(unsigned char *f, const unsigned char *src,
		const unsigned char *saddr);
/*
 * In a new network namespace of the caller's: the guest's end g0
 * (02:00:00:00:00:00) of the pair vh0/g0, vh0 and fa0 (of fa0/fa0p)
 * bridged by br0, all up.  bridge_nf false turns the bridge's calls of
 * the iptables hooks off (bpf-measure's figures); vnic-bench pkt keeps
 * the kernel's default, as its figures always had.  0 or -EIO.
 */
int frames_veth_ns(bool bridge_nf);
/*
 * Send count copies of frame f from g0 as fast as sendmmsg() goes (the
 * bounded sender), counting what arrives on fa0p: everything runs on the
 * sender's CPU (veth delivers through the backlog), so the rate is the
 * whole path's.  The caller is pinned to the highest CPU it may use, the
 * same for every run.  The sending time into *ns; the sender's CPU time
 * into *cpu_ns unless NULL (the path's own work, frames delivered in its
 * softirq included, without the time other tasks held the CPU); the
 * frames that arrived into *got; 0 or -errno.
 */
int frames_send(const unsigned char *f, unsigned int count, uint64_t *ns,
		uint64_t *cpu_ns, unsigned long long *got);

#endif /* VNIC_BENCH_FRAMES_H */
