/* model/trace.c: building and finishing the event tables (trace.h).
 *
 * The category alias table lives here: it maps every spelling of a category
 * seen in real traces (current Kineto, the capitalised names of PyTorch <=
 * 1.10, ROCm) to one event kind, case-insensitively. */
#include "model/trace.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/i64map.h"
#include "common/pagevec.h"
#include "common/vec.h"
#include "model/runtime_api.h"
#include "common/banned.h"

static const char *const kind_names[MODEL_EV_KIND_COUNT] = {
    [MODEL_EV_CPU_OP] = "cpu_op",
    [MODEL_EV_USER_ANNOTATION] = "user_annotation",
    [MODEL_EV_PYTHON] = "python_function",
    [MODEL_EV_RUNTIME] = "cuda_runtime",
    [MODEL_EV_DRIVER] = "cuda_driver",
    [MODEL_EV_KERNEL] = "kernel",
    [MODEL_EV_MEMCPY] = "gpu_memcpy",
    [MODEL_EV_MEMSET] = "gpu_memset",
    [MODEL_EV_GPU_ANNOTATION] = "gpu_user_annotation",
    [MODEL_EV_CUDA_SYNC] = "cuda_sync",
    [MODEL_EV_CUDA_EVENT] = "cuda_event",
    [MODEL_EV_OTHER] = "other",
    [MODEL_EV_UNKNOWN] = "unknown",
};

const char *model_event_kind_name(enum model_event_kind k)
{
    return (unsigned)k < MODEL_EV_KIND_COUNT ? kind_names[k] : "unknown";
}

/* Category spellings -> kind; flows are marked with flow != 0. */
static const struct {
    const char *cat;
    uint8_t kind;
    uint8_t flow; /* 0, or enum model_flow_kind + 1 */
} cat_aliases[] = {
    {"cpu_op", MODEL_EV_CPU_OP, 0},
    {"operator", MODEL_EV_CPU_OP, 0},
    {"user_annotation", MODEL_EV_USER_ANNOTATION, 0},
    {"python_function", MODEL_EV_PYTHON, 0},
    {"cuda_runtime", MODEL_EV_RUNTIME, 0},
    {"runtime", MODEL_EV_RUNTIME, 0},
    {"hip_runtime", MODEL_EV_RUNTIME, 0},
    {"cuda_driver", MODEL_EV_DRIVER, 0},
    {"driver", MODEL_EV_DRIVER, 0},
    {"hip_driver", MODEL_EV_DRIVER, 0},
    {"kernel", MODEL_EV_KERNEL, 0},
    {"gpu_memcpy", MODEL_EV_MEMCPY, 0},
    {"memcpy", MODEL_EV_MEMCPY, 0},
    {"gpu_memset", MODEL_EV_MEMSET, 0},
    {"memset", MODEL_EV_MEMSET, 0},
    {"gpu_user_annotation", MODEL_EV_GPU_ANNOTATION, 0},
    {"cuda_sync", MODEL_EV_CUDA_SYNC, 0},
    {"cuda_event", MODEL_EV_CUDA_EVENT, 0},
    {"trace", MODEL_EV_OTHER, 0},
    {"overhead", MODEL_EV_OTHER, 0},
    {"external_correlation", MODEL_EV_OTHER, 0},
    {"cuda_profiler_range", MODEL_EV_OTHER, 0},
    {"cpu_instant_event", MODEL_EV_OTHER, 0},
    {"collective_comm", MODEL_EV_OTHER, 0},
    {"ac2g", MODEL_EV_OTHER, MODEL_FLOW_LAUNCH + 1},
    {"async_cpu_to_gpu", MODEL_EV_OTHER, MODEL_FLOW_LAUNCH + 1},
    {"async_gpu", MODEL_EV_OTHER, MODEL_FLOW_LAUNCH + 1},
    {"async", MODEL_EV_OTHER, MODEL_FLOW_LAUNCH + 1},
    {"fwdbwd", MODEL_EV_OTHER, MODEL_FLOW_FWDBWD + 1},
    {"forward_backward", MODEL_EV_OTHER, MODEL_FLOW_FWDBWD + 1},
    {"fwd_bwd", MODEL_EV_OTHER, MODEL_FLOW_FWDBWD + 1},
};

