/* model/trace_meta.c: the top-level members of a trace other than
 * traceEvents (trace_meta.h): the devices, the process groups and rank,
 * the time anchor and the schema version. */
#include "model/trace_meta.h"

#include <stdint.h>
#include <string.h>

#include "common/vec.h"
#include "model/trace_commit.h"
#include "common/banned.h"

/* The object whose '{' is at r->p, each member's value read by
 * member(r, key, ctx). */
static int parse_object(struct reader *r, int (*member)(struct reader *, struct slice, void *),
                        void *ctx)
{
    int more, rc = open_container(r, &more);
    while (!rc && more) {
        struct slice k;
        if ((rc = member_key(r, &k)) || (rc = member(r, k, ctx)) ||
            (rc = next_item(r, '}', &more)))
            return rc;
    }
    return rc;
}

/* An array of objects: entry(r, commit) reads each object; other elements
 * are skipped, and so is a value that is not an array. */
static int parse_objects(struct reader *r, int (*entry)(struct reader *, int), int commit)
{
    int more, rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '[')
        return tr_skip_value(r);
    if ((rc = open_container(r, &more)))
        return rc;
    while (more) {
        if ((rc = skip_ws(r)))
            return rc;
        rc = *r->p == '{' ? entry(r, commit) : tr_skip_value(r);
        if (rc || (rc = next_item(r, ']', &more)))
            return rc;
    }
    return RD_OK;
}

/* deviceProperties: [{"id":0,"name":"...","totalGlobalMem":..,...}, ...] */
struct device_fields {
    struct model_device d;
    struct slice name;
    int64_t major, minor, sms;
};

static int device_member(struct reader *r, struct slice k, void *ctx)
{
    struct device_fields *f = ctx;
    if (KEY_IS(k, "id"))
        return tr_get_int(r, &f->d.id, "id");
    if (KEY_IS(k, "name"))
        return tr_get_raw(r, &f->name);
    if (KEY_IS(k, "totalGlobalMem"))
        return tr_get_int(r, &f->d.total_mem, "totalGlobalMem");
    if (KEY_IS(k, "computeMajor"))
        return tr_get_int(r, &f->major, "computeMajor");
    if (KEY_IS(k, "computeMinor"))
        return tr_get_int(r, &f->minor, "computeMinor");
    if (KEY_IS(k, "numSms"))
        return tr_get_int(r, &f->sms, "numSms");
    return tr_skip_value(r);
}

static int32_t int32_or_none(int64_t v)
{
    return v > INT32_MAX ? -1 : (int32_t)v;
}

static int device_entry(struct reader *r, int commit)
{
    struct device_fields f = {.d = {.id = -1, .name = MODEL_NONE, .total_mem = -1},
                              .major = -1, .minor = -1, .sms = -1};
    int rc = parse_object(r, device_member, &f);
    if (rc || !commit)
        return rc;
    struct model_trace *t = r->t;
    if ((rc = tr_intern(r, f.name, &f.d.name)))
        return rc;
    f.d.major = int32_or_none(f.major);
    f.d.minor = int32_or_none(f.minor);
    f.d.num_sms = int32_or_none(f.sms);
    if (sc_vec_reserve((void **)&t->devices, &t->cap_devices, t->n_devices + 1,
                       sizeof *t->devices))
        return OOM(r);
    t->devices[t->n_devices++] = f.d;
    return RD_OK;
}

/* distributedInfo: {"backend":..,"rank":..,"world_size":..,"nccl_version":..,
 * "pg_config":[{"pg_name":..,"pg_desc":..,"pg_size":..,"ranks":[..] or ".."}]} */
struct pg_fields {
    struct slice name, desc, ranks;
    int64_t size;
};

static int pg_member(struct reader *r, struct slice k, void *ctx)
{
    struct pg_fields *f = ctx;
    if (KEY_IS(k, "pg_name"))
        return tr_get_raw(r, &f->name);
    if (KEY_IS(k, "pg_desc"))
        return tr_get_raw(r, &f->desc);
    if (KEY_IS(k, "pg_size"))
        return tr_get_int(r, &f->size, "pg_size");
    if (KEY_IS(k, "ranks"))
        return tr_get_raw(r, &f->ranks);
    return tr_skip_value(r);
}

