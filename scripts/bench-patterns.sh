#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# 9. The cost of pattern watches for writes: write throughput on one broker
# with 1,000 patterns registered against none, in interleaved runs of the
# same length (rounds of the four loads below, in rotating order, so that
# the machine's slower moments fall on all of them alike); medians. The
# 1,000 patterns are site/N/* (a literal prefix each, none matching the
# load's keys: the index spares the writes them). Shown beside, without a target: 1,000 patterns */N (no
# literal prefix: indexed by their literal suffix) and *xN? (neither: every
# write is matched against all of them). Part of `make bench`; run alone
# with `make bench-patterns`.
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
declare -a none with star neither
# check LINE: every answer right, and no notification (no pattern matches)
check() {
    if [ "$(field "$1" errors)" != 0 ] || [ "$(field "$1" missing)" != 0 ] || \
       [ "$(field "$1" watch_notified)" != 0 ]; then
        echo "9. pattern watches: a run went wrong: $1"
        exit 1
    fi
}
# Each round runs the four loads, starting one later than the round before.
kinds=(none site suffix neither)
for i in $(seq $(( 2 * REPS ))); do
    for j in 0 1 2 3; do
        case ${kinds[$(( (i + j) % 4 ))]} in
            none) l=$(load --label none); check "$l"; none+=("$(field "$l" ops_per_s)") ;;
            site) l=$(load --watch-patterns 1000 --label site1000); check "$l"; with+=("$(field "$l" ops_per_s)") ;;
            suffix) l=$(load --watch-patterns 1000 --watch-format '*/%d' --label suffix1000); check "$l"
                star+=("$(field "$l" ops_per_s)") ;;
            neither) l=$(load --watch-patterns 1000 --watch-format '*x%d?' --label neither1000); check "$l"
                neither+=("$(field "$l" ops_per_s)") ;;
        esac
    done
done
stop_broker patterns
N=$(median "${none[@]}"); P=$(median "${with[@]}"); S=$(median "${star[@]}"); X=$(median "${neither[@]}")
echo "9. pattern watches, 4x64 in flight, 100% SET, 16-byte keys, 64-byte values, $(( 2 * REPS )) rounds of ${SECS}s runs, medians:"
echo "   no patterns ${N} ops/s, 1000 patterns site/N/* ${P} ops/s: ratio $(ratio "$P" "$N") (target >= 0.90)"
echo "     runs: none ${none[*]} / 1000 patterns ${with[*]}"
echo "   1000 patterns */N (no literal prefix, indexed by suffix): ${S} ops/s: ratio $(ratio "$S" "$N") (runs: ${star[*]})"
echo "   1000 patterns *xN? (neither: each write tries them all): ${X} ops/s: ratio $(ratio "$X" "$N") (runs: ${neither[*]})"
echo "BENCH patterns none_ops=$N patterns_ops=$P ratio=$(ratio "$P" "$N") suffix_ops=$S suffix_ratio=$(ratio "$S" "$N") unindexed_ops=$X unindexed_ratio=$(ratio "$X" "$N")"
