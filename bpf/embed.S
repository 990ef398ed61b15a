/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The compiled programs (vnic.bpf.c), inside the library: nothing to
 * install or find at run time.  BPF_OBJ is its path in the build tree. */
	.section .rodata
	.balign 8
	.globl vnic_bpf_obj
	.hidden vnic_bpf_obj
vnic_bpf_obj:
	.incbin BPF_OBJ
	.globl vnic_bpf_obj_end
	.hidden vnic_bpf_obj_end
vnic_bpf_obj_end:
	.section .note.GNU-stack,"",@progbits
