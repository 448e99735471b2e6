/* model/diff.c: two runs compared and the difference attributed by
 * replays (diff.h). */
#include "model/diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "model/kernel_family.h"
#include "model/replay.h"
#include "model/task_key.h"
#include "common/banned.h"

struct side {
    const struct model_graph *g;
    struct model_coll_waits waits; /* its kept collectives' split */
    int64_t *wait;    /* per task: its wait for untraced peers (0: none) */
    struct model_task_key *refs; /* its tasks, keyed for matching */
    size_t n;
    uint32_t *match;  /* per task: the other side's task, or MODEL_NONE */
    uint8_t *counted; /* per step: a matched step */
    size_t n_steps;   /* steps with an end, for per-step figures */
    int64_t *each;    /* per graph step: the last replay's step */
};

/* The matched (rank, step) pairs: graph steps of A and B. */
struct pairs {
    size_t *a, *b;
    uint32_t *ordinal; /* its place among its rank's pairs */
    size_t n;
};

/* The side's tasks on its first `ranks` ranks, sorted by key, ordinals set. */
static int side_refs(struct side *s, size_t ranks)
{
    const struct model_graph *g = s->g;
    s->refs = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *s->refs);
    s->match = malloc((g->n_tasks ? g->n_tasks : 1) * sizeof *s->match);
    s->counted = calloc(g->n_steps ? g->n_steps : 1, 1);
    s->wait = calloc(g->n_tasks ? g->n_tasks : 1, sizeof *s->wait);
    s->each = calloc(g->n_steps ? g->n_steps : 1, sizeof *s->each);
    if (!s->refs || !s->match || !s->counted || !s->wait || !s->each)
        return -1;
    for (size_t k = 0; k < s->waits.n; k++)
        if (s->waits.v[k].task < g->n_tasks)
            s->wait[s->waits.v[k].task] = s->waits.v[k].wait;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct model_task *t = &g->tasks[i];
        s->match[i] = MODEL_NONE;
        if (t->rank >= ranks || t->cls == MODEL_TASK_MARKER)
            continue;
        s->refs[s->n++] = model_task_key_of(g, i);
    }
    model_task_keys_number(s->refs, s->n);
    for (size_t k = 0; k < g->n_steps; k++)
        s->n_steps += g->steps[k].end != MODEL_NONE;
    return 0;
}

/* Match the two sides' tasks (merge-join on the key) and their steps
 * (into p, room for A's steps). */
