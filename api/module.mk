# api/: JSON mapping (Jansson), routes, request validation, auth, OpenAPI.
CORE_SRCS += $(wildcard api/*.c)
