# safeload.h - build, test, benchmark. Everything lands in build/.
CC      ?= cc
CXX     ?= c++
CLANG   ?= clang
BUILD   := build
WARN    := -Wall -Wextra -pedantic -Werror
CFLAGS  ?= -O2
STD     := -std=c99
LDLIBS  := -lpthread -lm
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

HDR     := safeload.h
CLI     := $(BUILD)/safeload

# unit tests: one program each, run by `make test` (normal and sanitizer builds)
UNIT    := test_format test_writer test_cast test_load test_device
UNIT_BIN    := $(addprefix $(BUILD)/,$(UNIT))
UNIT_SAN    := $(addprefix $(BUILD)/san/,$(UNIT))

.PHONY: all test test-unit test-san test-cxx test-exhaustive test-neon test-tsan test-win \
        demo bench fuzz examples clean

all: $(CLI)

$(BUILD) $(BUILD)/san $(BUILD)/tsan $(BUILD)/win $(BUILD)/neon $(BUILD)/fuzz:
	mkdir -p $@

$(CLI): examples/safeload_cli.c $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

$(BUILD)/test_%: tests/test_%.c tests/testutil.h $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) $(CFLAGS) -I. -Itests $< -o $@ $(LDLIBS)

$(BUILD)/san/test_%: tests/test_%.c tests/testutil.h $(HDR) | $(BUILD)/san
	$(CLANG) $(STD) $(WARN) -O1 -g $(SAN) -I. -Itests $< -o $@ $(LDLIBS)

test: test-unit test-san test-cxx
	@echo "make test: all passed"

test-unit: $(UNIT_BIN) $(CLI)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; ./$$t; done
	@sh tests/test_cli.sh $(CLI)

test-san: $(UNIT_SAN)
	@set -e; for t in $(UNIT_SAN); do echo "== $$t"; ASAN_OPTIONS=detect_leaks=1 ./$$t; done

# The header must compile as C++ (and as C99 with every switch) without warnings.
test-cxx: | $(BUILD)
	$(CXX) -x c++ -std=c++11 $(WARN) -O2 -I. -c tests/compile_check.c -o $(BUILD)/cxx.o
	$(CC) $(STD) $(WARN) -O2 -I. -DSAFELOAD_STATIC -DSAFELOAD_NO_THREADS -DSAFELOAD_NO_SIMD \
	    -c tests/compile_check.c -o $(BUILD)/c_switches.o
	$(CLANG) $(STD) $(WARN) -O2 -I. -c tests/compile_check.c -o $(BUILD)/clang.o

# Every f32 input through f32->f16 and f32->bf16 on scalar and the best path (slow: ~minutes).
test-exhaustive: $(BUILD)/cast_exhaustive
	./$(BUILD)/cast_exhaustive

$(BUILD)/cast_exhaustive: tests/cast_exhaustive.c tests/testutil.h $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) -O2 -I. -Itests $< -o $@ $(LDLIBS)

# NEON kernels: cross-compiled for AArch64 and run under qemu-user.
AARCH64_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64
test-neon: | $(BUILD)/neon
	$(AARCH64_CC) $(STD) $(WARN) -O2 -static -I. -Itests tests/test_cast.c -o $(BUILD)/neon/test_cast $(LDLIBS)
	$(AARCH64_CC) $(STD) $(WARN) -O2 -static -I. -Itests -DSL_EXHAUSTIVE_STRIDE=97 \
	    tests/cast_exhaustive.c -o $(BUILD)/neon/cast_exhaustive $(LDLIBS)
	$(QEMU_AARCH64) $(BUILD)/neon/test_cast
	$(QEMU_AARCH64) $(BUILD)/neon/cast_exhaustive

bench: $(BUILD)/bench_cast $(BUILD)/bench_parse
	./$(BUILD)/bench_parse
	./$(BUILD)/bench_cast

$(BUILD)/bench_%: tests/bench_%.c tests/testutil.h $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) -O2 -I. -Itests $< -o $@ $(LDLIBS)

demo: $(CLI)
	./$(CLI) sample $(BUILD)/sample.safetensors
	./$(CLI) inspect $(BUILD)/sample.safetensors
	./$(CLI) verify $(BUILD)/sample.safetensors

clean:
	rm -rf $(BUILD)
