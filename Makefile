# safeload.h - build, test, benchmark. Everything lands in build/.
#
#   make            the command-line tool, build/safeload
#   make demo       write a sample checkpoint; inspect, verify, load, show and convert it
#   make test       every test: unit tests, the same under ASan+UBSan, C++ and switch builds,
#                   weak-linking, the CLI, the README's quick start, the Win32 code under
#                   wine (when installed), and
#                   an MSVC-mode build under wine (test-msvc); the benchmarks are built, not run
#   make test-exhaustive / test-neon / test-32 / test-be / test-tsan / test-msan / test-win / test-msvc / fuzz   the slow or
#                   tool-specific ones
#   make bench      parse, cast, load and device-pipeline benchmarks with this machine's limits
#   make install    PREFIX=/usr/local [DESTDIR=...]: header, pkg-config file, CMake package
#   make examples   engine_arena always; cuda_upload with nvcc; ascend_upload compile-checked;
#                   safeload_mpi with mpicc (make test-mpi runs it under mpirun)
CC      ?= cc
CXX     ?= c++
CLANG   ?= clang
BUILD   := build
WARN    := -Wall -Wextra -pedantic -Werror
CFLAGS  ?= -O2
STD     := -std=c99
LDLIBS  := -lpthread -lm
# what a demanding user may build with: the header stays clean under it (test-cxx)
STRICT  := -Wshadow -Wconversion -Wsign-conversion -Wcast-qual -Wstrict-prototypes \
           -Wmissing-prototypes -Wundef -Wdouble-promotion -Wvla -Wformat=2 -Wnull-dereference \
           -Wimplicit-fallthrough
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

HDR     := safeload.h
CLI     := $(BUILD)/safeload
TESTH   := tests/testutil.h tests/fakedev.h tests/pagecache.h tests/shared_impl.h $(HDR)

# unit tests: one program each, run by `make test` (normal and sanitizer builds)
UNIT    := test_format test_writer test_cast test_load test_device test_macros test_share test_swap
UNIT_BIN := $(addprefix $(BUILD)/,$(UNIT))
UNIT_SAN := $(addprefix $(BUILD)/san/,$(UNIT))

.PHONY: all test test-unit tsan-run-split test-san test-cxx test-weak test-cli test-exhaustive test-neon \
        test-32 test-be test-tsan test-msan test-win test-msvc test-readme demo bench fuzz fuzz-parse fuzz-index corpus index-corpus examples \
        clean

all: $(CLI)

$(BUILD) $(BUILD)/san $(BUILD)/gsan $(BUILD)/tsan $(BUILD)/msan $(BUILD)/win $(BUILD)/msvc $(BUILD)/neon $(BUILD)/arm32 $(BUILD)/s390x \
$(BUILD)/fuzz $(BUILD)/check $(BUILD)/ok $(BUILD)/log $(BUILD)/split:
	mkdir -p $@

$(CLI): examples/safeload_cli.c $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

