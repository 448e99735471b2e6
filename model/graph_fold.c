/* model/graph_fold.c: alike ranks' parts folded into one representative
 * as they come (graph.h, MODEL_FOLD_OVER), so a job of many ranks joins
 * only the representatives.
 *
 * Two parts are alike when their structure is the same (task kinds,
 * names, collectives) and their work is within a bucket of each other; a
 * folded part keeps only its trace header and measured step times. */
#include "model/graph_build_internal.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "common/banned.h"

/* ---- folding alike ranks (graph.h, MODEL_FOLD_OVER) ---------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* The hash of a string id of t (MODEL_NONE: none). */
static uint64_t str_hash(const struct model_trace *t, uint32_t id)
{
    return id == MODEL_NONE ? 0 : t->strings.strs[id].hash;
}

/* What folding compares of the rank's part: a hash of its structure (what
 * same_structure compares) and its work. */
void gb_rank_profile(struct builder *b)
{
    const struct model_trace *t = b->r.t;
    uint64_t h = mix(mix(mix(mix(0, b->n_tasks), b->n_edges), b->n_res), b->n_steps);
    b->work_gpu = b->work_cpu = 0;
    for (size_t i = 0; i < b->n_tasks; i++) {
        const struct btask *k = &b->tasks[i];
        h = mix(h, (uint64_t)k->kind << 40 ^ (uint64_t)k->sub << 32 ^ k->res);
        h = mix(h, str_hash(t, k->name));
        if (!b->res[k->res].gpu)
            b->work_cpu += k->dur + k->gap;
        else if (k->kind != MODEL_TASK_COMM)
            b->work_gpu += k->dur;
    }
    for (size_t i = 0; i < b->n_edges; i++) {
        const struct pending_edge *e = &b->edges[i];
        h = mix(h, (uint64_t)e->to << 32 ^ e->from);
        h = mix(h, (uint64_t)e->type << 16 ^ (uint64_t)e->kind << 8 ^ e->inferred);
    }
    double after = 0; /* the collectives' mean end after the first's */
    for (size_t i = 0; i < b->n_comm; i++) {
        const struct comm_meta *m = &b->comm[i];
        h = mix(mix(mix(h, str_hash(t, m->pg)), (uint64_t)m->key_seq), (uint64_t)m->bytes);
        after += ((double)(m->end - b->comm[0].end) - after) / (double)(i + 1);
    }
    b->sig = h;
    b->anchor = b->n_comm ? b->r.origin - b->comm[0].end - (int64_t)after : 0;
}

/* Whether two strings of two traces are equal (MODEL_NONE: none). */
static int same_str(const struct model_trace *ta, uint32_t a, const struct model_trace *tb, uint32_t b)
{
    if (a == MODEL_NONE || b == MODEL_NONE)
        return a == b;
    return strcmp(model_str(ta, a), model_str(tb, b)) == 0;
}

/* Whether two ranks' parts have the same resources, tasks, edges, steps
 * and collectives (durations, gaps and latencies aside). */
static int same_structure(const struct builder *a, const struct builder *b)
{
    const struct model_trace *ta = a->r.t, *tb = b->r.t;
    if (a->sig != b->sig || a->n_tasks != b->n_tasks || a->n_edges != b->n_edges || a->n_res != b->n_res ||
        a->n_steps != b->n_steps || a->n_comm != b->n_comm)
        return 0;
    for (size_t i = 0; i < a->n_res; i++) {
        const struct model_resource *x = &a->res[i], *y = &b->res[i];
        if (x->gpu != y->gpu || x->comm != y->comm || x->first != y->first || x->n != y->n ||
            (x->gpu && ta->tracks[x->track].tid != tb->tracks[y->track].tid))
            return 0;
    }
    for (size_t i = 0; i < a->n_tasks; i++) {
        const struct btask *x = &a->tasks[i], *y = &b->tasks[i];
        if (x->kind != y->kind || x->sub != y->sub || x->res != y->res || !same_str(ta, x->name, tb, y->name))
            return 0;
    }
    for (size_t i = 0; i < a->n_edges; i++) {
        const struct pending_edge *x = &a->edges[i], *y = &b->edges[i];
        if (x->to != y->to || x->from != y->from || x->type != y->type || x->kind != y->kind ||
            x->inferred != y->inferred)
            return 0;
    }
    for (size_t i = 0; i < a->n_steps; i++) {
        const struct model_graph_step *x = &a->steps[i], *y = &b->steps[i];
        if (x->begin != y->begin || x->end != y->end || x->partial != y->partial ||
            !same_str(ta, ta->steps[x->step].name, tb, tb->steps[y->step].name))
            return 0;
    }
    for (size_t i = 0; i < a->n_comm; i++) {
        const struct comm_meta *x = &a->comm[i], *y = &b->comm[i];
        if (x->task != y->task || x->key_seq != y->key_seq || x->seq != y->seq || x->bytes != y->bytes ||
            x->stream != y->stream || x->group_size != y->group_size || x->op != y->op ||
            !same_str(ta, x->pg, tb, y->pg) || !same_str(ta, x->dtype, tb, y->dtype))
            return 0;
    }
    return 1;
}

/* The MODEL_FOLD_TOL-wide bucket work w falls in (log scale). */
static int64_t work_bucket(int64_t w)
{
    return (int64_t)floor(log1p((double)(w > 0 ? w : 0) / MODEL_FOLD_FLOOR_NS) / log1p(MODEL_FOLD_TOL));
}

