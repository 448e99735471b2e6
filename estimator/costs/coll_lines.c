/* estimator/costs/coll_lines.c: measured NCCL curves by size range, their
 * check and their JSON; the kinds' nccl-tests names (coll_lines.h). */
#include "estimator/costs/coll_lines.h"

#include <math.h>
#include <string.h>

#include <jansson.h>

#include "common/banned.h"

static const struct {
    enum model_coll_op op;
    const char *name;
} kinds[] = {
    {MODEL_COLL_ALLREDUCE, "all_reduce"}, {MODEL_COLL_ALLGATHER, "all_gather"},
    {MODEL_COLL_REDUCESCATTER, "reduce_scatter"}, {MODEL_COLL_ALLTOALL, "alltoall"},
    {MODEL_COLL_BROADCAST, "broadcast"}, {MODEL_COLL_REDUCE, "reduce"},
    {MODEL_COLL_SENDRECV, "sendrecv"},
};

int cost_coll_kind_modelled(enum model_coll_op k)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].op == k)
            return 1;
    return 0;
}

const char *cost_coll_kind_name(enum model_coll_op k)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].op == k)
            return kinds[i].name;
    return "unknown";
}

enum model_coll_op cost_coll_kind_from_name(const char *s)
{
    for (size_t i = 0; s && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].name, s) == 0)
            return kinds[i].op;
    return MODEL_COLL_UNKNOWN;
}

const double coll_fit_range_lo[COLL_FIT_RANGES] = {1, 65536, 1048576, 16777216};

int cost_coll_kind_lines_valid(enum model_coll_op k, const struct coll_lines *L, struct sc_error *err)
{
    if (L->n < 0 || L->n > COLL_FIT_RANGES || (L->n > 0 && !cost_coll_kind_modelled(k)))
        return sc_error_set(err, SC_EINVAL, "collective parameters: at most %d lines, of a modelled kind",
                            COLL_FIT_RANGES);
    for (int i = 0; i < L->n; i++) {
        const struct coll_line *l = &L->v[i];
        if (!(l->busbw_gbps >= COLL_MIN_BUSBW_GBPS && l->busbw_gbps <= COLL_MAX_BUSBW_GBPS) ||
            !(l->hop_us >= 0 && l->hop_us <= COLL_MAX_LATENCY_US) || !(l->from_bytes >= 0) ||
            !(l->to_bytes >= l->from_bytes) || !isfinite(l->to_bytes) ||
            (i > 0 && !(l->from_bytes > L->v[i - 1].to_bytes)))
            return sc_error_set(err, SC_EINVAL, "collective parameters: %s line %d: busbw must be %g to %g GB/s, "
                                "latency 0 to %g us, and its sizes (0 <= from <= to) above the line before",
                                cost_coll_kind_name(k), i + 1, COLL_MIN_BUSBW_GBPS, COLL_MAX_BUSBW_GBPS,
                                COLL_MAX_LATENCY_US);
    }
    return SC_OK;
}

int cost_coll_lines_valid(const struct coll_lines lines[MODEL_COLL_OP_COUNT], struct sc_error *err)
{
    for (int k = 0; k < MODEL_COLL_OP_COUNT; k++)
        if (cost_coll_kind_lines_valid((enum model_coll_op)k, &lines[k], err))
            return err->code;
    return SC_OK;
}

char *cost_coll_lines_json(const struct coll_lines lines[MODEL_COLL_OP_COUNT])
{
    json_t *o = NULL;
    for (int k = 0; k < MODEL_COLL_OP_COUNT; k++) {
        const struct coll_lines *L = &lines[k];
        json_t *a = L->n > 0 ? json_array() : NULL;
        for (int i = 0; a && i < L->n; i++)
            json_array_append_new(a, json_pack("{s:f, s:f, s:f, s:f}", "from_bytes", L->v[i].from_bytes,
                                               "to_bytes", L->v[i].to_bytes, "hop_us", L->v[i].hop_us,
                                               "busbw_gbps", L->v[i].busbw_gbps));
        if (a && (o || (o = json_object())))
            json_object_set_new(o, cost_coll_kind_name((enum model_coll_op)k), a);
        else
            json_decref(a);
    }
    char *text = o ? json_dumps(o, 0) : NULL; /* doubles at 17 digits: read back exactly */
    json_decref(o);
    return text;
}

/* The lines of object o into got[] (zeroed), checked field by field. */
static int lines_read(json_t *o, const char *where, struct coll_lines got[MODEL_COLL_OP_COUNT], struct sc_error *err)
{
    static const char *const fields[] = {"from_bytes", "to_bytes", "hop_us", "busbw_gbps"};
    json_t *a;
    const char *key;
    memset(got, 0, MODEL_COLL_OP_COUNT * sizeof got[0]);
    if (!json_is_object(o))
        return sc_error_set(err, SC_EPARSE, "%s must be an object", where);
    json_object_foreach(o, key, a) {
        enum model_coll_op k = cost_coll_kind_from_name(key);
        if (k == MODEL_COLL_UNKNOWN)
            return sc_error_set(err, SC_EPARSE, "%s.%.32s: not a collective kind", where, key);
        if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > COLL_FIT_RANGES)
            return sc_error_set(err, SC_EPARSE, "%s.%s must be an array of 1 to %d lines", where, key,
                                COLL_FIT_RANGES);
        struct coll_lines *L = &got[k];
        L->n = (int)json_array_size(a);
        for (int i = 0; i < L->n; i++) {
            json_t *l = json_array_get(a, (size_t)i);
            double v[4];
            for (int f = 0; f < 4; f++) {
                json_t *n = json_is_object(l) ? json_object_get(l, fields[f]) : NULL;
                if (!json_is_number(n) || !isfinite(json_number_value(n)) || json_number_value(n) < 0)
                    return sc_error_set(err, SC_EPARSE, "%s.%s[%d].%s must be a number >= 0", where, key, i,
                                        fields[f]);
                v[f] = json_number_value(n);
            }
            L->v[i] = (struct coll_line){v[0], v[1], v[2], v[3]};
        }
    }
    return SC_OK;
}

int cost_coll_lines_parse(const char *text, size_t len, const char *where,
                          struct coll_lines lines[MODEL_COLL_OP_COUNT], struct sc_error *err)
{
    struct coll_lines got[MODEL_COLL_OP_COUNT];
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return sc_error_set(err, SC_EPARSE, "%s: %s (line %d)", where, je.text, je.line);
    int rc = lines_read(o, where, got, err);
    json_decref(o);
    if (rc)
        return rc;
    if (cost_coll_lines_valid(got, err)) {
        err->code = SC_EPARSE;
        return sc_error_prefix(err, "%s", where);
    }
    memcpy(lines, got, sizeof got);
    return SC_OK;
}