# ---- make test -------------------------------------------------------------------------------
# Every compile is a file target and every test run leaves a stamp in build/ok/ (its output in
# build/log/), so a second `make test` with nothing changed rebuilds and reruns nothing; a
# change reruns what depends on it. The implementation is compiled once per configuration
# (build/impl.o, build/san/impl.o, build/gsan/impl.o) and the unit tests that use only the
# public API link it (they build with -DSL_TEST_SHARED_IMPL; alone they still define the
# implementation themselves). test_format and test_cast reach inside (sl__ functions),
# test_load sets I/O seams and test_macros swaps the allocator, so they compile their own.
SHARED_UNIT := test_writer test_device
# keep every built file: test programs made through pattern chains are not throw-away
.SECONDARY:
NPROC := $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
OK  := $(BUILD)/ok
LOG := $(BUILD)/log
TESTDATA := $(wildcard tests/data/reference/*)
# $(call run_test,COMMAND): run it into build/log/<stamp>.log; on success print its time and last
# line and touch the stamp ($@), on failure print the whole log.
run_test = @mkdir -p $(OK) $(LOG); t0=$$(date +%s); if $(1) > $(LOG)/$(@F).log 2>&1; then \
    echo "ok    $(@F) ($$(( $$(date +%s) - t0 )) s): $$(tail -n 1 $(LOG)/$(@F).log | tr -d '\r' | grep . || echo ran)"; \
    touch $@; \
    else cat $(LOG)/$(@F).log; echo "FAILED $(@F) (log: $(LOG)/$(@F).log)"; exit 1; fi

# The native test programs build as Ubuntu's gcc builds by default, with glibc's fortified
# string functions (level 3): gcc warns there where it does not otherwise, and -Werror would
# stop a user's `make test`. Linux only, and only when CFLAGS optimise (fortify needs it).
UNAME := $(shell uname -s)
TFLAGS := $(CFLAGS) $(if $(and $(filter Linux,$(UNAME)),$(filter -O1 -O2 -O3 -Os -Og -Ofast,$(CFLAGS))),-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3)
$(BUILD)/impl.o: tests/impl.c $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) $(TFLAGS) -I. -c $< -o $@
$(BUILD)/san/impl.o: tests/impl.c $(HDR) | $(BUILD)/san
	$(CLANG) $(STD) $(WARN) -O1 -g $(SAN) -I. -c $< -o $@
# gcc's sanitizer builds, with fortified glibc: the implementation (gcc warns under ASan where
# clang does not), the tests that link it, and the cast tests, run (gcc lays out over-aligned
# locals differently from clang under ASan's fake stack: an AVX-512 kernel's tail once faulted
# there). Every unit test builds fortified natively (TFLAGS).
GSAN := -O1 -g $(SAN) -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3
$(BUILD)/gsan/impl.o: tests/impl.c $(HDR) | $(BUILD)/gsan
	$(CC) $(STD) $(WARN) $(GSAN) -I. -c $< -o $@

# the unit tests on the shared implementation object
$(addprefix $(BUILD)/,$(SHARED_UNIT)): $(BUILD)/%: tests/%.c $(TESTH) $(BUILD)/impl.o
	$(CC) $(STD) $(WARN) $(TFLAGS) -DSL_TEST_SHARED_IMPL -I. -Itests $< $(BUILD)/impl.o -o $@ $(LDLIBS)
$(addprefix $(BUILD)/san/,$(SHARED_UNIT)): $(BUILD)/san/%: tests/%.c $(TESTH) $(BUILD)/san/impl.o
	$(CLANG) $(STD) $(WARN) -O1 -g $(SAN) -DSL_TEST_SHARED_IMPL -I. -Itests $< $(BUILD)/san/impl.o -o $@ $(LDLIBS)
$(addprefix $(BUILD)/gsan/,$(SHARED_UNIT)): $(BUILD)/gsan/%: tests/%.c $(TESTH) $(BUILD)/gsan/impl.o
	$(CC) $(STD) $(WARN) $(GSAN) -DSL_TEST_SHARED_IMPL -I. -Itests $< $(BUILD)/gsan/impl.o -o $@ $(LDLIBS)
# every other test: its own implementation
$(BUILD)/test_%: tests/test_%.c $(TESTH) | $(BUILD)
	$(CC) $(STD) $(WARN) $(TFLAGS) -I. -Itests $< -o $@ $(LDLIBS)
$(BUILD)/san/test_%: tests/test_%.c $(TESTH) | $(BUILD)/san
	$(CLANG) $(STD) $(WARN) -O1 -g $(SAN) -I. -Itests $< -o $@ $(LDLIBS)
$(BUILD)/gsan/test_%: tests/test_%.c $(TESTH) | $(BUILD)/gsan
	$(CC) $(STD) $(WARN) $(GSAN) -I. -Itests $< -o $@ $(LDLIBS)


UNIT_OK := $(addprefix $(OK)/,$(UNIT))
$(OK)/test_%: $(BUILD)/test_% $(TESTDATA)
	$(call run_test,./$<)
# the format tests again with every header of 64 bytes and up parsed in parts on 4 threads:
# each error id, offset and message must still be the one-thread parse's
$(BUILD)/split/test_format: tests/test_format.c $(TESTH) | $(BUILD)/split
	$(CC) $(STD) $(WARN) $(TFLAGS) -DSAFELOAD_PARSE_SPLIT_MIN=64 -I. -Itests $< -o $@ $(LDLIBS)
$(OK)/split-test_format: $(BUILD)/split/test_format $(TESTDATA)
	$(call run_test,env SAFELOAD_NUM_THREADS=4 ./$<)
# its split test (a 1.6 MB header mutated next to its cuts, 2-8 threads against one) with
# every table of every file (header, parts, entries, dims, hashes, names) in a huge-page
# mapping: 4 KiB pages measured dear, huge ones cheap (all 140,000 checks that way: 40 s of
# mmap and munmap here, too slow for every run)
$(BUILD)/split/big_test_format: tests/test_format.c $(TESTH) | $(BUILD)/split
	$(CC) $(STD) $(WARN) $(TFLAGS) -DSAFELOAD_PARSE_SPLIT_MIN=64 -DSAFELOAD_BIG_MIN=64 \
	    '-DSAFELOAD_BIG_NS(huge,ns)=((huge) ? 1000 : 100000)' -I. -Itests $< -o $@ $(LDLIBS)
$(OK)/big-test_format: $(BUILD)/split/big_test_format $(TESTDATA)
	$(call run_test,env SAFELOAD_NUM_THREADS=4 SAFELOAD_TEST_SPLIT_ONLY=1 ./$<)
test-unit: $(UNIT_OK) $(OK)/split-test_format $(OK)/big-test_format

UNIT_GSAN := $(addprefix $(BUILD)/gsan/,test_cast $(SHARED_UNIT))
SAN_OK := $(addprefix $(OK)/san-,$(UNIT)) $(OK)/gsan-test_cast
SAN_RUN := ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1 SAFELOAD_TEST_QUICK=1
$(OK)/san-%: $(BUILD)/san/% $(TESTDATA)
	$(call run_test,env $(SAN_RUN) ./$<)
$(OK)/gsan-%: $(BUILD)/gsan/% $(TESTDATA)
	$(call run_test,env $(SAN_RUN) ./$<)
test-san: $(SAN_OK) $(UNIT_GSAN)

# fail_io.so (tests/fail_io.c) makes reads and opens fail on cue for the CLI's error tests;
# an LD_PRELOAD shim, so Linux only (elsewhere those tests are skipped, and test_cli.sh says so)
FAIL_IO_SO := $(if $(filter Linux,$(UNAME)),$(BUILD)/fail_io.so)
$(BUILD)/fail_io.so: tests/fail_io.c | $(BUILD)
	$(CC) -shared -fPIC -O1 $< -o $@ -ldl
$(OK)/cli: $(CLI) $(FAIL_IO_SO) tests/test_cli.sh tests/show_cmp.sh $(TESTDATA)
	$(call run_test,env FAIL_IO=$(if $(FAIL_IO_SO),$(CURDIR)/$(FAIL_IO_SO)) sh tests/test_cli.sh $(CLI))
test-cli: $(OK)/cli

# The README's quick start, as printed there: its safeload_impl.c and main.c (each ```c block
# is found by its first line, a comment naming the file) built with its Linux compile line in
# a folder of their own, then main.c again under the warning flags and as C++; run on the sample.
README_CODE = awk -v f='$(1)' '/^```c$$/ { s = 1; next } s { s = 0; if (index($$0, "/* " f ":") == 1) on = 1 } /^```$$/ { on = 0 } on' README.md
RDM := $(BUILD)/readme
$(RDM)/loadall: README.md $(HDR) | $(BUILD)
	rm -rf $(RDM) && mkdir -p $(RDM) && cp $(HDR) $(RDM)/
	$(call README_CODE,safeload_impl.c) > $(RDM)/safeload_impl.c
	$(call README_CODE,main.c) > $(RDM)/main.c
	grep -q SAFELOAD_IMPLEMENTATION $(RDM)/safeload_impl.c
	grep -q '^int main' $(RDM)/main.c
	line=$$(grep -m1 '^cc .*# Linux' README.md | sed 's/ *#.*//'); echo "$$line"; \
	    test -n "$$line" && cd $(RDM) && sh -c "$$line"
$(RDM)/main_strict.o: $(RDM)/loadall
	$(CC) $(STD) $(WARN) $(CFLAGS) -I. -c $(RDM)/main.c -o $@
	$(CXX) -x c++ -std=c++11 $(WARN) -O2 -I. -fsyntax-only $(RDM)/main.c
$(OK)/readme: $(RDM)/loadall $(RDM)/main_strict.o $(CLI)
	@mkdir -p $(OK)
	./$(CLI) sample $(RDM)/sample.safetensors > /dev/null
	cd $(RDM) && ./loadall sample.safetensors > out.txt
	grep -q '^model.embed_tokens.weight: F32, 8192 bytes at ' $(RDM)/out.txt
	grep -q '^model.layers.0.mlp.experts.3.up_proj.weight: F32, 2048 bytes at ' $(RDM)/out.txt
	test "$$(wc -l < $(RDM)/out.txt)" -eq 6
	! ./$(RDM)/loadall $(BUILD)/no_such_file.safetensors 2> $(RDM)/err.txt
	grep -q 'no_such_file.safetensors: IO_ERROR: ' $(RDM)/err.txt
	@touch $@; echo "ok    readme: the quick start builds as printed and runs"
test-readme: $(OK)/readme

# Named hooks: found through weak references when linked in; not found (HOOK_MISSING, the
# documented trap) when they sit in a static archive nothing else pulls in. Both link the
# implementation as its own object, as the README's safeload_impl.c.
$(BUILD)/weak_hooks_def.o: tests/weak_hooks_def.c tests/fakedev.h $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) $(TFLAGS) -I. -Itests -c $< -o $@
$(BUILD)/libweakhooks.a: $(BUILD)/weak_hooks_def.o
	rm -f $@ && ar rcs $@ $<
