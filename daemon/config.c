/* daemon/config.c: the settings table and its four sources (config.h). */
#include "daemon/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon/log.h"
#include "daemon/metrics.h"
#include "common/banned.h"

enum cfg_type { CFG_STR, CFG_INT, CFG_SIZE, CFG_BOOL };

enum { CFG_SECRET = 1, /* never printed */
       CFG_NO_FLAG = 2 /* not accepted on the command line */ };

struct cfg_entry {
    const char *name;
    enum cfg_type type;
    size_t offset;
    const char *def;
    int64_t min, max;
    unsigned flags;
    const char *help;
};

#define F(field) offsetof(struct daemon_config, field)
#define KiB (INT64_C(1) << 10)
#define MiB (INT64_C(1) << 20)
#define GiB (INT64_C(1) << 30)
#define TiB (INT64_C(1) << 40)

static const struct cfg_entry table[] = {
    {"data-dir", CFG_STR, F(data_dir), "./var", 0, 0, 0, "catalog, trace blobs and temp files"},
    {"blobs", CFG_STR, F(blobs), "", 0, 0, 0,
     "blob directory: trace and built-model files by content hash, shareable by replicas on several "
     "hosts (default DATA-DIR/blobs)"},
    {"store", CFG_STR, F(store), "", 0, 0, 0,
     "catalog: sqlite:PATH or postgresql://... (default sqlite:DATA-DIR/catalog.db)"},
    {"store-connections", CFG_INT, F(store_connections), "4", 1, 256, 0,
     "connections to a PostgreSQL store (a pool; a transaction runs on one; SQLite uses one)"},
    {"listen", CFG_STR, F(listen), "127.0.0.1:8750", 0, 0, 0, "HOST:PORT to bind; port 0 picks a free port"},
    {"port-file", CFG_STR, F(port_file), "", 0, 0, 0, "write the bound port here"},
    {"replica-name", CFG_STR, F(replica_name), "", 0, 0, 0,
     "this daemon's name in the replica label of every /metrics sample: 1 to 64 letters, digits, '.', '_', "
     "':' or '-' (default: the data directory's own, DATA-DIR/replica, HOST-RANDOM made once)"},
    {"log-level", CFG_STR, F(log_level), "info", 0, 0, 0, "debug, info, warn, error or off"},
    {"admin-token", CFG_STR, F(admin_token), "", 0, 0, CFG_SECRET | CFG_NO_FLAG,
     "first admin token when the store has none"},
    {"admin-token-file", CFG_STR, F(admin_token_file), "", 0, 0, 0,
     "first admin token from this file (a new one is written there when absent)"},
    {"cors-origins", CFG_STR, F(cors_origins), "", 0, 0, 0,
     "comma-separated origins allowed by CORS (\"*\": any; empty: none)"},
    {"http-threads", CFG_INT, F(http_threads), "4", 1, 256, 0, "HTTP threads"},
    {"heavy-requests", CFG_INT, F(heavy_requests), "0", 0, 256, 0,
     "threads that compute for requests (estimates not memoised, replays, what-ifs, inline plans, "
     "validations), apart from the HTTP threads, which stay free for light requests (0: half of "
     "http-threads, at least 1)"},
    {"heavy-queue", CFG_INT, F(heavy_queue), "16", 0, 65536, 0,
     "requests waiting for a heavy-requests thread; more are refused with 429 and Retry-After"},
    {"heavy-nice", CFG_INT, F(heavy_nice), "10", 0, 19, 0,
     "added to the nice value of the threads doing heavy work (heavy-requests, builds, background plans), "
     "so that the HTTP threads get the CPU first"},
    {"build-workers", CFG_INT, F(build_workers), "2", 1, 64, 0, "model build threads"},
    {"max-connections", CFG_INT, F(max_connections), "512", 1, 65536, 0, "open connections"},
    {"request-timeout", CFG_INT, F(request_timeout), "60", 1, 86400, 0,
     "seconds a connection may stay idle before it is closed"},
    {"head-timeout", CFG_INT, F(head_timeout), "10", 1, 3600, 0,
     "seconds a request's line and headers may take, from accept or the previous request"},
    {"min-body-rate", CFG_SIZE, F(min_body_rate), "1K", 1, 1 * GiB, 0,
     "bytes per second a request body must keep up (over head-timeout windows)"},
    {"max-connections-per-client", CFG_INT, F(max_connections_per_client), "256", 1, 65536, 0,
     "open connections from one client address"},
    {"drain-timeout", CFG_INT, F(drain_timeout), "60", 0, 86400, 0,
     "seconds SIGTERM waits for requests and builds in flight"},
    {"max-body", CFG_SIZE, F(max_body), "4G", 1 * KiB, 1 * TiB, 0, "bytes of one trace upload"},
    {"max-json-body", CFG_SIZE, F(max_json_body), "1M", 256, 64 * MiB, 0, "bytes of one JSON request body"},
    {"max-json-depth", CFG_INT, F(max_json_depth), "32", 2, 1000, 0, "nesting of a JSON request body"},
    {"max-events", CFG_INT, F(max_events), "50000000", 1, INT64_C(1) << 40, 0,
     "traceEvents entries of one trace"},
    {"max-ranks", CFG_INT, F(max_ranks), "4096", 1, 65536, 0, "ranks of one job (rank ids are below it)"},
    {"max-uploads", CFG_INT, F(max_uploads), "16", 1, 4096, 0,
     "trace uploads in progress at once; their checks have as many places of their own on the "
     "heavy-requests threads, apart from heavy-queue"},
    {"max-queued-builds", CFG_INT, F(max_queued_builds), "64", 1, 100000, 0,
     "model builds waiting or running"},
    {"max-header", CFG_SIZE, F(max_header), "64K", 4 * KiB, 16 * MiB, 0,
     "bytes of the request line and headers (per-connection memory)"},
    {"cache-bytes", CFG_SIZE, F(cache_bytes), "1G", 1 * MiB, 1 * TiB, 0, "memory for built models (LRU)"},
    {"memory-budget", CFG_SIZE, F(memory_budget), "0", 0, 64 * TiB, 0,
     "estimated memory of the heavy work running at once (model builds, estimates, plan evaluations, "
     "validations); builds and background plans wait, a request is refused with 429 (0: half of "
     "physical memory)"},
    {"max-stored-per-token", CFG_INT, F(max_stored_per_token), "100000", 0, INT64_C(1) << 40, 0,
     "jobs, ledger entries, background plans and experiments one token may keep in the catalog; more are "
     "refused with 413 until it deletes some (0: no limit)"},
    {"ops-need-token", CFG_BOOL, F(ops_need_token), "false", 0, 1, 0,
     "/healthz and /metrics need a read token"},
};