void model_limits_default(struct model_limits *l)
{
    l->max_events = MODEL_MAX_EVENTS;
    l->max_item_bytes = MODEL_MAX_ITEM_BYTES;
    l->max_string = MODEL_MAX_STRING;
    l->max_depth = MODEL_MAX_DEPTH;
}

void model_load_opts_default(struct model_load_opts *o)
{
    memset(o, 0, sizeof *o);
    model_limits_default(&o->limits);
}

int model_trace_new(const char *source, struct model_trace **out, struct sc_error *err)
{
    struct model_trace *t = calloc(1, sizeof *t);
    *out = NULL;
    if (!t || !(t->source = strdup(source ? source : "(trace)")) || sc_strtab_init(&t->strings)) {
        model_trace_free(t);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    t->schema_version = -1;
    t->rank = -1;
    t->world_size = -1;
    t->backend = MODEL_NONE;
    t->nccl_version = MODEL_NONE;
    t->first_ts = INT64_MAX;
    t->last_end = INT64_MIN;
    *out = t;
    return SC_OK;
}

void model_trace_free(struct model_trace *t)
{
    if (!t)
        return;
    model_trace_shed(t); /* the event tables */
    free(t->source);
    sc_strtab_release(&t->strings);
    free(t->tracks);
    free(t->cats);
    free(t->devices);
    free(t->pgs);
    free(t->steps);
    free(t);
}

void model_trace_shed(struct model_trace *t)
{
    sc_pagevec_free(t->events, t->cap_events, sizeof *t->events);
    sc_pagevec_free(t->infos, t->cap_infos, sizeof *t->infos);
    sc_pagevec_free(t->op_args, t->cap_op_args, sizeof *t->op_args);
    sc_pagevec_free(t->colls, t->cap_colls, sizeof *t->colls);
    sc_pagevec_free(t->syncs, t->cap_syncs, sizeof *t->syncs);
    sc_pagevec_free(t->flows, t->cap_flows, sizeof *t->flows);
    free(t->link);
    free(t->track_slots);
    free(t->cat_slots);
    t->events = NULL;
    t->infos = NULL;
    t->op_args = NULL;
    t->colls = NULL;
    t->syncs = NULL;
    t->flows = NULL;
    t->link = NULL;
    t->track_slots = t->cat_slots = NULL;
    t->n_events = t->cap_events = t->n_infos = t->cap_infos = t->n_colls = t->cap_colls = 0;
    t->n_op_args = t->cap_op_args = 0;
    t->n_syncs = t->cap_syncs = t->n_flows = t->cap_flows = 0;
    t->n_track_slots = t->n_cat_slots = 0;
    t->shed = 1;
}

size_t model_trace_bytes(const struct model_trace *t)
{
    return sizeof *t + t->cap_events * sizeof *t->events + t->cap_infos * sizeof *t->infos +
           t->cap_op_args * sizeof *t->op_args +
           t->cap_colls * sizeof *t->colls + t->cap_syncs * sizeof *t->syncs +
           t->cap_flows * sizeof *t->flows + t->cap_tracks * sizeof *t->tracks +
           t->cap_cats * sizeof *t->cats + t->cap_devices * sizeof *t->devices +
           t->cap_pgs * sizeof *t->pgs + t->n_steps * sizeof *t->steps +
           (t->link ? t->n_events * sizeof *t->link : 0) +
           (t->n_track_slots + t->n_cat_slots) * sizeof(uint32_t) + t->strings.arena.bytes +
           t->strings.cap * sizeof *t->strings.strs + t->strings.nslots * sizeof(uint32_t);
}

/* Open addressing over dense records: slots hold index + 1, 0 is empty. The
 * table doubles at half load; `hash_of(i)` rehashes record i. */
static int slots_grow(uint32_t **slots, size_t *nslots, size_t n,
                      uint64_t (*hash_of)(const struct model_trace *, size_t),
                      const struct model_trace *t)
{
    size_t m = *nslots ? *nslots * 2 : 64;
    assert((m & (m - 1)) == 0 && n * 2 <= m);
    uint32_t *s = calloc(m, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t j = hash_of(t, i) & (m - 1);
        while (s[j])
            j = (j + 1) & (m - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(*slots);
    *slots = s;
    *nslots = m;
    return 0;
}

static uint64_t cat_hash(uint32_t name)
{
    return (uint64_t)name * 0x9E3779B97F4A7C15ull >> 17;
}

static uint64_t cat_hash_of(const struct model_trace *t, size_t i)
{
    return cat_hash(t->cats[i].name);
}

int model_trace_cat(struct model_trace *t, const char *cat, size_t n, uint16_t *out)
{
    uint32_t id;
    if (sc_strtab_intern(&t->strings, cat, n, &id))
        return -1;
    if (t->n_cat_slots) {
        size_t j = cat_hash(id) & (t->n_cat_slots - 1);
        for (; t->cat_slots[j]; j = (j + 1) & (t->n_cat_slots - 1)) {
            assert(t->cat_slots[j] <= t->n_cats);
            if (t->cats[t->cat_slots[j] - 1].name == id) {
                *out = (uint16_t)(t->cat_slots[j] - 1);
                return 0;
            }
        }
    }
    if (t->n_cats >= UINT16_MAX)
        return -1;
    if (sc_vec_reserve((void **)&t->cats, &t->cap_cats, t->n_cats + 1, sizeof *t->cats))
        return -1;
    struct model_cat *c = &t->cats[t->n_cats];
    c->name = id;
    c->kind = MODEL_EV_UNKNOWN;
    c->flow = 0;
    c->count = 0;
    for (size_t i = 0; i < sizeof cat_aliases / sizeof cat_aliases[0]; i++)
        if (strlen(cat_aliases[i].cat) == n && strncasecmp(cat_aliases[i].cat, cat, n) == 0) {
            c->kind = cat_aliases[i].kind;
            c->flow = cat_aliases[i].flow;
            break;
        }
    *out = (uint16_t)t->n_cats++;
    if (t->n_cats * 2 > t->n_cat_slots)
        return slots_grow(&t->cat_slots, &t->n_cat_slots, t->n_cats, cat_hash_of, t);
    assert(t->n_cats * 2 <= t->n_cat_slots); /* a free slot ends every probe */
    size_t j = cat_hash(id) & (t->n_cat_slots - 1);
    while (t->cat_slots[j])
        j = (j + 1) & (t->n_cat_slots - 1);
    t->cat_slots[j] = (uint32_t)t->n_cats;
    return 0;
}

static uint64_t track_hash(int64_t pid, uint32_t pid_str, int64_t tid, uint32_t tid_str)
{
    uint64_t h = (uint64_t)pid * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29) ^ (uint64_t)tid) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 31) ^ ((uint64_t)pid_str << 32 | tid_str)) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