$(BUILD)/test_weak: tests/test_weak.c $(TESTH) $(BUILD)/weak_hooks_def.o $(BUILD)/impl.o
	$(CC) $(STD) $(WARN) $(TFLAGS) -DSL_TEST_SHARED_IMPL -I. -Itests $< $(BUILD)/weak_hooks_def.o \
	    $(BUILD)/impl.o -o $@ $(LDLIBS)
$(BUILD)/test_weak_archive: tests/test_weak.c $(TESTH) $(BUILD)/libweakhooks.a $(BUILD)/impl.o
	$(CC) $(STD) $(WARN) $(TFLAGS) -DSL_TEST_SHARED_IMPL -DEXPECT_MISSING -I. -Itests $< \
	    $(BUILD)/impl.o -L$(BUILD) -lweakhooks -o $@ $(LDLIBS)
$(OK)/weak: $(BUILD)/test_weak
	$(call run_test,./$<)
$(OK)/weak_archive: $(BUILD)/test_weak_archive
	$(call run_test,./$<)
test-weak: $(OK)/weak $(OK)/weak_archive

# The header compiles as C++ and as C99 with every switch, with gcc and clang, no warnings;
# each build is a file of its own (so -j builds them side by side), the programs run.
CHK := $(BUILD)/check
CC_CHECK := tests/compile_check.c $(HDR)
$(CHK)/cxx11: $(CC_CHECK) | $(CHK)
	$(CXX) -x c++ -std=c++11 $(WARN) -O2 -I. $< -o $@ $(LDLIBS)
$(CHK)/cxx17.o: $(CC_CHECK) | $(CHK)
	$(CLANG) -x c++ -std=c++17 $(WARN) -O2 -I. -c $< -o $@
$(CHK)/cli_cxx.o: examples/safeload_cli.c $(HDR) | $(CHK)
	$(CXX) -x c++ -std=c++11 $(WARN) -O2 -I. -c $< -o $@
$(CHK)/c_switches: $(CC_CHECK) | $(CHK)
	$(CC) $(STD) $(WARN) -O2 -I. -DSAFELOAD_STATIC -DSAFELOAD_NO_THREADS -DSAFELOAD_NO_SIMD \
	    -DSAFELOAD_NO_IO_URING $< -o $@ $(LDLIBS)
$(CHK)/clang_noweak.o: $(CC_CHECK) | $(CHK)
	$(CLANG) $(STD) $(WARN) -O2 -I. -DSAFELOAD_NO_WEAK_HOOKS -c $< -o $@
$(CHK)/cxx_O0.o: $(CC_CHECK) | $(CHK)
	$(CXX) -x c++ -std=c++11 $(WARN) -Wshadow -Wconversion -Wsign-conversion -O0 -I. -c $< -o $@
$(CHK)/last_gcc: $(CC_CHECK) | $(CHK)
	$(CC) $(STD) $(WARN) -O2 -I. -DSYSTEM_HEADERS_FIRST $< -o $@ $(LDLIBS)
$(CHK)/last_clang: $(CC_CHECK) | $(CHK)
	$(CLANG) $(STD) $(WARN) -O2 -I. -DSYSTEM_HEADERS_FIRST $< -o $@ $(LDLIBS)
# gcc at every optimisation level (each finds other warnings), clang at -O2
$(CHK)/strict_O%.o: $(CC_CHECK) | $(CHK)
	$(CC) $(STD) $(WARN) $(STRICT) -Wredundant-decls -O$* -I. -c $< -o $@
$(CHK)/strict_clang.o: $(CC_CHECK) | $(CHK)
	$(CLANG) $(STD) $(WARN) $(STRICT) -Wredundant-decls -Wcast-align -O2 -I. -c $< -o $@
CXX_OBJS := $(addprefix $(CHK)/,cxx17.o cli_cxx.o clang_noweak.o cxx_O0.o strict_O0.o strict_O1.o \
            strict_O2.o strict_O3.o strict_Os.o strict_clang.o)
CXX_OK := $(addprefix $(OK)/check-,cxx11 c_switches last_gcc last_clang)
$(OK)/check-%: $(CHK)/%
	$(call run_test,./$<)
test-cxx: $(CXX_OBJS) $(CXX_OK)

# ---- slower and tool-specific tests (CI runs them all) ----------------------------------------
# Every f32 input through f32->f16 and f32->bf16 on scalar and the SIMD paths (minutes).
test-exhaustive: $(BUILD)/cast_exhaustive
	./$(BUILD)/cast_exhaustive

$(BUILD)/cast_exhaustive: tests/cast_exhaustive.c $(TESTH) | $(BUILD)
	$(CC) $(STD) $(WARN) -O2 -I. -Itests $< -o $@ $(LDLIBS)

# NEON kernels: cross-compiled for AArch64 and run under qemu-user.
AARCH64_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64
# each program a file target, so `make -j2 test-neon` compiles them side by side
NEON := $(STD) $(WARN) -O2 -static -I. -Itests
$(BUILD)/neon/test_%: tests/test_%.c $(TESTH) | $(BUILD)/neon
	$(AARCH64_CC) $(NEON) $< -o $@ $(LDLIBS)
$(BUILD)/neon/cast_exhaustive: tests/cast_exhaustive.c $(TESTH) | $(BUILD)/neon
	$(AARCH64_CC) $(NEON) -DSL_EXHAUSTIVE_STRIDE=97 $< -o $@ $(LDLIBS)
test-neon: $(addprefix $(BUILD)/neon/,test_cast cast_exhaustive test_format)
	$(QEMU_AARCH64) $(BUILD)/neon/test_cast
	$(QEMU_AARCH64) $(BUILD)/neon/cast_exhaustive
	SAFELOAD_TEST_QUICK=1 $(QEMU_AARCH64) $(BUILD)/neon/test_format

# A 32-bit target without 8-byte atomics (ARMv5, Debian armel) under qemu-user: 32-bit size_t
# and pointers, the mutex-kept byte count, no libatomic. Unit tests and the CLI tests.
ARM32_CC ?= arm-linux-gnueabi-gcc-12
QEMU_ARM ?= qemu-arm
ARM32 := $(STD) $(WARN) -O2 -static -D_FILE_OFFSET_BITS=64 -I. -Itests
# Each test is a target of its own (arm32-run-NAME), so `make -j2 test-32` builds and runs two
# at a time.
$(BUILD)/arm32/test_%: tests/test_%.c $(TESTH) | $(BUILD)/arm32
	$(ARM32_CC) $(ARM32) $< -o $@ $(LDLIBS)
