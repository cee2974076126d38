#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# A long churn on etcd (make bench-etcd-soak): does the store slow down as
# etcd's history fills with what expiring and deleted keys leave behind?
# A 3-member cluster with the compaction docs/CLUSTER.md recommends
# (periodic, BENCH_SOAK_RETENTION, default 1h) and a quota that holds that
# history (BENCH_SOAK_QUOTA), one broker:
#   1. the plain 50/50 mix (BENCH_SOAK_PLAIN_SECONDS, default 30);
#   2. the PX-and-DEL mix for BENCH_SOAK_SECONDS (default 3600), its rate
#      printed every BENCH_SOAK_STEP seconds (default 300);
#   3. the plain mix again, against the first run;
# and how fast etcd's revision grew against the writes the clients made
# (every revision is a Txn: the plugin's own keys show here).
set -u
B=build/plain
WORK=$(mktemp -d /tmp/statestore-bench-soak.XXXXXX)
. "$(dirname "$0")/bench-lib.sh"
SOAK=${BENCH_SOAK_SECONDS:-3600}
STEP=${BENCH_SOAK_STEP:-300}
PLAIN=${BENCH_SOAK_PLAIN_SECONDS:-30}
RETENTION=${BENCH_SOAK_RETENTION:-1h}
# etcd's quota in bytes (default 8 GiB, the most etcd recommends; its own
# default, 2 GiB, holds less than half an hour of this churn's history:
# docs/CLUSTER.md says how to size it)
QUOTA=${BENCH_SOAK_QUOTA:-8589934592}
ETCD_EXTRA_ARGS="--auto-compaction-mode=periodic --auto-compaction-retention=$RETENTION${QUOTA:+ --quota-backend-bytes=$QUOTA}"
start_etcd_cluster
ETCD_PIDS=("${PIDS[@]}")
start_broker etcd "$PWD/$B/statestore.so" "plugin_opt_backend etcd" "plugin_opt_etcd_endpoints $ENDPOINTS" \
    "plugin_opt_node_id soak" "sys_interval 1"
ctl() { ETCDCTL_API=3 "$ETCD_BIN/etcdctl" --endpoints "${ENDPOINTS%%,*}" "$@"; }
# (whole numbers: awk would print a large one as 2.1e+09)
status() { ctl endpoint status -w fields | awk -F' : ' -v f="\"$1\"" '$1 == f {printf "%.0f\n", $2; exit}'; }
# metric NAME: a counter of the first member's /metrics (plain HTTP/1.0)
metric() {
    local hp=${ENDPOINTS%%,*}; hp=${hp#http://}
    exec 3<> "/dev/tcp/${hp%:*}/${hp#*:}"
    printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
    awk -v m="$1" '$1 == m {print $2 + 0}' <&3
    exec 3<&-
}
# key versions etcd stored: every put and delete of a key (a Txn's many
# are one revision, but each is a version in etcd's history)
# rss_mib PID...: their resident memory together, in MiB
rss_mib() { local k=0 p; for p in "$@"; do k=$(( k + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status") )); done; echo $(( k / 1024 )); }
versions() { echo $(( $(metric etcd_mvcc_put_total) + $(metric etcd_mvcc_delete_total) )); }
MIX="-c 2 -w 16 -k 20000 -v 200 --prefix m"
lg -p "$PORT_etcd" -c 4 -w 64 -k 20000 -v 200 -n 20000 --sequential --prefix m --label preload > /dev/null

echo "etcd soak: 3 members of etcd $ETCD_VERSION ($ETCD_EXTRA_ARGS), one broker, 2x16 in flight, 20,000 keys, 200-byte values"
# shellcheck disable=SC2086
p1=$(lg -p "$PORT_etcd" $MIX -s 50 -d "$PLAIN" --label plain-before)
echo "  plain 50/50 before: $(field "$p1" ops_per_s) ops/s, p99 $(field "$p1" p99_us) us, errors $(field "$p1" errors)"
rev0=$(status Revision); db0=$(status DBSize); v0=$(versions)
writes=0
for t in $(seq "$STEP" "$STEP" "$SOAK"); do
    # shellcheck disable=SC2086
    s=$(lg -p "$PORT_etcd" $MIX -s 40 --del-pct 20 --px 2000 -d "$STEP" --label churn)
    # the writes among the answered requests: 60% (40% SET, 20% DEL)
    writes=$(( writes + $(field "$s" ops) * 60 / 100 ))
    echo "  churn (40% SET PX 2000, 20% DEL), ${t}s: $(field "$s" ops_per_s) ops/s, p99 $(field "$s" p99_us) us, errors $(field "$s" errors); etcd revision $(status Revision), db $(( $(status DBSize) / 1048576 )) MiB"
    echo "    memory: etcd members $(rss_mib "${ETCD_PIDS[@]}") MiB, the broker $(rss_mib "$PID_etcd") MiB"
    [ "$(ctl alarm list | grep -c NOSPACE)" = 0 ] || echo "  etcd is out of space (its NOSPACE alarm is raised): a larger --quota-backend-bytes or a shorter retention is needed for this load"
done
rev1=$(status Revision); db1=$(status DBSize); v1=$(versions)
# shellcheck disable=SC2086
p2=$(lg -p "$PORT_etcd" $MIX -s 50 -d "$PLAIN" --label plain-after)
echo "  plain 50/50 after:  $(field "$p2" ops_per_s) ops/s, p99 $(field "$p2" p99_us) us, errors $(field "$p2" errors) (answers other than the expected, e.g. 'quota exceeded' once etcd is full): $(ratio "$(field "$p2" ops_per_s)" "$(field "$p1" ops_per_s)") of before (target >= 0.9)"
echo "  etcd stored $(( v1 - v0 )) key versions (puts and deletes, in $(( rev1 - rev0 )) revisions) for about $writes writes by the clients (SETs and DELs): $(ratio "$(( v1 - v0 ))" "$writes") versions per write; db $(( db0 / 1048576 )) MiB before, $(( db1 / 1048576 )) MiB after"
echo "BENCH etcd_soak seconds=$SOAK plain_before=$(field "$p1" ops_per_s) plain_after=$(field "$p2" ops_per_s) after_vs_before=$(ratio "$(field "$p2" ops_per_s)" "$(field "$p1" ops_per_s)") versions=$(( v1 - v0 )) revisions=$(( rev1 - rev0 )) writes=$writes"
