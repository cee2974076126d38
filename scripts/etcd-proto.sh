#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Generate the C code of etcd's v3 API messages (KV, Watch, Lease, Cluster,
# Maintenance) with protobuf-c, from the .proto files Debian's
# golang-etcd-server-dev ships (unpacked into build/etcd by
# scripts/etcd-tools.sh, or installed). Those files carry gogoproto and
# google.api.http annotations that only Go code generation and the JSON
# gateway use; they are stripped first (they do not change a message's
# wire format).
# Usage: scripts/etcd-proto.sh OUTDIR
set -eu
OUT=${1:?usage: scripts/etcd-proto.sh OUTDIR}
SRC=build/etcd/root/usr/share/gocode/src/go.etcd.io/etcd
[ -d "$SRC" ] || SRC=/usr/share/gocode/src/go.etcd.io/etcd
SRC=$(cd "$SRC" 2>/dev/null && pwd || echo "$SRC")
if [ ! -f "$SRC/etcdserver/etcdserverpb/rpc.proto" ]; then
    echo "etcd's .proto files not found: run scripts/etcd-tools.sh" >&2
    exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
strip_annotations() {
    awk '
/^import "gogoproto\/gogo.proto";/ { next }
/^import "google\/api\/annotations.proto";/ { next }
/^option \(gogoproto\./ { next }
/option \(google.api.http\) = \{/ { skip = 1 }
skip { if ($0 ~ /};/) skip = 0; next }
/\[\(gogoproto\./ { print "unsupported field annotation: " $0 > "/dev/stderr"; exit 1 }
{ print }' "$1" > "$2"
}
for f in mvcc/mvccpb/kv.proto auth/authpb/auth.proto etcdserver/etcdserverpb/rpc.proto; do
    mkdir -p "$TMP/etcd/$(dirname "$f")"
    strip_annotations "$SRC/$f" "$TMP/etcd/$f"
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
(cd "$TMP" && protoc-c --c_out="$OUT" -I. etcd/mvcc/mvccpb/kv.proto etcd/auth/authpb/auth.proto \
    etcd/etcdserver/etcdserverpb/rpc.proto)
