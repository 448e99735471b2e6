# api/: JSON mapping (Jansson), routes, request validation, auth, OpenAPI.
CORE_SRCS += $(wildcard api/*.c)
# `make fuzz`: what `stepcast ledger` reads: the ledger file and the CSV of
# measured step times (tests/fuzz/fuzz_ledger.c)
FUZZ_TARGETS += ledger
# the body of POST /v1/plans and the planning spec in it (tests/fuzz/fuzz_plan.c)
FUZZ_TARGETS += plan
# what a what-if reads: the stored job description and the what-if's body
# (tests/fuzz/fuzz_whatif_body.c); the ledger entry's body as the ledger
# renders and writes it (tests/fuzz/fuzz_validation_body.c)
FUZZ_TARGETS += whatif_body validation_body
