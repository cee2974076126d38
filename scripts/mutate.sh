#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# make mutate: mutation testing. universalmutator (from PyPI, installed
# into build/mutate/venv) makes mutants of each file named; each mutant is
# built in a copy of the tree (build/mutate/tree: the working files are
# never touched) and is killed when the unit tests, the lifecycle tests,
# the fuzz corpora's replay, or then a fast subset of the integration tests fail; one that
# survives them all is given to the unit and lifecycle tests under valgrind, which kills
# it if it reads uninitialised memory or leaks (a mutant whose effect is
# undefined behaviour shows no other way). A mutant that does not build is
# left out.
# Prints each surviving mutant's change and the score per file; the
# survivors are also kept in build/mutate/survivors.txt. A survivor whose
# change is listed in scripts/mutate-equivalent.txt (file, line before,
# line after) is an equivalent mutant, explained there: it is counted
# apart, not in the score.
#
#   MUTATE_FILES   files to mutate (default: the core's rules, codec,
#                  clock, resend cache, journal and commit path, SCAN's
#                  pages and tokens, its patterns, and the key ACL)
#   MUTATE_SAMPLE  mutants per file, drawn at random (0: all of them;
#                  there are 1,500 to 3,300 per file, some seconds each)
#   MUTATE_SEED    the draw's seed (default 1)
#   MUTATE_TESTS   the integration tests run on mutants the unit tests
#                  do not kill
set -u
files=${MUTATE_FILES:-"core/engine.c core/codec.c core/hlc.c core/dedup.c core/journal.c core/store_lmdb_commit.c
    core/scan.c core/pattern.c core/acl.c"}
sample=${MUTATE_SAMPLE:-0}
seed=${MUTATE_SEED:-1}
tests=${MUTATE_TESTS:-"plugin_commands_byte_exact plugin_conditions_compare_every_byte_and_the_length
    plugin_notifications_exact plugin_resent_request_answered_once plugin_restart_keeps_values_versions_tokens_expiries
    plugin_kill9_keeps_every_acknowledged_write plugin_fsync_always_answers_promptly_and_durably
    powerloss_fsync_always_answers_after_the_journal_sync reliability_linearizable_histories
    scan_wire_format_and_errors scan_page_bytes_bounds_every_page watch_pattern_only_readable_keys
    security_key_authorization_and_reload"}
top=$(pwd)
work=$top/build/mutate
venv=$work/venv
tree=$work/tree
out=build/plain

if [ ! -x "$venv/bin/mutate" ]; then
    echo "== installing universalmutator into $venv"
    python3 -m venv "$venv" && "$venv/bin/pip" install -q universalmutator==1.14.1 || exit 1
fi

echo "== a copy of the tree in $tree"
rm -rf "$tree"
mkdir -p "$tree/build"
git ls-files -z | xargs -0 cp -p --parents -t "$tree" || exit 1
# etcd's generated messages and tools, as the working tree has them.
ln -s "$top/build/gen" "$tree/build/gen"
ln -s "$top/build/etcd" "$tree/build/etcd"

corpora=$(ls fuzz/corpus)
build() {
    (cd "$tree" && timeout 600 make -s -j2 $out/tests/unit/run $out/tests/lifecycle/run $out/tests/integration/run $out/statestore.so \
        $out/statestore $out/examples/client_example $(for c in $corpora; do echo $out/fuzz/replay_$c; done) \
        >/dev/null 2>&1)
}

# 0 when every test passes; 1 when one fails.
run_tests() {
    (cd "$tree" && SS_TEST_TIMEOUT=30 timeout 300 $out/tests/unit/run >/dev/null 2>&1) || return 1
    (cd "$tree" && SS_TEST_TIMEOUT=30 timeout 300 $out/tests/lifecycle/run >/dev/null 2>&1) || return 1
    for c in $corpora; do
        (cd "$tree" && timeout 300 $out/fuzz/replay_$c fuzz/corpus/$c >/dev/null 2>&1) || return 1
    done
    # shellcheck disable=SC2086 # the names are words
    (cd "$tree" && SS_TEST_TIMEOUT=60 SS_PLUGIN=$tree/$out/statestore.so SS_CLI=$tree/$out/statestore \
        SS_EXAMPLE=$tree/$out/examples/client_example timeout 900 $out/tests/integration/run $tests \
        >/dev/null 2>&1) || return 1
    if [ "$valgrind" = 1 ]; then
        for suite in unit lifecycle; do
            (cd "$tree" && timeout 900 valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
                --error-exitcode=9 $out/tests/$suite/run >/dev/null 2>&1) || return 1
        done
    fi
    return 0
}

echo "== the tests pass on the unmutated tree"
valgrind=0
command -v valgrind >/dev/null && valgrind=1 || echo "(no valgrind: survivors are not given to it)"
build || { echo "the tree does not build"; exit 1; }
run_tests || { echo "the tests fail without a mutant: nothing to measure"; exit 1; }

: >"$work/survivors.txt"
summary=""
for file in $files; do
    name=$(basename "$file" .c)
    dir=$work/mutants/$name
    rm -rf "$dir"
    mkdir -p "$dir"
    "$venv/bin/mutate" "$file" c --noCheck --mutantDir "$dir" >/dev/null 2>&1
    list=$(ls "$dir" | sort -t. -k3 -n)
    if [ "$sample" -gt 0 ]; then
        list=$(echo "$list" | awk -v s="$seed" 'BEGIN { srand(s) } { print rand() "\t" $0 }' | sort -n |
               cut -f2 | head -n "$sample")
    fi
    total=$(echo "$list" | wc -w)
    echo "== $file: $total mutants"
    killed=0 survived=0 invalid=0 equivalent=0
    cp -p "$tree/$file" "$work/original.c"
    for m in $list; do
        cp "$dir/$m" "$tree/$file"
        if ! build; then
            invalid=$((invalid + 1))
        elif run_tests; then
            was=$(diff "$work/original.c" "$dir/$m" | sed -n 's/^< *//p' | head -n 1)
            changed=$(diff "$work/original.c" "$dir/$m" | sed -n 's/^> *//p' | head -n 1)
            if grep -qxF "$(printf '%s\t%s\t%s' "$file" "$was" "$changed")" "$top/scripts/mutate-equivalent.txt"; then
                equivalent=$((equivalent + 1))
                cp "$work/original.c" "$tree/$file"
                continue
            fi
            survived=$((survived + 1))
            echo "survived: $file $m"
            diff "$work/original.c" "$dir/$m" | sed 's/^/    /'
            { echo "$file $m"; diff "$work/original.c" "$dir/$m"; } >>"$work/survivors.txt"
        else
            killed=$((killed + 1))
        fi
        cp "$work/original.c" "$tree/$file" # newer than the mutant's objects: rebuilt
    done
    build
    valid=$((killed + survived))
    score=$(awk -v k=$killed -v v=$valid 'BEGIN{ if (v) printf "%.1f%%", 100 * k / v; else print "-" }')
    line="$file: $killed killed, $survived survived, $equivalent equivalent, $invalid did not build: score $score"
    echo "== $line"
    summary="$summary$line
"
done
echo "== mutation score"
printf "%s" "$summary"
