/* model/steps.c: finding step spans in a trace (steps.h). */
#include "model/steps.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/runtime_api.h"
#include "model/trace.h"
#include "common/vec.h"
#include "common/banned.h"

#define PROFILER_STEP MODEL_PROFILER_STEP

static int by_start(const void *a, const void *b)
{
    const struct model_step *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->event < y->event ? -1 : x->event > y->event;
}

static int is_cpu_side(unsigned kind)
{
    return kind == MODEL_EV_CPU_OP || kind == MODEL_EV_USER_ANNOTATION ||
           kind == MODEL_EV_PYTHON;
}

static int64_t parse_step_number(const char *s)
{
    int64_t n = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (n > (INT64_MAX - 9) / 10)
            return -1;
        n = n * 10 + (*s - '0');
    }
    return *s ? -1 : n;
}

/* The trace ends inside a step when launches in it have no GPU work in the
 * trace and come after the last launch that has: the profiler stopped before
 * the GPU work was recorded. Marks those steps partial. */
static void mark_cut_tail(const struct model_trace *t, struct model_step *steps, size_t n)
{
    int64_t last_matched = INT64_MIN;

    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < t->n_events; i++) {
            const struct model_event *e = &t->events[i];
            if (e->rt != MODEL_RT_LAUNCH && e->rt != MODEL_RT_LAUNCH_SYNC)
                continue;
            int has_gpu = t->link[i] != MODEL_NONE;
            if (pass == 0) {
                if (has_gpu && e->ts > last_matched)
                    last_matched = e->ts;
            } else if (!has_gpu && e->ts > last_matched) {
                assert(pass == 1);
                for (size_t k = 0; k < n; k++)
                    if (e->ts >= steps[k].start && e->ts < steps[k].end)
                        steps[k].partial = 1;
            }
        }
}

int model_steps_find(struct model_trace *t, const char *marker, struct sc_error *err)
{
    size_t n = 0, mlen = marker ? strlen(marker) : 0;
    struct model_step *steps = NULL;
    uint8_t *is_marker = calloc(t->n_events ? t->n_events : 1, 1);

    free(t->steps);
    t->steps = NULL;
    t->n_steps = 0;
    t->step_marker = 0; /* the empty string: ProfilerStep#N */
    if (!is_marker || (marker && sc_strtab_intern(&t->strings, marker, mlen, &t->step_marker))) {
        free(is_marker);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        const char *name = model_str(t, e->name);
        if (is_cpu_side(e->kind) &&
            (marker ? strncmp(name, marker, mlen) == 0
                    : strncmp(name, PROFILER_STEP, sizeof PROFILER_STEP - 1) == 0))
            is_marker[i] = 1, n++;
    }
    if (n == 0) {
        free(is_marker);
        return SC_OK;
    }
    steps = calloc(n, sizeof *steps);
    if (!steps) {
        free(is_marker);
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        if (!is_marker[i])
            continue;
        const struct model_event *e = &t->events[i];
        assert(k < n);
        struct model_step *s = &steps[k++];
        s->name = e->name;
        s->start = e->ts;
        s->end = e->ts + e->dur;
        s->track = e->track;
        s->event = (uint32_t)i;
        s->number = marker ? 0 : parse_step_number(model_str(t, e->name) + sizeof PROFILER_STEP - 1);
    }
    assert(k == n);
    sc_sort(steps, n, sizeof *steps, by_start);

    /* drop markers nested in the one before (an op and an annotation of the
     * same name), then, for a marker, span start to start */
    size_t m = 0;
    int64_t open_end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].start < open_end)
            continue;
        open_end = steps[i].end;
        assert(m <= i && (m == 0 || steps[m - 1].start <= steps[i].start)); /* kept in start order */
        steps[m++] = steps[i];
    }
    n = m;
    if (marker) {
        n = m ? m - 1 : 0;
        for (size_t i = 0; i < n; i++) {
            char name[256];
            steps[i].end = steps[i + 1].start;
            assert(steps[i].end >= steps[i].start);
            steps[i].number = (int64_t)i + 1;
            snprintf(name, sizeof name, "%s#%zu", marker, i + 1);
            if (sc_strtab_intern(&t->strings, name, strlen(name), &steps[i].name)) {
                free(steps);
                free(is_marker);
                return sc_error_set(err, SC_ENOMEM, "out of memory");
            }
        }
    }
    free(is_marker);
    mark_cut_tail(t, steps, n);
    if (n == 0) {
        free(steps);
        return SC_OK;
    }
    t->steps = steps;
    t->n_steps = n;
    return SC_OK;
}

/* A CPU annotation name up to its '#' (ProfilerStep#3, Optimizer.step#SGD.step). */
static size_t marker_len(const char *name)
{
    const char *h = strchr(name, '#');
    return h && h > name ? (size_t)(h - name) + 1 : strlen(name);
}

#define DESCRIBE_CANDIDATES 64

void model_steps_describe(const struct model_trace *t, int64_t first, int64_t last, char *buf, size_t n)
{
    if (t->n_steps) {
        int64_t lo = t->steps[0].number, hi = lo;
        for (size_t i = 1; i < t->n_steps; i++) {
            lo = t->steps[i].number < lo ? t->steps[i].number : lo;
            hi = t->steps[i].number > hi ? t->steps[i].number : hi;
        }
        char want[64];
        if (first >= 0 && last >= 0 && first != last)
            snprintf(want, sizeof want, "%lld-%lld", (long long)first, (long long)last);
        else
            snprintf(want, sizeof want, "%lld", (long long)(first >= 0 ? first : last));
        snprintf(buf, n, "no step numbered %s: its %zu steps are numbered %lld to %lld (--steps A-B)", want,
                 t->n_steps, (long long)lo, (long long)hi);
        return;
    }
    /* the repeating annotations: the names a marker could be */
    struct candidate {
        const char *name;
        size_t len, count;
    } c[DESCRIBE_CANDIDATES];
    size_t nc = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct model_event *e = &t->events[i];
        if (e->kind != MODEL_EV_USER_ANNOTATION)
            continue;
        const char *name = model_str(t, e->name);
        size_t len = marker_len(name), k = 0;
        while (k < nc && (c[k].len != len || strncmp(c[k].name, name, len)))
            k++;
        if (k == nc && nc < DESCRIBE_CANDIDATES)
            c[nc++] = (struct candidate){name, len, 0};
        if (k < nc)
            c[k].count++;
    }
    const char *marker = t->step_marker ? model_str(t, t->step_marker) : PROFILER_STEP "N";
    size_t used = (size_t)snprintf(buf, n, "no step: no CPU annotation named %s%s%s", t->step_marker ? "'" : "",
                                   marker, t->step_marker ? "...'" : "");
    size_t listed = 0;
    for (size_t round = 0; round < 5 && used < n; round++) {
        size_t best = nc;
        for (size_t k = 0; k < nc; k++)
            if (c[k].count >= 2 && (best == nc || c[k].count > c[best].count))
                best = k;
        if (best == nc)
            break;
        used += (size_t)snprintf(buf + used, n - used, "%s'%.*s' (%zu)", listed ? ", " : "; repeated annotations: ",
                                 (int)c[best].len, c[best].name, c[best].count);
        c[best].count = 0;
        listed++;
    }
    if (used < n)
        snprintf(buf + used, n - used, "%s", listed ? "; name one with --step-marker"
                                                    : "; the trace repeats no annotation a step could be marked by");
}
