# estimator/: hardware profiles, cost models, synthesis and what-if (DESIGN.md §5).
CORE_SRCS += estimator/hardware.c

# the hardware profiles of data/hardware, compiled in (common/embedded.h)
HARDWARE_FILES := $(sort $(wildcard data/hardware/*.json))
CORE_SRCS += $(BUILD)/gen/hardware_data.c
$(BUILD)/gen/hardware_data.c: $(HARDWARE_FILES) scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh sc_hardware_files $(HARDWARE_FILES) >$@.tmp && mv $@.tmp $@

# the estimator's error bands by region (estimator/bands.h), and the bands
# file that data/calibration/bands.json compiles in
CORE_SRCS += estimator/bands.c $(BUILD)/gen/bands_data.c
$(BUILD)/gen/bands_data.c: data/calibration/bands.json scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh sc_bands_files data/calibration/bands.json >$@.tmp && mv $@.tmp $@
# the bands file reader (tests/fuzz/fuzz_bands.c)
FUZZ_TARGETS += bands

# the kernel and collective cost models, and their calibration from
# nccl-tests output, GEMM microbenchmark tables and traces
CORE_SRCS += estimator/kernel_model.c estimator/coll_lines.c estimator/collective_model.c estimator/nccl_tests.c \
             estimator/op_kernels.c estimator/robust_fit.c estimator/gemm_samples.c \
             estimator/mem_samples.c estimator/coll_samples.c estimator/cluster_profile.c \
             estimator/attn_samples.c estimator/estimate_check.c estimator/calibrate.c estimator/gemm_table.c

# the nccl-tests output reader (estimator/nccl_tests.c)
FUZZ_TARGETS += nccl_tests
# the Input Dims and Input type readers of the GEMM and memory-bound samples
FUZZ_TARGETS += kernel_samples
# the GEMM microbenchmark table reader (estimator/gemm_table.c)
FUZZ_TARGETS += gemm_table
# the hardware profile reader and the kernel model on what it reads (estimator/hardware.c)
FUZZ_TARGETS += hardware
# the cluster profile reader and the collective model it sets (estimator/cluster_profile.c)
FUZZ_TARGETS += cluster_profile
# the spec, its parameter and FLOP counts, layer placement and memory model
CORE_SRCS += estimator/spec.c estimator/placement.c estimator/flops.c estimator/memory.c estimator/hf_config.c
# `make fuzz`: the spec parser and the Hugging Face config mapping (tests/fuzz/fuzz_spec.c)
FUZZ_TARGETS += spec
# specs whose numbers sit at and past the limits, estimated when small
# (tests/fuzz/fuzz_spec_extreme.c)
FUZZ_TARGETS += spec_extreme
# the published step-time table reader and each row's spec (tests/fuzz/fuzz_published.c)
FUZZ_TARGETS += published

# a training step synthesised from a spec, its estimate, and the estimates
# checked against measured runs
CORE_SRCS += estimator/costs.c estimator/detail.c estimator/synth.c estimator/synth_ops.c estimator/synth_emit.c estimator/synth_data_parallel.c estimator/estimate.c estimator/invariants.c estimator/validation.c \
             estimator/published.c
# the planner: the best configurations for a GPU count
CORE_SRCS += estimator/plan.c
# the synthesised step written as per-rank Kineto traces (`stepcast synth`)
CORE_SRCS += estimator/synth_trace.c
# what-ifs on traced jobs: the job's description, its structure recovered
# from the trace, the graph copied with new durations, the transforms
CORE_SRCS += estimator/job_config.c estimator/job_check.c estimator/structure.c estimator/coll_placement.c \
             estimator/graph_copy.c estimator/whatif.c estimator/whatif_pipeline.c estimator/whatif_plan.c estimator/whatif_size.c \
             estimator/coll_split.c \
             estimator/synth_compare.c
# a traced job's graph and its kept collectives' split, built once
CORE_SRCS += estimator/traced.c
# the façades programs call: a traced job opened and asked its questions,
# and an estimate's or a plan's request resolved (spec, hardware, costs)
CORE_SRCS += estimator/model_open.c estimator/request_resolve.c
# the job description and what-if set parser (tests/fuzz/fuzz_job_config.c)
FUZZ_TARGETS += job_config
# the quantisation kernels of the low-precision recipes (fp8, NVFP4)
CORE_SRCS += estimator/quant.c

# a replayed step as Chakra execution traces, and Chakra ET files replayed
# (estimator/chakra_export.h, estimator/chakra_import.h)
CORE_SRCS += estimator/chakra_export.c estimator/chakra_import.c
$(BUILD)/obj/estimator/chakra_export.o: $(BUILD)/gen/et_def.pb-c.h
