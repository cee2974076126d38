#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# What the web console's build and tests need: Node.js and npm (Debian's,
# unless a node and an npm are already on PATH), and, for the browser
# tests only, Debian's Chromium. Browsers are never downloaded by npm
# packages.
# Usage: scripts/console-deps.sh [build]   (build: to build it, no browser)
set -u
here=$(dirname "$0")
pkgs=""
[ "${1:-}" = build ] || pkgs="chromium"
command -v node > /dev/null 2>&1 || pkgs="$pkgs nodejs"
command -v npm > /dev/null 2>&1 || pkgs="$pkgs npm"
[ -z "$pkgs" ] || "$here/deps.sh" $pkgs
