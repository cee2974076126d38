#!/bin/bash
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# A long churn on etcd (make bench-etcd-soak): does the store slow down as
# etcd's history fills with what expiring and deleted keys leave behind?
# A 3-member cluster with the periodic compaction docs/CLUSTER.md
# recommends for high write rates (BENCH_SOAK_RETENTION, default 10m: an
# hour's history of this churn does not fit three members' memory on a
# 24 GiB machine) and a quota that holds that history (BENCH_SOAK_QUOTA),
# one broker:
#   1. the plain 50/50 mix (BENCH_SOAK_PLAIN_SECONDS, default 30);
#   2. the PX-and-DEL mix for BENCH_SOAK_SECONDS (default 3600), its rate
#      printed every BENCH_SOAK_STEP seconds (default 300);
#   3. the plain mix again, against the first run: right after the churn,
#      then once what the churn left to expire has gone (BENCH_SOAK_SETTLE
#      seconds later, default 70: its keys' PX and its tombstones' leases),
#      then after a compaction to the current revision and a defragmentation
#      of every member; which of the three is slow tells the churn's
#      aftermath (and a periodic compaction of etcd's that may be running:
#      the script prints when they ran), etcd's history and a fragmented
#      database apart;
# and how fast etcd's revision grew against the writes the clients made
# (every revision is a Txn: the plugin's own keys show here). Each plain
# run also prints the CPU time the broker and the etcd members spent per
# request, and the broker's own figures (requests per Txn, keys fetched,
# reads of every record), so that a slow run says which side slowed.
# With BENCH_SOAK_PPROF=DIR, CPU profiles of every etcd member and of the
# broker (20 s each) go to DIR at the start of every run and churn step.
set -u
B=build/plain
WORK=$(mktemp -d /tmp/statestore-bench-soak.XXXXXX)
. "$(dirname "$0")/bench-lib.sh"
SOAK=${BENCH_SOAK_SECONDS:-3600}
STEP=${BENCH_SOAK_STEP:-300}
PLAIN=${BENCH_SOAK_PLAIN_SECONDS:-30}
RETENTION=${BENCH_SOAK_RETENTION:-10m}
# etcd's quota in bytes (default 8 GiB, the most etcd recommends; its own
# default, 2 GiB, holds less than half an hour of this churn's history:
# docs/CLUSTER.md says how to size it)
QUOTA=${BENCH_SOAK_QUOTA:-8589934592}
SETTLE=${BENCH_SOAK_SETTLE:-70}
ETCD_EXTRA_ARGS="--auto-compaction-mode=periodic --auto-compaction-retention=$RETENTION${QUOTA:+ --quota-backend-bytes=$QUOTA}${BENCH_SOAK_PPROF:+ --enable-pprof}"
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
# commits: etcd's backend commits so far and their time in microseconds
# (the first member's), to tell a slower bbolt from a slower everything
commits() { awk -v n="$(metric etcd_disk_backend_commit_duration_seconds_count)" \
    -v s="$(metric etcd_disk_backend_commit_duration_seconds_sum)" 'BEGIN {printf "%d %d\n", n, s * 1e6}'; }
