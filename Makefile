# stepcast: one entry point for build, check, bench, run, install.
#
#   make                  build build/stepcast (and whatever else is enabled)
#   make check            all tests, again under ASan+UBSan, fuzz corpora replayed
#   make bench            performance figures (see BENCHMARKS.md)
#   make validate         estimates against measured step times (BENCHMARKS.md)
#   make run              the main job on the embedded sample data
#   make install          PREFIX=/usr/local
#   make SANITIZE=address,undefined   build into build/asan with sanitizers
#   make pgo              the profile of the optimised build made again
#
# Each folder lists its sources in its own module.mk; this file only knows how
# to compile and link. Missing Debian packages are installed by scripts/deps.sh
# before the first compile (it writes build/config.mk).

VERSION := $(shell cat VERSION)
PREFIX ?= /usr/local

ifdef SANITIZE
BUILD ?= build/asan
else
BUILD ?= build
endif

CONFIG := build/config.mk
ifeq ($(filter clean,$(MAKECMDGOALS)),)
-include $(CONFIG)
endif

CC ?= cc
CFLAGS ?= -O3 -g
# Link-time optimisation where GCC builds without sanitizers (LTO= turns it
# off): with -O3, the plan of `make bench` takes 13% less time than at -O2
# without it (BENCHMARKS.md, "Planner"), for about twice the build time.
ifeq ($(findstring clang,$(CC))$(SANITIZE)$(FUZZING),)
LTO ?= -flto=auto
endif
# Profile-guided optimisation where LTO is on (PGO= turns it off): before
# the first compile of a build directory, the command line is built
# instrumented (into the same objects, so that the profile's file names are
# theirs), run on the sample job and a generated one (scripts/pgo-train.sh),
# and every object is then compiled with that profile: `inspect` and
# `replay` of traces it was not made from take 4-5% less CPU (BENCHMARKS.md,
# "Ingest"). Code that does not match its profile is an error to GCC, so a
# change to the code the command line runs makes the profile again, and
# every object with it (`make PGO=` builds without, for quick rebuilds
# while editing; `make pgo` makes the profile again by hand).
ifneq ($(LTO),)
PGO ?= 1
endif
PGO_DIR := $(BUILD)/pgo
PGO_STAMP := $(PGO_DIR)/trained
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wvla -Wformat=2 -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-missing-field-initializers -Wno-format-truncation
ALL_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -I. \
             -DSTEPCAST_VERSION='"$(VERSION)"' $(WARNINGS) $(DEPS_CFLAGS) $(CFLAGS) $(LTO)
# (linked with LTO, GCC's string-overflow check misreads the arena's chunk
# sizes where the unit test inlines sc_arena_alloc: compiles still check it)
ALL_LDFLAGS = $(LDFLAGS) $(if $(LTO),$(LTO) $(filter -O%,$(CFLAGS)) -Wno-stringop-overflow)
LIBS = $(DEPS_LIBS)

ifneq ($(findstring clang,$(CC)),)
WARNINGS += -Wno-unknown-warning-option
endif

ifeq ($(PGO),1)
ALL_CFLAGS += -fprofile-use -fprofile-dir=$(abspath $(PGO_DIR)) -fprofile-partial-training -Wno-missing-profile
OBJ_PROFILE := $(PGO_STAMP)
endif
ifdef PGO_GEN
ALL_CFLAGS += -fprofile-generate -fprofile-update=atomic -fprofile-dir=$(abspath $(PGO_DIR))
ALL_LDFLAGS += -fprofile-generate
endif

ifdef SANITIZE
ALL_CFLAGS += -O1 -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif

# `make fuzz-build` builds the libFuzzer targets with clang into build/fuzz
# (or BUILD=DIR); `make fuzz` builds them and fuzzes each (FUZZ="a b": those
# only) until FUZZ_RUNS executions (1,000,000) or FUZZ_SECONDS (600),
# whichever comes first: hours in all, so not part of make check
# (tests/fuzz/long.sh)
ifdef FUZZING
ALL_CFLAGS += -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=address,undefined
endif

LIBSTEPCAST := $(BUILD)/libstepcast.a