# (test_writer and test_device link one implementation object, as in make test)
$(BUILD)/arm32/impl.o: tests/impl.c $(HDR) | $(BUILD)/arm32
	$(ARM32_CC) $(ARM32) -c $< -o $@
$(addprefix $(BUILD)/arm32/,$(SHARED_UNIT)): $(BUILD)/arm32/%: tests/%.c $(TESTH) $(BUILD)/arm32/impl.o
	$(ARM32_CC) $(ARM32) -DSL_TEST_SHARED_IMPL $< $(BUILD)/arm32/impl.o -o $@ $(LDLIBS)
$(BUILD)/arm32/safeload: examples/safeload_cli.c $(HDR) | $(BUILD)/arm32
	$(ARM32_CC) $(ARM32) $< -o $@ $(LDLIBS)
arm32-run-test_%: $(BUILD)/arm32/test_%
	@echo "== test_$* (armel, qemu)"; SAFELOAD_TEST_QUICK=1 $(QEMU_ARM) $<
arm32-run-cli: $(BUILD)/arm32/safeload
	RUNNER=$(QEMU_ARM) sh tests/test_cli.sh $<
test-32: $(addprefix arm32-run-,$(UNIT) cli)

# A big-endian host (s390x) under qemu-user: files stay little-endian, loads hand out host
# order (the swapping code for real; tests/test_swap.c runs it natively through a seam). The
# unit tests, the CLI tests, the header under STRICT, and tests/be_same.sh: load --checksum
# and convert (and sample) give the native tool's output byte for byte. Per-test targets as
# test-32 (`make -j2 test-be`). s390x evaluates float expressions as double
# (FLT_EVAL_METHOD 1), so compile_check.c's float compare warns under -Wdouble-promotion.
S390X_CC ?= s390x-linux-gnu-gcc
QEMU_S390X ?= qemu-s390x
S390X := $(STD) $(WARN) -O2 -static -I. -Itests
$(BUILD)/s390x/test_%: tests/test_%.c $(TESTH) | $(BUILD)/s390x
	$(S390X_CC) $(S390X) $< -o $@ $(LDLIBS)
$(BUILD)/s390x/impl.o: tests/impl.c $(HDR) | $(BUILD)/s390x
	$(S390X_CC) $(S390X) -c $< -o $@
$(addprefix $(BUILD)/s390x/,$(SHARED_UNIT)): $(BUILD)/s390x/%: tests/%.c $(TESTH) $(BUILD)/s390x/impl.o
	$(S390X_CC) $(S390X) -DSL_TEST_SHARED_IMPL $< $(BUILD)/s390x/impl.o -o $@ $(LDLIBS)
$(BUILD)/s390x/safeload: examples/safeload_cli.c $(HDR) | $(BUILD)/s390x
	$(S390X_CC) $(S390X) $< -o $@ $(LDLIBS)
be-run-test_%: $(BUILD)/s390x/test_%
	@echo "== test_$* (s390x, qemu)"; SAFELOAD_TEST_QUICK=1 $(QEMU_S390X) $<
be-run-cli: $(BUILD)/s390x/safeload
	RUNNER=$(QEMU_S390X) sh tests/test_cli.sh $<
be-run-same: $(BUILD)/s390x/safeload $(CLI)
	sh tests/be_same.sh ./$(CLI) "$(QEMU_S390X) $(BUILD)/s390x/safeload" $(BUILD)/s390x/same
be-run-strict: | $(BUILD)/s390x
	$(S390X_CC) $(STD) $(WARN) $(STRICT) -Wno-double-promotion -Wredundant-decls -O2 -I. \
	    -c tests/compile_check.c -o $(BUILD)/s390x/strict.o
test-be: $(addprefix be-run-,$(UNIT) cli same strict)

# Every unit test and the CLI under MemorySanitizer (reads of uninitialised memory, which
# ASan does not see). tests/msan_stat.c marks what stat/fstat/lstat fill as initialised:
# clang 14's runtime does not intercept glibc 2.33's versions of them. RUNNER=env skips the
# CLI cases that need an address-space limit or the LD_PRELOAD shim.
# MSAN_ORIGINS=1 also tracks where each uninitialised value came from (reports name the
# allocation; runs take about 1.4x as long)
MSAN_CC := -O1 -g -fsanitize=memory $(if $(MSAN_ORIGINS),-fsanitize-memory-track-origins) -fno-omit-frame-pointer
MSAN := $(MSAN_CC) -Wl,--wrap=fstat64 -Wl,--wrap=stat64 -Wl,--wrap=lstat64
# (as test-32: `make -j2 test-msan` builds and runs two at a time; test_writer and test_device
# link one MSan implementation object, as in make test)
$(BUILD)/msan/impl.o: tests/impl.c $(HDR) | $(BUILD)/msan
	$(CLANG) $(STD) $(MSAN_CC) -I. -c $< -o $@
$(addprefix $(BUILD)/msan/,$(SHARED_UNIT)): $(BUILD)/msan/%: tests/%.c tests/msan_stat.c $(TESTH) $(BUILD)/msan/impl.o
	$(CLANG) $(STD) $(MSAN) -DSL_TEST_SHARED_IMPL -I. -Itests $< tests/msan_stat.c $(BUILD)/msan/impl.o -o $@ $(LDLIBS)
$(BUILD)/msan/test_%: tests/test_%.c tests/msan_stat.c $(TESTH) | $(BUILD)/msan
	$(CLANG) $(STD) $(MSAN) -I. -Itests $< tests/msan_stat.c -o $@ $(LDLIBS)
$(BUILD)/msan/safeload: examples/safeload_cli.c tests/msan_stat.c $(HDR) | $(BUILD)/msan
	$(CLANG) $(STD) $(MSAN) -I. $< tests/msan_stat.c -o $@ $(LDLIBS)
msan-run-test_%: $(BUILD)/msan/test_%
	@echo "== test_$* (MSan)"; SAFELOAD_TEST_QUICK=1 ./$<
msan-run-cli: $(BUILD)/msan/safeload
	RUNNER=env sh tests/test_cli.sh $<
test-msan: $(addprefix msan-run-,$(UNIT) cli)

# The worker pool and the device pipeline under ThreadSanitizer.
# (as test-32: `make -j2 test-tsan` builds and runs both at once)
$(BUILD)/tsan/test_%: tests/test_%.c $(TESTH) | $(BUILD)/tsan
	$(CLANG) $(STD) -O1 -g -fsanitize=thread -I. -Itests $< -o $@ $(LDLIBS)
