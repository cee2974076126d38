#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Start a local cluster in the foreground, for trying the store on etcd:
# three etcd members and two mosquitto brokers with the plugin, all on
# 127.0.0.1, data under one directory. Ctrl-C stops everything it started.
# Usage: run-cluster.sh DIR PLUGIN CLI ETCD_BIN_DIR PORT CONSOLE_DIR CONSOLE_PORT
#   brokers on PORT and PORT+1, each serving the web console (CONSOLE_DIR)
#   on CONSOLE_PORT and CONSOLE_PORT+1; etcd clients on 23791-23793, peers
#   on 23801-23803 (or ETCD_PORT_BASE+1.. and ETCD_PORT_BASE+11..).
set -eu
dir=$1
plugin=$2
cli=$3
bin=$4
port=$5
console_dir=$6
console_port=$7
base=${ETCD_PORT_BASE:-23790}
pids=""

# Stop everything started, and exit with $1 (0 for Ctrl-C).
stop() {
    trap - INT TERM EXIT
    echo
    echo "run-cluster: stopping"
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for pid in $pids; do wait "$pid" 2>/dev/null || true; done
    exit "$1"
}
trap 'stop 0' INT TERM
trap 'stop 1' EXIT

busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Run the command until it succeeds, 10 s at most; else say what failed.
wait_for() {
    what=$1
    shift
    tries=0
    until "$@"; do
        tries=$((tries + 1))
        if [ $tries -gt 100 ]; then
            echo "run-cluster: $what"
            exit 1 # the EXIT trap stops what was started
        fi
        sleep 0.1
    done
}

etcd_healthy() {
    ETCDCTL_API=3 "$bin/etcdctl" --endpoints "$endpoints" endpoint health > /dev/null 2>&1
}

brokers_up() {
    busy "$port" && busy $((port + 1))
}
for p in "$port" $((port + 1)) "$console_port" $((console_port + 1)) $((base + 1)) $((base + 2)) $((base + 3)) $((base + 11)) $((base + 12)) $((base + 13)); do
    if busy "$p"; then
        echo "run-cluster: port $p is already in use; choose others: make run-cluster PORT=1885 CONSOLE_PORT=8090 ETCD_PORT_BASE=24790"
        trap - INT TERM EXIT
        exit 1
    fi
done

mkdir -p "$dir"
# etcd's data remembers its members' addresses: the same ports every time.
if [ -f "$dir/etcd-ports" ] && [ "$(cat "$dir/etcd-ports")" != "$base" ]; then
    echo "run-cluster: $dir holds a cluster made with ETCD_PORT_BASE=$(cat "$dir/etcd-ports");"
    echo "run-cluster: use that again, or remove $dir to start afresh"
    trap - INT TERM EXIT
    exit 1
fi
echo "$base" > "$dir/etcd-ports"
initial=""
endpoints=""
for i in 1 2 3; do
    initial="${initial:+$initial,}m$i=http://127.0.0.1:$((base + 10 + i))"
    endpoints="${endpoints:+$endpoints,}http://127.0.0.1:$((base + i))"
done
for i in 1 2 3; do
    "$bin/etcd" --name "m$i" --data-dir "$dir/etcd-$i" \
        --listen-client-urls "http://127.0.0.1:$((base + i))" \
        --advertise-client-urls "http://127.0.0.1:$((base + i))" \
        --listen-peer-urls "http://127.0.0.1:$((base + 10 + i))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((base + 10 + i))" \
        --initial-cluster "$initial" --initial-cluster-state new \
        --initial-cluster-token statestore-run-cluster \
        --auto-compaction-mode periodic --auto-compaction-retention 1h \
        > "$dir/etcd-$i.log" 2>&1 &
    pids="$pids $!"
done
wait_for "etcd did not become healthy; see $dir/etcd-*.log" etcd_healthy
echo "run-cluster: etcd members on $endpoints (logs $dir/etcd-*.log)"

for name in a b; do
    p=$port
    cp=$console_port
    [ "$name" = b ] && p=$((port + 1)) && cp=$((console_port + 1))
    conf="$dir/broker-$name.conf"
    {
        [ "$(id -u)" = 0 ] && echo "user root"
        echo "listener $p 127.0.0.1"
        echo "allow_anonymous true"
        echo "listener $cp 127.0.0.1"
        echo "protocol websockets"
        echo "socket_domain ipv4"
        echo "http_dir $console_dir"
        echo "set_tcp_nodelay true"
        echo "log_dest file $dir/broker-$name.log"
        echo "plugin $plugin"
        echo "plugin_opt_backend etcd"
        echo "plugin_opt_etcd_endpoints $endpoints"
        echo "plugin_opt_node_id broker-$name"
    } > "$conf"
    mosquitto -c "$conf" &
    pids="$pids $!"
done
wait_for "a broker did not start; see $dir/broker-*.log" brokers_up
cat <<HINT
run-cluster: broker a on 127.0.0.1:$port, broker b on 127.0.0.1:$((port + 1)), one store
(logs $dir/broker-*.log). Ctrl-C stops everything.
The web console of each: http://127.0.0.1:$console_port/index.html (a) and
http://127.0.0.1:$((console_port + 1))/index.html (b).

Try, in another terminal, a watch on broker b and a change through broker a:

  $cli -p $((port + 1)) watch greeting &
  $cli -p $port set greeting hello
  $cli -p $((port + 1)) get greeting

HINT
wait