static int pg_entry(struct reader *r, int commit)
{
    struct pg_fields f = {.size = -1};
    int rc = parse_object(r, pg_member, &f);
    if (rc || !commit)
        return rc;
    struct model_trace *t = r->t;
    struct model_pg pg;
    if ((rc = tr_intern(r, f.name, &pg.name)) || (rc = tr_intern(r, f.desc, &pg.desc)) ||
        (rc = tr_intern(r, f.ranks, &pg.ranks)))
        return rc;
    pg.size = int32_or_none(f.size);
    if (sc_vec_reserve((void **)&t->pgs, &t->cap_pgs, t->n_pgs + 1, sizeof *t->pgs))
        return OOM(r);
    t->pgs[t->n_pgs++] = pg;
    return RD_OK;
}

struct dist_fields {
    int64_t rank, world;
    struct slice backend, nccl;
    int commit;
};

static int dist_member(struct reader *r, struct slice k, void *ctx)
{
    struct dist_fields *f = ctx;
    if (KEY_IS(k, "rank"))
        return tr_get_int(r, &f->rank, "distributedInfo.rank");
    if (KEY_IS(k, "world_size"))
        return tr_get_int(r, &f->world, "distributedInfo.world_size");
    if (KEY_IS(k, "backend"))
        return tr_get_raw(r, &f->backend);
    if (KEY_IS(k, "nccl_version"))
        return tr_get_raw(r, &f->nccl);
    if (KEY_IS(k, "pg_config"))
        return parse_objects(r, pg_entry, f->commit);
    return tr_skip_value(r);
}

static int parse_distributed_info(struct reader *r, int commit)
{
    struct dist_fields f = {.rank = -1, .world = -1, .commit = commit};
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '{')
        return tr_skip_value(r);
    if ((rc = parse_object(r, dist_member, &f)) || !commit)
        return rc;
    struct model_trace *t = r->t;
    if (f.rank < -1 || f.world < -1 || f.rank > INT32_MAX || f.world > INT32_MAX)
        return FAIL(r, "distributedInfo has a negative or huge rank or world_size");
    t->has_distributed_info = 1;
    t->rank = f.rank;
    t->world_size = f.world;
    return (rc = tr_intern(r, f.backend, &t->backend)) ? rc : tr_intern(r, f.nccl, &t->nccl_version);
}

/* The value of a top-level member other than traceEvents. */
int tr_parse_member_value(struct reader *r, struct slice key, int commit)
{
    struct model_trace *t = r->t;
    int64_t v = -1;
    int rc;
    if (KEY_IS(key, "deviceProperties")) {
        if (commit)
            t->has_device_properties = 1;
        return parse_objects(r, device_entry, commit);
    }
    if (KEY_IS(key, "distributedInfo"))
        return parse_distributed_info(r, commit);
    if (KEY_IS(key, "baseTimeNanoseconds")) {
        if ((rc = tr_get_int(r, &v, "baseTimeNanoseconds")))
            return rc;
        if (commit && v >= 0) {
            t->base_time_ns = v;
            t->has_base_time = 1;
        }
        return RD_OK;
    }
    if (KEY_IS(key, "stepcast_synthetic")) {
        if ((rc = skip_ws(r)))
            return rc;
        if (*r->p != 't')
            return tr_skip_value(r);
        if ((rc = tr_lex_literal(r, "true", 4)))
            return rc;
        if (commit)
            t->synthetic = 1;
        return RD_OK;
    }
    if (KEY_IS(key, "schemaVersion")) {
        if ((rc = skip_ws(r)))
            return rc;
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) {
            if ((rc = tr_get_int(r, &v, "schemaVersion")))
                return rc;
            if (commit)
                t->schema_version = v;
            return RD_OK;
        }
        return tr_skip_value(r);
    }
    return tr_skip_value(r);
}