tsan-run-test_%: $(BUILD)/tsan/test_%
	@echo "== test_$* (TSan)"; SAFELOAD_TEST_QUICK=1 ./$<
# large headers parsed in parts on 2, 3 and 8 threads (test_format's split test)
tsan-run-split: $(BUILD)/tsan/test_format
	@echo "== test_format, headers in parts (TSan)"; SAFELOAD_TEST_QUICK=1 SAFELOAD_TEST_SPLIT_ONLY=1 ./$<
test-tsan: tsan-run-test_load tsan-run-test_device tsan-run-split

# The Win32 code (CreateFileW, ReadFile, SRWLOCK, CreateThread, MoveFileExW) built with
# mingw-w64 and run under wine; without either, make test's summary says which is missing.
MINGW_CC ?= x86_64-w64-mingw32-gcc
WINE ?= wine
WINE_RUN := WINE=$(WINE) sh tests/wine_run.sh
HAVE_MINGW := $(shell command -v $(MINGW_CC) 2>/dev/null)
HAVE_WINE := $(shell command -v $(WINE) 2>/dev/null)
WIN_TESTS := test_format test_cast test_win
WIN := $(BUILD)/win
WIN_EXE := $(addprefix $(WIN)/,$(addsuffix .exe,$(WIN_TESTS)) safeload.exe)
$(WIN)/test_%.exe: tests/test_%.c $(TESTH) | $(WIN)
	$(MINGW_CC) $(STD) $(WARN) -O2 -I. -Itests $< -o $@ -static -lpthread
$(WIN)/safeload.exe: examples/safeload_cli.c $(HDR) | $(WIN)
	$(MINGW_CC) $(STD) $(WARN) -O2 -I. $< -o $@ -static -lpthread
$(OK)/win: $(WIN_EXE) $(CLI) tests/show_cmp.sh tests/wine_run.sh $(TESTDATA) | $(OK)
	for t in $(WIN_TESTS); do echo "== $$t.exe (wine)"; $(WINE_RUN) $(WIN)/$$t.exe || exit 1; done
	$(WINE_RUN) $(WIN)/safeload.exe sample $(WIN)/sample.safetensors
	$(WINE_RUN) $(WIN)/safeload.exe verify $(WIN)/sample.safetensors
	$(WINE_RUN) $(WIN)/safeload.exe load $(WIN)/sample.safetensors --threads 2 --checksum
	$(WINE_RUN) $(WIN)/safeload.exe convert $(WIN)/sample.safetensors $(WIN)/sample_f32.safetensors --dtype f32
	./$(CLI) convert $(WIN)/sample.safetensors $(WIN)/native_f32.safetensors --dtype f32 >/dev/null
	cmp $(WIN)/sample_f32.safetensors $(WIN)/native_f32.safetensors
	@echo "convert --dtype f32 (wine) gives the native bytes"
	rm -rf $(WIN)/shards $(WIN)/native_shards $(WIN)/sig
	$(WINE_RUN) $(WIN)/safeload.exe convert $(WIN)/sample.safetensors $(WIN)/shards --max-shard-size 3KB --dtype f32
	./$(CLI) convert $(WIN)/sample.safetensors $(WIN)/native_shards --max-shard-size 3KB --dtype f32 >/dev/null
	diff -r $(WIN)/shards $(WIN)/native_shards
	@echo "convert --max-shard-size (wine) gives the native files"
	for p in data index; do SAFELOAD_CONVERT_TEST_SIGNAL=$$p:15 $(WINE_RUN) \
	    $(WIN)/safeload.exe convert $(WIN)/sample.safetensors $(WIN)/sig \
	    --max-shard-size 3KB >/dev/null 2>&1 && exit 1; [ ! -e $(WIN)/sig ] || exit 1; done
	@echo "convert: SIGTERM (wine) leaves nothing"
	WINE=$(WINE) sh tests/show_cmp.sh ./$(CLI) $(WIN)/safeload.exe $(WIN)
	@touch $@; echo "ok    win: the Win32 tests and the CLI under wine"
test-win: $(if $(HAVE_MINGW),$(WIN_EXE) $(if $(HAVE_WINE),$(OK)/win))

# The _MSC_VER side of the header (cpuid through __cpuidex/_xgetbv, _BitScanForward,
# _Interlocked atomics, __forceinline, intrinsics without target attributes, C4505) built as MSVC
# sees it: clang in MSVC mode with __clang__ unset, against the stand-in UCRT and Win32 headers
# in tests/msvc/include, linked by lld-link with import libraries made from tests/msvc/*.def,
# then run under wine. Like MSVC, every intrinsic is allowed everywhere (-m flags for the whole
# program), so the programs run only on a CPU with those features; elsewhere they are built only.
LLVM_BIN ?= $(dir $(realpath $(shell command -v $(CLANG) 2>/dev/null)))
HAVE_MSVC_TOOLS := $(and $(wildcard $(LLVM_BIN)lld-link),$(wildcard $(LLVM_BIN)llvm-dlltool))
MSVC_ISA := avx2 f16c fma avx512f avx512bw avx512vl avx512bf16 avx512vbmi
MSVC_MODE := --target=x86_64-pc-windows-msvc -fms-compatibility-version=19.30 -U__clang__ \
    -Wno-builtin-macro-redefined -nostdlibinc -isystem tests/msvc/include \
    $(addprefix -m,$(MSVC_ISA)) -Wall -Wextra -Werror -O2 -I. -Itests
MS := $(BUILD)/msvc
MSVC_LINK = $(LLVM_BIN)lld-link /nologo /subsystem:console /entry:mainCRTStartup \
    $(MS)/crt0.obj $(MS)/ucrtbase.lib $(MS)/kernel32.lib
# the features this CPU lacks, by /proc/cpuinfo's names (empty: the programs can run here)
MSVC_CPU_MISSING := $(strip $(shell for f in avx2 f16c fma avx512f avx512bw avx512vl avx512_bf16 avx512vbmi; do \
    grep -qw $$f /proc/cpuinfo 2>/dev/null || printf '%s ' $$f; done))
MSVC_HDRS := $(shell find tests/msvc/include -name '*.h' 2>/dev/null)
MSVC_FILES := $(addprefix $(MS)/,test_cast.exe test_win.exe safeload.exe cxx.obj switches.obj)
$(MS)/%.lib: tests/msvc/%.def | $(MS)
	$(LLVM_BIN)llvm-dlltool -m i386:x86-64 -d $< -l $@
$(MS)/crt0.obj: tests/msvc/crt0.c $(MSVC_HDRS) | $(MS)
	$(CLANG) $(MSVC_MODE) -c $< -o $@
