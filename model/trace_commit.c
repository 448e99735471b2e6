/* model/trace_commit.c: a parsed traceEvents entry committed to the event
 * tables (trace_commit.h).
 *
 * Categories and tracks repeat from one event to the next, so the last few
 * are kept on the reader to skip their lookups; a count-only load keeps
 * just the step markers. */
#include "model/trace_commit.h"

#include <string.h>

#include "common/strtab.h"
#include "model/steps.h"
#include "common/banned.h"

int tr_intern(struct reader *r, struct slice s, uint32_t *id)
{
    if (!s.p) {
        *id = MODEL_NONE;
        return RD_OK;
    }
    if (sc_strtab_intern(&r->t->strings, s.p, s.n, id))
        return OOM(r);
    return RD_OK;
}

static int category(struct reader *r, struct slice cat, uint16_t *out)
{
    if (cat.n <= sizeof r->cat_cache[0].bytes) {
        for (unsigned i = 0; i < sizeof r->cat_cache / sizeof r->cat_cache[0]; i++)
            if (r->cat_cache[i].n == cat.n && cat.n && memcmp(r->cat_cache[i].bytes, cat.p, cat.n) == 0) {
                *out = r->cat_cache[i].cat;
                return RD_OK;
            }
    }
    if (model_trace_cat(r->t, cat.p ? cat.p : "", cat.n, out))
        return r->t->n_cats >= UINT16_MAX ? FAIL(r, "limit: more than 65535 categories") : OOM(r);
    if (cat.n && cat.n <= sizeof r->cat_cache[0].bytes) {
        unsigned i = r->cat_cache_next++ % (sizeof r->cat_cache / sizeof r->cat_cache[0]);
        memcpy(r->cat_cache[i].bytes, cat.p, cat.n);
        r->cat_cache[i].n = (uint8_t)cat.n;
        r->cat_cache[i].cat = *out;
    }
    return RD_OK;
}

static int track_of(struct reader *r, const struct raw_event *e, uint32_t *out)
{
    uint32_t ps = MODEL_NONE, ts = MODEL_NONE;
    int rc;
    if (!e->pid.str.p && !e->tid.str.p && r->have_last_track && e->pid.num == r->last_pid &&
        e->tid.num == r->last_tid) {
        *out = r->last_track;
        return RD_OK;
    }
    if ((rc = tr_intern(r, e->pid.str, &ps)) || (rc = tr_intern(r, e->tid.str, &ts)))
        return rc;
    if (model_trace_track(r->t, e->pid.num, ps, e->tid.num, ts, out))
        return OOM(r);
    if (ps == MODEL_NONE && ts == MODEL_NONE) {
        r->have_last_track = 1;
        r->last_pid = e->pid.num;
        r->last_tid = e->tid.num;
        r->last_track = *out;
    }
    return RD_OK;
}

static int commit_collective(struct reader *r, const struct raw_args *a, uint32_t *out)
{
    struct model_collective c;
    int rc;
    if ((rc = tr_intern(r, a->c.name, &c.name)) || (rc = tr_intern(r, a->c.dtype, &c.dtype)) ||
        (rc = tr_intern(r, a->c.pg_name, &c.pg_name)) || (rc = tr_intern(r, a->c.pg_desc, &c.pg_desc)) ||
        (rc = tr_intern(r, a->c.pg_ranks, &c.pg_ranks)) || (rc = tr_intern(r, a->c.in_split, &c.in_split)) ||
        (rc = tr_intern(r, a->c.out_split, &c.out_split)))
        return rc;
    c.group_size = a->c.group_size > INT32_MAX ? INT32_MAX : (int32_t)a->c.group_size;
    c.peer = a->c.peer > INT32_MAX ? INT32_MAX : (int32_t)a->c.peer;
    c.in_nelems = a->c.in_nelems;
    c.out_nelems = a->c.out_nelems;
    c.seq = a->c.seq;
    c.nccl_seq = a->c.nccl_seq;
    if (model_trace_add_coll(r->t, &c, out))
        return OOM(r);
    return RD_OK;
}

/* Event e's side record: a GPU-side event's details (struct model_info),
 * or an operator's arguments (struct model_op_args) when it has any. */
static int commit_info(struct reader *r, const struct raw_event *e, uint8_t kind, uint32_t *out)
{
    const struct raw_args *a = &e->a;
    int rc;

    *out = MODEL_NONE;
    if (!model_kind_has_info(kind)) {
        struct model_op_args g = {
            .input_dims = MODEL_NONE, .input_types = MODEL_NONE, .concrete_inputs = MODEL_NONE, .coll = MODEL_NONE};
        int inputs = a->input_dims.p && !r->opts->lean;
        if (!inputs && !a->has_coll)
            return RD_OK;
        if ((inputs && ((rc = tr_intern(r, a->input_dims, &g.input_dims)) ||
                        (rc = tr_intern(r, a->input_types, &g.input_types)) ||
                        (rc = tr_intern(r, a->concrete_inputs, &g.concrete_inputs)))) ||
            (a->has_coll && (rc = commit_collective(r, a, &g.coll))))
            return rc;
        return model_trace_add_op_args(r->t, &g, out) ? OOM(r) : RD_OK;
    }
    struct model_info info;
    info.bytes = a->bytes;
    info.stream = a->stream;
    info.device = a->device > INT32_MAX || a->device < INT32_MIN ? -1 : (int32_t)a->device;
    memcpy(info.grid, a->grid, sizeof info.grid);
    memcpy(info.block, a->block, sizeof info.block);
    info.coll = info.sync = MODEL_NONE;
    if (a->has_coll && (rc = commit_collective(r, a, &info.coll)))
        return rc;
    if (a->has_sync) {
        struct model_sync s;
        if ((rc = tr_intern(r, a->s.kind, &s.sync_kind)))
            return rc;
        s.wait_on_stream = a->s.wait_on_stream;
        s.wait_on_record_corr = a->s.wait_corr;
        s.event_id = a->s.event_id;
        if (model_trace_add_sync(r->t, &s, &info.sync))
            return OOM(r);
    }
    if (model_trace_add_info(r->t, &info, out))
        return OOM(r);
    return RD_OK;
}

