#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Build the web console (console/) into OUT: our files as they are, and
# MQTT.js's browser build from the npm packages console/package-lock.json
# pins (installed with `npm ci`, never a browser download). Nothing built
# here is committed.
# Usage: console-build.sh OUT [--prod]   (--prod: only the packages the
# page needs, not the test tools; what `make deb` uses)
set -eu
mode=${2:-}
here=$(cd "$(dirname "$0")/.." && pwd)
case $1 in /*) out=$1 ;; *) out=$(pwd)/$1 ;; esac
cd "$here/console"
# npm ci again only when the lockfile changed since the last install.
stamp=node_modules/.statestore-ci
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ "$(cat "$stamp")" != "${mode:-all}" ]; then
    if [ "$mode" = --prod ]; then
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --omit=dev --no-audit --no-fund --loglevel=error
    else
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
    fi
    echo "${mode:-all}" > "$stamp"
fi
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cp src/index.html src/style.css src/boot.js "$out.tmp/"
# Our modules in one file, each as it is (boot.js explains why).
node -e '
const fs = require("fs");
const packed = {};
for (const f of fs.readdirSync("src").sort())
    if (f.endsWith(".js") && f !== "boot.js") packed[f] = fs.readFileSync("src/" + f, "utf8");
fs.writeFileSync(process.argv[1], JSON.stringify(packed));
' "$out.tmp/modules.json"
cp node_modules/mqtt/dist/mqtt.esm.js "$out.tmp/mqtt.esm.js"
# MQTT.js is MIT-licensed: its notice goes with its copy, and so do those
# of the packages its browser build bundles (named in its closing
# comment): ieee754 (BSD-3-Clause), safe-buffer and Babel's runtime (MIT).
cp node_modules/mqtt/LICENSE.md "$out.tmp/mqtt.LICENSE.md"
cp node_modules/ieee754/LICENSE "$out.tmp/ieee754.LICENSE"
cp node_modules/safe-buffer/LICENSE "$out.tmp/safe-buffer.LICENSE"
cp node_modules/@babel/runtime/LICENSE "$out.tmp/babel-runtime.LICENSE"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "console: built into $out ($(du -sk "$out" | cut -f1) KiB)"
