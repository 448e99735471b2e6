/* clients/replay_print.h: aligned-table views of the replay and critical-path
 * documents (api/replay_json.h), for `stepcast replay` and
 * `stepcast critical-path`, local or remote, and the one way every command
 * that answers with a document prints it (JSON or text). All return an exit
 * status. */
#ifndef CLIENTS_REPLAY_PRINT_H
#define CLIENTS_REPLAY_PRINT_H

#include <jansson.h>

int cli_print_replay(const json_t *doc);
int cli_print_critical_path(const json_t *doc);

/* Print doc (taken; NULL: out of memory) as indented JSON or with
 * as_text; the exit status. */
int cli_print_doc(json_t *doc, int json, int (*as_text)(const json_t *));

#endif
