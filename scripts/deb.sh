#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Build the Debian packages the Debian way: dpkg-buildpackage -b on a clean
# copy of the tracked files (what a clone holds, nothing from build/), then
# lintian. The build dependencies of debian/control are installed as
# `make deps` installs everything (scripts/deps.sh).
# Output: build/deb/*.deb, *.changes, *.buildinfo, lintian.log, and the
# debug symbols' packages in build/deb/debug.
# Usage: scripts/deb.sh   (from the repository's top directory)
set -eu
top=$(pwd)
out=$top/build/deb
# Build-Depends, without versions, alternatives or the debhelper-compat
# virtual package (debhelper provides it).
builddeps=$(sed -n '/^Build-Depends:/,/^[A-Z][A-Za-z-]*:/p' debian/control | sed '$d' |
    sed -e 's/^Build-Depends://' -e 's/([^)]*)//g' -e 's/<[^>]*>//g' | tr ',|' '\n\n' |
    sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v -e '^$' -e '^debhelper-compat$')
scripts/deps.sh dpkg-dev debhelper fakeroot lintian $builddeps
rm -rf "$out"
mkdir -p "$out/src"
# The files a clone would hold, as they are in the working tree (ignored
# files such as build/ and data/ left out).
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$out/src"
# The web console, built here (npm ci from console/package-lock.json, the
# page's packages only) so that dpkg-buildpackage needs no npm and no
# network: `make install-files` takes it from console/dist (debian/rules).
# Built in the copy, so that the working tree's console/node_modules (with
# the test tools) stays as it is; the copy's node_modules goes after.
scripts/console-deps.sh build
"$out/src/scripts/console-build.sh" "$out/src/console/dist" --prod
rm -rf "$out/src/console/node_modules"
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
echo "building statestore $version ($arch) in $out/src"
(cd "$out/src" && dpkg-buildpackage -b -us -uc) > "$out/build.log" 2>&1 || {
    tail -40 "$out/build.log" >&2
    echo "make deb: dpkg-buildpackage failed (the whole log: $out/build.log)" >&2
    exit 1
}
rm -rf "$out/src"
changes=$out/statestore_${version}_${arch}.changes
# --fail-on error,warning: what lintian calls a warning fails the build too.
if ! lintian --fail-on error,warning --info "$changes" > "$out/lintian.log" 2>&1; then
    cat "$out/lintian.log" >&2
    echo "make deb: lintian found errors or warnings" >&2
    exit 1
fi
grep -v '^N: ' "$out/lintian.log" | sed 's/^/lintian: /' || true
# The debug symbols apart, so that `apt install ./build/deb/*.deb` installs
# the four packages alone.
mkdir -p "$out/debug"
mv "$out"/*-dbgsym_*.deb "$out/debug/" 2>/dev/null || true
ls "$out"/*.deb | sed 's|^.*/|built: |'