# Filled by the module.mk files:
CORE_SRCS :=    # library code of every layer, linked into all programs and tests
BINS :=         # programs under $(BUILD)
TEST_SRCS :=    # test cases, linked into $(BUILD)/tests/stepcast-tests
FUZZ_TARGETS := # names of tests/fuzz/fuzz_<name>.c targets

include common/module.mk model/module.mk estimator/module.mk api/module.mk \
        daemon/module.mk clients/module.mk profiler/module.mk tests/module.mk

CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)

.PHONY: all check bench run install clean deps fuzz fuzz-build fuzz-targets validate docs pgo
.SECONDARY:
.DEFAULT_GOAL := all

all: $(BINS)

$(CONFIG): scripts/deps.sh package-lock.json
	@sh scripts/deps.sh $@

deps:
	@sh scripts/deps.sh $(CONFIG)

$(BUILD)/obj/%.o: %.c $(CONFIG) $(OBJ_PROFILE)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# the profile, from the code the command line and gentrace are built of: the
# instrumented objects are removed once it is made, and every object, older
# than it, is compiled again with it. The programs go with the objects:
# were one left, newer than every source (a header changed, not a .c), the
# instrumented build would find it up to date and the runs make no profile
PGO_SRCS := $(CORE_SRCS) $(CLI_SRCS) tests/tools/gentrace.c \
            $(wildcard common/*.h model/*.h estimator/*.h estimator/*/*.h api/*.h clients/*.h daemon/*.h)
$(PGO_STAMP): $(CONFIG) scripts/pgo-train.sh $(PGO_SRCS)
	@rm -rf $(BUILD)/obj $(LIBSTEPCAST) $(BUILD)/stepcast $(GENTRACE) $(PGO_DIR)
	$(MAKE) PGO= PGO_GEN=1 $(BUILD)/stepcast $(GENTRACE)
	sh scripts/pgo-train.sh $(BUILD)
	@rm -rf $(BUILD)/obj $(LIBSTEPCAST) $(BUILD)/stepcast $(GENTRACE)
	@mkdir -p $(PGO_DIR) && touch $@

pgo:
	rm -f $(PGO_STAMP)
	$(MAKE) all

$(LIBSTEPCAST): $(CORE_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

FUZZ_BUILD = $(if $(filter command line,$(origin BUILD)),$(BUILD),build/fuzz)
fuzz-build: $(CONFIG)
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang FUZZING=1 fuzz-targets

fuzz: fuzz-build
	@sh tests/fuzz/long.sh $(FUZZ_BUILD) $(FUZZ)

fuzz-targets: $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)

$(BUILD)/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $< $(LIBSTEPCAST) $(LIBS)

check: $(CONFIG)
	@bash tests/check.sh

bench: $(CONFIG)
	@sh tests/bench/bench.sh

# the estimator against ../shared/validation: the A100 steps, the lent
# Hopper GPUs' steps, the published H100 and GB200 runs (BENCHMARKS.md)
validate: $(CONFIG)
	@$(MAKE) -s $(BUILD)/validate $(BUILD)/stepcast
	@rc=0; $(BUILD)/validate $${STEPCAST_SHARED:-../shared}/validation/vtrain_single_node_a100.csv || rc=1; \
	    python3 tests/hopper_steps.py --cli $(BUILD)/stepcast || rc=1; \
	    $(BUILD)/validate --published $${STEPCAST_SHARED:-../shared}/validation/published/dgxc_benchmarking.md \
	    || rc=1; exit $$rc

# docs/api.md, docs/configuration.md and docs/cost-models.md's tables from
# stepcastd's own tables
docs: $(CONFIG)
	@$(MAKE) -s $(BUILD)/stepcastd
	@python3 scripts/gen-docs --build $(BUILD)

# the service on the embedded store under ./var, sample job loaded
run: all
	@sh daemon/run.sh $(BUILD)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(filter-out %.so,$(BINS)) $(DESTDIR)$(PREFIX)/bin/
	$(if $(filter %.so,$(BINS)),install -d $(DESTDIR)$(PREFIX)/lib && \
	  install -m 755 $(filter %.so,$(BINS)) $(DESTDIR)$(PREFIX)/lib/)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