static uint64_t track_hash_of(const struct model_trace *t, size_t i)
{
    const struct model_track *k = &t->tracks[i];
    return track_hash(k->pid, k->pid_str, k->tid, k->tid_str);
}

int model_trace_track(struct model_trace *t, int64_t pid, uint32_t pid_str, int64_t tid,
                      uint32_t tid_str, uint32_t *out)
{
    uint64_t h = track_hash(pid, pid_str, tid, tid_str);
    if (t->n_track_slots) {
        size_t j = h & (t->n_track_slots - 1);
        for (; t->track_slots[j]; j = (j + 1) & (t->n_track_slots - 1)) {
            assert(t->track_slots[j] <= t->n_tracks);
            const struct model_track *k = &t->tracks[t->track_slots[j] - 1];
            if (k->pid == pid && k->tid == tid && k->pid_str == pid_str && k->tid_str == tid_str) {
                *out = t->track_slots[j] - 1;
                return 0;
            }
        }
    }
    if (t->n_tracks >= MODEL_NONE - 1 ||
        sc_vec_reserve((void **)&t->tracks, &t->cap_tracks, t->n_tracks + 1, sizeof *t->tracks))
        return -1;
    struct model_track *k = &t->tracks[t->n_tracks];
    memset(k, 0, sizeof *k);
    k->pid = pid;
    k->tid = tid;
    k->pid_str = pid_str;
    k->tid_str = tid_str;
    k->label = MODEL_NONE;
    *out = (uint32_t)t->n_tracks++;
    if (t->n_tracks * 2 > t->n_track_slots)
        return slots_grow(&t->track_slots, &t->n_track_slots, t->n_tracks, track_hash_of, t);
    assert(t->n_tracks * 2 <= t->n_track_slots);
    size_t j = h & (t->n_track_slots - 1);
    while (t->track_slots[j])
        j = (j + 1) & (t->n_track_slots - 1);
    t->track_slots[j] = (uint32_t)t->n_tracks;
    return 0;
}

