/* clients/commands.h: the subcommands clients/main.c dispatches to, each
 * `int cmd_<name>(int argc, char **argv)` defined in its
 * clients/cmd_<name>.c and returning the process exit status. Only
 * main.c calls them; a subcommand calls the helpers of clients/cli.h, so
 * no call runs back up to main.c. */
#ifndef CLIENTS_COMMANDS_H
#define CLIENTS_COMMANDS_H

/* local: traces, specs and files here */
int cmd_inspect(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_critical_path(int argc, char **argv);
int cmd_hardware(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_spec(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_ledger(int argc, char **argv);
int cmd_opportunities(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_ab(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_export(int argc, char **argv);

/* remote: a stepcastd's (clients/remote.h) */
int cmd_upload(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_remote_replay(int argc, char **argv);
int cmd_remote_critical_path(int argc, char **argv);
int cmd_remote_opportunities(int argc, char **argv);
int cmd_remote_diff(int argc, char **argv);
int cmd_remote_ab(int argc, char **argv);
int cmd_experiment(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_remote_whatif(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_tokens(int argc, char **argv);

#endif
