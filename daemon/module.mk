# daemon/: stepcastd: config, logs, catalog (SQLite or PostgreSQL: store.c's
# records over store_pool.c's connections, store_schema.c, store_blob.c and
# store_sql.c), blob store, model cache and builders, metrics, the HTTP server
# (libmicrohttpd). Everything but main.c goes into the library, so tests can
# drive the modules directly.
DAEMON_MAIN := daemon/main.c
CORE_SRCS += $(filter-out $(DAEMON_MAIN),$(wildcard daemon/*.c))
BINS += $(BUILD)/stepcastd

$(BUILD)/stepcastd: $(BUILD)/obj/daemon/main.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBSTEPCAST) $(LIBS)

# the request-body decoders (api/request.c)
FUZZ_TARGETS += request model_blob

# the web dashboard, built into stepcastd as a table of its files (dashboard.h)
DASHBOARD_FILES := $(sort $(wildcard clients/dashboard/*.html clients/dashboard/*.css \
                     clients/dashboard/*.js clients/dashboard/*.svg)) \
                   node_modules/chart.js/dist/chart.umd.min.js
DASHBOARD_C := $(BUILD)/gen/dashboard_files.c
CORE_SRCS += $(DASHBOARD_C)
$(DASHBOARD_C): scripts/embed.sh $(DASHBOARD_FILES)
	@mkdir -p $(dir $@)
	sh scripts/embed.sh dashboard_files $(DASHBOARD_FILES) >$@.tmp && mv $@.tmp $@
# npm ci (in scripts/deps.sh) installs it
node_modules/chart.js/dist/chart.umd.min.js:
	sh scripts/deps.sh $(CONFIG)
