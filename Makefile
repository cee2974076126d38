# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# statestore - build, test and run.
#
#   make test        build and run every test (installs missing packages)
#   make test SAN=1  the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make test SAN=thread  the same under ThreadSanitizer
#   make valgrind    unit and lifecycle tests, and integration tests with the broker, under valgrind
#   make stress      longer reliability runs (soak), bounded in time
#   make mutate      mutation testing of the core (MUTATE_SAMPLE=N: N mutants per file)
#   make fuzz        run the libFuzzer target for FUZZ_SECONDS (default 60)
#   make run         start mosquitto with the state store (PORT=1883 DATA=./data)
#                    and the web console on http://127.0.0.1:8080/ (CONSOLE_PORT)
#   make console     build the web console into build/console (npm ci)
#   make bench-console  the console's load time and a 100,000-key listing
#   make install     install plugin, library, headers, example config (PREFIX, DESTDIR)
#   make deb         Debian packages into build/deb (dpkg-buildpackage on a clean copy)
#   make test-package  install those packages into a freshly bootstrapped Debian and try them
#   make deps        install the Debian packages the build needs

CC      ?= cc
SAN     ?= 0
# Debian installs the broker as /usr/sbin/mosquitto, which is not on an
# ordinary user's PATH: the recipes and the tests they start look there too.
export PATH := $(PATH):/usr/local/sbin:/usr/sbin:/sbin
# The one place the version is written: the newest entry of debian/changelog.
# The packages, the client library's file name and soname, statestore.pc
# and `statestore --version` all take it from there.
VERSION := $(shell head -1 debian/changelog | cut -d' ' -f2 | tr -d '()')
SHLIB_MAJOR := $(firstword $(subst ., ,$(VERSION)))
# 0: make test leaves out the integration tests' second pass on etcd
ETCD_PASS ?= 1
# 0: make test leaves out the web console's tests (CI's sanitizer runs:
# the plain make test runs them)
CONSOLE_PASS ?= 1
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
PLUGINDIR ?= $(PREFIX)/lib/statestore
PORT    ?= 1883
CONSOLE_PORT ?= 8080
# Where install-files takes the built console from (make deb builds it
# outside build/, which dpkg-buildpackage's clean removes).
CONSOLE_BUILD ?= build/console
DATA    ?= $(CURDIR)/data
override DATA := $(abspath $(DATA))
FUZZ_SECONDS ?= 60

ifeq ($(SAN),1)
VARIANT  := san
BROKER_PRELOAD = $(shell $(CC) -print-file-name=libasan.so) $(shell $(CC) -print-file-name=libubsan.so)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT      := -O1
else ifeq ($(SAN),thread)
# ThreadSanitizer: the committing thread beside the broker's, and the
# client library's threads (its own, libmosquitto's network thread, the
# callers'). The broker itself is not instrumented; the runtime is
# preloaded into it so that the plugin's accesses are.
VARIANT  := tsan
BROKER_PRELOAD = $(shell $(CC) -print-file-name=libtsan.so)
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
OPT      := -O1
else
VARIANT  := plain
SANFLAGS :=
OPT      := -O2
endif

OUT := build/$(VARIANT)

WARN   := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
          -Wformat=2 -Wvla -Werror
# CPPFLAGS, CFLAGS and LDFLAGS from outside (dpkg-buildflags: hardening)
# come last, so that they win.
CFLAGS_ALL = -std=c11 -D_DEFAULT_SOURCE -DSS_VERSION='"$(VERSION)"' $(OPT) -g $(WARN) -fPIC -fvisibility=hidden \
          $(SANFLAGS) $(shell pkg-config --cflags lmdb 2>/dev/null) $(CPPFLAGS) $(CFLAGS)
LDLIBS_ALL = $(shell pkg-config --libs lmdb 2>/dev/null) $(LDLIBS)
MOSQ_LIBS  = $(shell pkg-config --libs libmosquitto 2>/dev/null)
# libev-dev: only the tests of the libev adapter (client/client_ev.h, a
# header) link libev; the library does not.
# libedit (BSD licensed): the tool's interactive prompt.
EDIT_LIBS  = $(shell pkg-config --libs libedit 2>/dev/null)
DEBS      := g++ pkg-config liblmdb-dev mosquitto mosquitto-dev libmosquitto-dev mosquitto-clients openssl \
             libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev libev-dev libedit-dev

