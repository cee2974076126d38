#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Benchmarks of the store on etcd (part of `make bench`; alone: `make
# bench-etcd`): a 3-member etcd cluster on this machine, one and two
# brokers on it, beside the LMDB store and beside etcd's own capacity for
# the same Txns (bench/etcd_txn: the plugin's gRPC client, the same batch
# sizes), all measured in this run, interleaved, medians of REPS runs.
# Results are described in docs/BENCHMARKS.md.
set -u
B=build/plain
REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECONDS:-6}
WORK=$(mktemp -d /tmp/statestore-bench-etcd.XXXXXX)
. "$(dirname "$0")/bench-lib.sh"

# ---- the cluster: 3 members, data under WORK (on whatever disk /tmp is) ----
start_etcd_cluster

start_broker lmdb "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/lmdb"
# Broker b joins for the runs of two brokers only: "one broker" means one
# on the cluster (another broker's watch would cost etcd work too).
etcd_broker() {
    start_broker "etcd_$1" "$PWD/$B/statestore.so" "plugin_opt_backend etcd" \
        "plugin_opt_etcd_endpoints $ENDPOINTS" "plugin_opt_node_id bench-$1" "sys_interval 1"
}
NODE_A=bench-a
etcd_broker a

# txns PORT [FIGURE]: the broker's etcd/txns figure, or another
# (published every second; absent: 0)
txns() {
    $B/statestore -p "$1" stats 2>/dev/null | awk -v f="${2:-etcd/txns}" '$1 == f {v = $2} END {print v + 0}'
}
# keys_per_txn OPS TXNS: the batch size the plugin reached, whole keys
keys_per_txn() { awk -v o="$1" -v t="$2" 'BEGIN {k = (t > 0 ? int(o / t + 0.5) : 1); print (k < 1 ? 1 : (k > 125 ? 125 : k))}'; }
raw() { $B/bench/etcd_txn "$ENDPOINTS" "$@" | grep '^ETCDTXN'; }

# Where the CPU goes during a run: the machine's busy and total time
# (/proc/stat, all cores) and the etcd members' and a broker's own.
ETCD_PIDS=("${PIDS[@]:0:3}")
machine_ticks() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print $2 + $3 + $4 + $7 + $8, t}' /proc/stat; }
etcd_ticks() { local s=0 p; for p in "${ETCD_PIDS[@]}"; do s=$(( s + $(cpu_ticks "$p") )); done; echo "$s"; }
# cpu_start / cpu_end BROKER_PID: sets CORES_BUSY, CORES_ETCD, CORES_BROKER
# (cores in use on average between the two) and ETCD_TICKS (etcd's CPU)
cpu_start() { read -r M0 T0 <<< "$(machine_ticks)"; E0=$(etcd_ticks); P0=$([ -n "$1" ] && cpu_ticks "$1" || echo 0); }
cpu_end() {
    local m t e p; read -r m t <<< "$(machine_ticks)"; e=$(etcd_ticks); p=$([ -n "$1" ] && cpu_ticks "$1" || echo 0)
    local wall; wall=$(awk -v t="$(( t - T0 ))" -v n="$(nproc)" 'BEGIN {print t / n}')
    CORES_BUSY=$(awk -v a="$(( m - M0 ))" -v w="$wall" 'BEGIN {printf "%.2f", a / w}')
    CORES_ETCD=$(awk -v a="$(( e - E0 ))" -v w="$wall" 'BEGIN {printf "%.2f", a / w}')
    CORES_BROKER=$(awk -v a="$(( p - P0 ))" -v w="$wall" 'BEGIN {printf "%.2f", a / w}')
    ETCD_TICKS=$(( e - E0 ))
}
# keys_sent ETCDTXN-LINE: the keys a raw run sent in all
keys_sent() { awk -v a="$(field "$1" keys_per_s)" -v s="$(field "$1" seconds)" 'BEGIN {print int(a * s)}'; }
# ms of etcd CPU per 1000 keys
per_k() { awk -v t="$1" -v n="$2" -v hz="$HZ" 'BEGIN {printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0)}'; }