#define N_ENTRIES (sizeof table / sizeof table[0])

static char **str_field(struct daemon_config *c, const struct cfg_entry *e)
{
    return (char **)(void *)((char *)c + e->offset);
}

static int64_t *int_field(struct daemon_config *c, const struct cfg_entry *e)
{
    return (int64_t *)(void *)((char *)c + e->offset);
}

/* "data_dir", "DATA-DIR" and "data-dir" name the same entry. */
static const struct cfg_entry *find(const char *name, size_t n)
{
    for (size_t i = 0; i < N_ENTRIES; i++) {
        const char *t = table[i].name;
        size_t k = 0;
        for (; k < n && t[k]; k++) {
            char a = (char)tolower((unsigned char)name[k]);
            if (a == '_')
                a = '-';
            if (a != t[k])
                break;
        }
        if (k == n && t[k] == '\0')
            return &table[i];
    }
    return NULL;
}

/* "64M", "1GiB", "4096" -> bytes; SC_EINVAL when it is not a size. */
static int parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*s))
        return SC_EINVAL;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (errno)
        return SC_EINVAL;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (unsigned long long)INT64_MAX >> shift)
        return SC_EINVAL;
    *out = (int64_t)(v << shift);
    return SC_OK;
}

static int parse_value(const struct cfg_entry *e, const char *value, int64_t *out)
{
    char *end;
    switch (e->type) {
    case CFG_BOOL:
        if (!strcasecmp(value, "true") || !strcmp(value, "1") || !strcasecmp(value, "yes"))
            *out = 1;
        else if (!strcasecmp(value, "false") || !strcmp(value, "0") || !strcasecmp(value, "no"))
            *out = 0;
        else
            return SC_EINVAL;
        return SC_OK;
    case CFG_SIZE:
        return parse_size(value, out);
    case CFG_INT:
        errno = 0;
        *out = strtoll(value, &end, 10);
        return errno || end == value || *end ? SC_EINVAL : SC_OK;
    case CFG_STR:
        break;
    }
    return SC_EINTERNAL;
}