static void match(struct side *a, struct side *b, size_t ranks, struct pairs *p)
{
    for (size_t i = 0, j = 0; i < a->n && j < b->n;) {
        int c = model_task_key_cmp(&a->refs[i], &b->refs[j], 1);
        if (c == 0) {
            a->match[a->refs[i].task] = b->refs[j].task;
            b->match[b->refs[j].task] = a->refs[i].task;
            i++, j++;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    for (uint16_t r = 0; r < ranks; r++)
        for (size_t i = 0, j = 0, k = 0;; i++, j++, k++) {
            while (i < a->g->n_steps && (a->g->steps[i].rank != r || a->g->steps[i].partial ||
                                         a->g->steps[i].end == MODEL_NONE))
                i++;
            while (j < b->g->n_steps && (b->g->steps[j].rank != r || b->g->steps[j].partial ||
                                         b->g->steps[j].end == MODEL_NONE))
                j++;
            if (i >= a->g->n_steps || j >= b->g->n_steps)
                break;
            a->counted[i] = b->counted[j] = 1;
            p->a[p->n] = i;
            p->b[p->n] = j;
            p->ordinal[p->n++] = (uint32_t)k;
        }
}

/* The mean replayed step over the side's matched steps, waits kept, with
 * the overrides given; each step's into s->each. */
static int mean_step(const struct side *s, const struct model_replay_override *ov, size_t n_ov, int64_t *mean,
                     struct sc_error *err)
{
    struct model_replay_opts o;
    model_replay_opts_kept(&o, s->waits);
    o.overrides = ov;
    o.n_overrides = n_ov;
    return model_replay_mean_step(s->g, &o, s->counted, mean, NULL, s->each, err);
}


struct attrib {
    const struct side *a, *b;
    struct model_replay_override *ov;
    size_t n_ov;
    int64_t prev;
    const struct pairs *pairs;
    int64_t *prev_each; /* per pair: the running total on its steps */
    int64_t *b_each;    /* per pair: B's step */
    int64_t *scratch;   /* per pair */
    struct model_diff *out;
    size_t cap_parts;
    struct sc_error *err;
};

/* A part of ns, each[k] on pair k's steps, added to the running totals. */
static int add_part(struct attrib *t, const char *category, int64_t ns, const int64_t *each)
{
    size_t n = t->pairs->n;
    int64_t *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy || sc_vec_reserve((void **)&t->out->parts, &t->cap_parts, t->out->n_parts + 1, sizeof *t->out->parts)) {
        free(copy);
        return sc_error_set(t->err, SC_ENOMEM, "out of memory");
    }
    struct model_diff_part *p = &t->out->parts[t->out->n_parts++];
    snprintf(p->category, sizeof p->category, "%s", category);
    p->ns = ns;
    p->each = copy;
    memcpy(copy, each, n * sizeof *copy);
    t->prev += ns;
    for (size_t k = 0; k < n; k++)
        t->prev_each[k] += each[k];
    return SC_OK;
}

/* Replay A with the overrides so far; the part is what they changed. */
static int part(struct attrib *t, const char *category)
{
    int64_t mean;
    int rc = mean_step(t->a, t->ov, t->n_ov, &mean, t->err);
    if (rc)
        return rc;
    for (size_t k = 0; k < t->pairs->n; k++)
        t->scratch[k] = t->a->each[t->pairs->a[k]] - t->prev_each[k];
    return add_part(t, category, mean - t->prev, t->scratch);
}

static int is_kernel(const struct model_task *t)
{
    return t->cls == MODEL_TASK_KERNEL || t->cls == MODEL_TASK_COMM;
}

/* Which category a task of A belongs to, in the order of diff.h: a kernel
 * family, then these. */
enum { CAT_COMM = MODEL_KF_COUNT, CAT_COPIES, CAT_HOST, CAT_COUNT };

static int category_of(const struct model_task *t)
{
    switch (t->cls) {
    case MODEL_TASK_KERNEL: return t->sub < MODEL_KF_COUNT ? t->sub : MODEL_KF_OTHER;
    case MODEL_TASK_COMM: return CAT_COMM;
    case MODEL_TASK_COPY:
    case MODEL_TASK_SET: return CAT_COPIES;
    default: return CAT_HOST;
    }
}

/* After communication: B's waits for untraced peers on the matched
 * collectives where either side has one. */
static int peer_waits(struct attrib *t)
{
    const struct model_graph *ga = t->a->g, *gb = t->b->g;
    size_t before = t->n_ov;
    for (uint32_t i = 0; i < ga->n_tasks; i++) {
        uint32_t j = t->a->match[i];
        if (j != MODEL_NONE && ga->tasks[i].cls == MODEL_TASK_COMM && (t->a->wait[i] || t->b->wait[j]))
            t->ov[t->n_ov++] = (struct model_replay_override){.task = i, .dur = gb->tasks[j].dur};
    }
    return t->n_ov == before ? SC_OK : part(t, "peer_waits");
}

/* After host: B's host gaps before the matched CPU work (the time a
 * thread spends outside any op it records: Python, data loading), over
 * the durations host set. */
static int idle(struct attrib *t)
{
    const struct model_graph *ga = t->a->g, *gb = t->b->g;
    size_t before = t->n_ov;
    for (uint32_t i = 0; i < ga->n_tasks; i++) {
        uint32_t j = t->a->match[i];
        if (j != MODEL_NONE && category_of(&ga->tasks[i]) == CAT_HOST && ga->tasks[i].gap != gb->tasks[j].gap)
            t->ov[t->n_ov++] = (struct model_replay_override){.task = i, .dur = gb->tasks[j].dur, .has_gap = 1,
                                                               .gap = gb->tasks[j].gap};
    }
    return t->n_ov == before ? SC_OK : part(t, "idle");
}

static int attribute(struct attrib *t)
{
    const struct model_graph *ga = t->a->g, *gb = t->b->g;
    int rc = SC_OK;
    for (int c = 0; c < CAT_COUNT && rc == SC_OK; c++) {
        size_t before = t->n_ov;
        for (uint32_t i = 0; i < ga->n_tasks; i++) {
            uint32_t j = t->a->match[i];
            if (j == MODEL_NONE || category_of(&ga->tasks[i]) != c)
                continue;
            /* communication: B's transfer, A's wait for untraced peers */
            t->ov[t->n_ov++] = (struct model_replay_override){
                .task = i, .dur = gb->tasks[j].dur - t->b->wait[j] + t->a->wait[i]};
        }
        if (t->n_ov == before)
            continue;
        char name[40];
        if (c < MODEL_KF_COUNT)
            snprintf(name, sizeof name, "compute:%s", model_kernel_family_name((enum model_kernel_family)c));
        rc = part(t, c < MODEL_KF_COUNT ? name : c == CAT_COMM ? "communication" : c == CAT_COPIES ? "copies" : "host");
        if (rc == SC_OK && c == CAT_COMM)
            rc = peer_waits(t);
        if (rc == SC_OK && c == CAT_HOST)
            rc = idle(t);
    }
    /* waits: B's on the tasks where A had one (B's durations stay) */
    for (uint32_t i = 0; rc == SC_OK && i < ga->n_tasks; i++) {
        uint32_t j = t->a->match[i];
        if (j != MODEL_NONE && model_task_on_gpu(ga->tasks[i].cls) && model_graph_unexplained_wait(ga, i) > 0)
            t->ov[t->n_ov++] = (struct model_replay_override){.task = i, .dur = gb->tasks[j].dur, .has_wait = 1,
                                                               .wait = model_graph_unexplained_wait(gb, j)};
    }
    if (rc == SC_OK)
        rc = part(t, "unexplained");
    for (uint32_t i = 0; rc == SC_OK && i < ga->n_tasks; i++)
        if (t->a->match[i] == MODEL_NONE && is_kernel(&ga->tasks[i]) && ga->tasks[i].rank < gb->n_ranks)
            t->ov[t->n_ov++] = (struct model_replay_override){.task = i, .dur = 0};
    if (rc == SC_OK)
        rc = part(t, "removed");
    return rc;
}

/* B's kernels with no match in A, measured on B: B's step less B's with
 * them at no cost. It counts toward the running total, so that
 * `unmatched` stays the rest. */
static int added(struct attrib *t, const struct side *b)
{
    const struct model_graph *gb = b->g, *ga = t->a->g;
    struct model_replay_override *ov = malloc((gb->n_tasks + 1) * sizeof *ov);
    size_t n = 0;
    int64_t without;
    int rc;
    if (!ov)
        return sc_error_set(t->err, SC_ENOMEM, "out of memory");
    for (uint32_t j = 0; j < gb->n_tasks; j++)
        if (b->match[j] == MODEL_NONE && is_kernel(&gb->tasks[j]) && gb->tasks[j].rank < ga->n_ranks)
            ov[n++] = (struct model_replay_override){.task = j, .dur = 0};
    rc = mean_step(b, ov, n, &without, t->err);
    free(ov);
    if (rc)
        return rc;
    for (size_t k = 0; k < t->pairs->n; k++)
        t->scratch[k] = t->b_each[k] - b->each[t->pairs->b[k]];
    return add_part(t, "added", t->out->b_ns - without, t->scratch);
}

/* ---- kernel lists -------------------------------------------------------------------- */

struct agg {
    const char *name;
    int64_t a, b;
    size_t count;
};

static int by_name(const void *x, const void *y)
{
    return strcmp(((const struct agg *)x)->name, ((const struct agg *)y)->name);
}

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

static int by_weight(const void *x, const void *y)
{
    const struct model_diff_kernel *p = x, *q = y;
    int64_t wp = p->a_ns > p->b_ns ? p->a_ns : p->b_ns, wq = q->a_ns > q->b_ns ? q->a_ns : q->b_ns;
    return (wq > wp) - (wq < wp);
}

static int by_change(const void *x, const void *y)
{
    const struct model_diff_kernel *p = x, *q = y;
    int64_t wp = abs64(p->b_ns - p->a_ns), wq = abs64(q->b_ns - q->a_ns);
    return (wq > wp) - (wq < wp);
}

/* Aggregate v (one per kernel instance) by name into *out (what `keep`
 * admits), sorted by cmp, at most MODEL_DIFF_MAX_KERNELS; a and b per step
 * of each side. */
static int kernel_list(struct agg *v, size_t n, const struct side *a, const struct side *b, int retimed,
                       struct model_diff_kernel **out, size_t *n_out)
{
    struct model_diff_kernel *k = NULL;
    size_t m = 0, cap = 0;
    sc_sort(v, n, sizeof *v, by_name);
    for (size_t i = 0, j; i < n; i = j) {
        struct agg s = {v[i].name, 0, 0, 0};
        for (j = i; j < n && strcmp(v[j].name, v[i].name) == 0; j++) {
            s.a += v[j].a;
            s.b += v[j].b;
            s.count++;
        }
        int64_t an = s.a / (int64_t)(a->n_steps ? a->n_steps : 1), bn = s.b / (int64_t)(b->n_steps ? b->n_steps : 1);
        if (retimed && (double)abs64(bn - an) < MODEL_DIFF_RETIMED_FRAC * (double)an)
            continue;
        if (retimed && bn == an)
            continue;
        if (sc_vec_reserve((void **)&k, &cap, m + 1, sizeof *k)) {
            free(k);
            return -1;
        }
        snprintf(k[m].name, sizeof k[m].name, "%s", s.name);
        k[m].count = s.count;
        k[m].a_ns = an;
        k[m].b_ns = bn;
        m++;
    }
    sc_sort(k, m, sizeof *k, retimed ? by_change : by_weight);
    *out = k;
    *n_out = m < MODEL_DIFF_MAX_KERNELS ? m : MODEL_DIFF_MAX_KERNELS;
    return 0;
}

static int kernels(const struct side *a, const struct side *b, struct model_diff *out)
{
    const struct model_graph *ga = a->g, *gb = b->g;
    struct agg *v = malloc((ga->n_tasks + gb->n_tasks + 1) * sizeof *v);
    size_t n;
    int rc = 0;
    if (!v)
        return -1;
    n = 0; /* removed: A's kernels with no match */
    for (uint32_t i = 0; i < ga->n_tasks; i++)
        if (is_kernel(&ga->tasks[i]) && a->match[i] == MODEL_NONE)
            v[n++] = (struct agg){model_graph_str(ga, ga->src[i].name), ga->tasks[i].dur, 0, 1};
    rc |= kernel_list(v, n, a, b, 0, &out->removed, &out->n_removed);
    n = 0; /* added: B's kernels with no match */
    for (uint32_t j = 0; j < gb->n_tasks; j++)
        if (is_kernel(&gb->tasks[j]) && b->match[j] == MODEL_NONE)
            v[n++] = (struct agg){model_graph_str(gb, gb->src[j].name), 0, gb->tasks[j].dur, 1};
    rc |= kernel_list(v, n, a, b, 0, &out->added, &out->n_added);
    n = 0; /* re-timed: matched pairs */
    for (uint32_t i = 0; i < ga->n_tasks; i++)
        if (is_kernel(&ga->tasks[i]) && a->match[i] != MODEL_NONE)
            v[n++] = (struct agg){model_graph_str(ga, ga->src[i].name), ga->tasks[i].dur,
                                  gb->tasks[a->match[i]].dur, 1};
    rc |= kernel_list(v, n, a, b, 1, &out->retimed, &out->n_retimed);
    free(v);
    return rc;
}

int model_diff_run(const struct model_graph *ga, const struct model_coll_waits *wa, const struct model_graph *gb,
                   const struct model_coll_waits *wb, struct model_diff *out, struct sc_error *err)
{
    struct side a = {.g = ga, .waits = wa ? *wa : (struct model_coll_waits){0}},
                b = {.g = gb, .waits = wb ? *wb : (struct model_coll_waits){0}};
    struct pairs p = {0};
    struct attrib t = {.a = &a, .b = &b, .pairs = &p, .out = out, .err = err};
    size_t ranks = ga->n_ranks < gb->n_ranks ? ga->n_ranks : gb->n_ranks, room = ga->n_steps ? ga->n_steps : 1;
    int rc = SC_OK;

    memset(out, 0, sizeof *out);
    p.a = malloc(room * sizeof *p.a);
    p.b = malloc(room * sizeof *p.b);
    p.ordinal = malloc(room * sizeof *p.ordinal);
    t.prev_each = calloc(room, sizeof *t.prev_each);
    t.b_each = malloc(room * sizeof *t.b_each);
    t.scratch = malloc(room * sizeof *t.scratch);
    if (side_refs(&a, ranks) || side_refs(&b, ranks) || !p.a || !p.b || !p.ordinal || !t.prev_each || !t.b_each ||
        !t.scratch || !(t.ov = malloc((3 * ga->n_tasks + 1) * sizeof *t.ov))) { /* a task, its peer wait, its unexplained one */
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        goto out;
    }
    match(&a, &b, ranks, &p);
    out->steps = p.n;
    if (!out->steps) {
        rc = sc_error_set(err, SC_EINVAL, "the two runs have no whole step to match");
        goto out;
    }
    if ((rc = mean_step(&a, NULL, 0, &out->a_ns, err)) || (rc = mean_step(&b, NULL, 0, &out->b_ns, err)))
        goto out;
    t.prev = out->a_ns;
    for (size_t k = 0; k < p.n; k++) {
        t.prev_each[k] = a.each[p.a[k]];
        t.b_each[k] = b.each[p.b[k]];
    }
    if ((rc = attribute(&t)) || (rc = added(&t, &b)))
        goto out;
    for (size_t k = 0; k < p.n; k++)
        t.scratch[k] = t.b_each[k] - t.prev_each[k];
    if ((rc = add_part(&t, "unmatched", out->b_ns - t.prev, t.scratch)))
        goto out;
    out->step_ordinal = p.ordinal;
    p.ordinal = NULL;
    if (kernels(&a, &b, out))
        rc = sc_error_set(err, SC_ENOMEM, "out of memory");
out:
    free(p.a);
    free(p.b);
    free(p.ordinal);
    free(t.prev_each);
    free(t.b_each);
    free(t.scratch);
    free(a.each);
    free(b.each);
    free(a.refs);
    free(a.match);
    free(a.counted);
    free(a.wait);
    free(b.refs);
    free(b.match);
    free(b.counted);
    free(b.wait);
    free(t.ov);
    if (rc)
        model_diff_release(out);
    return rc;
}

void model_diff_release(struct model_diff *d)
{
    for (size_t i = 0; d->parts && i < d->n_parts; i++)
        free(d->parts[i].each);
    free(d->parts);
    free(d->step_ordinal);
    free(d->added);
    free(d->removed);
    free(d->retimed);
    memset(d, 0, sizeof *d);
}