# Every key written once first, as in 1: the brokers then hold them in
# their caches, and requests need no reads (the plugin's steady state).
lg -p "$PORT_lmdb" -c 4 -w 64 -k 100000 -n 100000 --sequential --label preload > /dev/null
lg -p "$PORT_etcd_a" -c 4 -w 64 -k 100000 -n 100000 --sequential --label preload > /dev/null
lg -p "$PORT_etcd_a" -c 4 -w 64 -k 100000 -n 100000 --sequential --prefix a --label preload > /dev/null

echo "8. the store on etcd: 3 members of etcd $ETCD_VERSION on this machine (data in /tmp), $REPS interleaved runs of ${SECS}s, medians"
echo "   (one broker on the cluster, then a second one joins for the runs of two brokers)"
# Throughput: 4 connections x 64 in flight, 50% SET / 50% GET, as in 1.
declare -a lt e1 r1 k1 e2 r2 pb pe pp pk rb re rk ov
for i in $(seq "$REPS"); do
    l=$(lg -p "$PORT_lmdb" -c 4 -w 64 -s 50 -k 100000 -d "$SECS" --label lmdb)
    t0=$(txns "$PORT_etcd_a")
    o0=$(txns "$PORT_etcd_a" etcd/txns_overlapped)
    cpu_start "$PID_etcd_a"
    e=$(lg -p "$PORT_etcd_a" -c 4 -w 64 -s 50 -k 100000 -d "$SECS" --label etcd1)
    cpu_end "$PID_etcd_a"
    pb+=("$CORES_BUSY"); pe+=("$CORES_ETCD"); pp+=("$CORES_BROKER"); pk+=("$(per_k "$ETCD_TICKS" "$(field "$e" ops)")")
    sleep 1.2
    t1=$(txns "$PORT_etcd_a")
    o1=$(txns "$PORT_etcd_a" etcd/txns_overlapped)
    ov+=("$(awk -v o="$(( o1 - o0 ))" -v t="$(( t1 - t0 ))" 'BEGIN {printf "%.0f", (t > 0 ? 100 * o / t : 0)}')")
    k=$(keys_per_txn "$(field "$e" ops)" "$(( t1 - t0 ))")
    cpu_start ""
    r=$(raw "$k" 50 1 "$SECS")
    cpu_end ""
    rb+=("$CORES_BUSY"); re+=("$CORES_ETCD"); rk+=("$(per_k "$ETCD_TICKS" "$(keys_sent "$r")")")
    lt+=("$(field "$l" ops_per_s)"); e1+=("$(field "$e" ops_per_s)"); k1+=("$k")
    r1+=("$(field "$r" keys_per_s)")
