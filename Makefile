# statestore - build, test and run.
#
#   make test        build and run every test (installs missing packages)
#   make test SAN=1  the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make valgrind    the unit tests under valgrind
#   make fuzz        run the libFuzzer target for FUZZ_SECONDS (default 60)
#   make deps        install the Debian packages the build needs

CC      ?= cc
SAN     ?= 0
PREFIX  ?= /usr/local
FUZZ_SECONDS ?= 60

ifeq ($(SAN),1)
VARIANT  := san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT      := -O1
else
VARIANT  := plain
SANFLAGS :=
OPT      := -O2
endif

OUT := build/$(VARIANT)

WARN   := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
          -Wformat=2 -Wvla -Werror
CFLAGS_ALL = -std=c11 -D_DEFAULT_SOURCE $(OPT) -g $(WARN) -fPIC -fvisibility=hidden \
          $(SANFLAGS) $(shell pkg-config --cflags lmdb 2>/dev/null) $(CFLAGS)
LDLIBS_ALL = $(shell pkg-config --libs lmdb 2>/dev/null) $(LDLIBS)

CORE_SRC  := $(wildcard core/*.c)
CORE_OBJ  := $(CORE_SRC:%.c=$(OUT)/%.o)
TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(OUT)/%.o)
LIBCORE   := $(OUT)/libstatestore-core.a

.PHONY: all deps test check valgrind fuzz clean

all: deps $(LIBCORE)

deps:
	@scripts/deps.sh

$(OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(LIBCORE): $(CORE_OBJ)
	$(AR) rcs $@ $^

$(OUT)/tests/run: $(TEST_OBJ) $(LIBCORE)
	$(CC) $(SANFLAGS) -o $@ $(TEST_OBJ) $(LIBCORE) $(LDLIBS_ALL)

$(OUT)/fuzz/replay: $(OUT)/fuzz/fuzz_request.o $(OUT)/fuzz/replay.o $(LIBCORE)
	$(CC) $(SANFLAGS) -o $@ $^ $(LDLIBS_ALL)

test: deps
	@$(MAKE) --no-print-directory $(OUT)/tests/run $(OUT)/fuzz/replay
	@$(OUT)/fuzz/replay fuzz/corpus/request
	@$(OUT)/tests/run

check: test

# The unit tests under valgrind: any memory error or definite leak fails.
valgrind: deps
	@scripts/deps.sh valgrind
	@$(MAKE) --no-print-directory build/plain/tests/run SAN=0
	@valgrind -q --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite \
	    --error-exitcode=9 build/plain/tests/run

# libFuzzer build with Debian's clang; new inputs go to build/fuzz/corpus,
# the committed seeds in fuzz/corpus/request are only read.
FUZZ_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined \
              $(shell pkg-config --cflags lmdb 2>/dev/null)
build/fuzz/fuzz_request: fuzz/fuzz_request.c $(CORE_SRC) $(wildcard core/*.h)
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o $@ fuzz/fuzz_request.c $(CORE_SRC) $(LDLIBS_ALL)

fuzz: deps
	@scripts/deps.sh clang libclang-rt-14-dev
	@$(MAKE) --no-print-directory build/fuzz/fuzz_request
	@mkdir -p build/fuzz/corpus
	build/fuzz/fuzz_request -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    build/fuzz/corpus fuzz/corpus/request

clean:
	rm -rf build

-include $(CORE_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