int model_trace_add_event(struct model_trace *t, const struct model_event *e)
{
    if (sc_pagevec_reserve((void **)&t->events, &t->cap_events, t->n_events, t->n_events + 1, sizeof *t->events))
        return -1;
    t->events[t->n_events++] = *e;
    assert(t->n_events <= t->cap_events);
    return 0;
}

#define ADD_RECORD(arr, n, cap, rec, out)                                                \
    do {                                                                                 \
        if ((n) >= MODEL_NONE ||                                                         \
            sc_pagevec_reserve((void **)&(arr), &(cap), (n), (n) + 1, sizeof *(arr)))    \
            return -1;                                                                   \
        assert((n) < (cap));                                                             \
        (arr)[(n)] = *(rec);                                                             \
        *(out) = (uint32_t)(n)++;                                                        \
        return 0;                                                                        \
    } while (0)

int model_trace_add_info(struct model_trace *t, const struct model_info *i, uint32_t *out)
{
    ADD_RECORD(t->infos, t->n_infos, t->cap_infos, i, out);
}

int model_trace_add_op_args(struct model_trace *t, const struct model_op_args *a, uint32_t *out)
{
    ADD_RECORD(t->op_args, t->n_op_args, t->cap_op_args, a, out);
}

int model_trace_add_coll(struct model_trace *t, const struct model_collective *c, uint32_t *out)
{
    ADD_RECORD(t->colls, t->n_colls, t->cap_colls, c, out);
}

int model_trace_add_sync(struct model_trace *t, const struct model_sync *s, uint32_t *out)
{
    ADD_RECORD(t->syncs, t->n_syncs, t->cap_syncs, s, out);
}

int model_trace_add_flow(struct model_trace *t, const struct model_flow *f)
{
    if (sc_pagevec_reserve((void **)&t->flows, &t->cap_flows, t->n_flows, t->n_flows + 1, sizeof *t->flows))
        return -1;
    t->flows[t->n_flows++] = *f;
    assert(t->n_flows <= t->cap_flows);
    return 0;
}

