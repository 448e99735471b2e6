# api/: JSON mapping (Jansson), routes, auth, OpenAPI.
CORE_SRCS += api/inspect_json.c
