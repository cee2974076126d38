#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Benchmarks of the state store, each measured against a baseline in the
# same run (the machine is shared and noisy: runs are interleaved and
# repeated, and medians are reported). Bounded to about 10 minutes.
# Run through `make bench`; results are described in docs/BENCHMARKS.md.
set -u
B=build/plain
REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECONDS:-6}
KEYS_1M=${BENCH_KEYS:-1000000}
KEYS_10M=${BENCH_KEYS_10M:-10000000} # 0 skips the restart with 10M keys
STORM_KEYS=${BENCH_STORM_KEYS:-100000}
WORK=$(mktemp -d /tmp/statestore-bench.XXXXXX)
. "$(dirname "$0")/bench-lib.sh"

echo "statestore benchmarks: $(nproc) cores, $(uname -r), mosquitto $(mosquitto -h 2>/dev/null | head -1 | awk '{print $3}')"
echo

# ---- 1. the floor: state store against the echo plugin ------------------
start_broker echo "$PWD/$B/bench/echo_plugin.so"
start_broker store "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/store"
start_broker always "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/always" "plugin_opt_fsync always"
lg -p "$PORT_store" -c 4 -w 64 -k 100000 -n 100000 --sequential --label preload > /dev/null
lg -p "$PORT_always" -c 4 -w 64 -k 100000 -n 100000 --sequential --label preload > /dev/null
declare -a et st at el sl ec sc
for i in $(seq "$REPS"); do
    lg_cpu e "$PID_echo" -p "$PORT_echo" -c 4 -w 64 -s 50 -k 100000 -d "$SECS" --echo --label echo
    ec+=("$CPU_US")
    lg_cpu s "$PID_store" -p "$PORT_store" -c 4 -w 64 -s 50 -k 100000 -d "$SECS" --label store
    sc+=("$CPU_US")
    a=$(lg -p "$PORT_always" -c 4 -w 64 -s 50 -k 100000 -d "$SECS" --label always)
    et+=("$(field "$e" ops_per_s)"); st+=("$(field "$s" ops_per_s)"); at+=("$(field "$a" ops_per_s)")
done
# Latency: twice as many pairs of half the length, in alternating order,
# so that the machine's slower moments fall on both sides alike.
LSECS=$(( SECS > 1 ? SECS / 2 : 1 ))
for i in $(seq $(( 2 * REPS ))); do
    if [ $(( i % 2 )) = 1 ]; then
        e=$(lg -p "$PORT_echo" -c 1 -w 1 -s 50 -k 100000 -d "$LSECS" --echo --label echo1)
        s=$(lg -p "$PORT_store" -c 1 -w 1 -s 50 -k 100000 -d "$LSECS" --label store1)
    else
        s=$(lg -p "$PORT_store" -c 1 -w 1 -s 50 -k 100000 -d "$LSECS" --label store1)
        e=$(lg -p "$PORT_echo" -c 1 -w 1 -s 50 -k 100000 -d "$LSECS" --echo --label echo1)
    fi
    el+=("$(field "$e" p50_us)"); sl+=("$(field "$s" p50_us)")
done
ET=$(median "${et[@]}"); ST=$(median "${st[@]}"); AT=$(median "${at[@]}")
EL=$(median "${el[@]}"); SL=$(median "${sl[@]}")
EC=$(median "${ec[@]}"); SC=$(median "${sc[@]}")
echo "1. floor (echo plugin = the broker alone), $REPS interleaved runs of ${SECS}s, medians:"
echo "   throughput 4x64 in flight, 50% SET / 50% GET, 16-byte keys, 64-byte values, 100k keys:"
echo "     echo ${ET} ops/s, state store ${ST} ops/s: ratio $(ratio "$ST" "$ET") (target >= 0.90)"
echo "     runs: echo ${et[*]} / store ${st[*]}"
echo "     the same with fsync always (group commit): ${AT} ops/s: ratio $(ratio "$AT" "$ET") (runs: ${at[*]})"
echo "     broker CPU per request in the same runs: echo ${EC} us, state store ${SC} us: echo/store $(ratio "$EC" "$SC")"
echo "     runs: echo ${ec[*]} / store ${sc[*]}"
echo "   latency p50, 1 in flight ($(( 2 * REPS )) alternating pairs of ${LSECS}s): echo ${EL} us, state store ${SL} us: ratio $(ratio "$SL" "$EL") (target <= 1.15)"
echo "     runs: echo ${el[*]} / store ${sl[*]}"
echo "BENCH floor echo_ops=$ET store_ops=$ST ratio=$(ratio "$ST" "$ET") always_ops=$AT always_ratio=$(ratio "$AT" "$ET") echo_cpu_us=$EC store_cpu_us=$SC cpu_ratio=$(ratio "$EC" "$SC") echo_p50_us=$EL store_p50_us=$SL latency_ratio=$(ratio "$SL" "$EL")"
stop_broker echo
echo

# ---- 6. durability: fsync always against periodic ----------------------
declare -a pa aa
for i in $(seq "$REPS"); do
    p=$(lg -p "$PORT_store" -c 4 -w 64 -s 100 -k 100000 -d "$SECS" --label periodic)
    a=$(lg -p "$PORT_always" -c 4 -w 64 -s 100 -k 100000 -d "$SECS" --label always)
    pa+=("$(field "$p" ops_per_s)"); aa+=("$(field "$a" ops_per_s)")
done
PA=$(median "${pa[@]}"); AA=$(median "${aa[@]}")
echo "6. durability, 4x64 in flight, 100% SET: periodic ${PA} ops/s, always ${AA} ops/s: ratio $(ratio "$AA" "$PA") (target >= 0.5)"
echo "   runs: periodic ${pa[*]} / always ${aa[*]}"
echo "BENCH durability periodic_ops=$PA always_ops=$AA ratio=$(ratio "$AA" "$PA")"
stop_broker always
stop_broker store
echo

