# daemon/: stepcastd: config, logs, catalog (SQLite), blob store, model cache
# and builders, metrics, the HTTP server (libmicrohttpd). Everything but main.c
# goes into the library, so tests can drive the modules directly.
DAEMON_MAIN := daemon/main.c
CORE_SRCS += $(filter-out $(DAEMON_MAIN),$(wildcard daemon/*.c))
BINS += $(BUILD)/stepcastd

$(BUILD)/stepcastd: $(BUILD)/obj/daemon/main.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# the request-body decoders (api/request.c)
FUZZ_TARGETS += request