static int set_entry(struct daemon_config *c, const struct cfg_entry *e, const char *value,
                     const char *origin, struct sc_error *err)
{
    if (e->type == CFG_STR) {
        char *copy = strdup(value);
        if (!copy)
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        free(*str_field(c, e));
        *str_field(c, e) = copy;
        return SC_OK;
    }
    int64_t v;
    if (parse_value(e, value, &v))
        return sc_error_set(err, SC_EINVAL, "%s: '%s' is not a valid %s for %s", origin, value,
                            e->type == CFG_BOOL ? "boolean" : e->type == CFG_SIZE ? "size" : "integer",
                            e->name);
    if (v < e->min || v > e->max)
        return sc_error_set(err, SC_EINVAL, "%s: %s = %s is out of range [%" PRId64 ", %" PRId64 "]",
                            origin, e->name, value, e->min, e->max);
    *int_field(c, e) = v;
    return SC_OK;
}

/* Set one setting by name from text; `origin` names the source in errors. */
static int cfg_set(struct daemon_config *c, const char *name, const char *value, const char *origin,
                   struct sc_error *err)
{
    const struct cfg_entry *e = find(name, strlen(name));
    if (!e)
        return sc_error_set(err, SC_EINVAL, "%s: unknown setting '%s'", origin, name);
    return set_entry(c, e, value, origin, err);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int load_file(struct daemon_config *c, const char *path, struct sc_error *err)
{
    FILE *f = fopen(path, "r");
    char line[4096], origin[4200];
    int rc = SC_OK, lineno = 0;
    if (!f)
        return sc_error_set(err, SC_ENOTFOUND, "cannot open config file '%s'", path);
    while (rc == SC_OK && fgets(line, sizeof line, f)) {
        lineno++;
        snprintf(origin, sizeof origin, "%s:%d", path, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            rc = sc_error_set(err, SC_EINVAL, "%s: line too long", origin);
            break;
        }
        char *s = trim(line);
        if (*s == '#' || *s == '\0')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = sc_error_set(err, SC_EINVAL, "%s: expected 'name = value'", origin);
            break;
        }
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        size_t vn = strlen(value);
        if (vn >= 2 && value[0] == '"' && value[vn - 1] == '"') {
            value[vn - 1] = '\0';
            value++;
        }
        rc = cfg_set(c, name, value, origin, err);
    }
    fclose(f);
    return rc;
}

/* "data-dir" -> "STEPCAST_DATA_DIR" */
static void env_name(const char *name, char *var, size_t size)
{
    size_t n = (size_t)snprintf(var, size, "STEPCAST_");
    for (; *name && n + 1 < size; name++)
        var[n++] = *name == '-' ? '_' : (char)toupper((unsigned char)*name);
    var[n] = '\0';
}

static int load_env(struct daemon_config *c, struct sc_error *err)
{
    for (size_t i = 0; i < N_ENTRIES; i++) {
        char var[64];
        env_name(table[i].name, var, sizeof var);
        const char *v = getenv(var);
        if (v) {
            int rc = set_entry(c, &table[i], v, var, err);
            if (rc)
                return rc;
        }
    }
    return SC_OK;
}

/* Flags: --name VALUE / --name=VALUE. With `config_only`, just find --config. */
static int load_flags(struct daemon_config *c, int argc, char **argv, const char **config,
                      int config_only, struct sc_error *err)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value;
        if (strncmp(a, "--", 2) != 0)
            return sc_error_set(err, SC_EINVAL, "unexpected argument '%s'", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return sc_error_set(err, SC_EINVAL, "%s needs a value", a);
        if (n == 6 && strncmp(name, "config", 6) == 0) {
            *config = value;
            continue;
        }
        const struct cfg_entry *e = find(name, n);
        if (!e || (e->flags & CFG_NO_FLAG))
            return sc_error_set(err, SC_EINVAL, "unknown option '--%.*s'%s", (int)n, name,
                                e ? " (set it in the environment or a file)" : "");
        if (config_only)
            continue;
        int rc = set_entry(c, e, value, "command line", err);
        if (rc)
            return rc;
    }
    return SC_OK;
}

/* replica-name, when given: a name the replica label can carry unescaped
 * (empty: the data directory's replica name, service.c). */
static int replica_name(const struct daemon_config *c, struct sc_error *err)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-";
    size_t n = strlen(c->replica_name);
    if (n && (n > METRICS_REPLICA_MAX || strspn(c->replica_name, ok) != n))
        return sc_error_set(err, SC_EINVAL, "replica-name: '%s' is not 1 to %d letters, digits, '.', '_', ':' or '-'",
                            c->replica_name, METRICS_REPLICA_MAX);
    return SC_OK;
}

