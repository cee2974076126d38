#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Every file of ours names its licence in its first lines; the files that
# cannot (formats without comments, data, generated or others' texts) are
# listed here by pattern. Run by make test.
# Usage: check-licence.sh   (exit 0 when every file has the line)
set -u
want='SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause'
missing=$(git ls-files --cached --others --exclude-standard | while IFS= read -r f; do
    case "$f" in
        # Fuzzing corpora (data), go.sum and Cargo.lock (written by go and
        # cargo), the licence texts, and two files of Debian's whose
        # formats have no comments.
        fuzz/corpus/*|*/go.sum|*/Cargo.lock|LICENSES/*|debian/changelog|debian/source/format) continue ;;
        # The console's npm files are JSON, which has no comments: its
        # package.json names the licence in its "license" field (checked
        # here), package-lock.json is written by npm. A screenshot is an image.
        console/package.json)
            grep -qF '"license": "EPL-2.0 OR BSD-3-Clause"' "$f" || echo "$f"
            continue ;;
        console/package-lock.json|docs/console.png) continue ;;
    esac
    head -n 3 "$f" | grep -qF "$want" || echo "$f"
done)
if [ -n "$missing" ]; then
    echo "licence check: no '$want' line in the first lines of:"
    echo "$missing" | sed 's/^/  /'
    exit 1
fi
echo "licence check: every file carries the SPDX line"
