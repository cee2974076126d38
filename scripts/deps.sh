#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Install the Debian packages the build needs, when one is missing.
# As root it runs apt-get; otherwise it prints the command to run.
# Usage: scripts/deps.sh [extra packages...]
set -u
PKGS="make gcc $*"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing:$missing"
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
else
    echo "missing Debian packages:$missing" >&2
    echo "run:  sudo apt-get update && sudo apt-get install -y$missing" >&2
    exit 1
fi
