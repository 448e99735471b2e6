/* estimator/costs/coll_lines.c: measured NCCL curves by size range, their
 * check and their document's table; the kinds' nccl-tests names
 * (coll_lines.h). */
#include "estimator/costs/coll_lines.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

/* The modelled kinds, in the enum's order, by their nccl-tests names. */
#define COLL_KINDS(X)                                                                                   \
    X(MODEL_COLL_ALLREDUCE, "all_reduce") X(MODEL_COLL_ALLGATHER, "all_gather")                         \
    X(MODEL_COLL_REDUCESCATTER, "reduce_scatter") X(MODEL_COLL_ALLTOALL, "alltoall")                    \
    X(MODEL_COLL_BROADCAST, "broadcast") X(MODEL_COLL_REDUCE, "reduce") X(MODEL_COLL_SENDRECV, "sendrecv")

static const struct {
    enum model_coll_op op;
    const char *name;
} kinds[] = {
#define KIND(op, name) {op, name},
    COLL_KINDS(KIND)
#undef KIND
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

/* One line's fields; sizes up to an exabyte, the rest in the model's ranges. */
#define LINE(key, member, lo, hi) \
    {key, DOC_NUM, DOC_REQUIRED, offsetof(struct coll_line, member), sizeof(double), lo, hi, NULL, NULL, 0}
static const struct doc_field line_fields[] = {
    LINE("from_bytes", from_bytes, 0, 1e18),
    LINE("to_bytes", to_bytes, 0, 1e18),
    LINE("hop_us", hop_us, 0, COLL_MAX_LATENCY_US),
    LINE("busbw_gbps", busbw_gbps, COLL_MIN_BUSBW_GBPS, COLL_MAX_BUSBW_GBPS),
};
static const struct doc_table line_doc = {line_fields, sizeof line_fields / sizeof line_fields[0], "a line",
                                          SC_EPARSE, 0};

/* A kind's lines: 1 to COLL_FIT_RANGES of them, absent when it has none. */
#define AT_KIND(op, member) ((size_t)(op) * sizeof(struct coll_lines) + offsetof(struct coll_lines, member))
static const struct doc_field kind_fields[] = {
#define KIND(op, name) \
    {name, DOC_LIST, DOC_SKIP_EMPTY, AT_KIND(op, v), sizeof(struct coll_line), 1, COLL_FIT_RANGES, NULL, &line_doc, AT_KIND(op, n)},
    COLL_KINDS(KIND)
#undef KIND
};
const struct doc_table cost_coll_lines_doc = {kind_fields, sizeof kind_fields / sizeof kind_fields[0],
                                              "the collective lines", SC_EPARSE, 0};

char *cost_coll_lines_json(const struct coll_lines lines[MODEL_COLL_OP_COUNT])
{
    int any = 0;
    for (int k = 0; k < MODEL_COLL_OP_COUNT; k++)
        any |= lines[k].n > 0;
    return any ? doc_write(&cost_coll_lines_doc, NULL, lines, NULL, 0) : NULL;
}
