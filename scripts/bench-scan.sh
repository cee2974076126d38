#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# SCAN on LMDB, then on a 3-member etcd cluster: a full listing of
# BENCH_KEYS keys (statestore scan '*', every key counted), in keys/s; and
# the p99 of another client (1 request in flight, GETs of those keys)
# while listings run back to back, as a ratio to its p99 with no listing,
# measured in the same run, alternately. BENCH_SCAN_BACKENDS chooses
# (default "lmdb etcd"). Part of make bench; alone: make bench-scan.
# Results in docs/BENCHMARKS.md.
set -u
B=build/plain
REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECONDS:-6}
KEYS=${BENCH_KEYS:-1000000}
WORK=$(mktemp -d /tmp/statestore-bench-scan.XXXXXX)
. "$(dirname "$0")/bench-lib.sh"

for BACKEND in ${BENCH_SCAN_BACKENDS:-lmdb etcd}; do
if [ "$BACKEND" = etcd ]; then
    start_etcd_cluster
    start_broker scan "$PWD/$B/statestore.so" "plugin_opt_backend etcd" "plugin_opt_etcd_endpoints $ENDPOINTS"
    WHERE="a 3-member etcd $ETCD_VERSION cluster"
else
    start_broker scan "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/scan"
    WHERE="LMDB"
fi
lg -p "$PORT_scan" -c 4 -w 64 -k "$KEYS" -l 16 -v 32 -n "$KEYS" --sequential --label fill > /dev/null
sleep 1.5 # a checkpoint: the keys are in the data file

# list_all: one full listing; prints "KEYS_LISTED MILLISECONDS", or fails
# when the tool failed or listed another number of keys than were written.
list_all() {
    local t0 n
    t0=$(date +%s%N)
    n=$($B/statestore -p "$PORT_scan" --timeout 60000 scan '*' | wc -l)
    local rc=${PIPESTATUS[0]}
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if [ "$rc" != 0 ] || [ "$n" != "$KEYS" ]; then
        echo "scan: listed $n keys of $KEYS (exit $rc)" >&2
        return 1
    fi
    echo "$n $ms"
}

# The other client: GETs of the written keys, each answer checked.
other() { lg -p "$PORT_scan" -c 1 -w 1 -s 0 -k "$KEYS" -l 16 -v 32 -d "$SECS" --label "$1"; }

rate=(); lms=(); ip=(); bp=(); rt=()
for i in $(seq "$REPS"); do
    read -r n ms < <(list_all) || exit 1
    rate+=("$(( n * 1000 / (ms > 0 ? ms : 1) ))"); lms+=("$ms")
    # Alternate the order, so that the machine's slower moments fall on
    # both sides alike.
    for side in $( [ $(( i % 2 )) = 1 ] && echo "idle busy" || echo "busy idle"); do
        if [ "$side" = idle ]; then
            idle=$(other idle)
            continue
        fi
        rm -f "$WORK/stop"
        # Listings back to back until told to stop (each one checked);
        # the last one is waited for.
        ( while [ ! -e "$WORK/stop" ]; do list_all > /dev/null || exit 1; done ) &
        LOOP=$!
        sleep 0.2
        busy=$(other busy)
        touch "$WORK/stop"
        wait "$LOOP" || exit 1
    done
    [ "$(field "$idle" errors)" = 0 ] && [ "$(field "$busy" errors)" = 0 ] || { echo "wrong answers: $idle / $busy"; exit 1; }
    ip+=("$(field "$idle" p99_us)"); bp+=("$(field "$busy" p99_us)")
    rt+=("$(ratio "$(field "$busy" p99_us)" "$(field "$idle" p99_us)")")
done
R=$(median "${rate[@]}"); IP=$(median "${ip[@]}"); BP=$(median "${bp[@]}"); RT=$(median "${rt[@]}")
echo "9. SCAN on $WHERE, $KEYS keys of 16 bytes (32-byte values), $REPS runs, medians:"
echo "   a full listing (statestore scan '*', 1000 keys looked at per page): ${R} keys/s (runs: ${rate[*]} keys/s; ${lms[*]} ms)"
echo "   another client, 1 GET in flight, ${SECS}s with listings back to back vs ${SECS}s without, alternating:"
echo "     p99 ${BP} us vs ${IP} us: ratio ${RT} (runs: busy ${bp[*]} / idle ${ip[*]} us; ratios ${rt[*]})"
echo "BENCH scan backend=$BACKEND keys=$KEYS keys_per_s=$R other_p99_idle_us=$IP other_p99_busy_us=$BP p99_ratio=$RT"
stop_broker scan
if [ "$BACKEND" = etcd ]; then
    # the cluster's members (the brokers are stopped already)
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    PIDS=()
fi
done
