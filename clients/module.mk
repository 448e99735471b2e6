# clients/: the stepcast command line. clients/main.c dispatches to one
# clients/cmd_<name>.c per subcommand; other files are shared helpers.
CLI_SRCS := clients/main.c $(wildcard clients/cmd_*.c)
CORE_SRCS += $(filter-out $(CLI_SRCS),$(wildcard clients/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/stepcast

$(BUILD)/stepcast: $(CLI_OBJS) $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(LIBSTEPCAST) $(LIBS)