# ---- 3. the engine alone -----------------------------------------------
mkdir -p "$WORK/engine"
$B/bench/engine_bench "$WORK/engine" "$KEYS_1M" 256 | sed 's/^/   /' | sed '1s/^   /3. /'
rm -rf "$WORK/engine"
echo

# ---- 4. memory and disk per key, 7. restart ------------------------------
start_broker big "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/big"
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
R0=$(rss "$PID_big")
lg -p "$PORT_big" -c 4 -w 64 -k "$KEYS_1M" -l 16 -v 32 -n "$KEYS_1M" --sequential --label load1m > /dev/null
sleep 1.5 # a checkpoint: the data are in the file
# Read 0.3M random keys (every page of ~60 keys gets read), so that the RSS counts the data file
# a store in use has mapped, not only what the writes left in the heap.
lg -p "$PORT_big" -c 4 -w 64 -k "$KEYS_1M" -l 16 -v 32 -n $((KEYS_1M * 3 / 10)) -s 0 --label read1m > /dev/null
R1=$(rss "$PID_big")
APPARENT=$(stat -c %s "$WORK/big/data.mdb")
ALLOC=$(( $(stat -c %b "$WORK/big/data.mdb") * $(stat -c %B "$WORK/big/data.mdb") ))
PAYLOAD=$((KEYS_1M * 48))
echo "4. $KEYS_1M keys of 16 bytes with 32-byte values (${PAYLOAD} bytes of keys and values):"
echo "   data file $APPARENT bytes: $(( (APPARENT - PAYLOAD) / KEYS_1M )) bytes of overhead per key (target <= 100)"
echo "   broker RSS $R0 kB before, $R1 kB after: $(( (R1 - R0) * 1024 / KEYS_1M )) bytes per key in all, $(( ((R1 - R0) * 1024 - PAYLOAD) / KEYS_1M )) beyond the keys and values"
echo "BENCH perkey keys=$KEYS_1M file_bytes=$APPARENT file_overhead_per_key=$(( (APPARENT - PAYLOAD) / KEYS_1M )) rss_before_kb=$R0 rss_after_kb=$R1 rss_overhead_per_key=$(( ((R1 - R0) * 1024 - PAYLOAD) / KEYS_1M ))"
stop_broker big
# restart_time NAME DIR [config lines]: ms from broker start to the first
# answer (the CLI's own connection included), one figure per repetition
restart_time() {
    local name=$1 dir=$2; shift 2
    local -a t=()
    for i in $(seq "$REPS"); do
        local start; start=$(date +%s%N)
        start_broker "$name" "$PWD/$B/statestore.so" "plugin_opt_data_dir $dir" "$@"
        local port_var=PORT_$name
        until $B/statestore -p "${!port_var}" --timeout 1000 get k000000000000001 > /dev/null 2>&1; do :; done
        t+=("$(( ($(date +%s%N) - start) / 1000000 ))")
        stop_broker "$name"
    done
    echo "${t[*]}"
}
r1=$(restart_time big "$WORK/big")
echo "7. restart with $KEYS_1M keys: start to first answer $r1 ms, median $(median $r1) ms (target <= 100; includes starting the process and a CLI connection)"
echo "BENCH restart keys=$KEYS_1M first_answer_ms=$(median $r1)"
rm -rf "$WORK/big"
if [ "$KEYS_10M" -gt 0 ]; then
    # Filled through the engine directly (through MQTT it would take minutes).
    $B/bench/engine_bench --fill "$WORK/huge" "$KEYS_10M" | sed 's/^/   /'
    HUGE_MB=$(( $(stat -c %s "$WORK/huge/data.mdb") / 1048576 ))
    r10=$(restart_time huge "$WORK/huge" "plugin_opt_max_store_bytes $((KEYS_10M * 128))")
    m10=$(median $r10)
    echo "7. restart with $KEYS_10M keys (data file $HUGE_MB MiB): start to first answer $r10 ms, median $m10 ms (target <= 100)"
    echo "BENCH restart keys=$KEYS_10M first_answer_ms=$m10 file_mib=$HUGE_MB"
    rm -rf "$WORK/huge"
fi
echo

# ---- 5. expiry storm -----------------------------------------------------
start_broker storm "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/storm" \
    "plugin_opt_max_registrations_per_client 200000" "max_queued_messages 0"
$B/bench/expiry_storm "$PORT_storm" "$STORM_KEYS" > "$WORK/storm.out" &
STORM=$!
# Light load through the storm (which starts 30 s after the tool): 1
# request in flight, from 20 s to 45 s.
sleep 20
lg -p "$PORT_storm" -c 1 -w 1 -s 50 -k 10000 -d 25 --prefix load --label storm-load > "$WORK/load.out"
wait $STORM
S=$(grep '^STORM' "$WORK/storm.out"); L=$(cat "$WORK/load.out")
echo "5. expiry storm: $(field "$S" keys) observed keys with deadlines in one second;"
echo "   last DELETE $(field "$S" last_delete_after_deadline_ms) ms after the last deadline (target <= 1000), $(field "$S" deleted) DELETEs"
echo "   load during it (1 in flight, 25 s around it): p99 $(field "$L" p99_us) us (target <= 5000), max $(field "$L" max_us) us, errors $(field "$L" errors)"
echo "BENCH storm keys=$(field "$S" keys) last_delete_ms=$(field "$S" last_delete_after_deadline_ms) load_p99_us=$(field "$L" p99_us) load_max_us=$(field "$L" max_us)"
stop_broker storm