# compacted: key versions etcd's compaction has removed so far (it
# removes them in batches of 1000, each committed at once, with 10 ms
# between batches: a compaction of much history runs for a while); etcd
# counts a compaction's versions when it ends, so one still running
# shows as 0: its log lines, printed at the end, say when each ran
compacted() { metric etcd_debugging_mvcc_db_compaction_keys_total; }
# compactions: how many compactions the first member has started and
# finished so far (its log: each starts with "store.index: compact" and
# ends with "finished scheduled compaction"), to tell a run that shared
# etcd with a compaction
compactions() {
    echo "$(grep -c 'store.index: compact' "$WORK/etcd-1.log") $(grep -c 'finished scheduled compaction' "$WORK/etcd-1.log")"
}
# compaction_quiet: wait (up to 600 s) until every compaction started has
# finished
compaction_quiet() {
    local s f
    for _ in $(seq 6000); do
        read -r s f <<< "$(compactions)"
        [ "$s" -le "$f" ] && return
        sleep 0.1
    done
}
# fig NAME: one of the broker's figures (statestore stats)
fig() { $B/statestore -p "$PORT_etcd" stats 2>/dev/null | awk -v f="$1" '$1 == f {v = $2} END {print v + 0}'; }
# ticks PID...: their CPU time together, in clock ticks
ticks() { local t=0 p; for p in "$@"; do t=$(( t + $(cpu_ticks "$p") )); done; echo $t; }
# per_req TICKS N: microseconds of CPU per request
per_req() { awk -v t="$1" -v hz="$HZ" -v n="$2" 'BEGIN {printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0)}'; }
# profile LABEL: with BENCH_SOAK_PPROF set (a directory), a CPU profile of
# every etcd member over the next 20 s, in the background (etcd runs with
# --enable-pprof then; `go tool pprof -top FILE` reads one), and of the
# broker if perf is installed (`perf report -i FILE`)
PROF_PIDS=()
profile() {
    [ -n "${BENCH_SOAK_PPROF:-}" ] || return 0
    local e i=0
    for e in ${ENDPOINTS//,/ }; do
        i=$(( i + 1 ))
        curl -s -o "$BENCH_SOAK_PPROF/etcd-$i-$1.pprof" "$e/debug/pprof/profile?seconds=20" &
        PROF_PIDS+=("$!")
    done
    if command -v perf > /dev/null; then
        perf record -q -F 499 -g -p "$PID_etcd" -o "$BENCH_SOAK_PPROF/broker-$1.perf" -- sleep 20 > /dev/null 2>&1 &
        PROF_PIDS+=("$!")
    fi
}
# profile_done: wait for the profiles under way
profile_done() {
    [ ${#PROF_PIDS[@]} = 0 ] || wait "${PROF_PIDS[@]}"
    PROF_PIDS=()
}
# plain LABEL: the plain mix for PLAIN seconds; prints its lines, sets P
plain() {
    local n0 us0 n1 us1 k0 n tb0 te0 x0 f0 r0 ops s0 f0c s1 f1c during
    read -r n0 us0 <<< "$(commits)"; k0=$(compacted)
    read -r s0 f0c <<< "$(compactions)"
    tb0=$(ticks "$PID_etcd"); te0=$(ticks "${ETCD_PIDS[@]}")
    x0=$(fig etcd/txns); f0=$(fig etcd/fetches); r0=$(fig etcd/deadline_reads)
    profile "${1// /-}"
    # shellcheck disable=SC2086
    P=$(lg -p "$PORT_etcd" $MIX -s 50 -d "$PLAIN" --label "$1")
    read -r n1 us1 <<< "$(commits)"
    read -r s1 f1c <<< "$(compactions)"
    # a compaction ran during the run if one was under way at its start
    # or one started before its end
    during=no; { [ "$s0" -gt "$f0c" ] || [ "$s1" -gt "$s0" ]; } && during=yes
    n=$(( n1 - n0 )); ops=$(field "$P" ops)
    echo "  plain 50/50 $1: $(field "$P" ops_per_s) ops/s, p99 $(field "$P" p99_us) us, errors $(field "$P" errors); etcd's backend commits $n, $(( (us1 - us0) / (n > 0 ? n : 1) )) us each; a compaction ran meanwhile: $during; key versions compacted meanwhile $(( $(compacted) - k0 ))"
    echo "    CPU per request: the broker $(per_req "$(( $(ticks "$PID_etcd") - tb0 ))" "$ops") us, etcd members $(per_req "$(( $(ticks "${ETCD_PIDS[@]}") - te0 ))" "$ops") us; requests per Txn $(ratio "$ops" "$(( $(fig etcd/txns) - x0 + 1 ))"); the broker's fetches $(( $(fig etcd/fetches) - f0 )), reads of every record $(( $(fig etcd/deadline_reads) - r0 )), deadlines known $(fig etcd/deadlines), cache entries $(fig etcd/cache_entries)"
    profile_done
}
MIX="-c 2 -w 16 -k 20000 -v 200 --prefix m"
lg -p "$PORT_etcd" -c 4 -w 64 -k 20000 -v 200 -n 20000 --sequential --prefix m --label preload > /dev/null

echo "etcd soak: 3 members of etcd $ETCD_VERSION ($ETCD_EXTRA_ARGS), one broker, 2x16 in flight, 20,000 keys, 200-byte values"
vp=$(versions)
plain before; p1=$P
# the writes among its answered requests: half (50% SET)
echo "    etcd stored $(ratio "$(( $(versions) - vp ))" "$(( $(field "$p1" ops) / 2 ))") key versions per write (a SET's record, and a commit marker per Txn)"
rev0=$(status Revision); db0=$(status DBSize); v0=$(versions)
writes=0
k=$(compacted)
for t in $(seq "$STEP" "$STEP" "$SOAK"); do
    profile "churn-$t"
    # shellcheck disable=SC2086
    s=$(lg -p "$PORT_etcd" $MIX -s 40 --del-pct 20 --px 2000 -d "$STEP" --label churn)
    profile_done
    # the writes among the answered requests: 60% (40% SET, 20% DEL)
    writes=$(( writes + $(field "$s" ops) * 60 / 100 ))
    echo "  churn (40% SET PX 2000, 20% DEL), ${t}s: $(field "$s" ops_per_s) ops/s, p99 $(field "$s" p99_us) us, errors $(field "$s" errors); etcd revision $(status Revision), db $(( $(status DBSize) / 1048576 )) MiB"
    echo "    memory: etcd members $(rss_mib "${ETCD_PIDS[@]}") MiB, the broker $(rss_mib "$PID_etcd") MiB; key versions compacted in this step $(( $(compacted) - k ))"
    k=$(compacted)
    [ "$(ctl alarm list | grep -c NOSPACE)" = 0 ] || echo "  etcd is out of space (its NOSPACE alarm is raised): a larger --quota-backend-bytes or a shorter retention is needed for this load"
done
rev1=$(status Revision); db1=$(status DBSize); v1=$(versions)
plain "after" ; p2=$P
echo "    $(ratio "$(field "$p2" ops_per_s)" "$(field "$p1" ops_per_s)") of before (target >= 0.9; errors are answers other than the expected, e.g. 'quota exceeded' once etcd is full)"
sleep "$SETTLE"
plain "after ${SETTLE}s more"; p3=$P
echo "    $(ratio "$(field "$p3" ops_per_s)" "$(field "$p1" ops_per_s)") of before"
# (etcdctl gives up waiting after 5 s by default, while the compaction
# goes on: wait for it, or the next run shares etcd with it)
t0=$(date +%s)
ctl --command-timeout=600s compact --physical "$(status Revision)" > /dev/null
compaction_quiet
echo "    compacted to the current revision in $(( $(date +%s) - t0 )) s"
for e in ${ENDPOINTS//,/ }; do ETCDCTL_API=3 "$ETCD_BIN/etcdctl" --endpoints "$e" --command-timeout=120s defrag > /dev/null; done
echo "    compacted to the current revision and defragmented: db $(( $(status DBSize) / 1048576 )) MiB, etcd members $(rss_mib "${ETCD_PIDS[@]}") MiB"
plain "after compaction and defragmentation"; p4=$P
echo "    $(ratio "$(field "$p4" ops_per_s)" "$(field "$p1" ops_per_s)") of before"
# when etcd compacted and for how long (its periodic compaction removes
# the history older than the retention, every retention period up to an
# hour): a plain run that overlaps one shows it
echo "  etcd's compactions (the first member's log):"
grep -h "finished scheduled compaction" "$WORK/etcd-1.log" | sed 's/^/    /'
echo "  etcd stored $(( v1 - v0 )) key versions (puts and deletes, in $(( rev1 - rev0 )) revisions) for about $writes writes by the clients (SETs and DELs): $(ratio "$(( v1 - v0 ))" "$writes") versions per write; db $(( db0 / 1048576 )) MiB before, $(( db1 / 1048576 )) MiB after"
echo "BENCH etcd_soak seconds=$SOAK plain_before=$(field "$p1" ops_per_s) plain_after=$(field "$p2" ops_per_s) after_vs_before=$(ratio "$(field "$p2" ops_per_s)" "$(field "$p1" ops_per_s)") settled_vs_before=$(ratio "$(field "$p3" ops_per_s)" "$(field "$p1" ops_per_s)") defragmented_vs_before=$(ratio "$(field "$p4" ops_per_s)" "$(field "$p1" ops_per_s)") versions=$(( v1 - v0 )) revisions=$(( rev1 - rev0 )) writes=$writes"
