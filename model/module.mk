# model/: trace ingest, event tables, steps, dependency graph, replay.
CORE_SRCS += model/stream.c model/archive.c model/trace.c model/trace_reader.c model/steps.c model/job.c model/collective.c model/runtime_api.c model/inspect.c model/graph.c model/graph_build.c model/replay.c model/graph_builder.c model/kernel_family.c model/opportunity.c model/diff.c model/task_key.c
