# model/: trace ingest, event tables, steps, dependency graph, replay.
CORE_SRCS += model/stream.c model/archive.c model/trace.c model/trace_reader.c model/trace_lex.c model/trace_event.c model/trace_commit.c model/trace_meta.c model/steps.c model/job.c model/collective.c model/runtime_api.c model/inspect.c model/graph.c model/graph_build.c model/graph_rank.c model/graph_edges.c model/graph_fold.c model/graph_join.c model/replay.c model/graph_builder.c model/graph_check.c model/kernel_family.c model/opportunity.c model/diff.c model/ab.c model/task_key.c

# Chakra execution traces (model/chakra_et.h): the schema copy compiled by
# protoc-c into $(BUILD)/gen, and the framing
CORE_SRCS += $(BUILD)/gen/et_def.pb-c.c model/chakra_et.c model/chakra_read.c
ALL_CFLAGS += -I$(BUILD)/gen
$(BUILD)/gen/et_def.pb-c.c: model/et_def.proto $(CONFIG)
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(BUILD)/gen -Imodel model/et_def.proto
$(BUILD)/gen/et_def.pb-c.h: $(BUILD)/gen/et_def.pb-c.c
$(BUILD)/obj/model/chakra_read.o: $(BUILD)/gen/et_def.pb-c.h
# the ET reader (tests/fuzz/fuzz_chakra.c)
FUZZ_TARGETS += chakra
