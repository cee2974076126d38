#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Fetch Debian's etcd packages into build/etcd without installing them:
# etcd-server and etcd-client give the test clusters their binaries
# (build/etcd/root/usr/bin/etcd, etcdctl), golang-etcd-server-dev the
# .proto files of etcd's API. Installing etcd-server would start a system
# etcd on port 2379 on a machine with systemd; the tests want their own on
# free loopback ports, and the build only needs the files.
# Usage: scripts/etcd-tools.sh   (idempotent)
set -eu
DIR=build/etcd
PKGS="etcd-server etcd-client golang-etcd-server-dev"
[ -f "$DIR/root/.complete" ] && exit 0
mkdir -p "$DIR/debs" "$DIR/root"
cd "$DIR/debs"
if ! apt-get download $PKGS > download.log 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q > /dev/null && apt-get download $PKGS > download.log 2>&1 || {
            cat download.log >&2
            exit 1
        }
    else
        cat download.log >&2
        echo "cannot download $PKGS: run 'sudo apt-get update' first" >&2
        exit 1
    fi
fi
for deb in ./*.deb; do
    dpkg-deb -x "$deb" ../root
done
touch ../root/.complete
