#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# 9. The cost of pattern watches for writes: write throughput on one broker
# with 1,000 patterns registered against none, in interleaved runs of the
# same length (the order alternates, so that the machine's slower moments
# fall on both sides alike); medians. The 1,000 patterns are site/N/* (a
# literal prefix each, none matching the load's keys: the index spares the
# writes them); the same with */N (no literal prefix: every write is
# matched against all of them) is shown beside, without a target. Part of
# `make bench`; run alone with `make bench-patterns`.
set -u
B=build/plain
REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECONDS:-6}
WORK=$(mktemp -d /tmp/statestore-bench-patterns.XXXXXX)
. "$(dirname "$0")/bench-lib.sh"

start_broker patterns "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/store" \
    "plugin_opt_max_pattern_watches_per_client 1000"
lg -p "$PORT_patterns" -c 4 -w 64 -k 100000 -n 100000 --sequential --label preload > /dev/null
load() { lg -p "$PORT_patterns" -c 4 -w 64 -s 100 -k 100000 -d "$SECS" "$@"; }
declare -a none with star
for i in $(seq $(( 2 * REPS ))); do
    if [ $(( i % 2 )) = 1 ]; then
        n=$(load --label none); w=$(load --watch-patterns 1000 --label patterns1000)
    else
        w=$(load --watch-patterns 1000 --label patterns1000); n=$(load --label none)
    fi
    for line in "$n" "$w"; do
        if [ "$(field "$line" errors)" != 0 ] || [ "$(field "$line" missing)" != 0 ] || \
           [ "$(field "$line" watch_notified)" != 0 ]; then
            echo "9. pattern watches: a run went wrong: $line"
            exit 1
        fi
    done
    none+=("$(field "$n" ops_per_s)"); with+=("$(field "$w" ops_per_s)")
done
for i in $(seq "$REPS"); do
    s=$(load --watch-patterns 1000 --watch-format '*/%d' --label star1000)
    star+=("$(field "$s" ops_per_s)")
done
stop_broker patterns
N=$(median "${none[@]}"); P=$(median "${with[@]}"); S=$(median "${star[@]}")
echo "9. pattern watches, 4x64 in flight, 100% SET, 16-byte keys, 64-byte values, $(( 2 * REPS )) interleaved pairs of ${SECS}s, medians:"
echo "   no patterns ${N} ops/s, 1000 patterns site/N/* ${P} ops/s: ratio $(ratio "$P" "$N") (target >= 0.90)"
echo "     runs: none ${none[*]} / 1000 patterns ${with[*]}"
echo "   1000 patterns */N without a literal prefix (each write tries them all): ${S} ops/s: ratio $(ratio "$S" "$N") (runs: ${star[*]})"
echo "BENCH patterns none_ops=$N patterns_ops=$P ratio=$(ratio "$P" "$N") prefixless_ops=$S prefixless_ratio=$(ratio "$S" "$N")"
