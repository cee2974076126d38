#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Run the corpus replay and the test runners, then print one summary line
# over all of them. Usage: run-tests.sh OUTDIR PLUGIN
set -u
out=$1
plugin=$2
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Every corpus under fuzz/corpus, each by its target's replayer: a corpus
# without one fails (a new target's seeds are never left unread).
for dir in fuzz/corpus/*/; do
    target=$(basename "$dir")
    "$out/fuzz/replay_$target" "fuzz/corpus/$target" || failed=$((failed + 1))
done
# The lifecycle tests drive the plugin's batch on the in-memory backend of
# tests/lifecycle, without a broker. The integration tests run twice: on
# LMDB, then again on a 3-member etcd cluster (tests/integration/list.h
# says which run only once). Then the web console's tests.
suites="unit lifecycle integration integration-etcd console"
# SS_ETCD_PASS=0 leaves out the second pass on etcd (the tests of the
# cluster itself still run in the first); CI does so under ThreadSanitizer.
if [ "${SS_ETCD_PASS:-1}" = 0 ]; then
    suites="unit lifecycle integration console"
    echo "== the integration tests' pass on etcd is left out (ETCD_PASS=0)"
fi
# SS_CONSOLE_PASS=0 leaves out the web console's tests (a minute in a
# browser); CI does so under the sanitizers, the plain run has them.
if [ "${SS_CONSOLE_PASS:-1}" = 0 ]; then
    suites=$(echo "$suites" | sed 's/ console$//')
    echo "== the web console's tests are left out (CONSOLE_PASS=0)"
fi
for suite in $suites; do
    echo "== $suite tests"
    backend=lmdb
    runner=$suite
    if [ "$suite" = integration-etcd ]; then
        backend=etcd
        runner=integration
    fi
    if [ "$suite" = console ]; then
        # The web console: its protocol module under Node, then Debian's
        # Chromium against brokers with this plugin.
        scripts/console-test.sh "$plugin" "$(pwd)/$out/statestore" | tee "$log"
    else
        SS_BACKEND=$backend SS_EXAMPLE=$(pwd)/$out/examples/client_example SS_CLI=$(pwd)/$out/statestore \
            SS_PLUGIN=$plugin "$out/tests/$runner/run" | tee "$log"
    fi
    line=$(tail -n 1 "$log")
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -z "$p" ]; then
        echo "the $suite runner did not finish"
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + p))
    failed=$((failed + f))
done
echo "== licence lines"
if scripts/check-licence.sh; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
fi
echo "== install"
# A scratch directory of this variant's own: CI runs the variants' make
# test side by side, and the check starts by emptying its directory.
if scripts/check-install.sh "$(pwd)/$out/install-check"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
fi
echo "== all tests"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
