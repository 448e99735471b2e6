/* clients/replay_print.h: aligned-table views of the replay and critical-path
 * documents (api/replay_json.h), for `stepcast replay` and
 * `stepcast critical-path`, local or remote. Both return an exit status. */
#ifndef CLIENTS_REPLAY_PRINT_H
#define CLIENTS_REPLAY_PRINT_H

#include <jansson.h>

int cli_print_replay(const json_t *doc);
int cli_print_critical_path(const json_t *doc);

#endif