$(MS)/test_%.obj: tests/test_%.c $(TESTH) $(MSVC_HDRS) | $(MS)
	$(CLANG) -std=c99 $(MSVC_MODE) -Wno-unused-function -c $< -o $@
$(MS)/safeload.obj: examples/safeload_cli.c $(HDR) $(MSVC_HDRS) | $(MS)
	$(CLANG) -std=c99 $(MSVC_MODE) -c $< -o $@
$(MS)/%.exe: $(MS)/%.obj $(MS)/crt0.obj $(MS)/ucrtbase.lib $(MS)/kernel32.lib
	$(MSVC_LINK) $< /out:$@
$(MS)/cxx.obj: $(CC_CHECK) $(MSVC_HDRS) | $(MS)
	$(CLANG) -x c++ -std=c++14 $(MSVC_MODE) -c $< -o $@
$(MS)/switches.obj: $(CC_CHECK) $(MSVC_HDRS) | $(MS)
	$(CLANG) -std=c99 $(MSVC_MODE) -DSAFELOAD_STATIC -DSAFELOAD_NO_THREADS -DSAFELOAD_NO_SIMD -DSAFELOAD_NO_OVERLAPPED \
	    -Wno-unused-function -c $< -o $@
$(OK)/msvc: $(MSVC_FILES) $(CLI) tests/show_cmp.sh tests/wine_run.sh $(TESTDATA) | $(OK)
	for t in test_cast test_win; do echo "== $$t.exe (MSVC mode, wine)"; \
	    SAFELOAD_TEST_EXPECT_PATHS="scalar sse2 avx2 avx512 avx512-novbmi avx512bf16 avx512bf16-novbmi" \
	    $(WINE_RUN) $(MS)/$$t.exe || exit 1; done
	$(WINE_RUN) $(MS)/safeload.exe sample $(MS)/sample.safetensors
	$(WINE_RUN) $(MS)/safeload.exe verify $(MS)/sample.safetensors
	want=$$(./$(CLI) load $(MS)/sample.safetensors --dtype f32 --checksum | grep '^checksum'); \
	for io in read mmap direct; do \
	    got=$$($(WINE_RUN) $(MS)/safeload.exe load $(MS)/sample.safetensors --threads 2 \
	           --dtype f32 --io $$io --checksum | tr -d '\r' | grep '^checksum'); \
	    echo "load --io $$io: $$got (native: $$want)"; [ "$$got" = "$$want" ] || exit 1; done
	$(WINE_RUN) $(MS)/safeload.exe convert $(MS)/sample.safetensors $(MS)/sample_bf16.safetensors \
	    --dtype bf16 --threads 2
	./$(CLI) convert $(MS)/sample.safetensors $(MS)/native_bf16.safetensors --dtype bf16 >/dev/null
	cmp $(MS)/sample_bf16.safetensors $(MS)/native_bf16.safetensors
	@echo "convert --dtype bf16 (MSVC mode, wine) gives the native bytes"
	WINE=$(WINE) sh tests/show_cmp.sh ./$(CLI) $(MS)/safeload.exe $(MS)
	@touch $@; echo "ok    msvc: the MSVC-mode tests and the CLI under wine"
test-msvc: $(if $(HAVE_MSVC_TOOLS),$(MSVC_FILES) $(if $(HAVE_WINE),$(if $(MSVC_CPU_MISSING),,$(OK)/msvc)))

# What make test could not do here, and why: shell commands for the summary (the parts' own
# notes, such as test_cli.sh's, come from their logs).
HAVE_CMAKE := $(shell command -v cmake 2>/dev/null)
HAVE_PKG_CONFIG := $(shell command -v pkg-config 2>/dev/null)
missing_tool = echo "$(1): $(2): $(3) not installed (missing tool)";
SKIP_NOTES = \
    $(if $(HAVE_MINGW),$(if $(HAVE_WINE),,$(call missing_tool,test-win,built not run,$(WINE))), \
        $(call missing_tool,test-win,not built or run,$(MINGW_CC))) \
    $(if $(HAVE_MSVC_TOOLS), \
        $(if $(HAVE_WINE),,$(call missing_tool,test-msvc,built not run,$(WINE))) \
        $(if $(MSVC_CPU_MISSING),echo "test-msvc: built not run: this CPU lacks $(MSVC_CPU_MISSING) (missing CPU feature: the MSVC-mode programs use them everywhere as MSVC allows)";), \
        $(call missing_tool,test-msvc,not built or run,lld-link or llvm-dlltool beside $(CLANG))) \
    $(if $(HAVE_PKG_CONFIG),,$(call missing_tool,test-install,its pkg-config consumer skipped,pkg-config)) \
    $(if $(HAVE_CMAKE),,$(call missing_tool,test-install,its CMake consumers skipped,cmake))
# the run_test stamps of make test, whose logs the summary reads for the parts' own notes
TEST_STAMPS += $(UNIT_OK) $(SAN_OK) $(OK)/cli $(OK)/weak $(OK)/weak_archive $(CXX_OK)
TEST_LOGS = $(wildcard $(patsubst $(OK)/%,$(LOG)/%.log,$(TEST_STAMPS)))

# The parts of `make test`. Without -j it runs itself with one job per core (-j$(NPROC));
# `make -jN test` chooses. The summary at the end lists every part that was skipped, and why.
# A new part: its name in TEST_PARTS, its stamps (run_test) in TEST_STAMPS, and a line in
# SKIP_NOTES if it can be skipped for want of a tool.
TEST_PARTS := test-unit test-weak test-cli test-readme test-cxx test-san test-install test-win \
              test-msvc test-bench-build
.PHONY: test-parts
test:
	@case " $$MAKEFLAGS" in *" -j"*|*jobserver*) $(MAKE) --no-print-directory test-parts;; \
	*) echo "make test: -j$(NPROC), one job per core (make -jN test to choose)"; \
	   $(MAKE) --no-print-directory -j$(NPROC) test-parts;; esac
test-parts: $(TEST_PARTS)
	@mkdir -p $(LOG); echo "make test: all passed"; \
	{ $(SKIP_NOTES) for l in $(TEST_LOGS); do grep -h -i -E 'skipped|not run' $$l; done; \
	  sh tests/cast_paths.sh $(LOG)/test_cast.log; true; } > $(LOG)/skipped.txt; \
	if [ -s $(LOG)/skipped.txt ]; then echo "skipped, and why:"; sed 's/^/  /' $(LOG)/skipped.txt; \
	else echo "nothing skipped"; fi

