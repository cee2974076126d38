#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Compare the plugin of a base revision with the working tree's, in one
# run: the 4x64 load of make bench's floor (50% SET / 50% GET, 100k keys)
# against each, interleaved and in alternating order, with the echo plugin
# beside them for reference. Prints the medians and new/base ratios of the
# throughput and of the broker's CPU time per request. For changes that
# should not cost speed (a refactor): `make bench-compare BASE=<rev>`.
# Then the same on a 3-member etcd cluster, one broker of each on its own
# prefix: the 4x64 throughput and the p50 of one request in flight
# (BENCH_ETCD=0 leaves it out).
# Usage: scripts/bench-compare.sh REV   (BENCH_REPS, default 7; BENCH_SECONDS, default 5)
set -u
REV=${1:?usage: scripts/bench-compare.sh REV}
B=build/plain
REPS=${BENCH_REPS:-7}
SECS=${BENCH_SECONDS:-5}
BASE_TREE=$PWD/build/bench-base
WORK=$(mktemp -d /tmp/statestore-bench-compare.XXXXXX)
. "$(dirname "$0")/bench-lib.sh"

# The base revision's plugin, built in a worktree of its own.
git worktree remove --force "$BASE_TREE" 2>/dev/null
rm -rf "$BASE_TREE"
git worktree add --detach -q "$BASE_TREE" "$REV" || exit 1
if ! make -C "$BASE_TREE" --no-print-directory build/plain/statestore.so SAN=0 > "$WORK/base-build.log" 2>&1; then
    cat "$WORK/base-build.log"
    exit 1
fi
BASE_PLUGIN=$BASE_TREE/build/plain/statestore.so

echo "plugin of $(git -C "$BASE_TREE" log --oneline -1 | cut -c1-60) against the working tree's"
start_broker echo "$PWD/$B/bench/echo_plugin.so"
start_broker base "$BASE_PLUGIN" "plugin_opt_data_dir $WORK/base"
start_broker new "$PWD/$B/statestore.so" "plugin_opt_data_dir $WORK/new"
for b in base new; do
    port_var=PORT_$b
    lg -p "${!port_var}" -c 4 -w 64 -k 100000 -n 100000 --sequential --label preload > /dev/null
done
declare -a eo bo no bc nc
for i in $(seq "$REPS"); do
    order="base new"
    [ $(( i % 2 )) = 0 ] && order="new base"
    for b in $order; do
        port_var=PORT_$b
        pid_var=PID_$b
        lg_cpu res "${!pid_var}" -p "${!port_var}" -c 4 -w 64 -s 50 -k 100000 -d "$SECS" --label "$b"
        if [ "$b" = base ]; then
            bo+=("$(field "$res" ops_per_s)"); bc+=("$CPU_US")
        else
            no+=("$(field "$res" ops_per_s)"); nc+=("$CPU_US")
        fi
    done
    e=$(lg -p "$PORT_echo" -c 4 -w 64 -s 50 -k 100000 -d "$SECS" --echo --label echo)
    eo+=("$(field "$e" ops_per_s)")
done
BO=$(median "${bo[@]}"); NO=$(median "${no[@]}"); EO=$(median "${eo[@]}")
BC=$(median "${bc[@]}"); NC=$(median "${nc[@]}")
echo "throughput, $REPS interleaved runs of ${SECS}s, medians: base $BO ops/s, new $NO ops/s: new/base $(ratio "$NO" "$BO") (echo $EO ops/s)"
echo "   runs: base ${bo[*]} / new ${no[*]} / echo ${eo[*]}"
echo "broker CPU per request: base $BC us, new $NC us: new/base $(ratio "$NC" "$BC")"
echo "   runs: base ${bc[*]} / new ${nc[*]}"
echo "BENCH compare base_ops=$BO new_ops=$NO ratio=$(ratio "$NO" "$BO") base_cpu_us=$BC new_cpu_us=$NC cpu_ratio=$(ratio "$NC" "$BC") echo_ops=$EO"
stop_broker echo
stop_broker base
stop_broker new

if [ "${BENCH_ETCD:-1}" != 0 ]; then
    start_etcd_cluster
    for b in base new; do
        start_broker "etcd_$b" "$( [ $b = base ] && echo "$BASE_PLUGIN" || echo "$PWD/$B/statestore.so")" \
            "plugin_opt_backend etcd" "plugin_opt_etcd_endpoints $ENDPOINTS" "plugin_opt_etcd_prefix $b/" \
            "plugin_opt_node_id bench-$b"
        port_var=PORT_etcd_$b
        lg -p "${!port_var}" -c 4 -w 64 -k 20000 -n 20000 --sequential --label preload > /dev/null
    done
    declare -a ebo eno ebl enl
    for i in $(seq "$REPS"); do
        order="base new"
        [ $(( i % 2 )) = 0 ] && order="new base"
        for b in $order; do
            port_var=PORT_etcd_$b
            t=$(lg -p "${!port_var}" -c 4 -w 64 -s 50 -k 20000 -d "$SECS" --label "etcd_$b")
            l=$(lg -p "${!port_var}" -c 1 -w 1 -s 50 -k 20000 -d "$SECS" --label "etcd1_$b")
            if [ "$b" = base ]; then
                ebo+=("$(field "$t" ops_per_s)"); ebl+=("$(field "$l" p50_us)")
            else
                eno+=("$(field "$t" ops_per_s)"); enl+=("$(field "$l" p50_us)")
            fi
        done
    done
    EBO=$(median "${ebo[@]}"); ENO=$(median "${eno[@]}"); EBL=$(median "${ebl[@]}"); ENL=$(median "${enl[@]}")
    echo "etcd $ETCD_VERSION, 3 members: 4x64 throughput, medians: base $EBO ops/s, new $ENO ops/s: new/base $(ratio "$ENO" "$EBO")"
    echo "   runs: base ${ebo[*]} / new ${eno[*]}"
    echo "etcd, 1 in flight, p50: base $EBL us, new $ENL us: new/base $(ratio "$ENL" "$EBL")"
    echo "   runs: base ${ebl[*]} / new ${enl[*]}"
    echo "BENCH compare_etcd base_ops=$EBO new_ops=$ENO ratio=$(ratio "$ENO" "$EBO") base_p50_us=$EBL new_p50_us=$ENL p50_ratio=$(ratio "$ENL" "$EBL")"
    stop_broker etcd_base
    stop_broker etcd_new
fi
git worktree remove --force "$BASE_TREE"