done
# Locks, leases and deletions (the load a cluster serves most): 2
# connections x 16 in flight, 20,000 keys of their own (prefix m, written
# once first), 200-byte values, one broker, MIX_SECS each (long enough for
# etcd's history of expired keys to grow); each mix against the plain 50/50 mix of the
# same run, and against raw Txns of the same operations as an etcd
# application would send them (bench/etcd_txn with DEL_PERCENT and PX_MS:
# no compares, puts on leases so that etcd expires the keys itself) at
# the batch size the plugin reached, 2 in flight as the plugin's at most.
MIX_SECS=${BENCH_MIX_SECONDS:-40}
MIX_REPS=${BENCH_MIX_REPS:-1}
MIXES="plain px churn both lease"
mix_args() {
    case $1 in
    plain) echo "-s 50" ;;
    px) echo "-s 50 --px 2000" ;;
    churn) echo "-s 40 --del-pct 20" ;;
    both) echo "-s 40 --del-pct 20 --px 2000" ;;
    lease) echo "-s 50 --lease --px 2000" ;;
    esac
}
# raw_mix_args MIX: SET_PERCENT, DEL_PERCENT and PX_MS of the raw Txns (the
# lease mix's lock half is SET NX PX, SET NEX PX and VDEL in turn: puts on
# leases and deletes, without their conditions, which etcd can only apply
# to a whole Txn)
raw_mix_args() {
    case $1 in
    plain) echo "50 0 0" ;;
    px) echo "50 0 2000" ;;
    churn) echo "40 20 0" ;;
    both) echo "40 20 2000" ;;
    lease) echo "33 17 2000" ;;
    esac
}
lg -p "$PORT_etcd_a" -c 4 -w 64 -k 20000 -v 200 -n 20000 --sequential --prefix m --label preload > /dev/null
lg -p "$PORT_lmdb" -c 4 -w 64 -k 20000 -v 200 -n 20000 --sequential --prefix m --label preload > /dev/null
# raw_mix KEYS_PER_TXN SET DEL PX [KEYS_PER_S]: raw Txns of a mix, 2 in
# flight, for MIX_SECS, at most KEYS_PER_S keys a second if given; sets r
# (the summary) and ETCD_TICKS (etcd's CPU meanwhile)
raw_mix() {
    cpu_start ""
    r=$(ETCD_TXN_KEYS_PER_S="${5:-0}" $B/bench/etcd_txn "$ENDPOINTS" "$1" "$2" 2 "$MIX_SECS" "$3" "$4" | grep '^ETCDTXN')
    cpu_end ""
}
# The plain mix with etcd's members on a core of their own (the last)
# and everything else (broker a, the load generator, the raw client)
# on the others: etcd has the same core under the plugin and under raw
# Txns, so what is left of the gap is not the cores the broker takes. Raw
# Txns three times: an application's at full speed and paced to the
# plugin's rate, and the plugin's own shape (a compare on every key, the
# marker, values as large as the plugin's records: 200 bytes and a
# 21-byte header for node id bench-a) paced to its rate.
# Before the mixes, whose expiring keys and tombstones etcd would still be
# sweeping. BENCH_PINNED=0 leaves it out.
PIN_SECS=${BENCH_PINNED_SECONDS:-20}
REC_BYTES=$(( 200 + 14 + ${#NODE_A} ))
declare -a pin_p=() pin_pk=() pin_r=() pin_rk=() pin_a=() pin_ak=() pin_s=() pin_sk=() pin_ec=() pin_o=() pin_ok=()
# pin_raw KEYS_VAR CPU_VAR KEYS_PER_S [DEL_PERCENT PX_MS]: raw Txns of k
# keys, half of them put, PIN_FLIGHTS in flight (default 2), on the cores
# other than etcd's for PIN_SECS (KEYS_PER_S 0: full speed; without
# DEL_PERCENT and PX_MS, the plugin's shape); appends keys/s and etcd's
# ms per 1000 keys to the two arrays
pin_raw() {
    local -n keys_out=$1 cpu_out=$2
    local rate=$3; shift 3
    cpu_start ""
    r=$(ETCD_TXN_KEYS_PER_S="$rate" taskset -c "$OTHER_CORES" \
        $B/bench/etcd_txn "$ENDPOINTS" "$k" 50 "${PIN_FLIGHTS:-2}" "$PIN_SECS" "$@" | grep '^ETCDTXN')
    cpu_end ""
    keys_out+=("$(field "$r" keys_per_s)"); cpu_out+=("$(per_k "$ETCD_TICKS" "$(keys_sent "$r")")")
}
if [ "${BENCH_PINNED:-1}" = 1 ] && [ "$(nproc)" -ge 2 ]; then
    ETCD_CORE=$(( $(nproc) - 1 )); OTHER_CORES=0-$(( $(nproc) - 2 ))
    for p in "${ETCD_PIDS[@]}"; do taskset -a -p -c "$ETCD_CORE" "$p" > /dev/null; done
    taskset -a -p -c "$OTHER_CORES" "$PID_etcd_a" > /dev/null
    for i in $(seq "${BENCH_PINNED_REPS:-3}"); do
        t0=$(txns "$PORT_etcd_a"); cpu_start ""
        e=$(taskset -c "$OTHER_CORES" $B/bench/loadgen -p "$PORT_etcd_a" -c 2 -w 16 -k 20000 -v 200 --prefix m -s 50 \
            -d "$PIN_SECS" --label pinned | grep '^LOADGEN')
        cpu_end ""
        pin_p+=("$(field "$e" ops_per_s)"); pin_pk+=("$(per_k "$ETCD_TICKS" "$(field "$e" ops)")")
        pin_ec+=("$CORES_ETCD")
        sleep 1.2
        k=$(keys_per_txn "$(field "$e" ops)" "$(( $(txns "$PORT_etcd_a") - t0 ))")
        rate=$(field "$e" ops_per_s)
        pin_raw pin_r pin_rk 0 0 0
        # one in flight: the plugin's own pipeline at this load, where
        # each connection's 16 requests make one batch and the batches
        # of the two connections take turns (etcd/txns_overlapped: none)
        PIN_FLIGHTS=1 pin_raw pin_o pin_ok 0 0 0
        pin_raw pin_a pin_ak "$rate" 0 0
        ETCD_TXN_VALUE_BYTES="$REC_BYTES" pin_raw pin_s pin_sk "$rate"
    done
    ALL_CORES=0-$(( $(nproc) - 1 ))
    for p in "${ETCD_PIDS[@]}" "$PID_etcd_a"; do taskset -a -p -c "$ALL_CORES" "$p" > /dev/null; done
fi

# Goal 3 without pinning: etcd's CPU per key under the plugin against
# raw Txns of an application paced to its rate, the broker, the load
# generator and etcd sharing every core as on one gateway; rounds of
# PIN_SECS, each round's pair taken together (BENCH_PACED_REPS=0 leaves
# it out).
declare -a unp_p=() unp_pk=() unp_ak=() unp_pairs=()
for i in $(seq "${BENCH_PACED_REPS:-3}"); do
    t0=$(txns "$PORT_etcd_a"); cpu_start ""
    e=$(lg -p "$PORT_etcd_a" -c 2 -w 16 -k 20000 -v 200 --prefix m -s 50 -d "$PIN_SECS" --label paced)
    cpu_end ""
    unp_p+=("$(field "$e" ops_per_s)"); unp_pk+=("$(per_k "$ETCD_TICKS" "$(field "$e" ops)")")
    sleep 1.2
    k=$(keys_per_txn "$(field "$e" ops)" "$(( $(txns "$PORT_etcd_a") - t0 ))")
    cpu_start ""
    r=$(ETCD_TXN_KEYS_PER_S="$(field "$e" ops_per_s)" $B/bench/etcd_txn "$ENDPOINTS" "$k" 50 2 "$PIN_SECS" 0 0 | grep '^ETCDTXN')
    cpu_end ""
    unp_ak+=("$(per_k "$ETCD_TICKS" "$(keys_sent "$r")")")
    unp_pairs+=("$(ratio "${unp_pk[-1]}" "${unp_ak[-1]}")")
done

declare -A mix_ops mix_p99 mix_raw mix_cpu mix_raw_cpu mix_k mix_lmdb mix_two mix_two_p99
declare -a paced_keys paced_cpu
for i in $(seq "$MIX_REPS"); do
    for m in $MIXES; do
        t0=$(txns "$PORT_etcd_a")
        cpu_start "$PID_etcd_a"
        # shellcheck disable=SC2046
        e=$(lg -p "$PORT_etcd_a" -c 2 -w 16 -k 20000 -v 200 --prefix m $(mix_args "$m") -d "$MIX_SECS" --label "mix-$m")
        cpu_end "$PID_etcd_a"
        mix_ops[$m]="${mix_ops[$m]:-} $(field "$e" ops_per_s)"
        mix_p99[$m]="${mix_p99[$m]:-} $(field "$e" p99_us)"
        mix_cpu[$m]="${mix_cpu[$m]:-} $(per_k "$ETCD_TICKS" "$(field "$e" ops)")"
        sleep 1.2
        k=$(keys_per_txn "$(field "$e" ops)" "$(( $(txns "$PORT_etcd_a") - t0 ))")
        mix_k[$m]="${mix_k[$m]:-} $k"
        read -r rs rd rp <<< "$(raw_mix_args "$m")"
        raw_mix "$k" "$rs" "$rd" "$rp"
        mix_raw[$m]="${mix_raw[$m]:-} $(field "$r" keys_per_s)"
        mix_raw_cpu[$m]="${mix_raw_cpu[$m]:-} $(per_k "$ETCD_TICKS" "$(keys_sent "$r")")"
        if [ "$m" = plain ]; then
            # The same raw Txns paced to the plugin's rate: etcd's cost
            # per key falls as its rate rises (its fixed costs per Raft
            # round and commit are shared by more keys), and raw Txns at
            # full speed run at about twice the plugin's rate here.
            raw_mix "$k" "$rs" "$rd" "$rp" "$(field "$e" ops_per_s)"
            paced_keys+=("$(field "$r" keys_per_s)")
            paced_cpu+=("$(per_k "$ETCD_TICKS" "$(keys_sent "$r")")")
        fi
        # The same mix on the LMDB broker (its own keys, written once first)
        # shellcheck disable=SC2046
        l=$(lg -p "$PORT_lmdb" -c 2 -w 16 -k 20000 -v 200 --prefix m $(mix_args "$m") -d "$MIX_SECS" --label "mix-lmdb-$m")
        mix_lmdb[$m]="${mix_lmdb[$m]:-} $(field "$l" ops_per_s)"
    done
done
# Latency, one broker: 1 in flight, alternating which goes first.
declare -a ll el rl e2a e2b
for i in $(seq "$REPS"); do
    if [ $(( i % 2 )) = 1 ]; then
        e=$(lg -p "$PORT_etcd_a" -c 1 -w 1 -s 50 -k 100000 -d "$SECS" --label etcd1x1)
        r=$(raw 1 50 1 "$SECS")
    else
        r=$(raw 1 50 1 "$SECS")
        e=$(lg -p "$PORT_etcd_a" -c 1 -w 1 -s 50 -k 100000 -d "$SECS" --label etcd1x1)
    fi
    l=$(lg -p "$PORT_lmdb" -c 1 -w 1 -s 50 -k 100000 -d "$SECS" --label lmdb1x1)
    ll+=("$(field "$l" p50_us)"); el+=("$(field "$e" p50_us)"); rl+=("$(field "$r" p50_us)")
done
# Two brokers at once, each with the same load, on keys of their own
# (broker b's keys written once first, as a's were).
etcd_broker b
lg -p "$PORT_etcd_b" -c 4 -w 64 -k 100000 -n 100000 --sequential --prefix b --label preload > /dev/null
# both_brokers LABEL LOADGEN-ARGS...: the same load on broker a and on
# broker b at once, each on keys of its own (prefix PREFIX_ROOT followed
# by a or b); sets EA and EB (summaries)
both_brokers() {
    local label=$1; shift
    $B/bench/loadgen -p "$PORT_etcd_b" "$@" --prefix "${PREFIX_ROOT:-}b" --label "${label}b" | grep '^LOADGEN' > "$WORK/b.out" &
    local lb=$!
    EA=$(lg -p "$PORT_etcd_a" "$@" --prefix "${PREFIX_ROOT:-}a" --label "${label}a")
    wait $lb
    EB=$(cat "$WORK/b.out")
}
for i in $(seq "$REPS"); do
    both_brokers etcd2 -c 4 -w 64 -s 50 -k 100000 -d "$SECS"
    rr=$(raw "$(median "${k1[@]}")" 50 2 "$SECS")
    e2+=("$(awk -v a="$(field "$EA" ops_per_s)" -v b="$(field "$EB" ops_per_s)" 'BEGIN {print a + b}')")
    r2+=("$(field "$rr" keys_per_s)")
done
# The mixes on two brokers at once, each with the load of one broker
# above on 20,000 keys of its own (written once first, through it):
# what a second broker adds to a cluster serving locks and leases.
lg -p "$PORT_etcd_a" -c 4 -w 64 -k 20000 -v 200 -n 20000 --sequential --prefix ma --label preload > /dev/null
lg -p "$PORT_etcd_b" -c 4 -w 64 -k 20000 -v 200 -n 20000 --sequential --prefix mb --label preload > /dev/null
for i in $(seq "$MIX_REPS"); do
    for m in $MIXES; do
        # shellcheck disable=SC2046
        PREFIX_ROOT=m both_brokers "mix2-$m-" -c 2 -w 16 -k 20000 -v 200 $(mix_args "$m") -d "$MIX_SECS"
        mix_two[$m]="${mix_two[$m]:-} $(awk -v a="$(field "$EA" ops_per_s)" -v b="$(field "$EB" ops_per_s)" 'BEGIN {print a + b}')"
        q=$(field "$EA" p99_us); qb=$(field "$EB" p99_us); [ "${qb:-0}" -gt "${q:-0}" ] && q=$qb
        mix_two_p99[$m]="${mix_two_p99[$m]:-} $q"
    done
done
# Latency, two brokers: one client on each at once.
for i in $(seq "$REPS"); do
    both_brokers etcd2x1 -c 1 -w 1 -s 50 -k 100000 -d "$SECS"
    e2a+=("$(field "$EA" p50_us)"); e2b+=("$(field "$EB" p50_us)")
done
LT=$(median "${lt[@]}"); E1=$(median "${e1[@]}"); R1=$(median "${r1[@]}"); K1=$(median "${k1[@]}")
E2=$(median "${e2[@]}"); R2=$(median "${r2[@]}")
echo "   throughput 4x64 in flight, 50% SET / 50% GET:"
echo "     LMDB ${LT} ops/s; one broker on etcd ${E1} ops/s ($(ratio "$E1" "$LT") of LMDB), ${K1} requests per Txn, $(median "${ov[@]}")% of Txns sent while another was in flight"
echo "     raw etcd Txns of ${K1} keys (half of them put), 1 in flight, through the same client: ${R1} keys/s:"
echo "       one broker / raw $(ratio "$E1" "$R1") (target >= 0.8)"
echo "     two brokers at once ${E2} ops/s; raw, 2 in flight ${R2} keys/s: two brokers / raw $(ratio "$E2" "$R2")"
echo "     runs: lmdb ${lt[*]} / etcd ${e1[*]} / raw ${r1[*]} / two brokers ${e2[*]} / raw 2 ${r2[*]}"
PB=$(median "${pb[@]}"); PE=$(median "${pe[@]}"); PP=$(median "${pp[@]}"); PK=$(median "${pk[@]}")
RB=$(median "${rb[@]}"); RE=$(median "${re[@]}"); RK=$(median "${rk[@]}")
echo "   where the time goes ($(nproc) cores; cores in use on average during the runs):"
echo "     one broker: ${PB} busy: etcd members ${PE}, the broker ${PP}, the rest (load generator, system) $(awk -v b="$PB" -v e="$PE" -v p="$PP" 'BEGIN {printf "%.2f", b - e - p}')"
echo "     raw Txns:   ${RB} busy: etcd members ${RE}, the rest (the client) $(awk -v b="$RB" -v e="$RE" 'BEGIN {printf "%.2f", b - e}')"
echo "     etcd's CPU per 1000 keys: ${PK} ms under the plugin, ${RK} ms under raw Txns"
echo "BENCH etcd_cpu plugin_busy=$PB plugin_etcd=$PE plugin_broker=$PP plugin_etcd_ms_per_1k=$PK raw_busy=$RB raw_etcd=$RE raw_etcd_ms_per_1k=$RK"
echo "BENCH etcd_throughput lmdb_ops=$LT etcd_ops=$E1 etcd_vs_lmdb=$(ratio "$E1" "$LT") keys_per_txn=$K1 raw_keys=$R1 etcd_vs_raw=$(ratio "$E1" "$R1") two_brokers_ops=$E2 raw2_keys=$R2 two_vs_raw=$(ratio "$E2" "$R2")"


# shellcheck disable=SC2086
MP=$(median ${mix_ops[plain]}); MQ=$(median ${mix_p99[plain]})
echo "   locks, leases and deletions, 2x16 in flight per broker, 20,000 keys, 200-byte values, ${MIX_REPS} x ${MIX_SECS}s (LMDB; one broker on etcd vs its plain mix of the same run; two brokers at once, each with that load on keys of its own; raw etcd Txns of the same operations):"
# shellcheck disable=SC2086
LP=$(median ${mix_lmdb[plain]})
for m in $MIXES; do
    # shellcheck disable=SC2086
    o=$(median ${mix_ops[$m]}); q=$(median ${mix_p99[$m]}); rw=$(median ${mix_raw[$m]})
    # shellcheck disable=SC2086
    c=$(median ${mix_cpu[$m]}); rc=$(median ${mix_raw_cpu[$m]}); k=$(median ${mix_k[$m]})
    # shellcheck disable=SC2086
    lm=$(median ${mix_lmdb[$m]}); tw=$(median ${mix_two[$m]}); tq=$(median ${mix_two_p99[$m]})
    printf '     %-6s %-30s LMDB %6s ops/s (%s of its plain); etcd %6s ops/s (%s), p99 %6s us (%s); two brokers %6s ops/s (%s of one), p99 %6s us; raw %6s keys/s in Txns of %s: plugin/raw %s; etcd CPU per 1000 keys %s ms, raw %s ms (%s)\n' \
        "$m" "($(mix_args "$m"))" "$lm" "$(ratio "$lm" "$LP")" "$o" "$(ratio "$o" "$MP")" "$q" "$(ratio "$q" "$MQ")" \
        "$tw" "$(ratio "$tw" "$o")" "$tq" "$rw" "$k" "$(ratio "$o" "$rw")" "$c" "$rc" "$(ratio "$c" "$rc")"
    echo "BENCH etcd_mix mix=$m lmdb_ops=$lm ops=$o p99_us=$q vs_plain=$(ratio "$o" "$MP") p99_vs_plain=$(ratio "$q" "$MQ") two_brokers_ops=$tw two_brokers_p99_us=$tq raw_keys=$rw keys_per_txn=$k vs_raw=$(ratio "$o" "$rw") etcd_ms_per_1k=$c raw_etcd_ms_per_1k=$rc cpu_vs_raw=$(ratio "$c" "$rc")"
done
# shellcheck disable=SC2086
MC=$(median ${mix_cpu[plain]}); PCK=$(median "${paced_keys[@]}"); PCC=$(median "${paced_cpu[@]}")
echo "     raw Txns of the plain mix paced to the plugin's rate: ${PCK} keys/s, etcd CPU per 1000 keys ${PCC} ms: plugin / raw at the same rate $(ratio "$MC" "$PCC") (target <= 1.15)"
echo "BENCH etcd_mix_paced mix=plain raw_keys=$PCK raw_etcd_ms_per_1k=$PCC etcd_ms_per_1k=$MC cpu_vs_raw=$(ratio "$MC" "$PCC")"

if [ "${#pin_p[@]}" -gt 0 ]; then
    PP1=$(median "${pin_p[@]}"); PR1=$(median "${pin_r[@]}"); PS1=$(median "${pin_s[@]}")
    PPK=$(median "${pin_pk[@]}"); PRK=$(median "${pin_rk[@]}"); PSK=$(median "${pin_sk[@]}")
    PA1=$(median "${pin_a[@]}"); PAK=$(median "${pin_ak[@]}")
    # the ratio of each round's pair, and their median: steadier than
    # the ratio of two medians when etcd's cost moves between rounds
    PAIRS=(); for j in "${!pin_pk[@]}"; do PAIRS+=("$(ratio "${pin_pk[$j]}" "${pin_ak[$j]}")"); done
    echo "   the plain mix with etcd on core ${ETCD_CORE} alone, the rest on ${OTHER_CORES} (${#pin_p[@]} rounds of ${PIN_SECS}s, medians):"
    echo "     plugin ${PP1} ops/s (etcd on $(median "${pin_ec[@]}") of its core), etcd CPU per 1000 keys ${PPK} ms"
    echo "     raw Txns at full speed ${PR1} keys/s, ${PRK} ms per 1000 keys: plugin / raw $(ratio "$PP1" "$PR1")"
    OPAIRS=(); for j in "${!pin_p[@]}"; do OPAIRS+=("$(ratio "${pin_p[$j]}" "${pin_o[$j]}")"); done
    echo "     raw Txns at full speed, 1 in flight $(median "${pin_o[@]}") keys/s, $(median "${pin_ok[@]}") ms per 1000 keys: plugin / raw $(median "${OPAIRS[@]}") (rounds ${OPAIRS[*]})"
    echo "     raw Txns paced to its rate ${PA1} keys/s, ${PAK} ms per 1000 keys: plugin / raw at the same rate $(median "${PAIRS[@]}") (rounds ${PAIRS[*]}; target <= 1.15)"
    echo "     raw Txns of the plugin's shape paced to its rate ${PS1} keys/s, ${PSK} ms per 1000 keys: plugin / shaped at the same rate $(ratio "$PPK" "$PSK")"
    echo "     runs: plugin ${pin_p[*]} (${pin_pk[*]} ms) / raw ${pin_r[*]} (${pin_rk[*]} ms) / raw, paced ${pin_a[*]} (${pin_ak[*]} ms) / shaped, paced ${pin_s[*]} (${pin_sk[*]} ms)"
    echo "BENCH etcd_pinned plugin_ops=$PP1 raw_keys=$PR1 vs_raw=$(ratio "$PP1" "$PR1") raw1_keys=$(median "${pin_o[@]}") vs_raw1=$(median "${OPAIRS[@]}") etcd_ms_per_1k=$PPK raw_etcd_ms_per_1k=$PRK paced_etcd_ms_per_1k=$PAK cpu_vs_paced=$(median "${PAIRS[@]}") shaped_paced_etcd_ms_per_1k=$PSK cpu_vs_shaped_paced=$(ratio "$PPK" "$PSK")"
fi

if [ "${#unp_p[@]}" -gt 0 ]; then
    echo "   the plain mix unpinned (etcd, the broker and the load generator on every core), ${#unp_p[@]} rounds of ${PIN_SECS}s:"
    echo "     plugin $(median "${unp_p[@]}") ops/s, etcd CPU per 1000 keys $(median "${unp_pk[@]}") ms; raw Txns paced to its rate $(median "${unp_ak[@]}") ms:"
    echo "     plugin / raw at the same rate $(median "${unp_pairs[@]}") (rounds ${unp_pairs[*]}; target <= 1.15)"
    echo "BENCH etcd_unpinned_paced plugin_ops=$(median "${unp_p[@]}") etcd_ms_per_1k=$(median "${unp_pk[@]}") raw_etcd_ms_per_1k=$(median "${unp_ak[@]}") cpu_vs_paced=$(median "${unp_pairs[@]}")"
fi

LL=$(median "${ll[@]}"); EL=$(median "${el[@]}"); RL=$(median "${rl[@]}")
E2A=$(median "${e2a[@]}"); E2B=$(median "${e2b[@]}")
# (medians of an even count of runs end in .5: awk, not shell arithmetic)
ADDED=$(awk -v e="$EL" -v r="$RL" 'BEGIN {printf "%.0f", e - r}')
echo "   latency p50, 1 in flight, 50% SET / 50% GET: LMDB ${LL} us, etcd ${EL} us, raw etcd Txn ${RL} us:"
echo "     the plugin adds $ADDED us to raw etcd (target <= 1000)"
echo "     two brokers at once, one client each: p50 ${E2A} us (broker a), ${E2B} us (broker b)"
echo "     runs: lmdb ${ll[*]} / etcd ${el[*]} / raw ${rl[*]} / two brokers ${e2a[*]} and ${e2b[*]}"
echo "BENCH etcd_latency lmdb_p50_us=$LL etcd_p50_us=$EL raw_p50_us=$RL added_us=$ADDED two_brokers_p50_us=$E2A,$E2B"

# etcd's own check of the same cluster, idle brokers beside it: a fixed
# load (150 writes/s for 60 s, the "s" load) that a healthy cluster must
# hold, not a capacity; BENCH_CHECK_PERF=0 leaves it out.
if [ "${BENCH_CHECK_PERF:-1}" = 1 ]; then
    echo "   etcdctl check perf --load=s on the same cluster (60 s at 150 writes/s, with its own client):"
    ETCDCTL_API=3 "$ETCD_BIN/etcdctl" --endpoints "$ENDPOINTS" check perf --load=s 2>&1 | tr '\r' '\n' |
        grep -E '^(PASS|FAIL)' | sed 's/^/     /'
fi
