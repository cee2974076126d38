#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# The web console's figures (docs/BENCHMARKS.md): its load time from
# Mosquitto's websockets listener, then the listing of a whole store of
# 100,000 keys by "Load all" and how the list behaves with them.
# Usage: bench-console.sh PLUGIN CLI
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 SS_PLUGIN="$1" SS_CLI="$2" SS_CONSOLE_DIR="$top/build/console"
export SS_CONSOLE_SHOTS="$top/build/console-shots"
cd "$top/console"
echo "== console: load time"
node bench/load.js
echo "== console: a store of 100,000 keys, all listed"
SS_CONSOLE_LOAD_KEYS=100000 node --test --test-reporter=spec --test-name-pattern='100,000' e2e/console.test.js |
    grep -E '# console:|✔|✖'
