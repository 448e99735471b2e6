# estimator/: hardware profiles, cost models, calibration, synthesis,
# planning and what-if (DESIGN.md §5), one folder per capability, lowest
# first (scripts/check-layering holds the order): doc <- costs <- spec <-
# calibrate <- synth <- plan <- whatif <- interchange <- the façades here.

# doc/: the estimator's JSON documents read and written through their
# tables of fields, the one place they meet Jansson
CORE_SRCS += estimator/doc/json_doc.c

# costs/: the hardware profiles, the kernel and collective cost models,
# the op-to-kernel map, the one way a model's error is summed up and the
# table of every cost parameter (cost_params.def)
CORE_SRCS += estimator/costs/cost_params.c estimator/costs/hardware.c estimator/costs/kernel_model.c estimator/costs/coll_lines.c \
             estimator/costs/collective_model.c estimator/costs/op_kernels.c estimator/costs/estimate_check.c

# the hardware profiles of data/hardware, compiled in (common/embedded.h)
HARDWARE_FILES := $(sort $(wildcard data/hardware/*.json))
CORE_SRCS += $(BUILD)/gen/hardware_data.c
$(BUILD)/gen/hardware_data.c: $(HARDWARE_FILES) scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh sc_hardware_files $(HARDWARE_FILES) >$@.tmp && mv $@.tmp $@
# the hardware profile reader and the kernel model on what it reads (estimator/costs/hardware.c)
FUZZ_TARGETS += hardware

# spec/: the spec, its parameter and FLOP counts, layer placement and
# memory model, the Hugging Face config mapping, and a traced job's
# description with its what-if set
CORE_SRCS += estimator/spec/spec.c estimator/spec/placement.c estimator/spec/flops.c estimator/spec/memory.c \
             estimator/spec/hf_config.c estimator/spec/job_config.c
# `make fuzz`: the spec parser and the Hugging Face config mapping (tests/fuzz/fuzz_spec.c)
FUZZ_TARGETS += spec
# specs whose numbers sit at and past the limits, estimated when small
# (tests/fuzz/fuzz_spec_extreme.c)
FUZZ_TARGETS += spec_extreme
# the job description and what-if set parser (tests/fuzz/fuzz_job_config.c)
FUZZ_TARGETS += job_config

# calibrate/: the cost models fitted to nccl-tests output, GEMM
# microbenchmark tables, traces and published runs; cluster profiles; the
# cost set a spec is estimated with (cited, fitted defaults, a profile)
CORE_SRCS += estimator/calibrate/nccl_tests.c estimator/calibrate/coll_fit.c estimator/calibrate/robust_fit.c \
             estimator/calibrate/gemm_samples.c estimator/calibrate/mem_samples.c estimator/calibrate/coll_samples.c \
             estimator/calibrate/attn_samples.c estimator/calibrate/gemm_table.c estimator/calibrate/cluster_profile.c \
             estimator/calibrate/calibrate.c estimator/calibrate/published.c estimator/calibrate/cost_set.c
# the nccl-tests output reader (estimator/calibrate/nccl_tests.c)
FUZZ_TARGETS += nccl_tests
# the Input Dims and Input type readers of the GEMM and memory-bound samples
FUZZ_TARGETS += kernel_samples
# the GEMM microbenchmark table reader (estimator/calibrate/gemm_table.c)
FUZZ_TARGETS += gemm_table
# the cluster profile reader and the collective model it sets (estimator/calibrate/cluster_profile.c)
FUZZ_TARGETS += cluster_profile
# the published step-time table reader and each row's spec (tests/fuzz/fuzz_published.c)
FUZZ_TARGETS += published

# synth/: a training step synthesised from a spec (with the quantisation
# kernels of the low-precision recipes), its estimate and invariants, the
# step written as per-rank Kineto traces (`stepcast synth`), and compared
# with a traced job
CORE_SRCS += estimator/synth/detail.c estimator/synth/synth.c estimator/synth/synth_ops.c estimator/synth/synth_emit.c \
             estimator/synth/synth_data_parallel.c estimator/synth/quant.c estimator/synth/estimate.c \
             estimator/synth/invariants.c estimator/synth/synth_trace.c estimator/synth/synth_compare.c

# plan/: the planner (the best configurations for a GPU count), the
# estimator's error bands by region, and estimates checked against
# measured runs; the bands file data/calibration/bands.json compiles in
CORE_SRCS += estimator/plan/plan.c estimator/plan/bands.c estimator/plan/validation.c $(BUILD)/gen/bands_data.c
$(BUILD)/gen/bands_data.c: data/calibration/bands.json scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh sc_bands_files data/calibration/bands.json >$@.tmp && mv $@.tmp $@
# the bands file reader (tests/fuzz/fuzz_bands.c)
FUZZ_TARGETS += bands

# whatif/: what-ifs on traced jobs: the notes a what-if reads of a trace,
# taken while it is whole, the job checked, its structure recovered from
# the graph and those notes, collectives placed and their waits split, the
# graph copied with new durations, the transforms
CORE_SRCS += estimator/whatif/trace_notes.c estimator/whatif/job_check.c estimator/whatif/structure.c estimator/whatif/coll_placement.c \
             estimator/whatif/coll_split.c estimator/whatif/graph_copy.c estimator/whatif/whatif.c \
             estimator/whatif/whatif_pipeline.c estimator/whatif/whatif_plan.c estimator/whatif/whatif_size.c \
             estimator/whatif/whatif_price.c estimator/whatif/whatif_host.c estimator/whatif/whatif_result.c \
             estimator/whatif/zero3_schedule.c

# interchange/: a replayed step as Chakra execution traces, and Chakra ET
# files replayed (estimator/interchange/chakra_export.h, chakra_import.h)
CORE_SRCS += estimator/interchange/chakra_export.c estimator/interchange/chakra_import.c
$(BUILD)/obj/estimator/interchange/chakra_export.o: $(BUILD)/gen/et_def.pb-c.h

# the façades programs call: a traced job's graph and its kept
# collectives' split, built once (traced.c); a traced job opened and asked
# its questions; an estimate's or a plan's request resolved (spec,
# hardware, costs)
CORE_SRCS += estimator/traced.c estimator/model_open.c estimator/request_resolve.c