static int commit_metadata(struct reader *r, const struct raw_event *e)
{
    uint32_t track, label;
    int rc;
    r->t->n_metadata++;
    if (!KEY_IS(e->name, "thread_name") || !e->a.meta_name.p)
        return RD_OK;
    if ((rc = track_of(r, e, &track)) || (rc = tr_intern(r, e->a.meta_name, &label)))
        return rc;
    r->t->tracks[track].label = label;
    return RD_OK;
}

/* Whether an event of this name can mark a step (count_only keeps those). */
static int may_mark_step(const struct reader *r, struct slice name)
{
    const char *m = r->opts->step_marker ? r->opts->step_marker : MODEL_PROFILER_STEP;
    size_t n = strlen(m);
    return name.p && name.n >= n && memcmp(name.p, m, n) == 0;
}

int tr_commit_event(struct reader *r, const struct raw_event *e)
{
    struct model_trace *t = r->t;
    char ph = e->ph.n == 1 ? e->ph.p[0] : '\0';
    uint16_t cat = 0;
    int rc;

    if (e->cat.p) {
        if ((rc = category(r, e->cat, &cat)))
            return rc;
        t->cats[cat].count++;
    }
    switch (ph) {
    case 'X':
        break;
    case 'M':
        return r->opts->count_only ? RD_OK : commit_metadata(r, e);
    case 'C':
        t->n_counters++;
        return RD_OK;
    case 'i':
    case 'I':
        t->n_instants++;
        return RD_OK;
    case 's':
    case 't':
    case 'f': {
        struct model_flow f;
        if (!e->cat.p && (rc = category(r, e->cat, &cat)))
            return rc;
        if (r->opts->count_only)
            return RD_OK;
        /* its track made either way, so that a lean load's tracks are the same */
        if ((rc = track_of(r, e, &f.track)))
            return rc;
        f.kind = t->cats[cat].flow ? (uint8_t)(t->cats[cat].flow - 1) : MODEL_FLOW_OTHER;
        t->n_flow_entries++;
        t->n_launch_flows += f.kind == MODEL_FLOW_LAUNCH;
        if (r->opts->lean)
            return RD_OK;
        f.id = e->id.str.p ? (int64_t)(sc_hash_bytes(e->id.str.p, e->id.str.n) >> 1) : e->id.num;
        f.ts = e->ts;
        f.cat = cat;
        f.phase = (uint8_t)ph;
        if (model_trace_add_flow(t, &f))
            return OOM(r);
        return RD_OK;
    }
    default:
        t->n_other_phase++;
        return RD_OK;
    }

    /* a complete event */
    struct model_event ev;
    if (!e->has_ts)
        return FAIL(r, "a complete event (ph \"X\") has no ts");
    if (e->dur < 0)
        return tr_fail_at(r, r->buf + e->dur_off, "negative dur");
    if (!e->cat.p && (rc = category(r, e->cat, &cat)))
        return rc;
    ev.ts = e->ts;
    ev.dur = e->has_dur ? e->dur : 0;
    if (ev.ts > INT64_MAX - ev.dur)
        return tr_fail_at(r, r->buf + e->ts_off, "range: ts plus dur is out of range");
    if (r->opts->count_only) {
        if (ev.ts < t->first_ts)
            t->first_ts = ev.ts;
        if (ev.ts + ev.dur > t->last_end)
            t->last_end = ev.ts + ev.dur;
        if (!may_mark_step(r, e->name))
            return RD_OK;
        if (++r->n_markers > MODEL_COUNT_ONLY_MARKERS)
            return FAIL(r, "limit: more than %u step markers", MODEL_COUNT_ONLY_MARKERS);
    }
    ev.correlation = e->a.correlation;
    ev.external_id = e->a.external_id;
    ev.cat = cat;
    ev.kind = t->cats[cat].kind;
    ev.rt = 0;
    if ((rc = tr_intern(r, e->name, &ev.name)) || (rc = track_of(r, e, &ev.track)) ||
        (rc = commit_info(r, e, ev.kind, &ev.info)))
        return rc;
    if (ev.name == MODEL_NONE)
        ev.name = 0;
    if (ev.kind == MODEL_EV_UNKNOWN)
        t->n_unknown++;
    if (ev.ts < t->first_ts)
        t->first_ts = ev.ts;
    if (ev.ts + ev.dur > t->last_end)
        t->last_end = ev.ts + ev.dur;
    if (model_trace_add_event(t, &ev))
        return OOM(r);
    return RD_OK;
}

