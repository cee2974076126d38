#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Run by scripts/interop.sh inside a fresh network namespace, where nothing
# else listens: start mosquitto with the plugin on localhost:1883 (both
# loopbacks, as "localhost" may resolve to ::1 first), run each prepared
# suite ROUNDS times in a row against that one broker (as the SDKs' tests
# run against a long-lived service), and count what really ran.
#
# A suite counts as run only if tests ran, each network test took at least
# MIN_MS (a Rust test without ENABLE_NETWORK_TESTS returns at once), and the
# broker saw at least one new client per test.
#
# BACKEND is lmdb (a data directory of the run's) or etcd: a single-member
# etcd of Debian's (ETCD_BIN, the directory of its binaries) on
# 127.0.0.1:2379 of the namespace, started here and stopped at the end.
#
# Usage: run-suites.sh PLUGIN CLI BUILDDIR ROUNDS MIN_MS BACKEND ETCD_BIN SUITE...
set -u
plugin=$1
cli=$2
B=$3
rounds=$4
min_ms=$5
backend=$6
etcd_bin=$7
shift 7
suites=$*

ip link set lo up || exit 1

run=$B/run-$backend
rm -rf "$run"
mkdir -p "$run/data" "$run/logs"
log=$run/broker.log
conf=$run/mosquitto.conf
etcd=""
stop_all() {
    kill "$broker" 2>/dev/null
    wait "$broker" 2>/dev/null
    if [ -n "$etcd" ]; then
        kill "$etcd" 2>/dev/null
        wait "$etcd" 2>/dev/null
    fi
}
broker=""
trap stop_all EXIT
trap 'exit 1' INT TERM
if [ "$backend" = etcd ]; then
    "$etcd_bin/etcd" --name interop --data-dir "$run/etcd" --listen-client-urls http://127.0.0.1:2379 \
        --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
        --initial-advertise-peer-urls http://127.0.0.1:2380 \
        --initial-cluster interop=http://127.0.0.1:2380 >"$run/etcd.log" 2>&1 &
    etcd=$!
    i=0
    until ETCDCTL_API=3 "$etcd_bin/etcdctl" --endpoints http://127.0.0.1:2379 endpoint health >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$etcd" 2>/dev/null; then
            echo "interop: etcd did not start:"
            tail -n 20 "$run/etcd.log"
            exit 1
        fi
        sleep 0.1
    done
fi
{
    # As root mosquitto would switch to the user "mosquitto", who may not
    # read the build directory.
    if [ "$(id -u)" = 0 ]; then echo "user root"; fi
    echo "listener 1883 127.0.0.1"
    if ip -6 addr show dev lo 2>/dev/null | grep -q '::1'; then echo "listener 1883 ::1"; fi
    echo "allow_anonymous true"
    echo "set_tcp_nodelay true"
    echo "connection_messages true"
    echo "log_dest file $log"
    echo "log_type error"
    echo "log_type warning"
    echo "log_type notice"
    echo "log_type information"
    echo "plugin $plugin"
    if [ "$backend" = etcd ]; then
        echo "plugin_opt_backend etcd"
        echo "plugin_opt_etcd_endpoints http://127.0.0.1:2379"
    else
        echo "plugin_opt_data_dir $run/data"
    fi
} >"$conf"

mosquitto -c "$conf" >"$run/mosquitto.out" 2>&1 &
broker=$!
i=0
until grep -q ' running$' "$log" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$broker" 2>/dev/null; then
        echo "interop: mosquitto did not start:"
        cat "$run/mosquitto.out" "$log" 2>/dev/null
        exit 1
    fi
    sleep 0.1
done

