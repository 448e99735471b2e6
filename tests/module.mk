# tests/: the C test runner and its cases (unit, golden, integration).
TEST_SRCS += tests/runner.c tests/alloc_fail.c tests/helpers.c tests/pg_server.c tests/json_compare.c tests/trace_builder.c tests/shared_traces.c $(wildcard tests/unit/*.c tests/golden/*.c tests/integration/*.c)
TEST_BIN := $(BUILD)/tests/stepcast-tests
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o)

# the allocator's entry points wrapped (tests/alloc_fail.h); the library's
# calls reach the wrappers only in a build without link-time optimisation
ALLOC_WRAP := $(foreach f,malloc calloc realloc aligned_alloc free strdup strndup,-Wl,--wrap=$(f))
$(BUILD)/obj/tests/unit/test_alloc_failures.o: ALL_CFLAGS += -DALLOC_WRAPS_LIBRARY=$(if $(LTO),0,1)
$(TEST_BIN): $(TEST_OBJS) $(LIBSTEPCAST)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $(ALLOC_WRAP) -o $@ $(TEST_OBJS) $(LIBSTEPCAST) $(LIBS)

.PHONY: tests
tests: $(TEST_BIN) $(BINS)

FUZZ_TARGETS += trace archive

# gentrace: synthetic multi-rank traces (bench input, samples, replay checks)
GENTRACE := $(BUILD)/gentrace
$(GENTRACE): $(BUILD)/obj/tests/tools/gentrace.o
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBS)
tests: $(GENTRACE)

# bench-replay: replay speed (make bench)
BENCH_REPLAY := $(BUILD)/bench-replay
$(BENCH_REPLAY): $(BUILD)/obj/tests/bench/bench_replay.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# bench-load: the trace load every command shares, alone (make bench)
BENCH_LOAD := $(BUILD)/bench-load
$(BENCH_LOAD): $(BUILD)/obj/tests/bench/bench_load.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# bench-index: a structural-index parse's floor beside the trace reader (make bench)
BENCH_INDEX := $(BUILD)/bench-index
$(BENCH_INDEX): $(BUILD)/obj/tests/bench/bench_index.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# bench-notes: what taking a what-if's notes costs a build (make bench)
BENCH_NOTES := $(BUILD)/bench-notes
$(BENCH_NOTES): $(BUILD)/obj/tests/bench/bench_notes.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# bench-inflate: gzip inflate, zlib against ISA-L where the build has it (make bench)
BENCH_INFLATE := $(BUILD)/bench-inflate
$(BENCH_INFLATE): $(BUILD)/obj/tests/bench/bench_inflate.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# bench-plan: the planner's speed inside the process (make bench)
BENCH_PLAN := $(BUILD)/bench-plan
$(BENCH_PLAN): $(BUILD)/obj/tests/bench/bench_plan.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# bench-gemm-model: the kernel model's GEMM error on real traces (make bench)
BENCH_GEMM_MODEL := $(BUILD)/bench-gemm-model
$(BENCH_GEMM_MODEL): $(BUILD)/obj/tests/bench/bench_gemm_model.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# validate: the spec-driven estimator against measured step times (make validate)
VALIDATE := $(BUILD)/validate
$(VALIDATE): $(BUILD)/obj/tests/tools/validate.o $(BUILD)/obj/tests/tools/validate_published.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(LIBSTEPCAST) $(LIBS)
tests: $(VALIDATE)

# tests that read Chakra ET messages include the generated schema header
$(BUILD)/obj/tests/unit/test_chakra.o: $(BUILD)/gen/et_def.pb-c.h
