/* daemon/experiment_doc.h: a stored experiment as the API shows it, as it
 * stands (no verdict computed), for its handlers (h_experiments.c) and
 * for stepcastd --check (check_rows.h), which renders every row. */
#ifndef DAEMON_EXPERIMENT_DOC_H
#define DAEMON_EXPERIMENT_DOC_H

#include <jansson.h>

#include "daemon/store.h"

/* NULL when a stored text cannot be rendered. */
json_t *h_experiment_doc(const struct store_experiment *e);

/* The JSON document text holds, or JSON null (text NULL or not JSON). */
json_t *h_doc_or_null(const char *text);

#endif