static int alike(const struct builder *a, const struct builder *b)
{
    return a->sig == b->sig && work_bucket(a->work_gpu) == work_bucket(b->work_gpu) &&
           work_bucket(a->work_cpu) == work_bucket(b->work_cpu) && same_structure(a, b);
}

/* Whether a rather than b stands for both: the one with more GPU work,
 * then more CPU work (the later to arrive at a collective), then the
 * first by trace name, whatever order they came in. */
static int stands_for(const struct builder *a, const struct builder *b)
{
    if (a->work_gpu != b->work_gpu)
        return a->work_gpu > b->work_gpu;
    if (a->work_cpu != b->work_cpu)
        return a->work_cpu > b->work_cpu;
    return strcmp(a->r.t->source, b->r.t->source) < 0;
}

/* Fold m (and the ranks folded into it) into rep; m is freed, also on
 * failure. */
static int fold_into(struct builder *rep, struct builder *m, struct sc_error *err)
{
    int64_t *measured = NULL;
    int rc = SC_OK;
    /* alike: the same collectives, and steps, one for one */
    assert(rep->n_comm == m->n_comm && rep->n_steps == m->n_steps);
    if (!rep->comm_min && rep->n_comm) {
        if (!(rep->comm_min = malloc(rep->n_comm * sizeof *rep->comm_min)))
            goto oom;
        for (size_t i = 0; i < rep->n_comm; i++)
            rep->comm_min[i] = rep->tasks[rep->comm[i].task].dur;
    }
    for (size_t i = 0; i < rep->n_comm; i++)
        rep->comm_min[i] = min64(rep->comm_min[i], m->comm_min ? m->comm_min[i] : m->tasks[m->comm[i].task].dur);
    if (sc_vec_reserve((void **)&rep->folded, &rep->cap_folded, rep->n_folded + m->n_folded + 1, sizeof *rep->folded))
        goto oom;
    if (!(measured = malloc((m->n_steps ? m->n_steps : 1) * sizeof *measured)))
        goto oom;
    for (size_t k = 0; k < m->n_steps; k++)
        measured[k] = m->steps[k].measured_ns;
    if (m->n_folded)
        memcpy(rep->folded + rep->n_folded, m->folded, m->n_folded * sizeof *m->folded);
    rep->n_folded += m->n_folded;
    m->n_folded = 0;
    assert(rep->n_folded < rep->cap_folded);
    rep->folded[rep->n_folded++] = (struct folded){m->r.t, -1, measured, m->anchor};
out:
    gb_rank_free(m);
    return rc;
oom:
    rc = sc_error_set(err, SC_ENOMEM, "out of memory");
    goto out;
}

/* The trace of a part held, now folded into another's. */
static void drop(const struct folder *f, const struct builder *b)
{
    if (f->dropped)
        f->dropped(f->dropped_ctx, b->r.t);
}

/* Take p (freed on failure) among the representatives; was_kept: p was
 * held already (before folding started); *kept: whether p is one of them
 * now (else it was folded into one). */
static int fold_one(struct folder *f, struct builder *p, int was_kept, int *kept, struct sc_error *err)
{
    *kept = 0;
    for (size_t k = 0; k < f->n; k++) {
        struct builder *r = f->v[k];
        if (!alike(r, p))
            continue;
        if (!stands_for(p, r)) {
            if (was_kept)
                drop(f, p);
            return fold_into(r, p, err);
        }
        drop(f, r);
        f->v[k] = p;
        *kept = 1;
        return fold_into(p, r, err);
    }
    if (f->reps_max && f->n >= f->reps_max) {
        gb_rank_free(p);
        return sc_error_set(err, SC_ELIMIT,
                            "the job's ranks fold to more than %zu representatives (fold_reps_max), more "
                            "than its memory was estimated for",
                            f->reps_max);
    }
    if (sc_vec_reserve((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v)) {
        gb_rank_free(p);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    f->v[f->n++] = p;
    *kept = 1;
    return SC_OK;
}

int gb_folder_add(struct folder *f, struct builder *p, int *kept, struct sc_error *err)
{
    *kept = 0;
    if (++f->seen <= f->over) {
        if (sc_vec_reserve((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v)) {
            gb_rank_free(p);
            return sc_error_set(err, SC_ENOMEM, "out of memory");
        }
        f->v[f->n++] = p;
        *kept = 1;
        return SC_OK;
    }
    if (f->seen == f->over + 1) { /* past the threshold: fold what is held */
        struct builder **held = f->v;
        size_t n = f->n;
        int rc = SC_OK, still;
        f->v = NULL;
        f->n = f->cap = 0;
        for (size_t i = 0; i < n; i++)
            if (rc)
                gb_rank_free(held[i]);
            else
                rc = fold_one(f, held[i], 1, &still, err);
        free(held);
        if (rc) {
            gb_rank_free(p);
            return rc;
        }
    }
    return fold_one(f, p, 0, kept, err);
}

int gb_folder_on(const struct folder *f)
{
    return f->seen > f->over;
}

void gb_folder_release(struct folder *f)
{
    for (size_t i = 0; i < f->n; i++)
        gb_rank_free(f->v[i]);
    free(f->v);
    memset(f, 0, sizeof *f);
}
