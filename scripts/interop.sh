#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Compatibility with the official Azure IoT Operations SDKs: their
# integration tests, run against mosquitto with this plugin.
#
#   Rust: the crate azure_iot_operations_services, as published on
#         crates.io (its package carries tests/), tests
#         state_store_client_test, lease_client_tests and lock_client_tests,
#         unmodified, built from the crate's own Cargo.lock.
#   Go:   the SDK's services/statestore and services/leasedlock from the Go
#         module proxy, driven by tests/interop/go (the scenarios of the
#         SDK's go/test/integration/services, which the proxy does not serve:
#         see the comment in tests/interop/go/services/state_store_test.go).
#
# Everything downloaded or built goes under build/interop (Go's module and
# build caches, cargo's home and target directory), so a fresh clone works
# and `make clean` removes it all. Only this step needs the registries; the
# suites then run in a private network namespace (tests/interop/run-suites.sh)
# where localhost:1883, which the SDKs' tests dial, is our broker's alone.
#
# Also tests/interop/go/extra, beyond the SDKs' own scenarios: the Go SDK's
# leased lock and our `statestore lock` contending for one lock, and a SET
# with the SDK's persistence option.
#
# Usage: scripts/interop.sh PLUGIN CLI
#   INTEROP_ROUNDS  rounds of each suite against one broker (default 5)
#   INTEROP_BACKENDS  the broker's backends, one after the other (default
#                   "lmdb etcd"; etcd: a single member of Debian's etcd)
#   INTEROP_SUITES  which suites (default "rust go")
#   INTEROP_MIN_MS  a network test faster than this did not run (default 3)
#   INTEROP_RUST_VERSION  the Rust crate's version (default 1.5.0-beta1)
#   INTEROP_GLOBDIFF_CASES  random cases of the pattern matcher against the
#                   glob crate, per seed of 4 (default 250000)
#   INTEROP_PREPARE_ONLY  1: fetch and build the suites, then stop (CI does
#                   so while other tests run; the builds are cached, so the
#                   run after it only checks them)
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
plugin=${1:?usage: scripts/interop.sh PLUGIN CLI}
cli=${2:?usage: scripts/interop.sh PLUGIN CLI}

# Pinned versions. The Rust crate is 1.5.0-beta1, the first with SCAN
# (list_keys and its four network tests); INTEROP_RUST_VERSION=1.3.0 runs
# the last stable release instead. The Go modules are those the SDK's
# integration tests require at the commit the Go scenarios follow
# (tests/interop/go/go.mod, with go.sum).
RUST_CRATE=azure_iot_operations_services
RUST_VERSION=${INTEROP_RUST_VERSION:-1.5.0-beta1}
RUST_TESTS="state_store_client_test lease_client_tests lock_client_tests"

B=$root/build/interop
mkdir -p "$B"

# The toolchains: on PATH, or where their installers put them.
find_tool() {
    name=$1
    shift
    if command -v "$name" >/dev/null 2>&1; then
        command -v "$name"
        return 0
    fi
    for p in "$@"; do
        if [ -x "$p" ]; then
            echo "$p"
            return 0
        fi
    done
    return 1
}
home=${HOME:-/root}
GO=$(find_tool go /usr/local/go/bin/go /usr/lib/go/bin/go "$home/go/bin/go" "$home/sdk/go/bin/go") || {
    echo "interop: go not found (needs Go 1.25 or newer; Debian's is too old)" >&2
    exit 1
}
CARGO=$(find_tool cargo "$home/.cargo/bin/cargo" /root/.cargo/bin/cargo /usr/local/cargo/bin/cargo) || {
    echo "interop: cargo not found (needs Rust 1.88 or newer, e.g. from rustup)" >&2
    exit 1
}
# cargo runs rustc (and rustup's proxies) from PATH.
PATH="$(dirname "$CARGO"):$(dirname "$GO"):$PATH"
export PATH
# rustup's cargo finds its toolchains in RUSTUP_HOME, by default beside the
# cargo home it was installed into; CARGO_HOME moves below, so say where.
if [ -z "${RUSTUP_HOME:-}" ] && [ -d "$home/.rustup" ]; then
    export RUSTUP_HOME="$home/.rustup"
fi

# Go: every cache under build/interop; the module cache writable, so that
# rm -rf can remove it; no toolchain downloads.
export GOPATH="$B/go" GOMODCACHE="$B/go/pkg/mod" GOCACHE="$B/go/cache"
export GOFLAGS=-modcacherw GOTOOLCHAIN=local
# Go keeps its telemetry and settings in the user's config directory.
export XDG_CONFIG_HOME="$B/config"
# Cargo: its registry cache and the builds under build/interop too.
export CARGO_HOME="$B/cargo-home" CARGO_TARGET_DIR="$B/rust/target"

