// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A fuzz target without libFuzzer: each file named on the command line
 * goes through LLVMFuzzerTestOneInput once.  `make fuzz-regress` runs the
 * committed corpus this way; any compiler builds it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int main(int argc, char **argv)
{
	int i, ran = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf;
		long len;

		if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET)) {
			perror(argv[i]);
			return 1;
		}
		buf = malloc(len ? (size_t)len : 1);
		if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
			perror(argv[i]);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
		ran++;
	}
	printf("%s: %d inputs, no crash\n", argv[0], ran);
	return 0;
}
