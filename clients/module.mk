# clients/: the stepcast command line (local files; a remote daemon later).
CORE_SRCS += clients/table.c
CLI_SRCS := clients/main.c clients/cmd_inspect.c
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/stepcast

$(BUILD)/stepcast: $(CLI_OBJS) $(LIBSTEPCAST)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(LIBSTEPCAST) $(LIBS)