connections() { grep -c 'New client connected' "$log"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

total_failed=0
summary=$run/summary
: >"$summary"

# One run of one test binary: sets ran, passed, failed and fast (tests that
# passed without testing anything). The binary's output goes to $out.
run_rust() {
    name=$1
    bin=$2
    # --report-time prints each test's duration; libtest offers it only as
    # an unstable option, which RUSTC_BOOTSTRAP unlocks in the test binary
    # (nothing is compiled differently).
    ENABLE_NETWORK_TESTS=1 RUSTC_BOOTSTRAP=1 timeout 900 "$bin" -Z unstable-options --report-time \
        >"$out" 2>&1
    ran=$(grep -c -E '^test .* \.\.\. (ok|FAILED)' "$out")
    passed=$(grep -c -E '^test .* \.\.\. ok' "$out")
    # A test's log line may come between its name and its "ok", which the
    # lines above then miss: libtest's own summary counts them all.
    # (Not $summary: that is the file every suite's counts go to.)
    counts=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$out" |
        awk '{ p += $1; f += $2 } END { if (NR) print p, f }')
    if [ -n "$counts" ]; then
        passed=${counts% *}
        ran=$((passed + ${counts#* }))
    fi
    failed=$((ran - passed))
    # "test NAME ... ok <0.015s>": ok but quicker than min_ms.
    fast=$(sed -n 's/^test \([^ ]*\) \.\.\. ok <\([0-9.]*\)s>$/\1 \2/p' "$out" |
        awk -v min="$min_ms" '$2 * 1000 < min { print $1 }')
    # The tests' own word that they did nothing.
    skipped=$(grep -c 'is skipped' "$out")
    if [ "$skipped" -gt 0 ]; then
        fast="$fast skipped:$skipped"
    fi
    grep -q '^test result:' "$out" || failed=$((failed + 1))
}

run_go() {
    STATESTORE_CLI=$cli timeout 900 "$1" -test.v -test.count=1 -test.timeout=10m >"$out" 2>&1
    passed=$(grep -c '^--- PASS: ' "$out")
    failed=$(grep -c '^--- FAIL: ' "$out")
    ran=$((passed + failed))
    # A skipped test tested nothing; Go prints durations in units of 10 ms,
    # too coarse for MIN_MS, so the broker's client count is the check.
    fast=$(sed -n 's/^--- SKIP: \([^ ]*\).*/\1/p' "$out")
    grep -q -E '^(PASS|FAIL)$' "$out" || failed=$((failed + 1))
}

round=1
while [ "$round" -le "$rounds" ]; do
    for suite in $suites; do
        if [ "$suite" = rust ]; then
            list=$(cat "$B/rust/binaries")
        else
            list="services $B/go/services.test
extra $B/go/extra.test"
        fi
        echo "$list" | while read -r name bin; do
            out=$run/logs/round$round-$suite-$name.log
            c0=$(connections)
            t0=$(now_ms)
            if [ "$suite" = rust ]; then run_rust "$name" "$bin"; else run_go "$bin"; fi
            ms=$(($(now_ms) - t0))
            clients=$(($(connections) - c0))
            verdict=ok
            if [ "$ran" -eq 0 ]; then verdict="ran no test"; fi
            if [ -n "$fast" ]; then
                # Passed without testing anything: failures.
                n=$(echo $fast | wc -w)
                passed=$((passed - n))
                failed=$((failed + n))
                verdict="too fast to have used the broker: $(echo $fast)"
            fi
            if [ "$clients" -lt "$ran" ]; then
                verdict="only $clients clients connected for $ran tests"
            fi
            if [ "$ran" -eq 0 ] || [ "$clients" -lt "$ran" ]; then failed=$((failed + 1)); fi
            printf '%s round %d  %-4s %-24s ran %3d  passed %3d  failed %2d  %6.1f s  %3d clients  %s\n' \
                "$backend" "$round" "$suite" "$name" "$ran" "$passed" "$failed" \
                "$(echo "$ms" | awk '{print $1/1000}')" "$clients" "$verdict"
            echo "$suite $name $ran $passed $failed $ms" >>"$summary"
            if [ "$failed" -gt 0 ]; then
                echo "---- failures ($out):"
                grep -E -A12 '^--- FAIL|panicked at|^failures:$' "$out" | head -n 80
                echo "----"
            fi
        done
    done
    round=$((round + 1))
done

if ! kill -0 "$broker" 2>/dev/null; then
    echo "interop: mosquitto died during the run:"
    tail -n 20 "$log"
    total_failed=1
fi

echo "== interop summary on $backend ($rounds rounds; logs in $run/logs, broker log $log)"
for suite in $suites; do
    awk -v s="$suite" -v b="$backend" '$1 == s { ran += $3; p += $4; f += $5; ms += $6 }
        END { printf "%s %-4s: %d tests ran, %d passed, %d failed, %.1f s in all\n", b, s, ran, p, f, ms / 1000 }' \
        "$summary"
done
total_passed=$(awk '{ p += $4 } END { print p + 0 }' "$summary")
total_failed=$((total_failed + $(awk '{ f += $5 } END { print f + 0 }' "$summary")))
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
