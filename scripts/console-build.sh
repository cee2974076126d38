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
# MQTT.js's browser build bundles code of the npm packages it depends on
# and, for Node's built-in modules, @jspm/core's browser versions of them
# (Apache-2.0, with the notices of the code they come from in its
# LICENSE). Every one of those licences asks for its notice to go with
# the copy: NOTICES.txt holds the licence file of each package the
# lockfile installs for the page (its run-time tree, not the test tools),
# @jspm/core among them (a dependency for that alone).
node -e '
const fs = require("fs");
const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
let out = "The web console bundles MQTT.js (mqtt.esm.js), which bundles code of\n" +
    "the npm packages below. Their licences and copyright notices follow.\n";
for (const [dir, p] of Object.entries(lock.packages).sort()) {
    if (dir === "" || p.dev) continue;
    const files = fs.readdirSync(dir).filter((f) => /^licen[cs]e/i.test(f)).sort();
    if (files.length === 0) throw new Error(dir + " has no licence file");
    const name = dir.replace(/^.*node_modules\//, "");
    out += "\n" + "=".repeat(72) + "\n" + name + " " + p.version + " (" + p.license + ")\n\n";
    out += fs.readFileSync(dir + "/" + files[0], "utf8").trimEnd() + "\n";
}
fs.writeFileSync(process.argv[1], out);
' "$out.tmp/NOTICES.txt"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "console: built into $out ($(du -sk "$out" | cut -f1) KiB)"