int model_trace_append(struct model_trace *dst, struct model_trace *src)
{
    uint32_t *str = malloc((src->strings.n ? src->strings.n : 1) * sizeof *str);
    uint16_t *cat = malloc((src->n_cats ? src->n_cats : 1) * sizeof *cat);
    uint32_t *trk = malloc((src->n_tracks ? src->n_tracks : 1) * sizeof *trk);
    size_t info0 = dst->n_infos, args0 = dst->n_op_args, coll0 = dst->n_colls, sync0 = dst->n_syncs;
    int rc = -1;

#define S(id) ((id) == MODEL_NONE ? MODEL_NONE : str[id])
    if (!str || !cat || !trk)
        goto out;
    for (size_t i = 0; i < src->strings.n; i++)
        if (sc_strtab_intern(&dst->strings, src->strings.strs[i].s, src->strings.strs[i].len, &str[i]))
            goto out;
    for (size_t i = 0; i < src->n_cats; i++) {
        const struct model_cat *c = &src->cats[i];
        if (model_trace_cat(dst, sc_strtab_str(&src->strings, c->name), sc_strtab_len(&src->strings, c->name),
                            &cat[i]))
            goto out;
        dst->cats[cat[i]].count += c->count;
    }
    for (size_t i = 0; i < src->n_tracks; i++) {
        const struct model_track *k = &src->tracks[i];
        if (model_trace_track(dst, k->pid, S(k->pid_str), k->tid, S(k->tid_str), &trk[i]))
            goto out;
        if (k->label != MODEL_NONE)
            dst->tracks[trk[i]].label = str[k->label];
    }
    for (size_t i = 0; i < src->n_colls; i++) {
        struct model_collective c = src->colls[i];
        uint32_t id;
        c.name = S(c.name);
        c.dtype = S(c.dtype);
        c.pg_name = S(c.pg_name);
        c.pg_desc = S(c.pg_desc);
        c.pg_ranks = S(c.pg_ranks);
        c.in_split = S(c.in_split);
        c.out_split = S(c.out_split);
        if (model_trace_add_coll(dst, &c, &id))
            goto out;
    }
    for (size_t i = 0; i < src->n_syncs; i++) {
        struct model_sync y = src->syncs[i];
        uint32_t id;
        y.sync_kind = S(y.sync_kind);
        if (model_trace_add_sync(dst, &y, &id))
            goto out;
    }
    /* the rows renumbered where they are, then taken (pagevec.h) */
    if (src->n_infos >= MODEL_NONE - dst->n_infos || src->n_op_args >= MODEL_NONE - dst->n_op_args)
        goto out;
    for (size_t i = 0; i < src->n_infos; i++) {
        struct model_info *f = &src->infos[i];
        if (f->coll != MODEL_NONE)
            f->coll += (uint32_t)coll0;
        if (f->sync != MODEL_NONE)
            f->sync += (uint32_t)sync0;
    }
    for (size_t i = 0; i < src->n_op_args; i++) {
        struct model_op_args *a = &src->op_args[i];
        a->input_dims = S(a->input_dims);
        a->input_types = S(a->input_types);
        a->concrete_inputs = S(a->concrete_inputs);
        if (a->coll != MODEL_NONE)
            a->coll += (uint32_t)coll0;
    }
    for (size_t i = 0; i < src->n_events; i++) {
        struct model_event *e = &src->events[i];
        e->name = str[e->name];
        e->track = trk[e->track];
        e->cat = cat[e->cat];
        if (e->info != MODEL_NONE)
            e->info += (uint32_t)(model_kind_has_info(e->kind) ? info0 : args0);
    }
    for (size_t i = 0; i < src->n_flows; i++) {
        struct model_flow *f = &src->flows[i];
        f->track = trk[f->track];
        f->cat = cat[f->cat];
    }
#define TAKE(rows)                                                                                   \
    sc_pagevec_append((void **)&dst->rows, &dst->cap_##rows, &dst->n_##rows, (void **)&src->rows,      \
                      &src->cap_##rows, &src->n_##rows, sizeof *dst->rows)
    if (TAKE(infos) || TAKE(op_args) || TAKE(events) || TAKE(flows))
        goto out;
#undef TAKE
    for (size_t i = 0; i < src->n_devices; i++) {
        struct model_device d = src->devices[i];
        d.name = S(d.name);
        if (sc_vec_reserve((void **)&dst->devices, &dst->cap_devices, dst->n_devices + 1,
                           sizeof *dst->devices))
            goto out;
        dst->devices[dst->n_devices++] = d;
    }
    for (size_t i = 0; i < src->n_pgs; i++) {
        struct model_pg g = src->pgs[i];
        g.name = S(g.name);
        g.desc = S(g.desc);
        g.ranks = S(g.ranks);
        if (sc_vec_reserve((void **)&dst->pgs, &dst->cap_pgs, dst->n_pgs + 1, sizeof *dst->pgs))
            goto out;
        dst->pgs[dst->n_pgs++] = g;
    }
    if (src->schema_version >= 0)
        dst->schema_version = src->schema_version;
    if (src->has_distributed_info) {
        dst->has_distributed_info = 1;
        dst->rank = src->rank;
        dst->world_size = src->world_size;
        dst->backend = S(src->backend);
        dst->nccl_version = S(src->nccl_version);
    }
    if (src->has_base_time) {
        dst->has_base_time = 1;
        dst->base_time_ns = src->base_time_ns;
    }
    dst->has_device_properties |= src->has_device_properties;
    dst->n_entries += src->n_entries;
    dst->n_metadata += src->n_metadata;
    dst->n_counters += src->n_counters;
    dst->n_instants += src->n_instants;
    dst->n_flow_entries += src->n_flow_entries;
    dst->n_launch_flows += src->n_launch_flows;
    dst->n_other_phase += src->n_other_phase;
    dst->n_unknown += src->n_unknown;
    if (src->first_ts < dst->first_ts)
        dst->first_ts = src->first_ts;
    if (src->last_end > dst->last_end)
        dst->last_end = src->last_end;
    rc = 0;
#undef S
out:
    free(str);
    free(cat);
    free(trk);
    return rc;
}

static int is_gpu_side(unsigned kind)
{
    return model_kind_is_gpu(kind) || kind == MODEL_EV_CUDA_SYNC || kind == MODEL_EV_CUDA_EVENT;
}

/* Fill t->link. Correlation ids are usually dense (CUPTI counts them up), so
 * the join is a direct table over their range; a sparse range uses a hash. */
static int link_launches(struct model_trace *t)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t calls = 0;
    struct sc_i64map map = SC_I64MAP_INIT;
    uint32_t *table = NULL;

    t->link = malloc((t->n_events ? t->n_events : 1) * sizeof *t->link);
    if (!t->link)
        return -1;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        t->link[i] = MODEL_NONE;
        if ((e->kind == MODEL_EV_RUNTIME || e->kind == MODEL_EV_DRIVER) && e->correlation >= 0) {
            calls++;
            if (e->correlation < lo)
                lo = e->correlation;
            if (e->correlation > hi)
                hi = e->correlation;
        }
    }
    if (!calls)
        return 0;
    int dense = (uint64_t)(hi - lo) < 8 * (uint64_t)calls + 4096;
    if (dense) {
        size_t n = (size_t)(hi - lo) + 1;
        if (!(table = malloc(n * sizeof *table)))
            return -1;
        memset(table, 0xff, n * sizeof *table);
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if ((e->kind != MODEL_EV_RUNTIME && e->kind != MODEL_EV_DRIVER) || e->correlation < 0)
            continue;
        if (dense)
            table[e->correlation - lo] = (uint32_t)i;
        else if (sc_i64map_put(&map, e->correlation, (uint32_t)i)) {
            sc_i64map_release(&map);
            return -1;
        }
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        uint32_t call = MODEL_NONE;
        if (!is_gpu_side(e->kind) || e->correlation < 0)
            continue;
        if (dense) {
            if (e->correlation >= lo && e->correlation <= hi)
                call = table[e->correlation - lo];
        } else if (!sc_i64map_get(&map, e->correlation, &call)) {
            call = MODEL_NONE;
        }
        if (call == MODEL_NONE)
            continue;
        t->link[i] = call;
        if (model_kind_is_gpu(e->kind) &&
            (t->link[call] == MODEL_NONE || t->events[t->link[call]].ts > e->ts))
            t->link[call] = (uint32_t)i;
    }
    free(table);
    sc_i64map_release(&map);
    return 0;
}

