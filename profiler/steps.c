/* profiler/steps.c: finding training steps (steps.h). */
#include "profiler/steps.h"

#include <stdlib.h>
#include <string.h>

#include "profiler/join.h"
#include "profiler/map.h"
#include "common/banned.h"

static int rule_kernel(const struct prof_step_rule *r)
{
    return r->kernel_substr && *r->kernel_substr;
}

static int rule_nvtx(const struct prof_step_rule *r)
{
    return !rule_kernel(r) && r->nvtx_prefix && *r->nvtx_prefix;
}

int prof_step_marker_match(const struct prof_step_rule *r, const char *name, int64_t *number)
{
    size_t n = rule_nvtx(r) ? strlen(r->nvtx_prefix) : 0;
    if (!n || !name || strncmp(name, r->nvtx_prefix, n) != 0)
        return 0;
    const char *p = name + n;
    int64_t v = 0;
    *number = -1;
    if (*p < '0' || *p > '9')
        return 1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - 9) / 10)
            return 1;
        v = v * 10 + (*p - '0');
    }
    if (!*p)
        *number = v;
    return 1;
}

int prof_step_kernel_match(const struct prof_step_rule *r, const char *name)
{
    return rule_kernel(r) && name && strstr(name, r->kernel_substr) != NULL;
}

void prof_steps_release(struct prof_steps *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

static int by_start(const void *a, const void *b)
{
    const struct prof_step *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* NVTX rule: the ranges whose name matches, numbered by name or ordinal. */
static int from_markers(const struct prof_store *st, const struct prof_step_rule *r,
                        struct prof_step *v, size_t *n)
{
    struct prof_map ends = {0}; /* range id -> end time */
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        if (e->type == PROF_EV_MARKER && e->sub == PROF_MARK_END &&
            prof_map_put(&ends, e->u.marker.id, e->start)) {
            prof_map_release(&ends);
            return -1;
        }
    }
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        int64_t number;
        uint64_t end;
        if (e->type != PROF_EV_MARKER || e->sub != PROF_MARK_START || (e->flags & PROF_F_MARKER_GPU) ||
            !prof_step_marker_match(r, prof_store_str(st, e->name), &number))
            continue;
        struct prof_step *s = &v[(*n)++];
        memset(s, 0, sizeof *s);
        s->number = number;
        s->start = s->end = e->start;
        s->pid = e->at.cpu.pid;
        s->tid = e->at.cpu.tid;
        s->marker_name = e->name;
        if (prof_map_get(&ends, e->u.marker.id, &end) && end >= e->start) {
            s->end = end;
            s->complete = 1;
        }
    }
    prof_map_release(&ends);
    return 0;
}

/* Kernel rule: a step from each boundary launch to the next. An optimizer
 * launches its kernel once per parameter group, back to back: a run of
 * matching launches with no other kernel launched between them is one
 * boundary, at its first launch. */
static int from_kernels(const struct prof_store *st, const struct prof_join *j,
                        const struct prof_step_rule *r, struct prof_step *v, size_t *n)
{
    size_t nk = 0;
    uint32_t *k = malloc((st->n + 1) * sizeof *k);
    if (!k)
        return -1;
    for (size_t i = 0; i < st->n; i++)
        if (prof_store_at(st, i)->type == PROF_EV_KERNEL)
            k[nk++] = (uint32_t)i;
    if (prof_store_sort_by_corr(st, k, nk)) {
        free(k);
        return -1;
    }
    int in_run = 0;
    for (size_t i = 0; i < nk; i++) {
        const struct prof_event *e = prof_store_at(st, k[i]);
        int match = prof_step_kernel_match(r, prof_store_str(st, e->name));
        if (!match || in_run) {
            in_run = match;
            continue;
        }
        in_run = 1;
        const struct prof_event *launch = prof_join_launch(j, e->corr);
        struct prof_step *s = &v[(*n)++];
        memset(s, 0, sizeof *s);
        s->number = -1;
        s->start = launch ? launch->start : e->start;
        s->pid = launch ? launch->at.cpu.pid : 0;
        s->tid = launch ? launch->at.cpu.tid : 0;
    }
    free(k);
    /* each step ends where the next begins; the last one at its thread's last call */
    for (size_t i = 0; i < *n; i++) {
        if (i + 1 < *n) {
            v[i].end = v[i + 1].start;
            v[i].complete = 1;
            continue;
        }
        v[i].end = v[i].start;
        for (size_t x = 0; x < st->n; x++) {
            const struct prof_event *e = prof_store_at(st, x);
            if ((e->type == PROF_EV_RUNTIME || e->type == PROF_EV_DRIVER) &&
                e->at.cpu.tid == v[i].tid && e->end > v[i].end)
                v[i].end = e->end;
        }
    }
    return 0;
}

int prof_steps_find(const struct prof_store *st, const struct prof_join *j,
                    const struct prof_step_rule *r, struct prof_steps *out)
{
    size_t cap = 0, n = 0;
    out->v = NULL;
    out->n = 0;
    if (!rule_kernel(r) && !rule_nvtx(r))
        return 0;
    for (size_t i = 0; i < st->n; i++) {
        const struct prof_event *e = prof_store_at(st, i);
        cap += rule_kernel(r) ? e->type == PROF_EV_KERNEL
                              : e->type == PROF_EV_MARKER && e->sub == PROF_MARK_START;
    }
    if (!cap)
        return 0;
    struct prof_step *v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    if ((rule_kernel(r) ? from_kernels(st, j, r, v, &n) : from_markers(st, r, v, &n))) {
        free(v);
        return -1;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, by_start);
    /* unnumbered steps take their ordinal */
    for (size_t i = 0; i < n; i++)
        if (v[i].number < 0)
            v[i].number = (int64_t)i;
    out->v = v;
    out->n = n;
    return 0;
}

/* ---- while recording ------------------------------------------------------------------- */

void prof_step_tracker_init(struct prof_step_tracker *t, const struct prof_step_rule *r)
{
    memset(t, 0, sizeof *t);
    t->rule = *r;
    t->number = t->ended = -1;
}

int prof_step_tracker_feed(struct prof_step_tracker *t, const struct prof_store *st,
                           const struct prof_event *e)
{
    int64_t number;
    if (e->type == PROF_EV_KERNEL && t->rule.kernel_substr && *t->rule.kernel_substr) {
        int match = prof_step_kernel_match(&t->rule, prof_store_str(st, e->name));
        int starts = match && !t->in_run;
        t->in_run = match;
        /* boundaries arrive roughly in order; one out of order is not a new step */
        if (!starts || (t->ordinal && e->corr <= t->start_corr))
            return 0;
        t->ended = t->number;
        t->number = t->ordinal++;
        t->start = e->start;
        t->start_corr = e->corr;
        return 1;
    }
    if (e->type != PROF_EV_MARKER || (e->flags & PROF_F_MARKER_GPU))
        return 0;
    if (e->sub == PROF_MARK_START &&
        prof_step_marker_match(&t->rule, prof_store_str(st, e->name), &number)) {
        t->number = number >= 0 ? number : t->ordinal;
        t->ordinal++;
        t->start = e->start;
        t->marker_id = e->u.marker.id;
        return 1;
    }
    if (e->sub == PROF_MARK_END && t->number >= 0 && e->u.marker.id == t->marker_id &&
        t->ended != t->number) {
        t->ended = t->number;
        return 2;
    }
    return 0;
}
