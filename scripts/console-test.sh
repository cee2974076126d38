#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# The web console's tests: its protocol module under Node (node:test, over
# core/codec's vectors), then the browser tests (console/e2e: Debian's
# Chromium through playwright-core, against mosquitto with the plugin, on
# LMDB and on a single-member etcd). Ends with the line
# "N passed, M failed", as the C test runners do; exit 1 on any failure.
# Screenshots go to build/console-shots.
# Usage: console-test.sh PLUGIN CLI
set -u
plugin=$1
cli=$2
top=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
export SS_PLUGIN="$plugin" SS_CLI="$cli" SS_CONSOLE_DIR="$top/build/console"
export SS_ETCD_BIN="$top/build/etcd/root/usr/bin" SS_CONSOLE_SHOTS="$top/build/console-shots"
cd "$top/console" || exit 1
passed=0
failed=0
for suite in test e2e; do
    # One test file at a time: the browser tests start brokers and browsers.
    timeout 600 node --test --test-concurrency=1 --test-reporter=spec "$suite/" 2>&1 | tee "$log"
    p=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$log")
    f=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$log")
    c=$(sed -n 's/^ℹ cancelled \([0-9]*\)$/\1/p' "$log")
    if [ -z "$p" ] || [ -z "$f" ]; then
        echo "the console's $suite runner did not finish"
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + p))
    failed=$((failed + f + ${c:-0}))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