# etcd's API messages, generated from Debian's .proto files
# (scripts/etcd-proto.sh), and etcd/: the etcd backend's client side.
GEN       := build/gen
ETCD_PROTO := etcd/mvcc/mvccpb/kv etcd/auth/authpb/auth etcd/etcdserver/etcdserverpb/rpc
ETCD_GEN_C := $(ETCD_PROTO:%=$(GEN)/%.pb-c.c)
ETCD_OBJ  := $(patsubst %.c,$(OUT)/%.o,$(wildcard etcd/*.c)) $(ETCD_PROTO:%=$(OUT)/gen/%.pb-c.o)
LIBETCD   := $(OUT)/libstatestore-etcd.a
ETCD_LIBS  = $(shell pkg-config --libs libnghttp2 libprotobuf-c openssl 2>/dev/null)
CORE_SRC  := $(wildcard core/*.c)
CORE_OBJ  := $(CORE_SRC:%.c=$(OUT)/%.o)
UNIT_OBJ  := $(patsubst %.c,$(OUT)/%.o,$(wildcard tests/unit/*.c))
INTEG_OBJ := $(patsubst %.c,$(OUT)/%.o,$(wildcard tests/integration/*.c))
LIFE_OBJ  := $(patsubst %.c,$(OUT)/%.o,$(wildcard tests/lifecycle/*.c))
STRESS_OBJ := $(patsubst %.c,$(OUT)/%.o,$(wildcard tests/stress/*.c)) $(OUT)/tests/integration/harness.o \
              $(OUT)/tests/integration/etcd_cluster.o $(OUT)/tests/integration/held.o
PLUGIN_OBJ := $(patsubst %.c,$(OUT)/%.o,$(wildcard plugin/*.c backends/*.c))
LIBCORE   := $(OUT)/libstatestore-core.a
PLUGIN    := $(OUT)/statestore.so
POWERLOSS := $(OUT)/tests/powerloss/powerloss.so
CLIENT_OBJ := $(patsubst %.c,$(OUT)/%.o,$(wildcard client/*.c))
# The client library: the client plus the core pieces it uses (no storage).
LIBCLIENT := $(OUT)/libstatestore-client.a
LIBCLIENT_CORE := $(addprefix $(OUT)/core/,buf.o codec.o command.o errors.o hex.o hlc.o json.o pattern.o siphash.o table.o)
# The same as a shared library: objects built with default visibility, and
# a version script that exports only the public API (client.h, lease.h,
# errors.h).
SHLIB_SONAME := libstatestore-client.so.$(SHLIB_MAJOR)
SHLIB     := $(OUT)/libstatestore-client.so.$(VERSION)
SHLIB_OBJ := $(patsubst $(OUT)/%,$(OUT)/shared/%,$(CLIENT_OBJ) $(LIBCLIENT_CORE))
PUBLIC_HEADERS := client/client.h client/client_ev.h client/lease.h client/leader.h core/errors.h
CLI_OBJ   := $(patsubst %.c,$(OUT)/%.o,$(wildcard cli/*.c))
CLI       := $(OUT)/statestore

.PHONY: console test-console bench-console
.PHONY: all build deps test test-build check valgrind stress mutate bench bench-scan bench-patterns bench-etcd bench-etcd-soak bench-compare fuzz run run-cluster install \
        install-files deb test-package clean

all: deps
	@$(MAKE) --no-print-directory build

# What is installed, without looking for packages (debian/rules builds this).
build: $(LIBCORE) $(PLUGIN) $(LIBCLIENT) $(SHLIB) $(CLI)

deps:
	@scripts/deps.sh $(DEBS)

$(OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(LIBCORE): $(CORE_OBJ)
	$(AR) rcs $@ $^

build/etcd/root/.complete:
	@scripts/etcd-tools.sh

# The .proto files: Debian's golang-etcd-server-dev when installed (a
# package build, whose Build-Depends has it, downloads nothing), else
# unpacked into build/etcd by scripts/etcd-tools.sh.
ETCD_PROTO_SYS := /usr/share/gocode/src/go.etcd.io/etcd/etcdserver/etcdserverpb/rpc.proto
ETCD_PROTO_DEP := $(if $(wildcard $(ETCD_PROTO_SYS)),,build/etcd/root/.complete)
$(GEN)/.stamp: scripts/etcd-proto.sh $(ETCD_PROTO_DEP)
	@rm -rf $(GEN)/etcd
	@scripts/etcd-proto.sh $(GEN)
	@touch $@

$(ETCD_GEN_C): $(GEN)/.stamp

# Generated code: our warnings, with -I for its own includes.
$(OUT)/gen/%.o: $(GEN)/%.c $(GEN)/.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(GEN) -MMD -MP -c $< -o $@

$(OUT)/etcd/%.o: etcd/%.c $(GEN)/.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(GEN) -MMD -MP -c $< -o $@

$(LIBETCD): $(ETCD_OBJ)
	$(AR) rcs $@ $^

# The plugin: core linked in statically; broker symbols resolve at load.
$(PLUGIN): $(PLUGIN_OBJ) $(LIBETCD) $(LIBCORE)
	$(CC) $(SANFLAGS) $(LDFLAGS) -shared -o $@ $(PLUGIN_OBJ) $(LIBETCD) $(LIBCORE) $(LDLIBS_ALL) $(ETCD_LIBS) -lpthread

$(LIBCLIENT): $(CLIENT_OBJ) $(LIBCLIENT_CORE)
	$(AR) rcs $@ $^

$(OUT)/shared/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fvisibility=hidden,$(CFLAGS_ALL)) -MMD -MP -c $< -o $@

$(SHLIB): $(SHLIB_OBJ) client/libstatestore-client.map
	$(CC) $(SANFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SHLIB_SONAME) \
	    -Wl,--version-script=client/libstatestore-client.map -o $@ $(SHLIB_OBJ) $(MOSQ_LIBS) -lpthread

# The tool: the client library, and the store for its offline commands
# (import).
$(CLI): $(CLI_OBJ) $(LIBCLIENT) $(LIBETCD) $(LIBCORE)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIBCLIENT) $(LIBETCD) $(LIBCORE) $(MOSQ_LIBS) $(ETCD_LIBS) $(EDIT_LIBS) $(LDLIBS_ALL) -lpthread

# The documented example, built against the headers as installed
# (<statestore/...>): build/include/statestore links to the sources.
EXAMPLE := $(OUT)/examples/client_example
build/include/.stamp: $(wildcard client/*.h core/*.h)
	@mkdir -p build/include/statestore
	@for h in client/*.h core/*.h; do ln -sfn ../../../$$h build/include/statestore/$$(basename $$h); done
	@touch $@
# The other examples beside it: a poll(2) loop, and leader election (whose
# copies the tests run as separate processes).
EXAMPLES := $(EXAMPLE) $(OUT)/examples/poll_example $(OUT)/examples/leader_example $(OUT)/examples/cxx_check
# Built as a user would build them, strict C11 with no feature macro of
# ours: each example says what it needs itself.
$(OUT)/examples/%: examples/%.c $(LIBCLIENT) build/include/.stamp
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -D_DEFAULT_SOURCE,$(CFLAGS_ALL)) -Ibuild/include -o $@ $< $(LIBCLIENT) $(MOSQ_LIBS) -lpthread
# The headers from C++ (extern "C"): built, linked and run with the tests.
$(OUT)/examples/cxx_check: examples/cxx_check.cpp $(LIBCLIENT) build/include/.stamp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -Wall -Wextra -Werror $(SANFLAGS) -Ibuild/include -o $@ $< $(LIBCLIENT) $(MOSQ_LIBS) -lpthread
	$@ >/dev/null

# One runner source, two test lists: tests/unit/list.h, tests/integration/list.h.
$(OUT)/tests/unit/main.o: tests/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/unit -MMD -MP -c $< -o $@
$(OUT)/tests/integration/main.o: tests/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/integration -MMD -MP -c $< -o $@
$(OUT)/tests/lifecycle/main.o: tests/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/lifecycle -MMD -MP -c $< -o $@

$(OUT)/tests/stress/main.o: tests/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/stress -MMD -MP -c $< -o $@
$(OUT)/tests/stress/run: $(OUT)/tests/stress/main.o $(STRESS_OBJ) $(LIBETCD) $(LIBCORE)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(MOSQ_LIBS) $(ETCD_LIBS) $(LDLIBS_ALL) -lpthread

# The unit tests also cover the client library's pure parts (client/answer.c,
# client/refusals.c), the etcd backend's map of deadlines (etcd/deadlines.c)
# and its reading of replies (etcd/kv.c), and the signal that wakes the
# broker's thread (plugin/waker.c).
$(OUT)/tests/unit/run: $(OUT)/tests/unit/main.o $(UNIT_OBJ) $(OUT)/tests/private_fs.o $(OUT)/client/answer.o $(OUT)/client/refusals.o \
                       $(OUT)/etcd/deadlines.o $(OUT)/plugin/waker.o $(LIBETCD) $(LIBCORE)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(ETCD_LIBS) $(LDLIBS_ALL) -lpthread
# The lifecycle tests: the plugin's objects without its broker entry points
# (plugin.c) on the in-memory backend of tests/lifecycle, which also
# provides the broker functions they call; libmosquitto for properties.
LIFE_PLUGIN_OBJ := $(filter-out $(OUT)/plugin/plugin.o,$(patsubst %.c,$(OUT)/%.o,$(wildcard plugin/*.c)))
# The plugin's options name backends (backends/open.c), so they link too.
$(OUT)/tests/lifecycle/run: $(OUT)/tests/lifecycle/main.o $(LIFE_OBJ) $(LIFE_PLUGIN_OBJ) $(OUT)/backends/open.o \
                            $(LIBETCD) $(LIBCORE)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(MOSQ_LIBS) $(ETCD_LIBS) $(LDLIBS_ALL) -lpthread
$(OUT)/tests/integration/run: $(OUT)/tests/integration/main.o $(INTEG_OBJ) $(OUT)/tests/powerloss/cut.o $(OUT)/tests/private_fs.o \
                              $(LIBCLIENT) $(LIBETCD) $(LIBCORE) | $(POWERLOSS)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $(filter-out $(POWERLOSS),$^) $(MOSQ_LIBS) $(ETCD_LIBS) $(LDLIBS_ALL) -lev -lpthread

# The power-loss simulator preloaded into the broker (tests/powerloss/powerloss.h):
# not instrumented, so that it loads beside a sanitizer's runtime as it is;
# its wrappers of libc's calls are what it exports.
$(POWERLOSS): tests/powerloss/shim.c tests/powerloss/powerloss.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out $(SANFLAGS) -fvisibility=hidden,$(CFLAGS_ALL)) -shared -o $@ $< -ldl -lpthread

# libFuzzer targets: requests and commands, the engine, and the on-disk
# decoders (journal replay, stored records), SCAN's pattern and token, and
# the client library's reading of answers. Each also builds without
# libFuzzer as a corpus replayer, which make test runs.
FUZZ_TARGETS := request engine journal record scan answer
# Sources a target needs beyond the core.
FUZZ_EXTRA_answer := client/answer.c
# Each fuzz target also builds without libFuzzer as a corpus replayer.
$(OUT)/fuzz/replay_%: $(OUT)/fuzz/fuzz_%.o $(OUT)/fuzz/replay.o $(LIBCORE)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $(filter-out $(LIBCORE),$^) $(LIBCORE) $(LDLIBS_ALL)
$(OUT)/fuzz/replay_answer: $(OUT)/client/answer.o

TEST_BINS = $(OUT)/tests/unit/run $(OUT)/tests/lifecycle/run $(OUT)/tests/integration/run \
            $(FUZZ_TARGETS:%=$(OUT)/fuzz/replay_%) $(PLUGIN) $(CLI) $(EXAMPLES) $(SHLIB) $(POWERLOSS)

# The partition tests make network namespaces and firewall rules in them
# (tests/integration/netns.h): iproute2 and nftables; the clock test runs
# a broker under Debian's libfaketime.
# libfaketime cannot run under a broker whose sanitizer runtime is preloaded
# first (the broker never starts), nor under a sanitizer build of the
# command line: with SAN, the clock tests are left out.
SAN_SKIP := $(if $(BROKER_PRELOAD),cluster_clock_ahead_reported_and_versions_grow nemesis_broker_clock_jumps \
              cli_lock_holds_through_a_wall_clock_step cluster_versions_grow_after_tombstone_gone_clocks_apart)

# What make test runs, built (and the Debian packages it needs installed)
# without running it: CI builds each variant first, then runs them side
# by side.
test-build: deps
	@scripts/deps.sh iproute2 nftables faketime
	@scripts/etcd-tools.sh
	@scripts/console-deps.sh
	@$(MAKE) --no-print-directory $(TEST_BINS) console
test: test-build
	@SS_TEST_SKIP="$$SS_TEST_SKIP $(SAN_SKIP)" \
	    SS_BROKER_PRELOAD="$(BROKER_PRELOAD)" TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp" \
	    SS_ETCD_PASS=$(ETCD_PASS) SS_CONSOLE_PASS=$(CONSOLE_PASS) scripts/run-tests.sh $(OUT) $(CURDIR)/$(PLUGIN)

# The web console (console/, docs/CONSOLE.md): our files and MQTT.js, from
# the npm registry as console/package-lock.json pins it, into build/console.
CONSOLE_SRC := $(wildcard console/src/*) console/package.json console/package-lock.json
build/console/.stamp: $(CONSOLE_SRC) scripts/console-build.sh
	@scripts/console-build.sh build/console
	@touch $@
console: build/console/.stamp

# Only the console's tests: its protocol module under Node, then the
# browser tests (Debian's Chromium) against a broker with the plugin.
test-console: deps
	@scripts/console-deps.sh
	@$(MAKE) --no-print-directory $(PLUGIN) $(CLI) console build/etcd/root/.complete
	@scripts/console-test.sh $(CURDIR)/$(PLUGIN) $(CURDIR)/$(CLI)

# The console's load time (10 loads) and a listing of all 100,000 keys of
# a store (about 2 minutes): docs/BENCHMARKS.md.
bench-console: deps
	@scripts/console-deps.sh
	@$(MAKE) --no-print-directory build/plain/statestore.so build/plain/statestore console SAN=0
	@scripts/bench-console.sh $(CURDIR)/build/plain/statestore.so $(CURDIR)/build/plain/statestore

check: test

# Benchmarks (about 25 minutes): see docs/BENCHMARKS.md.
BENCH_BINS = build/plain/bench/loadgen build/plain/bench/echo_plugin.so build/plain/bench/engine_bench \
             build/plain/bench/expiry_storm build/plain/bench/etcd_txn build/plain/statestore.so \
             build/plain/statestore
build/plain/bench/loadgen: bench/loadgen.c bench/mqtt_raw.c bench/mqtt_raw.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ bench/loadgen.c bench/mqtt_raw.c
build/plain/bench/echo_plugin.so: bench/echo_plugin.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $<
build/plain/bench/engine_bench: bench/engine_bench.c build/plain/libstatestore-core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)
build/plain/bench/etcd_txn: bench/etcd_txn.c build/plain/libstatestore-etcd.a build/plain/libstatestore-core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(ETCD_LIBS) $(LDLIBS_ALL) -lpthread
build/plain/bench/expiry_storm: bench/expiry_storm.c bench/mqtt_raw.c bench/mqtt_raw.h build/plain/libstatestore-core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ bench/expiry_storm.c bench/mqtt_raw.c build/plain/libstatestore-core.a $(LDLIBS_ALL)
bench: deps
	@scripts/etcd-tools.sh
	@$(MAKE) --no-print-directory $(BENCH_BINS) SAN=0
	@scripts/bench.sh
	@scripts/bench-scan.sh
	@scripts/bench-etcd.sh
	@scripts/bench-patterns.sh

# Only the cost of pattern watches for writes (part of make bench; about 3 minutes).
bench-patterns: deps
	@$(MAKE) --no-print-directory build/plain/bench/loadgen build/plain/statestore.so SAN=0
	@scripts/bench-patterns.sh

# Only SCAN's listing and its effect on other clients, on LMDB and on etcd
# (part of make bench; about 17 minutes with 1M keys: BENCH_KEYS,
# BENCH_SCAN_BACKENDS=lmdb shorten it).
bench-scan: deps
	@scripts/etcd-tools.sh
	@$(MAKE) --no-print-directory $(BENCH_BINS) SAN=0
	@scripts/bench-scan.sh

# Only the benchmarks on etcd (part of make bench; about 10 minutes, etcdctl check perf included).
bench-etcd: deps
	@scripts/etcd-tools.sh
	@$(MAKE) --no-print-directory $(BENCH_BINS) SAN=0
	@scripts/bench-etcd.sh

# A long churn on etcd (an hour by default: BENCH_SOAK_SECONDS): the plain
# mix before and after it, and etcd's history against the clients' writes
# (BENCH_SOAK_PPROF=DIR: CPU profiles of etcd and the broker into DIR).
bench-etcd-soak: deps
	@scripts/etcd-tools.sh
	@$(MAKE) --no-print-directory $(BENCH_BINS) SAN=0
	@scripts/bench-etcd-soak.sh

# The working tree's plugin against BASE's (a revision), same run: for
# changes that should not cost speed.
BASE ?= HEAD
bench-compare: deps
	@$(MAKE) --no-print-directory $(BENCH_BINS) SAN=0
	@scripts/bench-compare.sh $(BASE)

# Longer runs (a soak with churn; SS_SOAK_SECONDS, default 90; 50 power
# cuts where make test makes 10), bounded in time.
stress: deps
	@$(MAKE) --no-print-directory $(OUT)/tests/stress/run $(PLUGIN)
	@SS_TEST_TIMEOUT=1200 SS_PLUGIN=$(CURDIR)/$(PLUGIN) $(OUT)/tests/stress/run
	@$(MAKE) --no-print-directory $(OUT)/tests/integration/run
	@echo "== power cuts under load: 50 for each sync policy"
	@SS_POWERLOSS_CUTS=50 SS_TEST_TIMEOUT=600 SS_PLUGIN=$(CURDIR)/$(PLUGIN) $(OUT)/tests/integration/run \
	    powerloss_fsync_always_keeps_every_acknowledged_write powerloss_fsync_periodic_loses_at_most_the_interval
	@echo "== two brokers on etcd: locks, renewals and deadlines through 10 rounds of etcd faults (2 min)"
	@SS_CLUSTER_SOAK_S=124 SS_TEST_TIMEOUT=600 SS_PLUGIN=$(CURDIR)/$(PLUGIN) \
	    $(OUT)/tests/integration/run cluster_locks_renewals_and_deadlines_under_faults
	@echo "== network partitions, loss, delay, stalls, kills, clocks and a full etcd: 20 rounds of each nemesis (about 40 min; root)"
	@SS_NEMESIS_ROUNDS=20 SS_TEST_TIMEOUT=1800 SS_PLUGIN=$(CURDIR)/$(PLUGIN) $(OUT)/tests/integration/run \
	    partition_broker_cut_off_from_etcd partition_etcd_leader_isolated partition_one_way_loss \
	    partition_random_loss_everywhere partition_delay_and_loss partition_bridge \
	    partition_client_answers_lost_then_resent_on_reconnection nemesis_broker_stalled_past_its_claim \
	    nemesis_broker_killed_with_txns_in_flight nemesis_broker_clock_jumps nemesis_etcd_out_of_space
	@echo "== mutation testing: 15 mutants of each file, drawn at random"
	@MUTATE_SAMPLE=15 scripts/mutate.sh

# Mutation testing (scripts/mutate.sh; universalmutator into build/mutate):
# each mutant of MUTATE_FILES against the unit tests and a fast subset of
# the integration tests; prints every survivor and the score. All mutants
# take hours; MUTATE_SAMPLE=N draws N per file (make stress: 15).
MUTATE_SAMPLE ?= 0
mutate: deps
	@MUTATE_SAMPLE=$(MUTATE_SAMPLE) scripts/mutate.sh

# Under valgrind: the unit tests, then the integration tests with the
# broker (and so the plugin) under valgrind. Any memory error or definite
# leak fails.
# Tests valgrind may leave out (make valgrind VALGRIND_SKIP="cluster_ etcd_"
# leaves out those of the etcd cluster, which ASan and TSan cover).
VALGRIND_SKIP ?=
valgrind: deps
	@scripts/deps.sh valgrind
	@$(MAKE) --no-print-directory build/plain/tests/unit/run build/plain/tests/lifecycle/run \
	    build/plain/tests/integration/run build/plain/statestore.so SAN=0
	@valgrind -q --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite \
	    --error-exitcode=9 build/plain/tests/unit/run
	@valgrind -q --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite \
	    --error-exitcode=9 build/plain/tests/lifecycle/run
	@$(MAKE) --no-print-directory build/plain/statestore build/plain/examples/client_example \
	    build/plain/examples/poll_example build/plain/examples/leader_example SAN=0
	@SS_TEST_SKIP="$(VALGRIND_SKIP)" SS_BROKER_VALGRIND=1 SS_CLI=$(CURDIR)/build/plain/statestore \
	    SS_EXAMPLE=$(CURDIR)/build/plain/examples/client_example \
	    SS_PLUGIN=$(CURDIR)/build/plain/statestore.so build/plain/tests/integration/run

# libFuzzer build with Debian's clang; new inputs go to build/fuzz/corpus,
# the committed seeds in fuzz/corpus/request are only read.
FUZZ_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined \
              $(shell pkg-config --cflags lmdb 2>/dev/null)
build/fuzz/fuzz_%: fuzz/fuzz_%.c $(CORE_SRC) $(wildcard core/*.h)
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_EXTRA_$*) $(CORE_SRC) $(LDLIBS_ALL)
build/fuzz/fuzz_answer: $(FUZZ_EXTRA_answer) client/answer.h client/client.h

fuzz: deps
	@scripts/deps.sh clang libclang-rt-14-dev
	@$(MAKE) --no-print-directory $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p build/fuzz/corpus-$$t && \
	    build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        build/fuzz/corpus-$$t fuzz/corpus/$$t || exit 1; done

# Run the broker in the foreground with the plugin, from examples/mosquitto.conf.
RUN_CONF := build/run/mosquitto.conf

# Three etcd members and two brokers on one store, in the foreground
# (docs/CLUSTER.md): brokers on PORT and PORT+1, data in CLUSTER_DIR.
CLUSTER_DIR ?= $(CURDIR)/build/run-cluster
run-cluster: deps
	@scripts/etcd-tools.sh
	@scripts/console-deps.sh build
	@$(MAKE) --no-print-directory build/plain/statestore.so build/plain/statestore console SAN=0
	@scripts/run-cluster.sh $(CLUSTER_DIR) $(CURDIR)/build/plain/statestore.so \
	    $(CURDIR)/build/plain/statestore $(CURDIR)/build/etcd/root/usr/bin $(PORT) \
	    $(CURDIR)/build/console $(CONSOLE_PORT)
run: deps
	@scripts/console-deps.sh build
	@$(MAKE) --no-print-directory build/plain/statestore.so build/plain/statestore console SAN=0
	@if bash -c 'exec 3<>/dev/tcp/127.0.0.1/$(PORT)' 2>/dev/null; then \
	    echo "statestore: port $(PORT) is already in use (a mosquitto service installed by Debian?)."; \
	    echo "statestore: stop it (systemctl stop mosquitto) or choose another: make run PORT=1884"; \
	    exit 1; fi
	@if bash -c 'exec 3<>/dev/tcp/127.0.0.1/$(CONSOLE_PORT)' 2>/dev/null; then \
	    echo "statestore: port $(CONSOLE_PORT) (the console) is already in use; choose another: make run CONSOLE_PORT=8081"; \
	    exit 1; fi
	@mkdir -p build/run/backups "$(DATA)"
	@if [ -e "$(DATA)/statestore.lock" ] && ! flock -n "$(DATA)/statestore.lock" true; then \
	    echo "statestore: $(DATA) is in use by another broker (make run DATA=... for another)"; \
	    exit 1; fi
	@sed -e 's|@PLUGIN@|$(CURDIR)/build/plain/statestore.so|' -e 's|@PORT@|$(PORT)|' -e 's|@DATA@|$(DATA)|' \
	    -e 's|@CONSOLE_PORT@|$(CONSOLE_PORT)|' -e 's|@CONSOLE_DIR@|$(CURDIR)/build/console|' \
	    -e 's|^#plugin_opt_backup_dir .*|plugin_opt_backup_dir $(CURDIR)/build/run/backups|' \
	    examples/mosquitto.conf > $(RUN_CONF)
	@if [ "$$(id -u)" = 0 ]; then sed -i '1i user root' $(RUN_CONF); fi
	@echo "statestore: mosquitto on 127.0.0.1:$(PORT), data in $(DATA), config $(RUN_CONF)"
	@echo "statestore: the web console on http://127.0.0.1:$(CONSOLE_PORT)/index.html"
	@scripts/run-hint.sh $(PORT) $(CURDIR)/build/plain/statestore
	exec mosquitto -c $(RUN_CONF)

# Only what users build against: the public headers, the client library
# (static and shared), the CLI, the plugin, an example config whose
# paths are the installed ones, and the web console (built by `make
# console`: install-files does not fetch npm packages).
install: deps
	@scripts/console-deps.sh build
	@$(MAKE) --no-print-directory console
	@$(MAKE) --no-print-directory install-files SAN=0

# The installation itself, without looking for packages (debian/rules runs
# it with PREFIX=/usr and Debian's multiarch LIBDIR).
install-files: build
	install -d $(DESTDIR)$(PLUGINDIR) $(DESTDIR)$(PREFIX)/include/statestore \
	    $(DESTDIR)$(PREFIX)/share/statestore/examples $(DESTDIR)$(PREFIX)/bin \
	    $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/statestore/console
	install -m 0644 $(PLUGIN) $(DESTDIR)$(PLUGINDIR)/statestore.so
	@test -f $(CONSOLE_BUILD)/index.html || { echo "install: no $(CONSOLE_BUILD): make console first"; exit 1; }
	install -m 0644 $(CONSOLE_BUILD)/* $(DESTDIR)$(PREFIX)/share/statestore/console/
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/statestore
	install -m 0644 $(LIBCLIENT) $(DESTDIR)$(LIBDIR)/
	install -m 0644 $(SHLIB) $(DESTDIR)$(LIBDIR)/
	ln -sfn $(notdir $(SHLIB)) $(DESTDIR)$(LIBDIR)/$(SHLIB_SONAME)
	ln -sfn $(SHLIB_SONAME) $(DESTDIR)$(LIBDIR)/libstatestore-client.so
	install -m 0644 $(PUBLIC_HEADERS) $(DESTDIR)$(PREFIX)/include/statestore/
	sed -e '/^# `make run` uses this file/,/^# @CONSOLE_PORT@ and @CONSOLE_DIR@/d' \
	    -e 's|@PLUGIN@|$(PLUGINDIR)/statestore.so|' -e 's|@PORT@|1883|' \
	    -e 's|@DATA@|/var/lib/statestore|' -e 's|@CONSOLE_PORT@|8080|' \
	    -e 's|@CONSOLE_DIR@|$(PREFIX)/share/statestore/console|' \
	    examples/mosquitto.conf > $(DESTDIR)$(PREFIX)/share/statestore/examples/mosquitto.conf
	install -m 0644 examples/client_example.c examples/poll_example.c examples/leader_example.c \
	    $(DESTDIR)$(PREFIX)/share/statestore/examples/
	install -m 0644 docs/statestore.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 docs/statestore-client.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 0644 completion/statestore.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/statestore
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    statestore.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/statestore.pc

# Debian packages (debian/), built by dpkg-buildpackage from a clean copy of
# the tracked files, into build/deb.
deb:
	@scripts/deb.sh

# The packages installed into a freshly bootstrapped Debian bookworm, and
# the README's tour run against the broker Debian's way (about 2 minutes
# once the bootstrapped tree is cached under build/pkgtest).
test-package: deb
	@scripts/test-package.sh

clean:
	rm -rf build

-include $(ETCD_OBJ:.o=.d) $(SHLIB_OBJ:.o=.d) $(STRESS_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(CLIENT_OBJ:.o=.d) $(CORE_OBJ:.o=.d) $(UNIT_OBJ:.o=.d) $(INTEG_OBJ:.o=.d) $(PLUGIN_OBJ:.o=.d) \
         $(LIFE_OBJ:.o=.d) $(OUT)/tests/private_fs.d $(OUT)/tests/unit/main.d $(OUT)/tests/lifecycle/main.d $(OUT)/tests/integration/main.d

# ---------------------------------------------------------------------------
# Compatibility with the official Azure IoT Operations SDKs: the Rust crate's
# integration tests (from crates.io) and the Go SDK's scenarios (SDK from the
# Go module proxy) against mosquitto with the plugin, in a private network
# namespace, INTEROP_ROUNDS times (default 5), on LMDB then on a single-member
# etcd (INTEROP_BACKENDS); and the Go SDK's leased lock
# contending with `statestore lock`. Needs Go >= 1.25 and Rust >= 1.88
# (rustup); downloads and builds stay under build/interop.
.PHONY: interop
interop: deps
	@scripts/deps.sh libssl-dev pkg-config iproute2 util-linux
	@scripts/etcd-tools.sh
	@$(MAKE) --no-print-directory build/plain/statestore.so build/plain/statestore SAN=0
	@scripts/interop.sh $(CURDIR)/build/plain/statestore.so $(CURDIR)/build/plain/statestore
