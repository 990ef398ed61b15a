#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole suite: install what is missing, build everything with -Werror,
# check the docs (docutils, groff), fuzz each parser of outside bytes for a
# bounded time, run every selftest (each case in its own network namespace)
# under prove.  Run as root.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
make -s -j"$(nproc)" WERROR=1 all tests bench hdrcheck importcheck doccheck
# The ABI: exports, version script and headers agree; no change from the
# baseline abi/libvnic.abi (Documentation/abi.rst).
make -s abicheck
# Each fuzz target for 8 s (make fuzz's default is 30; CI keeps its whole
# run under 15 minutes), before the suite: prove's summary stays the last
# line.  The suite runs nproc test files at once (make check, CHECK_JOBS):
# one at a time, the whole run took 13 to 16.5 minutes here.
make -s -j"$(nproc)" WERROR=1 fuzz FUZZ_SECONDS=8
# The suite built with ASan + UBSan first (any report fails it), so that
# the last line stays the main suite's summary; a failure stops CI here.
make -s -j"$(nproc)" sanitize
make -s sanitize-check SAN_TESTS='$(SAN_CI)' SAN_JOBS="$(nproc)"
exec make -s check
