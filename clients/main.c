/* clients/main.c: the stepcast command line: global options, usage and
 * subcommand dispatch. Local commands read traces (a Kineto trace file,
 * plain or gzip, a directory of per-rank files, or a tar archive of them);
 * remote commands talk to a stepcastd (clients/remote.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/cli.h"
#include "clients/commands.h"
#include "clients/remote.h"
#include "common/banned.h"

static const char usage[] =
    "usage: stepcast [--version] [--help] [--server URL [--token-file F]] <command> [<args>]\n"
    "\n"
    "Trace-driven performance model of distributed training steps.\n"
    "\n"
    "commands:\n"
    "  inspect [--json] [--step-marker NAME] [--config FILE] TRACE...\n"
    "      what each rank's trace holds: GPU, steps, events, threads and\n"
    "      streams, collectives, and what a replay would lack\n"
    "  replay [--json] [--step-marker NAME] [--steps A-B] [--scale WHAT[@R]=F]...\n"
    "         [--keep-unexplained] [--timeline DIR] [--no-fold | --fold] TRACE...\n"
    "      rebuild each step from what its work costs: replayed against measured\n"
    "      time, error, breakdown, what the trace cannot explain; --scale changes\n"
    "      durations (what-if): WHAT is gpu, comm, cpu, launch, all, a task class,\n"
    "      kernel:TEXT, family:NAME or name:GLOB; alike ranks of a job of more\n"
    "      than 64 are folded into one that stands for them (--no-fold: never)\n"
    "  critical-path [--json] [--top N | --all] [--step-marker NAME] [--steps A-B] [--scale SPEC]...\n"
    "                [--keep-unexplained] [--no-fold | --fold] TRACE...\n"
    "      the chain of work and waits that sets each step's length\n"
    "  opportunities [--json] [--step-marker NAME] [--steps A-B] [--no-fold | --fold] TRACE...\n"
    "      what would shorten the step, ranked, each saving measured by a replay\n"
    "  diff [--json] [--step-marker NAME] [--steps A-B] [--no-fold | --fold] A B\n"
    "      two runs of one program: the step-time difference attributed by replays,\n"
    "      kernels added, removed and re-timed\n"
    "  ab [--json] [--min-effect PCT] [--refutations N] [--seed S] A B\n"
    "      did run B's change make the step faster or slower than run A's: the\n"
    "      difference of median steps, its interval, a verdict and refutations\n"
    "  whatif --config FILE [--set K=V,...] [--compare-synth] [--gpu-hour-usd P] [--json]\n"
    "         [--step-marker NAME] [--steps A-B] [--timeline DIR] TRACE...\n"
    "      the traced step at another configuration (tp, pp, dp, cp, layers,\n"
    "      model sizes, micro-batch, GPU): its measured work re-timed by the\n"
    "      estimator's models, what Megatron runs inserted, and replayed\n"
    "  hardware [--json] [ID]\n"
    "      the GPU profiles estimates use: peak TFLOP/s, memory, links, power\n"
    "  estimate --spec F [--detail stage|layer|kernel] [--calibrations DIR] [--require-fit] [--json]\n"
    "      step time, throughput, MFU, memory and cost of a configuration nobody\n"
    "      traced, from its spec: the step synthesised as a graph and replayed\n"
    "  plan --spec F --gpus N [--up-to] [--top K] [--objective time|cost] [--megatron]\n"
    "       [--calibrations DIR] [--json]\n"
    "  plan --from-traces --config F --gpus N [...] TRACE...\n"
    "      the best configurations of a model on N GPUs: every parallel layout,\n"
    "      micro-batch, schedule, recomputation and ZeRO stage the spec leaves\n"
    "      open, estimated in full and ranked by step time or cost; from traces,\n"
    "      each candidate the traced job's what-if\n"
    "  synth --spec F --out DIR [--detail kernel|layer|stage] [--calibrations DIR]\n"
    "      the synthesised step as per-rank Kineto traces (one per pipeline\n"
    "      stage, marked synthetic) that replay re-ingests\n"
    "  export chakra --out DIR [--steps A-B] TRACE... | export chakra --out DIR --spec F\n"
    "      the replayed step as Chakra execution traces (one .et per rank and\n"
    "      comm_group.json) for ASTRA-sim and other simulators\n"
    "  calibrate nccl-tests [--gpu ID] [--kind K] [--ranks N] [--nodes N] [--gemms TABLE]...\n"
    "       [--force] --out PROFILE.json FILE...\n"
    "      fit the collective model to nccl-tests outputs (and the GEMM costs to\n"
    "      GEMM tables): a cluster profile\n"
    "  spec from-hf [--seq N] [--gpus N --gpu ID [--global-batch B]] CONFIG.json\n"
    "  spec check SPEC.json\n"
    "      the model of a spec from a Hugging Face config.json (with GPUs, a whole\n"
    "      spec laid out as plan ranks first); a spec checked and written out with\n"
    "      every default\n"
    "  calibrate gemms [--gpu ID] [--force] --out PROFILE.json TABLE.csv...\n"
    "      fit the kernel model's GEMM costs to a GEMM microbenchmark table\n"
    "      (profiler/gemm-bench.sh on a GPU): a cluster profile\n"
    "  calibrate traces [--gpu ID] [--force] --out PROFILE.json TRACE...\n"
    "      fit GEMM and collective costs to a job's own traces; a fit past a\n"
    "      physical bound or no better than the defaults is written only with --force\n"
    "  ledger add|import|list|delete ... --ledger FILE (or with --server)\n"
    "      measured step times next to stepcast's predictions: MAPE, bands\n"
    "\n"
    "remote commands (a stepcastd at --server URL or $STEPCAST_SERVER; the token\n"
    "from $STEPCAST_TOKEN or --token-file):\n"
    "  upload --job J [--rank R] [--replace] FILE|DIR|TARBALL...\n"
    "  build --job J [--step-marker NAME] [--steps A-B] [--no-fold | --fold] [--wait]\n"
    "  replay --model ID [--json] [--scale SPEC]...\n"
    "  critical-path --model ID [--json] [--top N | --all] [--scale SPEC]...\n"
    "  opportunities --model ID [--json] | opportunities --fleet [--top N] [--json]\n"
    "  diff --model A --other B [--json]\n"
    "  ab --model A --other B [--json] [--min-effect PCT] [--refutations N] [--seed S]\n"
    "  whatif --model ID [--set K=V,...] [--json]\n"
    "  plan --from-model ID --gpus N [...]\n"
    "  experiment create --baseline JOB --variant JOB [--hypothesis TEXT] [--external-id ID]\n"
    "  experiment list [--external-id ID] | experiment show ID | experiment close ID [--json]\n"
    "      a job against another, the A/B verdict kept; a closed win banks its saving\n"
    "  fleet [--tag KEY:VALUE] [--since DAY] [--until DAY] [--top N] [--json]\n"
    "      jobs ranked by wasted GPU-hours a day (their actionable opportunities replayed together)\n"
    "  jobs [--json] [JOB] | jobs --delete JOB\n"
    "  job config --job J [--description TEXT] [--json] FILE: the job's description (what-ifs, plans)\n"
    "  models [--json] [--job J] [ID] | models --delete ID\n"
    "  tokens [--json] | tokens create --scope S [--name N] | tokens revoke ID\n"
    "  estimate, plan, hardware, ledger: as above, answered by the server\n"
    "  calibrate nccl-tests FILE --name N | calibrate gemms TABLE --name N |\n"
    "  calibrate model ID --name N |\n"
    "  calibrate list | calibrate show NAME: the server's named calibrations\n"
    "\n"
    "TRACE is a Kineto trace (JSON, plain or gzip), a directory of per-rank\n"
    "traces or a .tar(.gz) of them. Exit status: 0 success, 2 invalid input\n"
    "or usage, 3 an estimate --require-fit that does not fit, 1 anything else.\n";

/* Whether a command's arguments name what only a server holds: a built
 * model (--model, --other) or the fleet (--fleet). */