# ---- fuzzing ---------------------------------------------------------------------------------
FUZZ_SECONDS ?= 60
# headers of 64 bytes and up are parsed in parts, each checked against the one-thread parse
$(BUILD)/fuzz/fuzz_parse: tests/fuzz_parse.c $(HDR) | $(BUILD)/fuzz
	$(CLANG) $(STD) -O1 -g -fsanitize=fuzzer,address,undefined -DSAFELOAD_PARSE_SPLIT_MIN=64 -I. $< -o $@ $(LDLIBS)

corpus: $(BUILD)/test_format $(CLI) | $(BUILD)/fuzz
	mkdir -p $(BUILD)/fuzz/corpus
	SAFELOAD_CORPUS_DIR=$(BUILD)/fuzz/corpus ./$(BUILD)/test_format >/dev/null
	cp tests/data/reference/*.safetensors $(BUILD)/fuzz/corpus/
	./$(CLI) sample $(BUILD)/fuzz/corpus/sample.safetensors >/dev/null

$(BUILD)/fuzz/fuzz_index: tests/fuzz_index.c $(HDR) | $(BUILD)/fuzz
	$(CLANG) $(STD) -O1 -g -fsanitize=fuzzer,address,undefined -I. $< -o $@ $(LDLIBS)

# index seeds: the shapes transformers writes, metadata, escapes, and an error or two
index-corpus: | $(BUILD)/fuzz
	mkdir -p $(BUILD)/fuzz/index_corpus
	printf '{\n  "metadata": {\n    "total_size": 4096\n  },\n  "weight_map": {\n    "a.weight": "model-00001-of-00002.safetensors",\n    "b.bias": "model-00002-of-00002.safetensors"\n  }\n}\n' > $(BUILD)/fuzz/index_corpus/hf.json
	printf '{"weight_map": {"x\\u00e9\\n": "sub/m.safetensors"}, "metadata": {"k": "v", "n": -1.5e3, "o": {"p": [1, null, true]}}}' > $(BUILD)/fuzz/index_corpus/meta.json
	printf '{"weight_map": {"a": "../x.safetensors", "a": "b"}}' > $(BUILD)/fuzz/index_corpus/bad.json

# the two fuzzers are separate targets, so `make -j2 fuzz` runs them side by side
fuzz: fuzz-parse fuzz-index
fuzz-parse: $(BUILD)/fuzz/fuzz_parse corpus
	./$(BUILD)/fuzz/fuzz_parse -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -timeout=10 -rss_limit_mb=4096 $(BUILD)/fuzz/corpus
fuzz-index: $(BUILD)/fuzz/fuzz_index index-corpus
	./$(BUILD)/fuzz/fuzz_index -max_total_time=$(FUZZ_SECONDS) -max_len=16384 \
	    -timeout=10 -rss_limit_mb=4096 $(BUILD)/fuzz/index_corpus

# ---- benchmarks ------------------------------------------------------------------------------
BENCH := bench_parse bench_cast bench_load bench_device
bench: $(addprefix $(BUILD)/,$(BENCH))
	./$(BUILD)/bench_parse
	./$(BUILD)/bench_cast
	./$(BUILD)/bench_load
	./$(BUILD)/bench_device
	@if command -v $(MPICC) >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory $(BUILD)/safeload_mpi && sh tests/bench_mpi.sh $(BUILD)/safeload_mpi; \
	else echo "bench_mpi: needs mpicc and python3, skipped"; fi

$(BUILD)/bench_%: tests/bench_%.c tests/testutil.h tests/benchutil.h tests/fakedev.h \
                  tests/pagecache.h $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) -O2 -I. -Itests $< -o $@ $(LDLIBS)
# make test builds the benchmarks (runs none: timings are not tests), so they never rot
.PHONY: test-bench-build
test-bench-build: $(addprefix $(BUILD)/,$(BENCH))
	@echo "ok    bench: $(BENCH) build"

# ---- install ---------------------------------------------------------------------------------
# make install PREFIX=/usr/local [DESTDIR=/staging]: the header, a pkg-config file and a CMake
# package (find_package(safeload): the INTERFACE target safeload::safeload) under
# PREFIX/include, PREFIX/lib/pkgconfig and PREFIX/lib/cmake/safeload. The version is the
# header's macros, the one place it is written.
PREFIX  ?= /usr/local
DESTDIR ?=
hdr_macro = $(shell sed -n 's/^\#define SAFELOAD_VERSION_$(1) "*\([0-9.]*\)"*$$/\1/p' $(HDR))
VERSION_MAJOR := $(call hdr_macro,MAJOR)
VERSION_MINOR := $(call hdr_macro,MINOR)
VERSION_PATCH := $(call hdr_macro,PATCH)
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
INSTALLED := include/safeload.h lib/pkgconfig/safeload.pc lib/cmake/safeload/safeloadConfig.cmake \
             lib/cmake/safeload/safeloadConfigVersion.cmake
PKG_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
                -e 's|@MAJOR@|$(VERSION_MAJOR)|g' -e 's|@MINOR@|$(VERSION_MINOR)|g'
.PHONY: install uninstall test-install
install: | $(BUILD)
	@case "$(PREFIX)" in /*) ;; *) echo "install: PREFIX must be an absolute path"; exit 2;; esac
	mkdir -p $(BUILD)/pkg
	$(PKG_SUBST) packaging/safeload.pc.in > $(BUILD)/pkg/safeload.pc
	$(PKG_SUBST) packaging/safeloadConfig.cmake.in > $(BUILD)/pkg/safeloadConfig.cmake
	$(PKG_SUBST) packaging/safeloadConfigVersion.cmake.in > $(BUILD)/pkg/safeloadConfigVersion.cmake
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/lib/cmake/safeload
	install -m 644 $(HDR) $(DESTDIR)$(PREFIX)/include/safeload.h
	install -m 644 $(BUILD)/pkg/safeload.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/safeload.pc
	install -m 644 $(BUILD)/pkg/safeloadConfig.cmake $(BUILD)/pkg/safeloadConfigVersion.cmake \
	    $(DESTDIR)$(PREFIX)/lib/cmake/safeload/
uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALLED))
	-rmdir $(DESTDIR)$(PREFIX)/lib/cmake/safeload 2>/dev/null

# A consumer project built against the installed files three ways: pkg-config, CMake's
# find_package (after `make install DESTDIR=... PREFIX=...`) and add_subdirectory of this tree;
# each builds tests/install/consumer.c with the implementation and runs it. The .pc, the CMake
# package and CMakeLists.txt must carry the header's version; uninstall leaves nothing behind.
INST := $(BUILD)/install
# the stamp names the consumers that ran, so installing cmake or pkg-config later reruns it
INSTALL_OK := $(OK)/install$(if $(HAVE_PKG_CONFIG),+pkgconfig)$(if $(HAVE_CMAKE),+cmake)
test-install: $(INSTALL_OK)
$(INSTALL_OK): $(CLI) $(HDR) CMakeLists.txt $(wildcard packaging/* tests/install/*.c tests/install/*/CMakeLists.txt) | $(OK)
	test "$(VERSION)" = "$$(sed -n 's/^#define SAFELOAD_VERSION_STRING "\(.*\)"$$/\1/p' $(HDR))"
	rm -rf $(INST) && mkdir -p $(INST)
	./$(CLI) sample $(INST)/sample.safetensors > /dev/null
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(INST)/root PREFIX=/opt/safeload
	for f in $(INSTALLED); do test -f $(INST)/root/opt/safeload/$$f || { echo "missing $$f"; exit 1; }; done
	cmp $(HDR) $(INST)/root/opt/safeload/include/safeload.h
	grep -qx 'Version: $(VERSION)' $(INST)/root/opt/safeload/lib/pkgconfig/safeload.pc
	grep -qx 'prefix=/opt/safeload' $(INST)/root/opt/safeload/lib/pkgconfig/safeload.pc
	grep -q 'PACKAGE_VERSION "$(VERSION)"' $(INST)/root/opt/safeload/lib/cmake/safeload/safeloadConfigVersion.cmake
	@if ! command -v pkg-config >/dev/null 2>&1; then echo "test-install: pkg-config not installed, its consumer skipped"; \
	else set -ex; export PKG_CONFIG_PATH=$(CURDIR)/$(INST)/root/opt/safeload/lib/pkgconfig \
	    PKG_CONFIG_SYSROOT_DIR=$(CURDIR)/$(INST)/root; \
	    test "$$(pkg-config --modversion safeload)" = "$(VERSION)"; \
	    $(CC) $(STD) $(WARN) $$(pkg-config --cflags safeload) tests/install/consumer.c tests/install/impl.c \
	        -o $(INST)/pc_consumer $$(pkg-config --libs safeload); \
	    ./$(INST)/pc_consumer $(INST)/sample.safetensors | grep -qx 'safeload $(VERSION): 6 tensors loaded'; \
	    echo "test-install: pkg-config consumer built and ran"; fi
	@if ! command -v cmake >/dev/null 2>&1; then echo "test-install: cmake not installed, its consumers skipped"; \
	else set -ex; cf="-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"; \
	    cmake -S tests/install/find -B $(INST)/find "$$cf" -DCMAKE_PREFIX_PATH=$(CURDIR)/$(INST)/root/opt/safeload \
	        -DSAFELOAD_WANT=$(VERSION_MAJOR).$(VERSION_MINOR) > $(INST)/find.log; \
	    cmake --build $(INST)/find > $(INST)/find_build.log; \
	    ./$(INST)/find/consumer $(INST)/sample.safetensors | grep -qx 'safeload $(VERSION): 6 tensors loaded'; \
	    if cmake -S tests/install/find -B $(INST)/find_newer -DCMAKE_PREFIX_PATH=$(CURDIR)/$(INST)/root/opt/safeload \
	        -DSAFELOAD_WANT=$$(($(VERSION_MAJOR) + 1)).0 > $(INST)/find_newer.log 2>&1; then \
	        echo "find_package(safeload $$(($(VERSION_MAJOR) + 1)).0) found $(VERSION)"; exit 1; fi; \
	    grep -q 'compatible with requested version' $(INST)/find_newer.log; \
	    cmake -S tests/install/sub -B $(INST)/sub "$$cf" -DSAFELOAD_SOURCE_DIR=$(CURDIR) \
	        -DSAFELOAD_EXPECT_VERSION=$(VERSION) > $(INST)/sub.log; \
	    cmake --build $(INST)/sub > $(INST)/sub_build.log; \
	    ./$(INST)/sub/consumer $(INST)/sample.safetensors | grep -qx 'safeload $(VERSION): 6 tensors loaded'; \
	    echo "test-install: find_package and add_subdirectory consumers built and ran"; fi
	$(MAKE) --no-print-directory uninstall DESTDIR=$(CURDIR)/$(INST)/root PREFIX=/opt/safeload
	test -z "$$(find $(INST)/root -type f)"
	@touch $@; echo "ok    install: make install, pkg-config, find_package, add_subdirectory, uninstall"

