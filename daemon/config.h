/* daemon/config.h: stepcastd's settings, as one table.
 *
 * Every setting is a row of the table in config.c (name, type, default,
 * min, max, help). A setting is filled, later sources winning, from:
 *
 *   1. the table's default;
 *   2. the config file (--config FILE or STEPCAST_CONFIG): `name = value`
 *      lines, `#` comments, `_` accepted for `-`;
 *   3. the environment: STEPCAST_<NAME>, upper case, `-` as `_`
 *      (STEPCAST_DATA_DIR, STEPCAST_ADMIN_TOKEN, ...);
 *   4. flags: --name VALUE or --name=VALUE.
 *
 * Sizes take K/M/G/T suffixes (powers of 1024), booleans true/false/1/0.
 * Everything is validated once at startup; the result is read-only after. */
#ifndef DAEMON_CONFIG_H
#define DAEMON_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

struct daemon_config {
    char *data_dir;         /* catalog, blobs, temp files */
    char *blobs;            /* the blob directory (blobs.h); "" for <data_dir>/blobs */
    char *store;            /* the catalog's URL (store.h); "" for
                             * sqlite:<data_dir>/catalog.db */
    char *listen;           /* HOST:PORT; port 0 picks a free one */
    char *port_file;        /* where the bound port is written, or "" */
    char *replica_name;     /* the replica label of /metrics (metrics.h); "":
                             * the data directory's (build_queue.h) */
    char *log_level;        /* debug|info|warn|error|off */
    char *admin_token;      /* first admin token (environment or file only) */
    char *admin_token_file; /* read it from here; created when absent */
    char *cors_origins;     /* comma-separated allowed origins, "*" for any */
    int64_t http_threads;
    int64_t heavy_requests;  /* threads of the pool that computes for requests
                              * (workers.h); 0 in the sources: half of
                              * http_threads */
    int64_t heavy_queue;     /* requests waiting for one of those threads */
    int64_t heavy_nice;      /* added to the nice value of threads doing heavy work */
    int64_t build_workers;
    int64_t max_connections;
    int64_t request_timeout; /* seconds a connection may stay idle */
    int64_t head_timeout;    /* seconds for a request's line and headers */
    int64_t min_body_rate;   /* bytes per second a request body keeps up */
    int64_t max_connections_per_client; /* open connections from one address */
    int64_t drain_timeout;   /* seconds SIGTERM waits for requests and builds */
    int64_t max_body;        /* bytes of one trace upload */
    int64_t max_json_body;   /* bytes of one JSON request body */
    int64_t max_json_depth;  /* nesting of a JSON request body */
    int64_t max_events;      /* traceEvents entries of one trace */
    int64_t max_ranks;       /* ranks of one job (rank ids are below it) */
    int64_t max_uploads;     /* uploads in progress at once */
    int64_t max_queued_builds; /* model builds waiting or running */
    int64_t store_connections; /* the PostgreSQL store's pool (store.h) */
    int64_t max_header;      /* bytes of request line and headers */
    int64_t cache_bytes;     /* memory for built models (LRU) */
    int64_t memory_budget;   /* estimated memory of the heavy work running at
                              * once (admission.h); 0 in the sources: half of
                              * physical RAM */
    int64_t max_stored_per_token; /* catalog rows one token may keep (0: any) */
    int64_t ops_need_token;  /* /healthz and /metrics need a read token */
};

/* Fill c from all four sources. argv holds only settings and --config
 * (the program strips its own action flags first). On failure c is still
 * safe to release and err names the setting and the source. */
int cfg_load(struct daemon_config *c, int argc, char **argv, struct sc_error *err);

void cfg_release(struct daemon_config *c);

/* Every setting with its value as `name = value` (secrets masked). */
void cfg_print(const struct daemon_config *c, FILE *f);

/* The settings as flags, with defaults and help, for --help. */
void cfg_usage(FILE *f);

/* The table itself as a JSON array (a json_t *; NULL when out of memory):
 * each setting's name, flag (or null when only the environment and the
 * file set it), environment variable, type (string, integer, size or
 * boolean), default, range (min and max, for numbers and sizes) and help,
 * for stepcastd --print-settings and the configuration document
 * (scripts/gen-docs). */
void *cfg_table_json(void);

#endif
