#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Run each libFuzzer target for SECONDS from its committed seeds
# (fuzz/corpus/NAME, read only) plus what earlier runs found
# (DIR/corpus/NAME), then print one line per target: executions, rate,
# coverage (edges: libFuzzer's cov), features, corpus.  Fails on any crash,
# leak, timeout or sanitizer report; the reproducer is left in DIR/crash/.
#
#   scripts/fuzz.sh DIR SECONDS fuzz_NAME...      (make fuzz calls it)
set -u
dir=$1 secs=$2
shift 2
mkdir -p "$dir/crash"
summary="" failed=0
for t in "$@"; do
	name=${t#fuzz_}
	mkdir -p "$dir/corpus/$name"
	seeds=fuzz/corpus/$name
	[ -d "$seeds" ] || seeds=
	log="$dir/$t.log"
	# -close_fd_mask=3: the targets' own output (the policy parser's
	# messages) is dropped; libFuzzer's and the sanitizers' reports stay.
	"$dir/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 -close_fd_mask=3 \
		-artifact_prefix="$dir/crash/$t-" \
		"$dir/corpus/$name" $seeds >"$log" 2>&1
	rc=$?
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's|.* corp: \([0-9]*/[0-9a-zA-Z]*\).*|\1|p')
	line=$(printf '%-8s %10s execs %7s/s  cov %5s  ft %5s  corpus %s' \
		"$name" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}")
	if [ $rc -ne 0 ]; then
		failed=$((failed + 1))
		line="$line  FAILED (exit $rc, see $log)"
		grep -E 'ERROR: |SUMMARY: |Test unit written' "$log" | head -n 5 >&2
	fi
	echo "fuzz: $line"
	summary="$summary$line
"
done
printf '%s' "$summary" >"$dir/summary.txt"
[ $failed -eq 0 ] || { echo "fuzz: $failed target(s) failed" >&2; exit 1; }