# ---- demo and examples -----------------------------------------------------------------------
demo: $(CLI)
	./$(CLI) sample $(BUILD)/sample.safetensors
	./$(CLI) inspect $(BUILD)/sample.safetensors
	./$(CLI) verify $(BUILD)/sample.safetensors
	./$(CLI) load $(BUILD)/sample.safetensors --dtype f32 --checksum
	./$(CLI) show $(BUILD)/sample.safetensors model.embed_tokens.weight
	./$(CLI) convert $(BUILD)/sample.safetensors $(BUILD)/sample_f32.safetensors --dtype f32
	./$(CLI) verify $(BUILD)/sample_f32.safetensors

MPICC   ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) 2>/dev/null)
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# the MPI program is a prerequisite (when mpicc is here), so `make -j2 examples` builds it beside nvcc
examples: $(BUILD)/engine_arena $(if $(HAVE_MPICC),$(BUILD)/safeload_mpi) | $(BUILD)
	./$(BUILD)/engine_arena
	$(CC) $(STD) $(WARN) -O2 -I. -Itests/stubs -fsyntax-only examples/ascend_upload.c
	@echo "ascend_upload.c: compile-checked against tests/stubs/acl/acl.h (not run: no NPU, no CANN here)"
	@if [ -n "$(NVCC)" ]; then \
	    $(NVCC) -O2 -I. -x cu examples/cuda_upload.c -o $(BUILD)/cuda_upload -lcudart && \
	    echo "cuda_upload: built with $(NVCC) (run it on a machine with a GPU)"; \
	else echo "cuda_upload: nvcc not found, skipped"; fi
	@$(if $(HAVE_MPICC),echo "safeload_mpi: built with $(MPICC)",echo "safeload_mpi: $(MPICC) not found, skipped (apt-get install openmpi-bin libopenmpi-dev)")

# examples/mpi_load.c: ranks that load one checkpoint, alone, sharing the reads (--share) or
# tensor-parallel (--tp); make test-mpi runs it under mpirun with 1, 2 and 4 ranks
$(BUILD)/safeload_mpi: examples/mpi_load.c $(HDR) | $(BUILD)
	$(MPICC) $(STD) $(WARN) -O2 -I. $< -o $@ $(LDLIBS)

.PHONY: test-mpi
test-mpi: $(BUILD)/safeload_mpi $(CLI)
	sh tests/test_mpi.sh $(BUILD)/safeload_mpi $(CLI)

$(BUILD)/engine_arena: examples/engine_arena.c $(HDR) | $(BUILD)
	$(CC) $(STD) $(WARN) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

clean:
	rm -rf $(BUILD)
