# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# bench-lib.sh - what the benchmark scripts share: brokers on free loopback
# ports (every PID recorded, stopped on exit), the load generator, medians
# and ratios. Sourced with B (the build directory) and WORK (a scratch
# directory, removed on exit) set.
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    local p
    while :; do
        # below the ephemeral range (32768-60999), which outgoing
        # connections take ports from
        p=$((20000 + RANDOM % 12000))
        (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
    done
}

# start_broker NAME PLUGIN [extra config lines...]: sets PORT_<NAME>, PID_<NAME>
start_broker() {
    local name=$1 plugin=$2; shift 2
    local port; port=$(free_port)
    local conf=$WORK/$name.conf
    {
        [ "$(id -u)" = 0 ] && echo "user root"
        echo "listener $port 127.0.0.1"
        echo "allow_anonymous true"
        echo "set_tcp_nodelay true"
        echo "max_inflight_messages 0"
        echo "plugin $plugin"
        for line in "$@"; do echo "$line"; done
    } > "$conf"
    mosquitto -c "$conf" > "$WORK/$name.log" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 200); do
        (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
        sleep 0.02
    done
    eval "PORT_$name=$port PID_$name=$pid"
}

# start_etcd_cluster: 3 etcd members on free loopback ports, data under
# WORK, with ETCD_EXTRA_ARGS if set (word-split); sets ENDPOINTS and
# ETCD_VERSION (their PIDs are the first three started after this is
# called)
ETCD_BIN=build/etcd/root/usr/bin
start_etcd_cluster() {
    local initial="" i
    local -a cp pp
    ENDPOINTS=""
    for i in 1 2 3; do
        cp[$i]=$(free_port)
        pp[$i]=$(free_port)
        initial="${initial:+$initial,}m$i=http://127.0.0.1:${pp[$i]}"
        ENDPOINTS="${ENDPOINTS:+$ENDPOINTS,}http://127.0.0.1:${cp[$i]}"
    done
    for i in 1 2 3; do
        "$ETCD_BIN/etcd" --name "m$i" --data-dir "$WORK/etcd-$i" \
            --listen-client-urls "http://127.0.0.1:${cp[$i]}" --advertise-client-urls "http://127.0.0.1:${cp[$i]}" \
            --listen-peer-urls "http://127.0.0.1:${pp[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${pp[$i]}" \
            --initial-cluster "$initial" --initial-cluster-state new ${ETCD_EXTRA_ARGS:-} > "$WORK/etcd-$i.log" 2>&1 &
        PIDS+=("$!")
    done
    for _ in $(seq 200); do
        ETCDCTL_API=3 "$ETCD_BIN/etcdctl" --endpoints "$ENDPOINTS" endpoint health > /dev/null 2>&1 && break
        sleep 0.1
    done
    ETCD_VERSION=$("$ETCD_BIN/etcd" --version | awk '/etcd Version/ {print $3}')
}

stop_broker() {
    local pid_var=PID_$1
    kill "${!pid_var}" 2>/dev/null
    wait "${!pid_var}" 2>/dev/null
}

# field LINE NAME: the value of NAME=... in a summary line
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<< "$1"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

lg() { $B/bench/loadgen "$@" | grep '^LOADGEN'; }
# CPU time (user + system, all threads) a process has used, in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
# lg_cpu VAR PID ARGS...: run the load generator, set VAR to its summary line
# and CPU_US to the broker's CPU time per answered request, in microseconds
lg_cpu() {
    local var=$1 pid=$2; shift 2
    local t0 line; t0=$(cpu_ticks "$pid")
    line=$(lg "$@")
    CPU_US=$(awk -v t="$(( $(cpu_ticks "$pid") - t0 ))" -v hz="$HZ" -v n="$(field "$line" ops)" \
        'BEGIN {printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0)}')
    printf -v "$var" '%s' "$line"
}