static int validate(struct daemon_config *c, struct sc_error *err)
{
    int rc, lvl = log_level_parse(c->log_level);
    if (lvl < 0)
        return sc_error_set(err, SC_EINVAL, "log-level: '%s' is not debug, info, warn, error or off",
                            c->log_level);
    if (!*c->data_dir)
        return sc_error_set(err, SC_EINVAL, "data-dir is empty");
    if (!strrchr(c->listen, ':'))
        return sc_error_set(err, SC_EINVAL, "listen: '%s' is not HOST:PORT", c->listen);
    if ((rc = replica_name(c, err)))
        return rc;
    if (c->heavy_requests == 0)
        c->heavy_requests = c->http_threads / 2 > 0 ? c->http_threads / 2 : 1;
    if (c->memory_budget == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages <= 0 || page <= 0)
            return sc_error_set(err, SC_EINVAL, "memory-budget: the physical memory is unknown; set it");
        c->memory_budget = (int64_t)pages * page / 2;
    }
    return SC_OK;
}

int cfg_load(struct daemon_config *c, int argc, char **argv, struct sc_error *err)
{
    const char *config = getenv("STEPCAST_CONFIG");
    int rc;
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_ENTRIES; i++)
        if ((rc = set_entry(c, &table[i], table[i].def, "default", err)))
            return rc;
    if ((rc = load_flags(c, argc, argv, &config, 1, err)))
        return rc;
    if (config && *config && (rc = load_file(c, config, err)))
        return rc;
    if ((rc = load_env(c, err)) || (rc = load_flags(c, argc, argv, &config, 0, err)))
        return rc;
    return validate(c, err);
}

void cfg_release(struct daemon_config *c)
{
    for (size_t i = 0; i < N_ENTRIES; i++)
        if (table[i].type == CFG_STR) {
            free(*str_field(c, &table[i]));
            *str_field(c, &table[i]) = NULL;
        }
}

void cfg_print(const struct daemon_config *c, FILE *f)
{
    for (size_t i = 0; i < N_ENTRIES; i++) {
        const struct cfg_entry *e = &table[i];
        if (e->type == CFG_STR) {
            const char *v = *str_field((struct daemon_config *)c, e);
            fprintf(f, "%s = %s\n", e->name, (e->flags & CFG_SECRET) && *v ? "(set)" : v);
        } else if (e->type == CFG_BOOL) {
            fprintf(f, "%s = %s\n", e->name, *int_field((struct daemon_config *)c, e) ? "true" : "false");
        } else {
            fprintf(f, "%s = %" PRId64 "\n", e->name, *int_field((struct daemon_config *)c, e));
        }
    }
}

void cfg_usage(FILE *f)
{
    for (size_t i = 0; i < N_ENTRIES; i++) {
        const struct cfg_entry *e = &table[i];
        char flag[64];
        if (e->flags & CFG_NO_FLAG)
            env_name(e->name, flag, sizeof flag);
        else
            snprintf(flag, sizeof flag, "--%s %s", e->name,
                     e->type == CFG_STR ? "S" : e->type == CFG_BOOL ? "BOOL" : e->type == CFG_SIZE ? "SIZE" : "N");
        fprintf(f, "  %-30s %s", flag, e->help);
        if (*e->def)
            fprintf(f, " [%s]", e->def);
        fputc('\n', f);
    }
}

void *cfg_table_json(void)
{
    static const char *const types[] = {[CFG_STR] = "string", [CFG_INT] = "integer", [CFG_SIZE] = "size",
                                        [CFG_BOOL] = "boolean"};
    json_t *a = json_array();
    for (size_t i = 0; a && i < N_ENTRIES; i++) {
        const struct cfg_entry *e = &table[i];
        char env[64], flag[64];
        env_name(e->name, env, sizeof env);
        snprintf(flag, sizeof flag, "--%s", e->name);
        json_t *o = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:s}", "name", e->name, "flag",
                              e->flags & CFG_NO_FLAG ? NULL : flag, "env", env, "type", types[e->type], "default",
                              e->def, "help", e->help);
        if (o && (e->type == CFG_INT || e->type == CFG_SIZE) &&
            (json_object_set_new(o, "min", json_integer(e->min)) ||
             json_object_set_new(o, "max", json_integer(e->max)))) {
            json_decref(o);
            o = NULL;
        }
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}