suites=${INTEROP_SUITES:-rust go}
prepared=""

for suite in $suites; do
    case $suite in
    rust)
        echo "== interop: fetching $RUST_CRATE $RUST_VERSION from crates.io"
        # Cargo fetches a crate for a package that depends on it; the crate's
        # own package (with its tests/ and Cargo.lock) is then in the
        # registry's source directory, and builds as a package of its own.
        fetch=$B/rust/fetch
        mkdir -p "$fetch/src"
        cat >"$fetch/Cargo.toml" <<EOF
[package]
name = "interop-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$RUST_CRATE = "=$RUST_VERSION"
EOF
        : >"$fetch/src/lib.rs"
        (cd "$fetch" && "$CARGO" fetch -q)
        src=$(ls -d "$CARGO_HOME"/registry/src/*/"$RUST_CRATE-$RUST_VERSION" | head -n 1)
        if [ ! -f "$src/tests/lease_client_tests.rs" ]; then
            echo "interop: $RUST_CRATE $RUST_VERSION has no tests/ in its package" >&2
            exit 1
        fi
        # A copy to build in: the registry's sources are not ours to write to.
        crate=$B/rust/$RUST_CRATE-$RUST_VERSION
        if [ ! -f "$crate/Cargo.toml" ]; then
            rm -rf "$crate.tmp"
            cp -R "$src" "$crate.tmp"
            mv "$crate.tmp" "$crate"
        fi
        echo "== interop: building the Rust tests"
        tests=""
        for t in $RUST_TESTS; do tests="$tests --test $t"; done
        # --locked: exactly the dependency versions of the crate's Cargo.lock.
        # shellcheck disable=SC2086
        (cd "$crate" && "$CARGO" test --locked --no-run --features state_store,leased_lock $tests) \
            2>"$B/rust/build.log" || {
            cat "$B/rust/build.log" >&2
            exit 1
        }
        # One line per test binary: "NAME PATH", from cargo's "Executable" lines.
        sed -n 's|^ *Executable tests/\([a-z_]*\)\.rs (\(.*\))$|\1 \2|p' "$B/rust/build.log" >"$B/rust/binaries"
        for t in $RUST_TESTS; do
            grep -q "^$t " "$B/rust/binaries" || {
                echo "interop: no test binary for $t" >&2
                exit 1
            }
        done
        # SCAN's patterns against the glob crate itself (tests/interop/globdiff).
        echo "== interop: SCAN's pattern matcher against the glob crate"
        (CARGO_TARGET_DIR="$B/globdiff" "$CARGO" build -q --release --manifest-path tests/interop/globdiff/Cargo.toml)
        ${CC:-cc} -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -Werror -o "$B/globdiff/check" \
            tests/interop/globdiff/check.c core/pattern.c core/errors.c
        # (a check, not a build: left to the run after INTEROP_PREPARE_ONLY)
        [ "${INTEROP_PREPARE_ONLY:-0}" = 1 ] || for seed in 1 2 3 4; do
            "$B/globdiff/release/globdiff" "${INTEROP_GLOBDIFF_CASES:-250000}" "$seed" >"$B/globdiff/cases"
            "$B/globdiff/check" <"$B/globdiff/cases" || exit 1
        done
        prepared="$prepared rust"
        ;;
    go)
        echo "== interop: building the Go tests (SDK from the Go module proxy)"
        (cd tests/interop/go && "$GO" mod download && "$GO" vet ./... &&
            "$GO" test -c -o "$B/go/services.test" ./services &&
            "$GO" test -c -o "$B/go/extra.test" ./extra)
        prepared="$prepared go"
        ;;
    *)
        echo "interop: unknown suite $suite" >&2
        exit 1
        ;;
    esac
done

if [ "${INTEROP_PREPARE_ONLY:-0}" = 1 ]; then
    echo "== interop: prepared:$prepared (INTEROP_PREPARE_ONLY=1: no suite run)"
    exit 0
fi

# The suites, in a network namespace of their own: a plain one as root,
# otherwise (or where that is not permitted) inside a user namespace where
# we are root.
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    ns="unshare -n"
elif unshare -rn true 2>/dev/null; then
    ns="unshare -rn"
else
    echo "interop: cannot make a network namespace (unshare -n, unshare -rn)" >&2
    exit 1
fi
# Each backend in a namespace of its own (etcd on its usual port there).
status=0
for backend in ${INTEROP_BACKENDS:-lmdb etcd}; do
    # shellcheck disable=SC2086
    $ns sh tests/interop/run-suites.sh "$plugin" "$cli" "$B" "${INTEROP_ROUNDS:-5}" "${INTEROP_MIN_MS:-3}" \
        "$backend" "$root/build/etcd/root/usr/bin" $prepared || status=1
done
exit $status