/* Relative Kineto timestamps stay below three months in microseconds. */
#define RELATIVE_TS_LIMIT_NS (7889238ll * 1000000000ll)

int model_trace_finish(struct model_trace *t, struct sc_error *err)
{
    int64_t base = t->has_base_time ? t->base_time_ns : 0;
    uint8_t *rt_of = malloc(t->strings.n ? t->strings.n : 1); /* class by name id */

    if (!rt_of)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    memset(rt_of, 0xff, t->strings.n);

    if (t->n_events && !t->has_base_time && t->first_ts < RELATIVE_TS_LIMIT_NS &&
        t->first_ts >= 0 && t->last_end < RELATIVE_TS_LIMIT_NS)
        t->time_unanchored = 1;
    for (size_t i = 0; i < t->n_events; i++) {
        struct model_event *e = &t->events[i];
        if (base) {
            if ((e->ts > 0 && base > INT64_MAX - e->ts) || (e->ts < 0 && base < INT64_MIN - e->ts)) {
                free(rt_of);
                return sc_error_set(err, SC_ENUMERIC,
                                    "event %zu: ts plus baseTimeNanoseconds is out of range", i);
            }
            e->ts += base;
        }
        if (e->kind == MODEL_EV_RUNTIME || e->kind == MODEL_EV_DRIVER) {
            if (rt_of[e->name] == 0xff)
                rt_of[e->name] = (uint8_t)model_runtime_class(model_str(t, e->name));
            e->rt = rt_of[e->name];
        }
        struct model_track *k = &t->tracks[e->track];
        k->n_events++;
        if (model_kind_is_gpu(e->kind)) {
            k->n_gpu++;
            k->is_gpu = 1;
        } else if (e->kind <= MODEL_EV_DRIVER) {
            k->is_cpu = 1;
        }
    }
    free(rt_of);
    for (size_t i = 0; i < t->n_flows; i++)
        t->flows[i].ts += base;
    if (link_launches(t))
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    t->n_complete = t->n_events;
    if (t->n_events) {
        t->first_ts += base;
        t->last_end += base;
    } else {
        t->first_ts = t->last_end = 0;
    }
    return SC_OK;
}
