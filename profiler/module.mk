# profiler/: libstepcast_prof.so, the CUPTI tracer and NCCL profiler plugin
# (README.md). Built when scripts/deps.sh found a CUDA toolkit with CUPTI
# (HAVE_CUPTI in build/config.mk). The library links nothing of stepcast:
# libc, pthread, dl and zlib only; CUPTI is dlopen'ed at run time.
#
#   make profiler-tests   the library, the test runner, the ThreadSanitizer
#                         stress test and the injection helper;
#                         profiler/tests/run.sh BUILD_DIR runs them all.
ifeq ($(HAVE_CUPTI),1)

PROF_SRCS := profiler/log.c profiler/cupti_api.c profiler/layout.c profiler/store.c \
             profiler/convert.c profiler/bufpool.c profiler/map.c profiler/nccl.c \
             profiler/join.c profiler/steps.c profiler/json.c profiler/kineto.c \
             profiler/config.c profiler/session.c profiler/inject.c
PROF_OBJS := $(PROF_SRCS:%.c=$(BUILD)/obj/%.o)
PROF_INC := -I$(CUDA_HOME)/include
$(PROF_OBJS): ALL_CFLAGS += -fPIC -fvisibility=hidden $(PROF_INC) \
                            -DPROF_CUPTI_LIBDIR='"$(CUPTI_LIBDIR)"'
PROF_LIBS := -ldl -lpthread -lz

PROF_LIB := $(BUILD)/libstepcast_prof.so
BINS += $(PROF_LIB)

$(PROF_LIB): $(PROF_OBJS)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-z,defs -Wl,-z,nodelete -Wl,--as-needed -o $@ \
	    $(PROF_OBJS) $(PROF_LIBS)

# the test runner: unit tests, joins, the writer, the round trip through stepcast's reader
PROF_TEST_SRCS := $(filter-out profiler/tests/inject_real.c profiler/tests/stress_pool.c \
                               profiler/tests/bench.c,$(wildcard profiler/tests/*.c))
PROF_TEST_OBJS := $(PROF_TEST_SRCS:%.c=$(BUILD)/obj/%.o)
$(PROF_TEST_OBJS): ALL_CFLAGS += $(PROF_INC)
PROF_TEST_BIN := $(BUILD)/tests/prof-tests
$(PROF_TEST_BIN): $(PROF_TEST_OBJS) $(PROF_OBJS) $(BUILD)/obj/tests/runner.o \
                  $(BUILD)/obj/tests/helpers.o $(LIBSTEPCAST)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(PROF_TEST_OBJS) $(PROF_OBJS) $(BUILD)/obj/tests/runner.o \
	    $(BUILD)/obj/tests/helpers.o $(LIBSTEPCAST) $(LIBS) $(PROF_LIBS)

# `make bench`: tests/bench/bench_profiler.sh runs this
PROF_BENCH_BIN := $(BUILD)/tests/prof-bench
$(BUILD)/obj/profiler/tests/bench.o: ALL_CFLAGS += $(PROF_INC)
$(PROF_BENCH_BIN): $(BUILD)/obj/profiler/tests/bench.o $(BUILD)/obj/profiler/tests/synth.o $(PROF_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PROF_LIBS)
.PHONY: prof-bench
prof-bench: $(PROF_BENCH_BIN)

# InitializeInjection called for real, through dlopen of the built library
PROF_INJECT_BIN := $(BUILD)/tests/prof-inject-real
$(PROF_INJECT_BIN): $(BUILD)/obj/profiler/tests/inject_real.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< -ldl

# the buffer pool under ThreadSanitizer (its own objects: -fsanitize=thread)
PROF_TSAN_SRCS := profiler/tests/stress_pool.c profiler/bufpool.c
PROF_TSAN_OBJS := $(PROF_TSAN_SRCS:%.c=$(BUILD)/obj-tsan/%.o)
PROF_TSAN_BIN := $(BUILD)/tests/prof-tsan-pool
$(BUILD)/obj-tsan/%.o: %.c $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize=% -O% -flto%,$(ALL_CFLAGS)) -O1 -g -fsanitize=thread -MMD -MP -c -o $@ $<
$(PROF_TSAN_BIN): $(PROF_TSAN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize=% -O% -flto%,$(ALL_LDFLAGS)) -fsanitize=thread -o $@ $^ -lpthread

# `make fuzz`: names of any bytes -> a trace stepcast's reader loads (tests/fuzz/fuzz_prof_json.c)
FUZZ_TARGETS += prof_json
$(BUILD)/obj/tests/fuzz/fuzz_prof_json.o: ALL_CFLAGS += $(PROF_INC)
$(BUILD)/fuzz_prof_json: $(BUILD)/obj/tests/fuzz/fuzz_prof_json.o $(PROF_OBJS) $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS) $(PROF_LIBS)

.PHONY: profiler-tests
profiler-tests: $(PROF_LIB) $(PROF_TEST_BIN) $(PROF_INJECT_BIN) $(PROF_TSAN_BIN) $(BUILD)/stepcast

-include $(shell find $(BUILD)/obj-tsan -name '*.d' 2>/dev/null)

else

ifneq ($(wildcard $(CONFIG)),)
ifeq ($(MAKELEVEL)$(filter clean,$(MAKECMDGOALS)),0)
$(info profiler: no CUDA toolkit with CUPTI under $(or $(CUDA_HOME),/usr/local/cuda): libstepcast_prof.so is not built (set CUDA_HOME))
endif
endif

.PHONY: profiler-tests
profiler-tests prof-bench:
	@echo "profiler: no CUDA toolkit with CUPTI: nothing to build"

endif
