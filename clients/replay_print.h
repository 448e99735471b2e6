/* clients/replay_print.h: aligned-table views of the replay and critical-path
 * documents (api/replay_json.h), for `stepcast replay` and
 * `stepcast critical-path`, local or remote, and the one way every command
 * that answers with a document prints it (JSON or text). All return an exit
 * status. */
#ifndef CLIENTS_REPLAY_PRINT_H
#define CLIENTS_REPLAY_PRINT_H

#include <jansson.h>

int cli_print_replay(const json_t *doc);
/* The same table for a what-if's replay: its columns and summary against
 * the traced run it changed ("traced ms", "what-if ms", "diff %"). */
int cli_print_whatif_replay(const json_t *doc);
/* The critical path per step: by default a summary, its time grouped by
 * bound and task name, the longest CLI_PATH_TOP_DEFAULT groups (or the
 * count --top gave, cli_critical_path_option); --all lists every entry in
 * order. */
int cli_print_critical_path(const json_t *doc);
/* The same text straight from a replay (model/replay.h), without making
 * the document of every segment: what the local command prints. */
struct model_replay;
int cli_print_critical_path_replay(const struct model_replay *r);
#define CLI_PATH_TOP_DEFAULT 10
#define CLI_PATH_ALL (-1L)
/* "--top N" or "--all" (opt 'T' with its argument, or 'A'): sets what the
 * text view shows; an exit status for a bad N, else 0. */
int cli_critical_path_option(const char *cmd, int opt, const char *arg);

/* Print doc (taken; NULL: out of memory) as indented JSON or with
 * as_text; the exit status. */
int cli_print_doc(json_t *doc, int json, int (*as_text)(const json_t *));

#endif
