# estimator/: cost models for new configurations (DESIGN.md §5): collectives
# and their calibration from nccl-tests output.
CORE_SRCS += estimator/nccl_tests.c estimator/collective_model.c

# the nccl-tests output reader (estimator/nccl_tests.c)
FUZZ_TARGETS += nccl_tests