static int names_server_object(int argc, char **argv)
{
    static const char *const opts[] = {"--model", "--other", "--fleet"};
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++)
        if (cli_has_option(argc, argv, opts[k]))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        {"inspect", cmd_inspect},
        {"replay", cmd_replay},
        {"critical-path", cmd_critical_path},
        {"hardware", cmd_hardware},
        {"calibrate", cmd_calibrate},
        {"spec", cmd_spec},
        {"estimate", cmd_estimate},
        {"synth", cmd_synth},
        {"ledger", cmd_ledger},
        {"opportunities", cmd_opportunities},
        {"diff", cmd_diff},
        {"ab", cmd_ab},
        {"plan", cmd_plan},
        {"whatif", cmd_whatif},
        {"export", cmd_export},
    };

    /* remote commands; those that are local commands too (`local`) are the
     * remote ones only when their arguments name a server's object (a
     * model, the fleet): a server named, by --server or
     * $STEPCAST_SERVER, never changes what a local command means */
    static const struct {
        const char *name;
        int (*fn)(int, char **);
        int local;
    } remote_cmds[] = {
        {"upload", cmd_upload, 0},
        {"build", cmd_build, 0},
        {"replay", cmd_remote_replay, 1},
        {"critical-path", cmd_remote_critical_path, 1},
        {"opportunities", cmd_remote_opportunities, 1},
        {"diff", cmd_remote_diff, 1},
        {"ab", cmd_remote_ab, 1},
        {"whatif", cmd_remote_whatif, 1},
        {"experiment", cmd_experiment, 0},
        {"fleet", cmd_fleet, 0},
        {"jobs", cmd_jobs, 0},
        {"job", cmd_job, 0},
        {"models", cmd_models, 0},
        {"tokens", cmd_tokens, 0},
    };

    /* global options before the command: --server URL, --token-file F */
    while (argc >= 2 && (!strncmp(argv[1], "--server", 8) || !strncmp(argv[1], "--token-file", 12))) {
        int server = argv[1][2] == 's';
        const char *eq = strchr(argv[1], '='), *v = eq ? eq + 1 : argc >= 3 ? argv[2] : NULL;
        if (!v || (!eq && argv[1][server ? 8 : 12] != '\0'))
            return cli_usage_error(NULL, "%s needs a value", argv[1]);
        remote_set_options(server ? v : NULL, server ? NULL : v);
        argc -= eq ? 1 : 2;
        argv += eq ? 1 : 2;
    }
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("stepcast %s\n", STEPCAST_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof remote_cmds / sizeof remote_cmds[0]; i++)
        if (strcmp(argv[1], remote_cmds[i].name) == 0 &&
            (!remote_cmds[i].local || names_server_object(argc - 1, argv + 1)))
            return remote_cmds[i].fn(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].fn(argc - 1, argv + 1);
    return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
}
